/*
 * rmw_signals — a busy node whose host installs SIGINT/SIGTERM handlers the
 * way rclcpp does: with sigaction, without SA_ONSTACK, using a few KiB of
 * stack and logging from inside the handler. TestRmwSignalHandlers signals
 * it hundreds of times, process-directed and to every thread (Go's
 * included), and expects no crash.
 *
 * Usage: rmw_signals <after|before> <thread|handler>
 *   after|before  the handlers are installed after rmw_init (rclcpp) or
 *                 before it (a user's handler, or a host that loads ROS late)
 *   thread        the handler posts a semaphore and a separate thread
 *                 triggers the executor's guard condition (rclcpp)
 *   handler       the handler triggers the guard condition itself, through
 *                 rmw_trigger_guard_condition (rclpy before Humble)
 *
 * Threads: a publisher, an executor (rmw_wait on the subscription and two
 * guard conditions, infinite timeout, then takes and checks every message),
 * a trigger loop (trigger + rmw_wait with a timeout), the handler thread,
 * and main, which reads commands from stdin:
 *   (start)  prints "READY <tid>..." with the tids of this program's threads
 *   "stop"   stops the workers, lowers the guard condition, prints "ARMED",
 *            then blocks in rmw_wait with an infinite timeout until a
 *            signal's handler (or handler thread) triggers it; prints
 *            "WOKEN handled=<n> taken=<n> bad=<n> triggers=<n>" and exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rmw_harness.h"

static rmw_guard_condition_t *gc_exec;    /* the executor's interrupt guard condition */
static rmw_guard_condition_t *gc_trig;    /* the trigger loop's */
static atomic_int handled;
static atomic_int stopping;
static atomic_long taken, bad, triggers;
static int direct;       /* the handler triggers gc_exec itself */
static sem_t sig_sem;    /* rclcpp's handler thread waits on this */

static pid_t tids[8];
static atomic_int ntids;

static void record_tid(void) { tids[atomic_fetch_add(&ntids, 1)] = (pid_t)syscall(SYS_gettid); }

/* What rclcpp's SignalHandler::signal_handler does, in spirit: log (its
 * logging macros format into stack buffers of a few KiB), then wake the
 * handler thread. The stack use is what breaks a handler that runs on a
 * goroutine's small stack. */
static void on_signal(int signo, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	volatile char scratch[6144];
	for (size_t i = 0; i < sizeof scratch; i += 32)
		scratch[i] = (char)i;
	char line[512];
	int n = snprintf(line, sizeof line, "[INFO] [rclcpp]: signal_handler(signum=%d) from pid %d, %d so far%c\n", signo,
		(int)si->si_pid, atomic_load(&handled), scratch[64] == 64 ? '.' : '?');
	if (n > 0 && write(STDERR_FILENO, line, (size_t)n) < 0)
		n = 0;
	atomic_fetch_add(&handled, 1);
	if (direct && gc_exec != NULL)
		rmw_trigger_guard_condition(gc_exec);
	else
		sem_post(&sig_sem);
	errno = saved;
}

static void install_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_ONSTACK, as rclcpp */
	sigemptyset(&sa.sa_mask);
	MUST(sigaction(SIGINT, &sa, NULL) == 0 && sigaction(SIGTERM, &sa, NULL) == 0);
}

static void *handler_thread(void *arg)
{
	(void)arg;
	record_tid();
	for (;;) {
		while (sem_wait(&sig_sem) != 0 && errno == EINTR)
			;
		if (gc_exec != NULL)
			rmw_trigger_guard_condition(gc_exec);
		if (atomic_load(&stopping) == 2)
			return NULL;
	}
}

static rmw_publisher_t *pub;
static rmw_subscription_t *sub;
static rmw_wait_set_t *ws_exec, *ws_trig;

static void chat_text(char *buf, size_t n, int32_t id) { snprintf(buf, n, "message %d intact", id); }

static void *publisher(void *arg)
{
	(void)arg;
	record_tid();
	Chat m;
	Chat_init(&m, 0);
	char text[64];
	for (int32_t id = 0; !atomic_load(&stopping); id++) {
		chat_text(text, sizeof text, id);
		chat_set(&m, id, text, (size_t)(id % 200) + 1);
		MUST(rmw_publish(pub, &m, NULL) == RMW_RET_OK);
		if (id % 64 == 63)
			h_sleep_ms(1);
	}
	Chat_fini(&m);
	return NULL;
}

static void *executor(void *arg)
{
	(void)arg;
	record_tid();
	Chat m;
	Chat_init(&m, 0);
	char text[64];
	while (!atomic_load(&stopping)) {
		void *subs[1] = {sub->data};
		void *gcs[2] = {gc_exec->data, gc_trig->data};
		rmw_subscriptions_t s = {1, subs};
		rmw_guard_conditions_t g = {2, gcs};
		rmw_ret_t rc = rmw_wait(&s, &g, NULL, NULL, NULL, ws_exec, NULL);
		MUST(rc == RMW_RET_OK);
		if (subs[0] == NULL)
			continue;
		for (;;) {
			bool ok = false;
			MUST(rmw_take(sub, &m, &ok, NULL) == RMW_RET_OK);
			if (!ok)
				break;
			atomic_fetch_add(&taken, 1);
			chat_text(text, sizeof text, m.id);
			if (!chat_ok(&m, m.id, text, (size_t)(m.id % 200) + 1)) {
				atomic_fetch_add(&bad, 1);
				fprintf(stderr, "message %d damaged\n", m.id);
			}
		}
	}
	Chat_fini(&m);
	return NULL;
}

static void *trigger_loop(void *arg)
{
	(void)arg;
	record_tid();
	while (!atomic_load(&stopping)) {
		MUST(rmw_trigger_guard_condition(gc_trig) == RMW_RET_OK);
		void *gcs[1] = {gc_trig->data};
		rmw_guard_conditions_t g = {1, gcs};
		rmw_time_t t = {0, 20000000};
		rmw_ret_t rc = rmw_wait(NULL, &g, NULL, NULL, NULL, ws_trig, &t);
		MUST(rc == RMW_RET_OK || rc == RMW_RET_TIMEOUT);
		atomic_fetch_add(&triggers, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rmw_signals <after|before> <thread|handler>\n");
		return 2;
	}
	int before = strcmp(argv[1], "before") == 0;
	direct = strcmp(argv[2], "handler") == 0;
	record_tid();
	MUST(sem_init(&sig_sem, 0, 0) == 0);
	if (before)
		install_handlers();

	rmw_context_t ctx;
	rmw_init_options_t opts;
	h_init(&ctx, &opts, h_allocator());
	rmw_node_t *n = rmw_create_node(&ctx, "rmw_signals", "/");
	MUST(n != NULL);
	rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
	rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};
	pub = rmw_create_publisher(n, &Chat_ts, "/rmw_signals", &h_qos_default, &po);
	sub = rmw_create_subscription(n, &Chat_ts, "/rmw_signals", &h_qos_default, &so);
	gc_exec = rmw_create_guard_condition(&ctx);
	gc_trig = rmw_create_guard_condition(&ctx);
	ws_exec = rmw_create_wait_set(&ctx, 3);
	ws_trig = rmw_create_wait_set(&ctx, 1);
	MUST(pub && sub && gc_exec && gc_trig && ws_exec && ws_trig);
	if (!before)
		install_handlers();

	pthread_t th[4];
	MUST(pthread_create(&th[0], NULL, handler_thread, NULL) == 0);
	MUST(pthread_create(&th[1], NULL, publisher, NULL) == 0);
	MUST(pthread_create(&th[2], NULL, executor, NULL) == 0);
	MUST(pthread_create(&th[3], NULL, trigger_loop, NULL) == 0);
	while (atomic_load(&ntids) < 5)
		h_sleep_ms(1);
	printf("READY");
	for (int i = 0; i < atomic_load(&ntids); i++)
		printf(" %d", (int)tids[i]);
	printf("\n");
	fflush(stdout);

	/* Signals interrupt the read (the handlers have no SA_RESTART). */
	char cmd[64];
	for (;;) {
		if (fgets(cmd, sizeof cmd, stdin) != NULL) {
			if (strncmp(cmd, "stop", 4) == 0)
				break;
		} else if (ferror(stdin) && errno == EINTR) {
			clearerr(stdin);
		} else {
			break;
		}
	}
	atomic_store(&stopping, 1);
	rmw_trigger_guard_condition(gc_exec);
	for (int i = 1; i < 4; i++)
		MUST(pthread_join(th[i], NULL) == 0);

	/* Lower gc_exec, then wait for it with no timeout: only a signal
	 * (through its handler or the handler thread) can end this wait. */
	void *gcs[1] = {gc_exec->data};
	rmw_guard_conditions_t g = {1, gcs};
	rmw_time_t zero = {0, 0};
	rmw_ret_t rc = rmw_wait(NULL, &g, NULL, NULL, NULL, ws_exec, &zero);
	MUST(rc == RMW_RET_OK || rc == RMW_RET_TIMEOUT);
	printf("ARMED\n");
	fflush(stdout);
	gcs[0] = gc_exec->data;
	MUST(rmw_wait(NULL, &g, NULL, NULL, NULL, ws_exec, NULL) == RMW_RET_OK && gcs[0] != NULL);
	printf("WOKEN handled=%d taken=%ld bad=%ld triggers=%ld\n", atomic_load(&handled), atomic_load(&taken),
		atomic_load(&bad), atomic_load(&triggers));
	fflush(stdout);

	/* Ignore further signals while tearing down. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	atomic_store(&stopping, 2);
	sem_post(&sig_sem);
	MUST(pthread_join(th[0], NULL) == 0);
	CHECK_RC(rmw_destroy_wait_set(ws_trig), RMW_RET_OK);
	CHECK_RC(rmw_destroy_wait_set(ws_exec), RMW_RET_OK);
	CHECK_RC(rmw_destroy_guard_condition(gc_trig), RMW_RET_OK);
	CHECK_RC(rmw_destroy_guard_condition(gc_exec), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(n, sub), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, pub), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_fini(&ctx, &opts);
	return h_done();
}

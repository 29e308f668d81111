/*
 * What keeps Go code out of host signal handlers' way (sig.h): the signal
 * mask of the Go runtime's threads, and rmw_wait's sleep.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sig.h"

sigset_t rgaps_async_signals;

/* Go's runtime starts in a thread of its own that the library's
 * initialiser (_rt0_amd64_lib, in .init_array) creates: it inherits the
 * loading thread's mask, records it (initSigmask) and gives it to every
 * thread it creates later (minitSignalMask unblocks only the signals Go
 * needs: faults, SIGPROF, its preemption signal SIGURG). So the loading
 * thread blocks the asynchronous signals around that initialiser: first
 * (a constructor with a priority runs before the unprioritised .init_array
 * entries), and back to its own mask last (an unprioritised constructor of
 * a C object runs after Go's, whose object the linker places first). The
 * loading thread's mask is unchanged when the library's load returns.
 * TestRmwSignalHandlers checks both ends: Go's threads block, the loader
 * does not. */
static sigset_t loader_mask;
static int loader_blocked;

__attribute__((constructor(101))) static void rgaps_sig_before_go(void)
{
	sigfillset(&rgaps_async_signals);
	static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
		sigdelset(&rgaps_async_signals, sync_signals[i]);
	loader_blocked = pthread_sigmask(SIG_BLOCK, &rgaps_async_signals, &loader_mask) == 0;
}

__attribute__((constructor)) static void rgaps_sig_after_go(void)
{
	if (loader_blocked)
		pthread_sigmask(SIG_SETMASK, &loader_mask, NULL);
	loader_blocked = 0;
}

/* 0: futex_waitv works; 1: it does not (old kernel, seccomp): poll. */
static atomic_int waitv_missing;

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#define POLL_NS 2000000 /* the longest sleep on one word while polling the others */

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	nanosleep(&ts, NULL); /* EINTR: the caller re-checks */
}

/* rgaps_wait_sleep sleeps as Go planned: until a word differs from its
 * value, a wake on one, the timeout, or a signal; the caller re-checks
 * everything, so every early return is fine. */
void rgaps_wait_sleep(const rgaps_wait_plan *p)
{
	if (p->n == 0) {
		if (p->ns != 0)
			sleep_ns(p->ns < 0 ? 3600 * 1000000000LL : p->ns);
		return;
	}
	if (p->n > 1 && !atomic_load_explicit(&waitv_missing, memory_order_relaxed)) {
		struct timespec abs, *absp = NULL;
		if (p->ns >= 0) {
			clock_gettime(CLOCK_MONOTONIC, &abs);
			int64_t t = (int64_t)abs.tv_nsec + p->ns;
			abs.tv_sec += t / 1000000000;
			abs.tv_nsec = t % 1000000000;
			absp = &abs;
		}
		if (syscall(SYS_futex_waitv, p->words, p->n, 0, absp, CLOCK_MONOTONIC) == 0)
			return;
		if (errno != ENOSYS && errno != EPERM && errno != EACCES)
			return; /* EAGAIN (a word changed), EINTR, ETIMEDOUT */
		atomic_store(&waitv_missing, 1);
	}
	/* One word, or no futex_waitv: wait on the first, and with more than
	 * one, only briefly, so that the others are polled. */
	int64_t ns = p->ns;
	if (p->n > 1 && (ns < 0 || ns > POLL_NS))
		ns = POLL_NS;
	struct timespec rel = {ns / 1000000000, ns % 1000000000};
	syscall(SYS_futex, (uint32_t *)(uintptr_t)p->words[0].uaddr, FUTEX_WAIT, (uint32_t)p->words[0].val,
		ns < 0 ? NULL : &rel, NULL, 0);
}

void rgaps_word_bump(uint32_t *w)
{
	__atomic_add_fetch(w, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

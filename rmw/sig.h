/*
 * The signal contract of librmw_rgaps (docs/ARCHITECTURE.md, "Signals").
 *
 * A host program's signal handler (rclcpp's, rclpy's, a user's) may be
 * installed without SA_ONSTACK; it then runs on whatever stack the thread
 * is on. Go code runs on goroutine stacks, which are small and which the
 * handler must never see. So Go code never runs with the asynchronous
 * signals deliverable:
 *   - every call from C into Go (rgapsgo_*) happens inside RGAPS_GO_CALLS
 *     (or between rgaps_sig_block and rgaps_sig_restore): the calling
 *     thread blocks the asynchronous signals for the call and gets its own
 *     mask back on return, so a signal meant for it runs after the call, on
 *     the caller's stack;
 *   - nothing blocks for long inside Go: rmw_wait sleeps in C (sig.c), with
 *     the caller's mask;
 *   - the threads the Go runtime creates start with the asynchronous
 *     signals blocked (sig.c's constructors), so a process-directed signal
 *     always goes to a thread of the host;
 *   - rmw_trigger_guard_condition does not enter Go (an atomic add and a
 *     futex wake): a handler may call it.
 * The synchronous signals (faults) stay deliverable: Go's own handlers,
 * which run on the signal stack, need them.
 */
#ifndef RGAPS_SIG_H
#define RGAPS_SIG_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>

/* The signals blocked around Go code: all but the synchronous ones. */
extern sigset_t rgaps_async_signals __attribute__((visibility("hidden")));

static inline void rgaps_sig_block(sigset_t *old) { pthread_sigmask(SIG_BLOCK, &rgaps_async_signals, old); }
static inline void rgaps_sig_restore(sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

/* RGAPS_GO_CALLS; at the top of a block that calls Go: the asynchronous
 * signals stay blocked until the block is left, whichever way. */
#define RGAPS_GO_CALLS                                                                \
	sigset_t rgaps_sig_saved_ __attribute__((cleanup(rgaps_sig_restore), unused)); \
	rgaps_sig_block(&rgaps_sig_saved_)

/* What rmw_wait sleeps on between calls into Go: the words of struct
 * futex_waitv (the kernel's layout), and how long. */
#define RGAPS_WAIT_WORDS 128 /* FUTEX_WAITV_MAX */
#define RGAPS_WAIT_SLEEP 0x5247534c /* rgapsgo_wait_*: sleep as planned, then call rgapsgo_wait_next */
typedef struct rgaps_waitv {
	uint64_t val;
	uint64_t uaddr;
	uint32_t flags;
	uint32_t reserved;
} rgaps_waitv;
typedef struct rgaps_wait_plan {
	uintptr_t go; /* the wait's Go state (a handle) */
	int64_t ns;   /* sleep at most this long; negative: until a word changes */
	uint32_t n;   /* words in use; 0: sleep ns (if positive) */
	rgaps_waitv words[RGAPS_WAIT_WORDS];
} rgaps_wait_plan;

__attribute__((visibility("hidden"))) void rgaps_wait_sleep(const rgaps_wait_plan *p);
/* Raises a guard condition's word and wakes its sleepers; async-signal-safe. */
__attribute__((visibility("hidden"))) void rgaps_word_bump(uint32_t *w);

#endif /* RGAPS_SIG_H */

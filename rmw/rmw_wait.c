/*
 * librmw_rgaps: guard conditions and wait sets, and rmw_wait, which lets Go
 * plan the sleep and sleeps in C (sig.h) (rmw_c.h lists the files).
 */
#include "rmw_c.h"

/* ---- guard conditions and wait sets ---------------------------------------------------------------------- */

rmw_guard_condition_t *rmw_create_guard_condition(rmw_context_t *context)
{
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_guard_condition_t *g = rgaps_alloc(a, sizeof *g);
	rgaps_gc *d = rgaps_alloc(a, sizeof *d);
	if (g == NULL || d == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the guard condition failed");
		goto fail;
	}
	d->magic = RGAPS_MAGIC_GC;
	d->kind = RGAPS_GC_USER;
	d->alloc = *a;
	g->implementation_identifier = rgaps_identifier;
	g->data = d;
	g->context = context;
	return g;
fail:
	rgaps_free(a, d);
	rgaps_free(a, g);
	return NULL;
}

static rgaps_gc *user_gc(const rmw_guard_condition_t *g)
{
	rgaps_gc *d = g->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_GC) {
		rgaps_set_error("rmw_rgaps: guard condition is not valid");
		return NULL;
	}
	if (d->kind != RGAPS_GC_USER) {
		rgaps_set_error("rmw_rgaps: a node's graph guard condition belongs to the node");
		return NULL;
	}
	return d;
}

rmw_ret_t rmw_destroy_guard_condition(rmw_guard_condition_t *guard_condition)
{
	HANDLE(guard_condition);
	rgaps_gc *d = user_gc(guard_condition);
	if (d == NULL)
		return RMW_RET_INVALID_ARGUMENT;
	rcutils_allocator_t a = d->alloc;
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, d);
	rgaps_free(&a, guard_condition);
	return RMW_RET_OK;
}

rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t *guard_condition)
{
	HANDLE(guard_condition);
	rgaps_gc *d = user_gc(guard_condition);
	if (d == NULL)
		return RMW_RET_INVALID_ARGUMENT;
	rgaps_word_bump(&d->seq); /* no Go: signal handlers call this (sig.h) */
	return RMW_RET_OK;
}

rmw_wait_set_t *rmw_create_wait_set(rmw_context_t *context, size_t max_conditions)
{
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_wait_set_t *w = rgaps_alloc(a, sizeof *w);
	rgaps_ws *d = rgaps_alloc(a, sizeof *d);
	if (w == NULL || d == NULL) {
		rgaps_free(a, d);
		rgaps_free(a, w);
		FAIL(NULL, "allocating the wait set failed");
	}
	d->magic = RGAPS_MAGIC_WS;
	d->max_conditions = max_conditions;
	d->alloc = *a;
	w->implementation_identifier = rgaps_identifier;
	w->guard_conditions = &d->gcs;
	w->data = d;
	return w;
}

rmw_ret_t rmw_destroy_wait_set(rmw_wait_set_t *wait_set)
{
	ARG(wait_set, RMW_RET_ERROR); /* what test_rmw_implementation expects */
	IMPL(wait_set, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	rgaps_ws *d = wait_set->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_WS)
		FAIL(RMW_RET_ERROR, "wait set is not valid");
	rcutils_allocator_t a = d->alloc;
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, d);
	rgaps_free(&a, wait_set);
	return RMW_RET_OK;
}

rmw_ret_t rmw_wait(rmw_subscriptions_t *subscriptions, rmw_guard_conditions_t *guard_conditions,
	rmw_services_t *services, rmw_clients_t *clients, rmw_events_t *events, rmw_wait_set_t *wait_set,
	const rmw_time_t *wait_timeout)
{
	HANDLE(wait_set);
	rgaps_ws *d = wait_set->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_WS)
		FAIL(RMW_RET_ERROR, "wait set is not valid");
	int64_t ns = -1;
	if (wait_timeout != NULL) {
		if (wait_timeout->sec >= 9223372036ULL)
			ns = -1; /* infinite */
		else
			ns = (int64_t)wait_timeout->sec * 1000000000LL + (int64_t)(wait_timeout->nsec % 1000000000ULL) +
			     (int64_t)(wait_timeout->nsec / 1000000000ULL) * 1000000000LL;
	}
	/* Go plans the sleep, C sleeps with the caller's signal mask (sig.h). */
	rgaps_wait_plan plan;
	sigset_t mask;
	rgaps_sig_block(&mask);
	rmw_ret_t rc = rgapsgo_wait_begin(subscriptions, guard_conditions, services, clients, events, ns, &plan);
	while (rc == RGAPS_WAIT_SLEEP) {
		rgaps_sig_restore(&mask);
		rgaps_wait_sleep(&plan);
		rgaps_sig_block(&mask);
		rc = rgapsgo_wait_next(&plan);
	}
	rgaps_sig_restore(&mask);
	return rc;
}

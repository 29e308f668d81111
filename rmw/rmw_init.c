/*
 * librmw_rgaps: init options and contexts (rmw_c.h lists the files).
 */
#include "rmw_c.h"

/* ---- init options --------------------------------------------------------------------- */

rmw_ret_t rmw_init_options_init(rmw_init_options_t *init_options, rcutils_allocator_t allocator)
{
	ARG(init_options, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(&allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	if (init_options->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected zero-initialized init_options");
	memset(init_options, 0, sizeof *init_options);
	init_options->instance_id = 0;
	init_options->implementation_identifier = rgaps_identifier;
	init_options->domain_id = RMW_DEFAULT_DOMAIN_ID;
	init_options->security_options.enforce_security = RMW_SECURITY_ENFORCEMENT_PERMISSIVE;
#ifndef RGAPS_ROS_KILTED
	init_options->localhost_only = RMW_LOCALHOST_ONLY_DEFAULT;
#endif
	init_options->discovery_options.automatic_discovery_range = RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET;
	init_options->discovery_options.allocator = allocator;
	init_options->enclave = NULL;
	init_options->allocator = allocator;
	init_options->impl = NULL;
	return RMW_RET_OK;
}

static void options_free(rmw_init_options_t *o, const rcutils_allocator_t *a)
{
	rgaps_free(a, o->enclave);
	rgaps_free(a, o->security_options.security_root_path);
	rgaps_free(a, o->discovery_options.static_peers);
	o->enclave = NULL;
	o->security_options.security_root_path = NULL;
	o->discovery_options.static_peers = NULL;
}

rmw_ret_t rmw_init_options_copy(const rmw_init_options_t *src, rmw_init_options_t *dst)
{
	ARG(src, RMW_RET_INVALID_ARGUMENT);
	ARG(dst, RMW_RET_INVALID_ARGUMENT);
	if (src->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized src");
	IMPL(src, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (dst->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected zero-initialized dst");
	const rcutils_allocator_t *a = &src->allocator;
	if (!rgaps_allocator_valid(a))
		FAIL(RMW_RET_INVALID_ARGUMENT, "src allocator is invalid");
	rmw_init_options_t tmp = *src;
	tmp.enclave = NULL;
	tmp.security_options.security_root_path = NULL;
	tmp.discovery_options.static_peers = NULL;
	if (src->enclave != NULL && (tmp.enclave = rgaps_strdup(a, src->enclave)) == NULL)
		goto nomem;
	if (src->security_options.security_root_path != NULL &&
	    (tmp.security_options.security_root_path =
			     rgaps_strdup(a, src->security_options.security_root_path)) == NULL)
		goto nomem;
	if (src->discovery_options.static_peers_count > 0 && src->discovery_options.static_peers != NULL) {
		size_t n = src->discovery_options.static_peers_count * sizeof(rmw_peer_address_t);
		if ((tmp.discovery_options.static_peers = a->allocate(n, a->state)) == NULL)
			goto nomem;
		memcpy(tmp.discovery_options.static_peers, src->discovery_options.static_peers, n);
	} else {
		tmp.discovery_options.static_peers_count = 0;
	}
	*dst = tmp;
	return RMW_RET_OK;
nomem:
	options_free(&tmp, a);
	FAIL(RMW_RET_BAD_ALLOC, "copying init options: allocation failed");
}

rmw_ret_t rmw_init_options_fini(rmw_init_options_t *init_options)
{
	ARG(init_options, RMW_RET_INVALID_ARGUMENT);
	if (init_options->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized init_options");
	IMPL(init_options, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (!rgaps_allocator_valid(&init_options->allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "init_options allocator is invalid");
	rcutils_allocator_t a = init_options->allocator;
	options_free(init_options, &a);
	memset(init_options, 0, sizeof *init_options);
	return RMW_RET_OK;
}

/* ---- context ------------------------------------------------------------------------------ */

rmw_ret_t rmw_init(const rmw_init_options_t *options, rmw_context_t *context)
{
	RGAPS_GO_CALLS;
	ARG(options, RMW_RET_INVALID_ARGUMENT);
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (options->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized init_options");
	IMPL(options, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (options->enclave == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected non-null enclave");
	if (context->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected a zero-initialized context");
	if (!rgaps_allocator_valid(&options->allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "init_options allocator is invalid");
	if (options->security_options.enforce_security == RMW_SECURITY_ENFORCEMENT_ENFORCE)
		FAIL(RMW_RET_ERROR, "security is enforced but rmw_rgaps has no security support");
	const rcutils_allocator_t *a = &options->allocator;
	rmw_context_t c;
	memset(&c, 0, sizeof c);
	c.instance_id = options->instance_id;
	c.actual_domain_id = options->domain_id == RMW_DEFAULT_DOMAIN_ID ? 0 : options->domain_id;
	struct rmw_context_impl_s *impl = rgaps_alloc(a, sizeof *impl);
	if (impl == NULL)
		FAIL(RMW_RET_BAD_ALLOC, "allocating the context failed");
	rmw_ret_t rc = rmw_init_options_copy(options, &c.options);
	if (rc != RMW_RET_OK) {
		rgaps_free(a, impl);
		return rc;
	}
	rc = rgapsgo_init(options->domain_id, c.options.enclave, &impl->go);
	if (rc != RMW_RET_OK) {
		if (rmw_init_options_fini(&c.options) != RMW_RET_OK) {
			/* cannot fail: the copy above is ours */
		}
		rgaps_free(a, impl);
		return rc;
	}
	impl->magic = RGAPS_MAGIC_CTX;
	c.impl = impl;
	c.implementation_identifier = rgaps_identifier;
	*context = c;
	return RMW_RET_OK;
}

rmw_ret_t rmw_shutdown(rmw_context_t *context)
{
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (context->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized context");
	IMPL(context, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (context->impl == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context is not initialised");
	context->impl->is_shutdown = 1;
	return RMW_RET_OK;
}

rmw_ret_t rmw_context_fini(rmw_context_t *context)
{
	RGAPS_GO_CALLS;
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (context->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized context");
	IMPL(context, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (context->impl == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context is not initialised");
	if (!context->impl->is_shutdown)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context has not been shut down");
	rmw_ret_t rc = rgapsgo_context_close(context->impl->go);
	rcutils_allocator_t a = context->options.allocator;
	rmw_ret_t rc2 = rmw_init_options_fini(&context->options);
	context->impl->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, context->impl);
	memset(context, 0, sizeof *context);
	return rc != RMW_RET_OK ? rc : rc2;
}

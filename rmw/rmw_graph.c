/*
 * librmw_rgaps: graph queries (rmw_c.h lists the files). The Go half reads
 * the graph (this host's, and other hosts' through the bridge daemon) and
 * fills the rcutils arrays with the allocators given.
 */
#include "rmw_c.h"

/* ---- graph --------------------------------------------------------------------------------------------- */

static int string_array_zero(const rcutils_string_array_t *a) { return a->size == 0 && a->data == NULL; }

rmw_ret_t rmw_get_node_names(const rmw_node_t *node, rcutils_string_array_t *node_names,
	rcutils_string_array_t *node_namespaces)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(node_names, RMW_RET_INVALID_ARGUMENT);
	ARG(node_namespaces, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(node_names) || !string_array_zero(node_namespaces))
		FAIL(RMW_RET_INVALID_ARGUMENT, "node_names and node_namespaces must be zero-initialized");
	return rgapsgo_node_names(d->go, (rcutils_allocator_t *)ctx_alloc(node->context), node_names, node_namespaces,
		NULL);
}

rmw_ret_t rmw_get_node_names_with_enclaves(const rmw_node_t *node, rcutils_string_array_t *node_names,
	rcutils_string_array_t *node_namespaces, rcutils_string_array_t *enclaves)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(node_names, RMW_RET_INVALID_ARGUMENT);
	ARG(node_namespaces, RMW_RET_INVALID_ARGUMENT);
	ARG(enclaves, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(node_names) || !string_array_zero(node_namespaces) || !string_array_zero(enclaves))
		FAIL(RMW_RET_INVALID_ARGUMENT, "output arrays must be zero-initialized");
	return rgapsgo_node_names(d->go, (rcutils_allocator_t *)ctx_alloc(node->context), node_names, node_namespaces,
		enclaves);
}

static rmw_ret_t names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator, int q,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(allocator, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(&out->names) || out->types != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "names and types output must be zero-initialized");
	if (q >= 2) {
		ARG(node_name, RMW_RET_INVALID_ARGUMENT);
		ARG(node_namespace, RMW_RET_INVALID_ARGUMENT);
	}
	return rgapsgo_names_and_types(d->go, allocator, q, (char *)node_name, (char *)node_namespace, out);
}

rmw_ret_t rmw_get_topic_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle; /* names are never mangled */
	return names_and_types(node, allocator, 0, NULL, NULL, topic_names_and_types);
}

rmw_ret_t rmw_get_service_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator,
	rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 1, NULL, NULL, service_names_and_types);
}

rmw_ret_t rmw_get_publisher_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle;
	return names_and_types(node, allocator, 2, node_name, node_namespace, topic_names_and_types);
}

rmw_ret_t rmw_get_subscriber_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle;
	return names_and_types(node, allocator, 3, node_name, node_namespace, topic_names_and_types);
}

rmw_ret_t rmw_get_service_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 4, node_name, node_namespace, service_names_and_types);
}

rmw_ret_t rmw_get_client_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 5, node_name, node_namespace, service_names_and_types);
}

static rmw_ret_t endpoints_info(const rmw_node_t *node, rcutils_allocator_t *allocator, const char *topic_name,
	int kind, rmw_topic_endpoint_info_array_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(allocator, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	ARG(topic_name, RMW_RET_INVALID_ARGUMENT);
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	if (out->size != 0 || out->info_array != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "endpoint info array must be zero-initialized");
	return rgapsgo_endpoints_info(d->go, allocator, (char *)topic_name, kind, out);
}

rmw_ret_t rmw_get_publishers_info_by_topic(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *topic_name, bool no_mangle, rmw_topic_endpoint_info_array_t *publishers_info)
{
	(void)no_mangle;
	return endpoints_info(node, allocator, topic_name, 1, publishers_info);
}

rmw_ret_t rmw_get_subscriptions_info_by_topic(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *topic_name, bool no_mangle, rmw_topic_endpoint_info_array_t *subscriptions_info)
{
	(void)no_mangle;
	return endpoints_info(node, allocator, topic_name, 2, subscriptions_info);
}

static rmw_ret_t count(const rmw_node_t *node, int what, const char *name, size_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(name, RMW_RET_INVALID_ARGUMENT);
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_count(d->go, what, (char *)name, out);
}

rmw_ret_t rmw_count_publishers(const rmw_node_t *node, const char *topic_name, size_t *count_)
{
	return count(node, 0, topic_name, count_);
}

rmw_ret_t rmw_count_subscribers(const rmw_node_t *node, const char *topic_name, size_t *count_)
{
	return count(node, 1, topic_name, count_);
}

rmw_ret_t rmw_count_clients(const rmw_node_t *node, const char *service_name, size_t *count_)
{
	return count(node, 2, service_name, count_);
}

rmw_ret_t rmw_count_services(const rmw_node_t *node, const char *service_name, size_t *count_)
{
	return count(node, 3, service_name, count_);
}

rmw_ret_t rmw_compare_gids_equal(const rmw_gid_t *gid1, const rmw_gid_t *gid2, bool *result)
{
	HANDLE(gid1);
	HANDLE(gid2);
	ARG(result, RMW_RET_INVALID_ARGUMENT);
	*result = memcmp(gid1->data, gid2->data, RMW_GID_STORAGE_SIZE) == 0;
	return RMW_RET_OK;
}

rmw_ret_t rmw_qos_profile_check_compatible(const rmw_qos_profile_t publisher_profile,
	const rmw_qos_profile_t subscription_profile, rmw_qos_compatibility_type_t *compatibility, char *reason,
	size_t reason_size)
{
	RGAPS_GO_CALLS;
	ARG(compatibility, RMW_RET_INVALID_ARGUMENT);
	if (reason == NULL && reason_size != 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "reason is null but reason_size is not 0");
	rmw_qos_profile_t p = publisher_profile, s = subscription_profile;
	int c = 0;
	rmw_ret_t rc = rgapsgo_qos_check(&p, &s, &c, reason, reason_size);
	*compatibility = (rmw_qos_compatibility_type_t)c;
	return rc;
}

/*
 * librmw_rgaps: publishers, and publishing a message (serialised by the
 * walker straight into a loan of the topic's pool) or a serialized message
 * (rmw_c.h lists the files). Loans are in rmw_loan.c.
 */
#include "rmw_c.h"

/* ---- publishers ---------------------------------------------------------------------------------- */

rmw_publisher_t *rmw_create_publisher(const rmw_node_t *node, const rosidl_message_type_support_t *type_support,
	const char *topic_name, const rmw_qos_profile_t *qos_profile,
	const rmw_publisher_options_t *publisher_options)
{
	RGAPS_GO_CALLS;
	rgaps_endpoint_type et;
	rgaps_node *nd = rgaps_endpoint_begin(node, type_support, topic_name, qos_profile, publisher_options, &et);
	if (nd == NULL)
		return NULL;
	const rgaps_ts *ts = et.ts;
	const rcutils_allocator_t *a = ctx_alloc(node->context);
	rmw_publisher_t *p = rgaps_alloc(a, sizeof *p);
	rgaps_pub *d = rgaps_alloc(a, sizeof *d);
	char *topic = rgaps_strdup(a, topic_name);
	if (p == NULL || d == NULL || topic == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the publisher failed");
		goto fail;
	}
	d->ts = ts;
	d->qos = *qos_profile;
	d->member = rgaps_default_member(ts);
	d->bytes = rgaps_ts_byte_member_count(ts) > 0;
	if (rgapsgo_pub_create(nd->go, topic, et.name, et.hash, &d->qos, d->bytes, d->gid, &d->go) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_PUB;
	d->plain = rgaps_ts_is_plain(ts) && !loans_disabled();
	d->prefix = rgaps_ts_is_plain(ts) ? RGAPS_MSG_PREFIX : 0; /* never depends on the environment */
	p->implementation_identifier = rgaps_identifier;
	p->data = d;
	p->topic_name = topic;
	p->options = *publisher_options;
	p->can_loan_messages = d->plain;
	return p;
fail:
	rgaps_free(a, topic);
	rgaps_free(a, d);
	rgaps_free(a, p);
	return NULL;
}

rmw_ret_t rmw_destroy_publisher(rmw_node_t *node, rmw_publisher_t *publisher)
{
	RGAPS_GO_CALLS;
	NODE(node, nd);
	(void)nd;
	PUB(publisher, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_pub_destroy(d->go);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)publisher->topic_name);
	rgaps_free(&a, d);
	rgaps_free(&a, publisher);
	return rc;
}

/* publish_cdr serialises msg into a loan of the topic's pool, after
 * `prefix` bytes that fill() writes (or zeroes), and publishes it. */
rmw_ret_t rgaps_publish_cdr(uintptr_t pub, const rgaps_ts *ts, const void *msg, size_t prefix,
	const void *head, size_t head_len)
{
	RGAPS_GO_CALLS;
	size_t n;
	rmw_ret_t rc = rgaps_ret_of_ts(rgaps_ts_serialized_size(ts, msg, &n));
	if (rc != RMW_RET_OK)
		return rc;
	uint8_t *buf = NULL;
	rc = rgapsgo_pub_loan(pub, prefix + n, 0, &buf);
	if (rc != RMW_RET_OK || buf == NULL)
		return rc; /* NULL: nobody to write for, or a best-effort drop */
	memset(buf, 0, prefix);
	if (head_len)
		memcpy(buf, head, head_len);
	size_t used = 0;
	rc = rgaps_ret_of_ts(rgaps_ts_serialize(ts, msg, buf + prefix, n, &used));
	if (rc != RMW_RET_OK) {
		rgapsgo_pub_discard(pub, buf);
		return rc;
	}
	return rgapsgo_pub_publish(pub, buf);
}

rmw_ret_t rmw_publish(const rmw_publisher_t *publisher, const void *ros_message,
	rmw_publisher_allocation_t *allocation)
{
	(void)allocation;
	PUB(publisher, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	return rgaps_publish_cdr(d->go, d->ts, ros_message, d->prefix, NULL, 0);
}

rmw_ret_t rmw_publish_serialized_message(const rmw_publisher_t *publisher,
	const rmw_serialized_message_t *serialized_message, rmw_publisher_allocation_t *allocation)
{
	RGAPS_GO_CALLS;
	(void)allocation;
	PUB(publisher, d);
	ARG(serialized_message, RMW_RET_INVALID_ARGUMENT);
	if (serialized_message->buffer_length < RGAPS_CDR_HEADER || serialized_message->buffer == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "serialized message is shorter than a CDR header");
	uint8_t *buf = NULL;
	size_t n = serialized_message->buffer_length;
	rmw_ret_t rc = rgapsgo_pub_loan(d->go, d->prefix + n, 0, &buf);
	if (rc != RMW_RET_OK || buf == NULL)
		return rc;
	memset(buf, 0, d->prefix);
	memcpy(buf + d->prefix, serialized_message->buffer, n);
	return rgapsgo_pub_publish(d->go, buf);
}

rmw_ret_t rmw_publisher_count_matched_subscriptions(const rmw_publisher_t *publisher, size_t *subscription_count)
{
	RGAPS_GO_CALLS;
	PUB(publisher, d);
	ARG(subscription_count, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_pub_matched(d->go, subscription_count);
}

rmw_ret_t rmw_publisher_get_actual_qos(const rmw_publisher_t *publisher, rmw_qos_profile_t *qos)
{
	PUB(publisher, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_get_gid_for_publisher(const rmw_publisher_t *publisher, rmw_gid_t *gid)
{
	PUB(publisher, d);
	ARG(gid, RMW_RET_INVALID_ARGUMENT);
	gid->implementation_identifier = rgaps_identifier;
	memcpy(gid->data, d->gid, RMW_GID_STORAGE_SIZE);
	return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_assert_liveliness(const rmw_publisher_t *publisher)
{
	PUB(publisher, d);
	(void)d;
	return RMW_RET_OK; /* liveliness is asserted by the process being alive */
}

rmw_ret_t rmw_publisher_wait_for_all_acked(const rmw_publisher_t *publisher, rmw_time_t wait_timeout)
{
	(void)wait_timeout;
	PUB(publisher, d);
	(void)d;
	/* Delivery is synchronous: a published sample is in every matched
	 * subscription's queue when rmw_publish returns. */
	return RMW_RET_OK;
}

rmw_ret_t rmw_init_publisher_allocation(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, rmw_publisher_allocation_t *allocation)
{
	(void)type_support;
	(void)message_bounds;
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "publisher allocations are not supported (publishing allocates nothing per message)");
}

rmw_ret_t rmw_fini_publisher_allocation(rmw_publisher_allocation_t *allocation)
{
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "publisher allocations are not supported");
}

rmw_ret_t rmw_publisher_get_network_flow_endpoints(const rmw_publisher_t *publisher,
	rcutils_allocator_t *allocator, rmw_network_flow_endpoint_array_t *network_flow_endpoint_array)
{
	(void)publisher;
	(void)allocator;
	(void)network_flow_endpoint_array;
	FAIL(RMW_RET_UNSUPPORTED, "network flow endpoints: shared memory has none");
}

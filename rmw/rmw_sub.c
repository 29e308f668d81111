/*
 * librmw_rgaps: subscriptions, and taking messages (deserialised by the
 * walker straight from the topic's pool) or serialized messages (rmw_c.h
 * lists the files). Loans are in rmw_loan.c.
 */
#include "rmw_c.h"

/* ---- subscriptions ---------------------------------------------------------------------------------- */

rmw_subscription_t *rmw_create_subscription(const rmw_node_t *node,
	const rosidl_message_type_support_t *type_support, const char *topic_name,
	const rmw_qos_profile_t *qos_policies, const rmw_subscription_options_t *subscription_options)
{
	RGAPS_GO_CALLS;
	rgaps_endpoint_type et;
	rgaps_node *nd = rgaps_endpoint_begin(node, type_support, topic_name, qos_policies, subscription_options, &et);
	if (nd == NULL)
		return NULL;
	const rgaps_ts *ts = et.ts;
	const rcutils_allocator_t *a = ctx_alloc(node->context);
	rmw_subscription_t *s = rgaps_alloc(a, sizeof *s);
	rgaps_sub *d = rgaps_alloc(a, sizeof *d);
	char *topic = rgaps_strdup(a, topic_name);
	if (s == NULL || d == NULL || topic == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the subscription failed");
		goto fail;
	}
	d->ts = ts;
	d->qos = *qos_policies;
	d->member = rgaps_default_member(ts);
	d->bytes = rgaps_ts_byte_member_count(ts) > 0;
	if (rgapsgo_sub_create(nd->go, topic, et.name, et.hash, &d->qos, subscription_options->ignore_local_publications,
		    d->bytes, d->gid, &d->go) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_SUB;
	d->plain = rgaps_ts_is_plain(ts) && !loans_disabled();
	d->prefix = rgaps_ts_is_plain(ts) ? RGAPS_MSG_PREFIX : 0;
	s->implementation_identifier = rgaps_identifier;
	s->data = d;
	s->topic_name = topic;
	s->options = *subscription_options;
	s->options.content_filter_options = NULL; /* content filtering is not supported */
	s->can_loan_messages = d->plain;
	s->is_cft_enabled = false;
	return s;
fail:
	rgaps_free(a, topic);
	rgaps_free(a, d);
	rgaps_free(a, s);
	return NULL;
}

rmw_ret_t rmw_destroy_subscription(rmw_node_t *node, rmw_subscription_t *subscription)
{
	RGAPS_GO_CALLS;
	NODE(node, nd);
	(void)nd;
	SUB(subscription, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_sub_destroy(d->go);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)subscription->topic_name);
	rgaps_free(&a, d);
	rgaps_free(&a, subscription);
	return rc;
}

/* decode deserialises a taken payload into msg and gives the sample back.
 * A message that does not decode (a buggy or hostile publisher) is dropped,
 * counted and logged once per subscription, and the caller takes the next
 * one (*again set): a failed take would stop an rclcpp executor (it throws),
 * so one bad publisher could stop every subscriber node. */
rmw_ret_t rgaps_decode(uintptr_t sub, uintptr_t smp, const rgaps_ts *ts, const uint8_t *data, size_t size,
	void *msg, int *again)
{
	int r = rgaps_ts_deserialize(ts, data, size, msg);
	char why[256];
	if (r != RGAPS_TS_OK)
		snprintf(why, sizeof why, "%s", rgaps_ts_last_error());
	rmw_ret_t rc = rgapsgo_sample_return(smp);
	*again = 0;
	if (r == RGAPS_TS_BAD_ALLOC)
		return rgaps_ret_of_ts(r);
	if (r != RGAPS_TS_OK) {
		rgapsgo_sub_malformed(sub, why);
		*again = 1;
	}
	return rc;
}

/* take_mode is how a subscription takes: splitting (mode 2, rgapsgo_sub_take)
 * when its type has a device field, else plainly. */
static inline int take_mode(const rgaps_sub *d) { return d->bytes ? 2 : 0; }

/* take_cdr takes the next message of d and deserialises it into msg: from
 * the CDR after d->prefix bytes, or split (rmw_gpu.c) for messages
 * published with a device loan and for device subscriptions. *taken false:
 * nothing queued. */
static rmw_ret_t take_cdr(const rgaps_sub *d, void *msg, bool *taken, rmw_message_info_t *info)
{
	RGAPS_GO_CALLS;
	*taken = false;
	for (;;) {
		uint8_t *data = NULL, *meta = NULL;
		size_t size = 0, meta_len = 0;
		uintptr_t smp = 0;
		rmw_ret_t rc = rgapsgo_sub_take(d->go, d->prefix + RGAPS_CDR_HEADER, &data, &size, &meta, &meta_len, info,
			take_mode(d), &smp);
		if (rc != RMW_RET_OK || smp == 0)
			return rc;
		int again;
		if (meta != NULL || __atomic_load_n(&d->device, __ATOMIC_ACQUIRE))
			rc = rgaps_decode_split(d, smp, data, size, meta, meta_len, msg, &again);
		else
			rc = rgaps_decode(d->go, smp, d->ts, data + d->prefix, size - d->prefix, msg, &again);
		if (again)
			continue;
		if (rc != RMW_RET_OK)
			return rc;
		if (info != NULL)
			info->publisher_gid.implementation_identifier = rgaps_identifier;
		*taken = true;
		return rc;
	}
}

rmw_ret_t rmw_take(const rmw_subscription_t *subscription, void *ros_message, bool *taken,
	rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	SUB(subscription, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	return take_cdr(d, ros_message, taken, NULL);
}

rmw_ret_t rmw_take_with_info(const rmw_subscription_t *subscription, void *ros_message, bool *taken,
	rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	SUB(subscription, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	ARG(message_info, RMW_RET_INVALID_ARGUMENT);
	return take_cdr(d, ros_message, taken, message_info);
}

rmw_ret_t rmw_take_sequence(const rmw_subscription_t *subscription, size_t count,
	rmw_message_sequence_t *message_sequence, rmw_message_info_sequence_t *message_info_sequence,
	size_t *taken, rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	SUB(subscription, d);
	ARG(message_sequence, RMW_RET_INVALID_ARGUMENT);
	ARG(message_info_sequence, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	if (count == 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "count must be greater than 0");
	if (message_sequence->capacity < count)
		FAIL(RMW_RET_INVALID_ARGUMENT, "message_sequence capacity is smaller than count");
	if (message_info_sequence->capacity < count)
		FAIL(RMW_RET_INVALID_ARGUMENT, "message_info_sequence capacity is smaller than count");
	*taken = 0;
	rmw_ret_t rc = RMW_RET_OK;
	size_t n = 0;
	while (n < count) {
		bool one = false;
		rc = take_cdr(d, message_sequence->data[n], &one, &message_info_sequence->data[n]);
		if (rc != RMW_RET_OK || !one)
			break;
		n++;
	}
	message_sequence->size = n;
	message_info_sequence->size = n;
	*taken = n;
	return rc;
}

static rmw_ret_t take_serialized(const rmw_subscription_t *subscription, rmw_serialized_message_t *m,
	bool *taken, rmw_message_info_t *info)
{
	RGAPS_GO_CALLS;
	SUB(subscription, d);
	ARG(m, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	*taken = false;
	uint8_t *data = NULL, *meta = NULL;
	size_t size = 0, meta_len = 0;
	uintptr_t smp = 0;
	rmw_ret_t rc;
	for (;;) {
		rc = rgapsgo_sub_take(d->go, d->prefix + RGAPS_CDR_HEADER, &data, &size, &meta, &meta_len, info,
			take_mode(d), &smp);
		if (rc != RMW_RET_OK || smp == 0)
			return rc;
		if (meta == NULL)
			break;
		/* A split message: rebuilt whole; one that cannot be is dropped
		 * and counted like any malformed message, and the take goes on. */
		rc = rgaps_split_to_cdr(d, data, size, meta, meta_len, m);
		rgapsgo_sample_return(smp);
		if (rc == RMW_RET_OK) {
			if (info != NULL)
				info->publisher_gid.implementation_identifier = rgaps_identifier;
			*taken = true;
			return rc;
		}
		if (rc == RMW_RET_BAD_ALLOC)
			return rc;
		rgapsgo_sub_malformed(d->go, (char *)rgaps_rmw_last_error());
	}
	size_t n = size - d->prefix;
	if (m->buffer_capacity < n) {
		if (!rgaps_allocator_valid(&m->allocator)) {
			rgapsgo_sample_return(smp);
			FAIL(RMW_RET_INVALID_ARGUMENT, "serialized message has no valid allocator");
		}
		uint8_t *b = m->allocator.reallocate(m->buffer, n, m->allocator.state);
		if (b == NULL) {
			rgapsgo_sample_return(smp);
			FAIL(RMW_RET_BAD_ALLOC, "growing the serialized message failed");
		}
		m->buffer = b;
		m->buffer_capacity = n;
	}
	memcpy(m->buffer, data + d->prefix, n);
	m->buffer_length = n;
	if (info != NULL)
		info->publisher_gid.implementation_identifier = rgaps_identifier;
	*taken = true;
	return rgapsgo_sample_return(smp);
}

rmw_ret_t rmw_take_serialized_message(const rmw_subscription_t *subscription,
	rmw_serialized_message_t *serialized_message, bool *taken, rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	return take_serialized(subscription, serialized_message, taken, NULL);
}

rmw_ret_t rmw_take_serialized_message_with_info(const rmw_subscription_t *subscription,
	rmw_serialized_message_t *serialized_message, bool *taken, rmw_message_info_t *message_info,
	rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	ARG(message_info, RMW_RET_INVALID_ARGUMENT);
	return take_serialized(subscription, serialized_message, taken, message_info);
}

rmw_ret_t rmw_subscription_count_matched_publishers(const rmw_subscription_t *subscription, size_t *publisher_count)
{
	RGAPS_GO_CALLS;
	SUB(subscription, d);
	ARG(publisher_count, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_sub_matched(d->go, publisher_count);
}

rmw_ret_t rmw_subscription_get_actual_qos(const rmw_subscription_t *subscription, rmw_qos_profile_t *qos)
{
	SUB(subscription, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_subscription_set_content_filter(rmw_subscription_t *subscription,
	const rmw_subscription_content_filter_options_t *options)
{
	(void)subscription;
	(void)options;
	FAIL(RMW_RET_UNSUPPORTED, "content filtered topics are not supported");
}

rmw_ret_t rmw_subscription_get_content_filter(const rmw_subscription_t *subscription,
	rcutils_allocator_t *allocator, rmw_subscription_content_filter_options_t *options)
{
	(void)subscription;
	(void)allocator;
	(void)options;
	FAIL(RMW_RET_UNSUPPORTED, "content filtered topics are not supported");
}

rmw_ret_t rmw_init_subscription_allocation(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, rmw_subscription_allocation_t *allocation)
{
	(void)type_support;
	(void)message_bounds;
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "subscription allocations are not supported");
}

rmw_ret_t rmw_fini_subscription_allocation(rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "subscription allocations are not supported");
}

rmw_ret_t rmw_subscription_get_network_flow_endpoints(const rmw_subscription_t *subscription,
	rcutils_allocator_t *allocator, rmw_network_flow_endpoint_array_t *network_flow_endpoint_array)
{
	(void)subscription;
	(void)allocator;
	(void)network_flow_endpoint_array;
	FAIL(RMW_RET_UNSUPPORTED, "network flow endpoints: shared memory has none");
}

rmw_ret_t rmw_take_dynamic_message(const rmw_subscription_t *subscription,
	rosidl_dynamic_typesupport_dynamic_data_t *dynamic_message, bool *taken,
	rmw_subscription_allocation_t *allocation)
{
	(void)subscription;
	(void)dynamic_message;
	(void)taken;
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "dynamic messages are not supported");
}

rmw_ret_t rmw_take_dynamic_message_with_info(const rmw_subscription_t *subscription,
	rosidl_dynamic_typesupport_dynamic_data_t *dynamic_message, bool *taken,
	rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation)
{
	(void)subscription;
	(void)dynamic_message;
	(void)taken;
	(void)message_info;
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "dynamic messages are not supported");
}

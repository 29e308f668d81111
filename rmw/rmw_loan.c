/*
 * librmw_rgaps: loans (rmw_c.h lists the files). Only plain types loan
 * (rgaps_ts_is_plain: their memory layout is their CDR layout): a loan is
 * a block of the topic's pool in the plain layout (rmw_impl.h), and the
 * message lies in it at RGAPS_MSG_PREFIX + RGAPS_CDR_HEADER, where the
 * block's 64-byte alignment puts it at its own alignment.
 */
#include "rmw_c.h"

/* ---- publisher side ---------------------------------------------------------- */

rmw_ret_t rmw_borrow_loaned_message(const rmw_publisher_t *publisher,
	const rosidl_message_type_support_t *type_support, void **ros_message)
{
	RGAPS_GO_CALLS;
	PUB(publisher, d);
	ARG(type_support, RMW_RET_INVALID_ARGUMENT);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	if (!publisher->can_loan_messages)
		FAIL(RMW_RET_UNSUPPORTED, "this publisher cannot loan messages (its type is not plain)");
	if (*ros_message != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "*ros_message must be NULL");
	const rgaps_ts *ts = rgaps_ts_resolve(type_support);
	if (ts != d->ts)
		FAIL(RMW_RET_INVALID_ARGUMENT, "type_support is not the publisher's type");
	uint8_t *buf = NULL;
	size_t off = RGAPS_MSG_PREFIX + RGAPS_CDR_HEADER;
	rmw_ret_t rc = rgapsgo_pub_loan(d->go, off + rgaps_ts_size_of(ts), 1, &buf);
	if (rc != RMW_RET_OK)
		return rc;
	if (buf == NULL)
		FAIL(RMW_RET_BAD_ALLOC, "no loan available");
	memset(buf, 0, off);
	buf[RGAPS_MSG_PREFIX + 1] = 1; /* CDR_LE */
	rc = rgaps_ret_of_ts(rgaps_ts_init(ts, buf + off));
	if (rc != RMW_RET_OK) {
		rgapsgo_pub_discard(d->go, buf);
		return rc;
	}
	*ros_message = buf + off;
	return RMW_RET_OK;
}

rmw_ret_t rmw_return_loaned_message_from_publisher(const rmw_publisher_t *publisher, void *loaned_message)
{
	RGAPS_GO_CALLS;
	PUB(publisher, d);
	if (!publisher->can_loan_messages)
		FAIL(RMW_RET_UNSUPPORTED, "this publisher cannot loan messages");
	ARG(loaned_message, RMW_RET_INVALID_ARGUMENT);
	rgaps_ts_fini(d->ts, loaned_message);
	return rgapsgo_pub_discard(d->go, (uint8_t *)loaned_message - RGAPS_MSG_PREFIX - RGAPS_CDR_HEADER);
}

rmw_ret_t rmw_publish_loaned_message(const rmw_publisher_t *publisher, void *ros_message,
	rmw_publisher_allocation_t *allocation)
{
	RGAPS_GO_CALLS;
	(void)allocation;
	PUB(publisher, d);
	if (!publisher->can_loan_messages)
		FAIL(RMW_RET_UNSUPPORTED, "this publisher cannot loan messages");
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_pub_publish(d->go, (uint8_t *)ros_message - RGAPS_MSG_PREFIX - RGAPS_CDR_HEADER);
}

/* ---- subscription side ------------------------------------------------------- */

static rmw_ret_t take_loaned(const rmw_subscription_t *subscription, void **loaned_message, bool *taken,
	rmw_message_info_t *info)
{
	RGAPS_GO_CALLS;
	SUB(subscription, d);
	ARG(loaned_message, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	if (!subscription->can_loan_messages)
		FAIL(RMW_RET_UNSUPPORTED, "this subscription cannot loan messages (its type is not plain)");
	if (*loaned_message != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "*loaned_message must be NULL");
	*taken = false;
	uint8_t *data = NULL, *meta = NULL;
	size_t size = 0, meta_len = 0;
	uintptr_t held = 0;
	size_t off = RGAPS_MSG_PREFIX + RGAPS_CDR_HEADER;
	rmw_ret_t rc = rgapsgo_sub_take(d->go, off + rgaps_ts_plain_size(d->ts), &data, &size, &meta, &meta_len, info, 1, &held);
	if (rc != RMW_RET_OK || held == 0)
		return rc;
	if (info != NULL)
		info->publisher_gid.implementation_identifier = rgaps_identifier;
	*loaned_message = data + off;
	*taken = true;
	return RMW_RET_OK;
}

rmw_ret_t rmw_take_loaned_message(const rmw_subscription_t *subscription, void **loaned_message, bool *taken,
	rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	return take_loaned(subscription, loaned_message, taken, NULL);
}

rmw_ret_t rmw_take_loaned_message_with_info(const rmw_subscription_t *subscription, void **loaned_message,
	bool *taken, rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	ARG(message_info, RMW_RET_INVALID_ARGUMENT);
	return take_loaned(subscription, loaned_message, taken, message_info);
}

rmw_ret_t rmw_return_loaned_message_from_subscription(const rmw_subscription_t *subscription, void *loaned_message)
{
	RGAPS_GO_CALLS;
	SUB(subscription, d);
	if (!subscription->can_loan_messages)
		FAIL(RMW_RET_UNSUPPORTED, "this subscription cannot loan messages");
	ARG(loaned_message, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_sub_return_loan(d->go, (uint8_t *)loaned_message - RGAPS_MSG_PREFIX - RGAPS_CDR_HEADER);
}

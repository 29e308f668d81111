/*
 * librmw_rgaps: serialisation without a topic (rmw_serialize,
 * rmw_deserialize) and the dynamic type support it does not offer
 * (rmw_c.h lists the files).
 */
#include "rmw_c.h"

/* ---- serialisation ------------------------------------------------------------------------------------ */

rmw_ret_t rmw_get_serialized_message_size(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, size_t *size)
{
	(void)type_support;
	(void)message_bounds;
	(void)size;
	FAIL(RMW_RET_UNSUPPORTED, "the serialized size of a type with bounds is not computed");
}

rmw_ret_t rmw_serialize(const void *ros_message, const rosidl_message_type_support_t *type_support,
	rmw_serialized_message_t *serialized_message)
{
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	ARG(type_support, RMW_RET_INVALID_ARGUMENT);
	ARG(serialized_message, RMW_RET_INVALID_ARGUMENT);
	const rgaps_ts *ts = rgaps_ts_resolve(type_support);
	if (ts == NULL) {
		seterrf("rmw_rgaps: type support: %s", rgaps_ts_last_error());
		return RMW_RET_INCORRECT_RMW_IMPLEMENTATION;
	}
	size_t n;
	rmw_ret_t rc = rgaps_ret_of_ts(rgaps_ts_serialized_size(ts, ros_message, &n));
	if (rc != RMW_RET_OK)
		return rc;
	rmw_serialized_message_t *m = serialized_message;
	if (m->buffer_capacity < n) {
		if (!rgaps_allocator_valid(&m->allocator))
			FAIL(RMW_RET_INVALID_ARGUMENT, "serialized message has no valid allocator");
		uint8_t *b = m->allocator.reallocate(m->buffer, n, m->allocator.state);
		if (b == NULL)
			FAIL(RMW_RET_BAD_ALLOC, "growing the serialized message failed");
		m->buffer = b;
		m->buffer_capacity = n;
	}
	size_t used = 0;
	rc = rgaps_ret_of_ts(rgaps_ts_serialize(ts, ros_message, m->buffer, m->buffer_capacity, &used));
	if (rc != RMW_RET_OK)
		return rc;
	m->buffer_length = used;
	return RMW_RET_OK;
}

rmw_ret_t rmw_deserialize(const rmw_serialized_message_t *serialized_message,
	const rosidl_message_type_support_t *type_support, void *ros_message)
{
	ARG(serialized_message, RMW_RET_INVALID_ARGUMENT);
	ARG(type_support, RMW_RET_INVALID_ARGUMENT);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	const rgaps_ts *ts = rgaps_ts_resolve(type_support);
	if (ts == NULL) {
		seterrf("rmw_rgaps: type support: %s", rgaps_ts_last_error());
		return RMW_RET_INCORRECT_RMW_IMPLEMENTATION;
	}
	if (serialized_message->buffer == NULL && serialized_message->buffer_length > 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "serialized message has no buffer");
	return rgaps_ret_of_ts(rgaps_ts_deserialize(ts, serialized_message->buffer, serialized_message->buffer_length,
		ros_message));
}

rmw_ret_t rmw_serialization_support_init(const char *serialization_lib_name, rcutils_allocator_t *allocator,
	rosidl_dynamic_typesupport_serialization_support_t *serialization_support)
{
	(void)serialization_lib_name;
	(void)allocator;
	(void)serialization_support;
	FAIL(RMW_RET_UNSUPPORTED, "dynamic type support is not supported");
}

/*
 * librmw_rgaps: QoS events and new-data callbacks (rmw_c.h lists the
 * files).
 */
#include "rmw_c.h"

/* ---- events and callbacks --------------------------------------------------------------------------------- */

static rmw_ret_t event_init(rmw_event_t *ev, void *data, int pub, rmw_event_type_t t)
{
	RGAPS_GO_CALLS;
	if (!rgapsgo_event_supported(pub, (int)t))
		FAIL(RMW_RET_UNSUPPORTED, "event type not supported for this kind of endpoint");
	ev->implementation_identifier = rgaps_identifier;
	ev->data = data; /* the endpoint's: rmw_event_fini (librmw) frees nothing */
	ev->event_type = t;
	return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_event_init(rmw_event_t *rmw_event, const rmw_publisher_t *publisher,
	rmw_event_type_t event_type)
{
	ARG(rmw_event, RMW_RET_INVALID_ARGUMENT);
	PUB(publisher, d);
	return event_init(rmw_event, d, 1, event_type);
}

rmw_ret_t rmw_subscription_event_init(rmw_event_t *rmw_event, const rmw_subscription_t *subscription,
	rmw_event_type_t event_type)
{
	ARG(rmw_event, RMW_RET_INVALID_ARGUMENT);
	SUB(subscription, d);
	return event_init(rmw_event, d, 0, event_type);
}

bool rmw_event_type_is_supported(rmw_event_type_t rmw_event_type)
{
	RGAPS_GO_CALLS;
	return rgapsgo_event_supported(1, (int)rmw_event_type) || rgapsgo_event_supported(0, (int)rmw_event_type);
}

rmw_ret_t rmw_take_event(const rmw_event_t *event_handle, void *event_info, bool *taken)
{
	RGAPS_GO_CALLS;
	HANDLE(event_handle);
	ARG(event_info, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_take_event((rmw_event_t *)event_handle, event_info, taken);
}

rmw_ret_t rmw_event_set_callback(rmw_event_t *event, rmw_event_callback_t callback, const void *user_data)
{
	RGAPS_GO_CALLS;
	HANDLE(event);
	return rgapsgo_set_event_callback(event, (uintptr_t)callback, (uintptr_t)user_data);
}

rmw_ret_t rmw_subscription_set_on_new_message_callback(rmw_subscription_t *subscription,
	rmw_event_callback_t callback, const void *user_data)
{
	RGAPS_GO_CALLS;
	SUB(subscription, d);
	return rgapsgo_set_message_callback(d->go, (uintptr_t)callback, (uintptr_t)user_data);
}

rmw_ret_t rmw_service_set_on_new_request_callback(rmw_service_t *service, rmw_event_callback_t callback,
	const void *user_data)
{
	RGAPS_GO_CALLS;
	SRV(service, d);
	return rgapsgo_set_message_callback(d->sub, (uintptr_t)callback, (uintptr_t)user_data);
}

rmw_ret_t rmw_client_set_on_new_response_callback(rmw_client_t *client, rmw_event_callback_t callback,
	const void *user_data)
{
	RGAPS_GO_CALLS;
	CLI(client, d);
	return rgapsgo_set_message_callback(d->sub, (uintptr_t)callback, (uintptr_t)user_data);
}

/*
 * librmw_rgaps: clients and services (rmw_c.h lists the files). A service
 * is a pair of topics, /_rgaps_rq<name> (requests) and /_rgaps_rr<name>
 * (responses), in the service payload layout (rmw_impl.h): a client
 * publishes requests and takes the responses that carry its GID; a service
 * takes requests and publishes responses with the request's id. What the
 * two sides share (creating and destroying the pair, taking) is one helper
 * each; they differ only in which topic they publish on.
 */
#include "rmw_c.h"

/* Resolves a service type support and names its request and response
 * types. */
static int resolve_service(const rosidl_service_type_support_t *ts, const rgaps_ts **req, const rgaps_ts **resp,
	char *reqname, char *respname, size_t n)
{
	if (rgaps_ts_resolve_service(ts, req, resp) == NULL || *req == NULL || *resp == NULL) {
		seterrf("rmw_rgaps: service type support: %s", rgaps_ts_last_error());
		return 0;
	}
	if (rgaps_ts_type_name(*req, reqname, n) == NULL || rgaps_ts_type_name(*resp, respname, n) == NULL) {
		rgaps_set_error("rmw_rgaps: service type name too long");
		return 0;
	}
	return 1;
}

/* svc_create is rmw_create_client (client 1) and rmw_create_service
 * (client 0): it checks the arguments (qos_arg names the QoS argument in
 * messages), allocates the handle (handle_size bytes, an rmw_client_t or
 * rmw_service_t, into *handle), its data and the name (*name), and creates
 * the pair of endpoints. NULL with the error set on failure, nothing left
 * allocated. */
static rgaps_svc *svc_create(const rmw_node_t *node, const rosidl_service_type_support_t *type_support,
	const char *service_name, const rmw_qos_profile_t *qos, const char *qos_arg, int client, size_t handle_size,
	void **handle, char **name)
{
	RGAPS_GO_CALLS;
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(service_name, NULL);
	if (qos == NULL) {
		seterrf("rmw_rgaps: %s argument is null", qos_arg);
		return NULL;
	}
	if (service_name[0] == '\0')
		FAIL(NULL, "service_name argument is an empty string");
	rgaps_node *nd = node_data(node);
	if (nd == NULL || !live_context(node->context))
		return NULL;
	const rgaps_ts *req, *resp;
	char reqname[512], respname[512];
	if (!resolve_service(type_support, &req, &resp, reqname, respname, sizeof reqname))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(node->context);
	void *h = rgaps_alloc(a, handle_size);
	rgaps_svc *d = rgaps_alloc(a, sizeof *d);
	char *n = rgaps_strdup(a, service_name);
	if (h == NULL || d == NULL || n == NULL) {
		rgaps_set_error(client ? "rmw_rgaps: allocating the client failed" : "rmw_rgaps: allocating the service failed");
		goto fail;
	}
	d->req = req;
	d->resp = resp;
	d->req_qos = *qos;
	d->resp_qos = *qos;
	uint8_t hashes[2][RGAPS_TYPE_HASH_SIZE];
	rgaps_msg_type_hash(type_support->request_typesupport, hashes[0]);
	rgaps_msg_type_hash(type_support->response_typesupport, hashes[1]);
	if (rgapsgo_service_pair(nd->go, client, n, reqname, respname, hashes[0], hashes[1], &d->req_qos, &d->resp_qos,
		    d->gid, &d->go, &d->pub, &d->sub) != RMW_RET_OK)
		goto fail;
	d->magic = client ? RGAPS_MAGIC_CLI : RGAPS_MAGIC_SRV;
	*handle = h;
	*name = n;
	return d;
fail:
	rgaps_free(a, n);
	rgaps_free(a, d);
	rgaps_free(a, h);
	return NULL;
}

/* svc_destroy is what rmw_destroy_client and rmw_destroy_service do once
 * they checked their arguments: it closes the pair and frees the handle,
 * its data d and its name. */
static rmw_ret_t svc_destroy(const rmw_node_t *node, rgaps_svc *d, void *handle, const char *name)
{
	RGAPS_GO_CALLS;
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_service_pair_destroy(d->go, d->pub, d->sub);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)name);
	rgaps_free(&a, d);
	rgaps_free(&a, handle);
	return rc;
}

/* take_srv takes the next payload of a service topic (request or response)
 * into msg; with want_gid, payloads for other clients are dropped. */
static rmw_ret_t take_srv(uintptr_t sub, const rgaps_ts *ts, const uint8_t *want_gid, rmw_service_info_t *header,
	void *msg, bool *taken)
{
	RGAPS_GO_CALLS;
	*taken = false;
	for (;;) {
		uint8_t *data = NULL;
		size_t size = 0;
		uintptr_t smp = 0;
		rmw_message_info_t info;
		memset(&info, 0, sizeof info);
		uint8_t *meta = NULL;
		size_t meta_len = 0;
		rmw_ret_t rc = rgapsgo_sub_take(sub, RGAPS_SRV_PREFIX + RGAPS_CDR_HEADER, &data, &size, &meta, &meta_len, &info, 0, &smp);
		if (rc != RMW_RET_OK || smp == 0)
			return rc;
		if (want_gid != NULL && memcmp(data, want_gid, 16) != 0) {
			rgapsgo_sample_return(smp);
			continue;
		}
		memcpy(header->request_id.writer_guid, data, 16);
		memcpy(&header->request_id.sequence_number, data + 16, 8);
		header->source_timestamp = info.source_timestamp;
		header->received_timestamp = info.received_timestamp;
		int again;
		rc = rgaps_decode(sub, smp, ts, data + RGAPS_SRV_PREFIX, size - RGAPS_SRV_PREFIX, msg, &again);
		if (again)
			continue;
		if (rc != RMW_RET_OK)
			return rc;
		*taken = true;
		return rc;
	}
}

/* ---- clients ----------------------------------------------------------------- */

rmw_client_t *rmw_create_client(const rmw_node_t *node, const rosidl_service_type_support_t *type_support,
	const char *service_name, const rmw_qos_profile_t *qos_policies)
{
	void *h;
	char *name;
	rgaps_svc *d = svc_create(node, type_support, service_name, qos_policies, "qos_policies", 1, sizeof(rmw_client_t),
		&h, &name);
	if (d == NULL)
		return NULL;
	rmw_client_t *c = h;
	c->implementation_identifier = rgaps_identifier;
	c->data = d;
	c->service_name = name;
	return c;
}

rmw_ret_t rmw_destroy_client(rmw_node_t *node, rmw_client_t *client)
{
	NODE(node, nd);
	(void)nd;
	CLI(client, d);
	return svc_destroy(node, d, client, client->service_name);
}

rmw_ret_t rmw_send_request(const rmw_client_t *client, const void *ros_request, int64_t *sequence_id)
{
	CLI(client, d);
	ARG(ros_request, RMW_RET_INVALID_ARGUMENT);
	ARG(sequence_id, RMW_RET_INVALID_ARGUMENT);
	int64_t seq = __atomic_add_fetch(&d->next_seq, 1, __ATOMIC_RELAXED);
	uint8_t head[24];
	memcpy(head, d->gid, 16);
	memcpy(head + 16, &seq, 8);
	rmw_ret_t rc = rgaps_publish_cdr(d->pub, d->req, ros_request, RGAPS_SRV_PREFIX, head, sizeof head);
	if (rc == RMW_RET_OK)
		*sequence_id = seq;
	return rc;
}

rmw_ret_t rmw_take_response(const rmw_client_t *client, rmw_service_info_t *request_header, void *ros_response,
	bool *taken)
{
	CLI(client, d);
	ARG(request_header, RMW_RET_INVALID_ARGUMENT);
	ARG(ros_response, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	return take_srv(d->sub, d->resp, d->gid, request_header, ros_response, taken);
}

rmw_ret_t rmw_client_request_publisher_get_actual_qos(const rmw_client_t *client, rmw_qos_profile_t *qos)
{
	CLI(client, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->req_qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_client_response_subscription_get_actual_qos(const rmw_client_t *client, rmw_qos_profile_t *qos)
{
	CLI(client, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->resp_qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_get_gid_for_client(const rmw_client_t *client, rmw_gid_t *gid)
{
	CLI(client, d);
	ARG(gid, RMW_RET_INVALID_ARGUMENT);
	gid->implementation_identifier = rgaps_identifier;
	memcpy(gid->data, d->gid, RMW_GID_STORAGE_SIZE);
	return RMW_RET_OK;
}

/* ---- services ---------------------------------------------------------------- */

rmw_service_t *rmw_create_service(const rmw_node_t *node, const rosidl_service_type_support_t *type_support,
	const char *service_name, const rmw_qos_profile_t *qos_profile)
{
	void *h;
	char *name;
	rgaps_svc *d = svc_create(node, type_support, service_name, qos_profile, "qos_profile", 0, sizeof(rmw_service_t),
		&h, &name);
	if (d == NULL)
		return NULL;
	rmw_service_t *s = h;
	s->implementation_identifier = rgaps_identifier;
	s->data = d;
	s->service_name = name;
	return s;
}

rmw_ret_t rmw_destroy_service(rmw_node_t *node, rmw_service_t *service)
{
	NODE(node, nd);
	(void)nd;
	SRV(service, d);
	return svc_destroy(node, d, service, service->service_name);
}

rmw_ret_t rmw_take_request(const rmw_service_t *service, rmw_service_info_t *request_header, void *ros_request,
	bool *taken)
{
	SRV(service, d);
	ARG(request_header, RMW_RET_INVALID_ARGUMENT);
	ARG(ros_request, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	return take_srv(d->sub, d->req, NULL, request_header, ros_request, taken);
}

rmw_ret_t rmw_send_response(const rmw_service_t *service, rmw_request_id_t *request_header, void *ros_response)
{
	SRV(service, d);
	ARG(request_header, RMW_RET_INVALID_ARGUMENT);
	ARG(ros_response, RMW_RET_INVALID_ARGUMENT);
	uint8_t head[24];
	memcpy(head, request_header->writer_guid, 16);
	memcpy(head + 16, &request_header->sequence_number, 8);
	return rgaps_publish_cdr(d->pub, d->resp, ros_response, RGAPS_SRV_PREFIX, head, sizeof head);
}

rmw_ret_t rmw_service_request_subscription_get_actual_qos(const rmw_service_t *service, rmw_qos_profile_t *qos)
{
	SRV(service, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->req_qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_service_response_publisher_get_actual_qos(const rmw_service_t *service, rmw_qos_profile_t *qos)
{
	SRV(service, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->resp_qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_service_server_is_available(const rmw_node_t *node, const rmw_client_t *client, bool *is_available)
{
	RGAPS_GO_CALLS;
	/* NULL arguments are RMW_RET_ERROR here, as test_rmw_implementation
	 * (and every DDS-based rmw) has it */
	ARG(node, RMW_RET_ERROR);
	ARG(client, RMW_RET_ERROR);
	ARG(is_available, RMW_RET_ERROR);
	NODE(node, nd);
	(void)nd;
	CLI(client, d);
	return rgapsgo_service_available(d->go, is_available);
}

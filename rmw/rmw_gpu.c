/*
 * librmw_rgaps: GPU-loaned messages (include/rgaps/gpu.h, the exported
 * rgaps_gpu_*_v1 functions; docs/ARCHITECTURE.md §3.12), and the split
 * layout's side of taking: a message published with a device loan has the
 * device field's bytes as its payload and the other fields in its meta
 * block (rmw_impl.h, RGAPS_META_HEADER).
 */
#include "rmw_c.h"

/* ---- the split layout -------------------------------------------------------------- */

/* meta_member checks a meta block's header against the subscription's type
 * and gives the device field it names; 0 with why[] filled if it is not
 * one. */
static int meta_member(const uint8_t *meta, size_t n, uint32_t *member, char *why, size_t wn)
{
	if (n < RGAPS_META_HEADER + RGAPS_CDR_HEADER || memcmp(meta, "RGDM", 4) != 0) {
		snprintf(why, wn, "meta block of %zu bytes without the RGDM header", n);
		return 0;
	}
	if (meta[4] != RGAPS_META_VERSION) {
		snprintf(why, wn, "meta block version %u (this library reads %d)", meta[4], RGAPS_META_VERSION);
		return 0;
	}
	uint32_t m = (uint32_t)meta[8] | (uint32_t)meta[9] << 8 | (uint32_t)meta[10] << 16 | (uint32_t)meta[11] << 24;
	*member = m; /* checked by the walker against the type's members */
	return 1;
}

/* Splits take: msg gets the message's fields from the meta block (or, for
 * a device subscription, from the payload's CDR), and its device field
 * either the payload's bytes (host readers) or a ticket for a view of them
 * (device subscriptions, which then keep the sample). Malformed messages
 * are dropped and counted as in rgaps_decode (*again set). */
rmw_ret_t rgaps_decode_split(const rgaps_sub *d, uintptr_t smp, const uint8_t *data, size_t size,
	const uint8_t *meta, size_t meta_len, void *msg, int *again)
{
	char why[256] = "";
	int32_t own = __atomic_load_n(&d->member, __ATOMIC_ACQUIRE);
	int device = __atomic_load_n(&d->device, __ATOMIC_ACQUIRE);
	uint32_t member = (uint32_t)own;
	size_t off = 0, len = size, doff = 0, dlen = 0;
	int r = RGAPS_TS_ERROR;
	*again = 0;
	if (meta == NULL) { /* a whole message in CDR: a device subscription's view points into it */
		if (data == NULL || own < 0)
			snprintf(why, sizeof why, "%s", data == NULL ? "a message without host bytes or fields" : "no device field");
		else if ((r = rgaps_ts_deserialize_detached(d->ts, data + d->prefix, size - d->prefix, msg, member, &doff,
				  &dlen)) == RGAPS_TS_OK)
			off = d->prefix + doff, len = dlen;
	} else if (meta_member(meta, meta_len, &member, why, sizeof why)) {
		r = rgaps_ts_deserialize_detached(d->ts, meta + RGAPS_META_HEADER, meta_len - RGAPS_META_HEADER, msg, member,
			&doff, &dlen);
		if (r == RGAPS_TS_OK && !device) {
			if (data == NULL) {
				snprintf(why, sizeof why, "the device field's bytes have no host copy");
				r = RGAPS_TS_ERROR;
			} else {
				r = rgaps_ts_set_member_bytes(d->ts, msg, member, data, size);
			}
		}
	}
	if (r != RGAPS_TS_OK && why[0] == 0)
		snprintf(why, sizeof why, "%s", rgaps_ts_last_error());
	if (r == RGAPS_TS_OK && device) {
		uint8_t ticket[RGAPS_GPU_TICKET_SIZE];
		rmw_ret_t rc = rgapsgo_sub_keep_view(d->go, smp, off, len, ticket); /* consumes smp */
		if (rc != RMW_RET_OK) {
			/* Undeliverable here (device memory in a process without a GPU):
			 * dropped, counted and logged once like a malformed message, so
			 * an executor goes on with the next one. */
			rgapsgo_sub_malformed(d->go, (char *)rgaps_rmw_last_error());
			*again = 1;
			return RMW_RET_OK;
		}
		/* On failure the view stays unclaimed and expires (gpu.go). */
		return rgaps_ret_of_ts(rgaps_ts_set_member_bytes(d->ts, msg, member, ticket, sizeof ticket));
	}
	rmw_ret_t rc = rgapsgo_sample_return(smp);
	if (r == RGAPS_TS_BAD_ALLOC)
		return rgaps_ret_of_ts(r);
	if (r != RGAPS_TS_OK) {
		rgapsgo_sub_malformed(d->go, why);
		*again = 1;
	}
	return rc;
}

/* rgaps_split_to_cdr writes a split message as the whole message's CDR into
 * m (rmw_take_serialized_message): the fields from the meta block, the
 * device field from the payload's host bytes. */
rmw_ret_t rgaps_split_to_cdr(const rgaps_sub *d, const uint8_t *data, size_t size, const uint8_t *meta,
	size_t meta_len, rmw_serialized_message_t *m)
{
	char why[256] = "";
	uint32_t member;
	if (data == NULL)
		FAIL(RMW_RET_ERROR, "the message's device field has no host copy");
	if (!meta_member(meta, meta_len, &member, why, sizeof why)) {
		seterrf("rmw_rgaps: %s", why);
		return RMW_RET_ERROR;
	}
	void *msg = calloc(1, rgaps_ts_size_of(d->ts));
	if (msg == NULL)
		FAIL(RMW_RET_BAD_ALLOC, "allocating a message failed");
	int r = rgaps_ts_init(d->ts, msg);
	if (r != RGAPS_TS_OK) {
		free(msg);
		return rgaps_ret_of_ts(r);
	}
	size_t doff, dlen, n = 0;
	r = rgaps_ts_deserialize_detached(d->ts, meta + RGAPS_META_HEADER, meta_len - RGAPS_META_HEADER, msg, member, &doff, &dlen);
	if (r == RGAPS_TS_OK)
		r = rgaps_ts_set_member_bytes(d->ts, msg, member, data, size);
	if (r == RGAPS_TS_OK)
		r = rgaps_ts_serialized_size(d->ts, msg, &n);
	rmw_ret_t rc = rgaps_ret_of_ts(r);
	if (rc == RMW_RET_OK && m->buffer_capacity < n) {
		uint8_t *b = rgaps_allocator_valid(&m->allocator) ? m->allocator.reallocate(m->buffer, n, m->allocator.state) : NULL;
		if (b == NULL) {
			rgaps_set_error("rmw_rgaps: growing the serialized message failed");
			rc = RMW_RET_BAD_ALLOC;
		} else {
			m->buffer = b;
			m->buffer_capacity = n;
		}
	}
	if (rc == RMW_RET_OK) {
		size_t used = 0;
		rc = rgaps_ret_of_ts(rgaps_ts_serialize(d->ts, msg, m->buffer, m->buffer_capacity, &used));
		m->buffer_length = used;
	}
	rgaps_ts_fini(d->ts, msg);
	free(msg);
	return rc;
}

/* ---- the exported functions (rgaps/gpu.h) ---------------------------------------------- */

uint32_t rgaps_gpu_abi_version(void) { return RGAPS_GPU_ABI_VERSION; }

const char *rgaps_gpu_last_error_v1(void) { return rgaps_rmw_last_error(); }

int32_t rgaps_gpu_publisher_borrow_v1(const void *publisher, uint64_t size, rgaps_gpu_loan_v1 *loan)
{
	RGAPS_GO_CALLS;
	const rmw_publisher_t *p = publisher;
	PUB(p, d);
	ARG(loan, RMW_RET_INVALID_ARGUMENT);
	memset(loan, 0, sizeof *loan);
	if (!d->bytes)
		FAIL(RMW_RET_INVALID_ARGUMENT, "the publisher's message type has no uint8[] field to loan");
	return rgapsgo_gpu_borrow(d->go, size, loan);
}

int32_t rgaps_gpu_publisher_discard_v1(const void *publisher, rgaps_gpu_loan_v1 *loan)
{
	RGAPS_GO_CALLS;
	const rmw_publisher_t *p = publisher;
	PUB(p, d);
	ARG(loan, RMW_RET_INVALID_ARGUMENT);
	rmw_ret_t rc = rgapsgo_gpu_discard(d->go, loan->id);
	loan->id = 0;
	return rc;
}

/* meta_of serialises msg without its device field after the meta header:
 * a malloc'd block (the caller frees it) of *n bytes, or NULL (error set). */
/* meta_header allocates n bytes (the caller frees them) and writes the
 * meta header naming member; NULL (error set) if allocation fails. */
static uint8_t *meta_header(uint32_t member, size_t n)
{
	uint8_t *b = calloc(1, n);
	if (b == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the message's fields failed");
		return NULL;
	}
	memcpy(b, "RGDM", 4);
	b[4] = RGAPS_META_VERSION;
	for (int i = 0; i < 4; i++)
		b[8 + i] = (uint8_t)(member >> (8 * i));
	return b;
}

static uint8_t *meta_of(const rgaps_pub *d, const void *msg, uint32_t member, size_t *n, rmw_ret_t *rc)
{
	size_t cdr;
	*rc = rgaps_ret_of_ts(rgaps_ts_serialized_size_detached(d->ts, msg, member, &cdr));
	if (*rc != RMW_RET_OK)
		return NULL;
	uint8_t *b = meta_header(member, RGAPS_META_HEADER + cdr);
	if (b == NULL) {
		*rc = RMW_RET_BAD_ALLOC;
		return NULL;
	}
	size_t used = 0;
	*rc = rgaps_ret_of_ts(rgaps_ts_serialize_detached(d->ts, msg, member, b + RGAPS_META_HEADER, cdr, &used));
	if (*rc != RMW_RET_OK) {
		free(b);
		return NULL;
	}
	*n = RGAPS_META_HEADER + used;
	return b;
}

/* publish_split publishes loan id with the fields of ros_message, or of
 * cdr[0:len] when ros_message is NULL; the loan is consumed. */
static rmw_ret_t publish_split(const rgaps_pub *d, const void *ros_message, const uint8_t *cdr, size_t len,
	const char *field, uint64_t id, void *stream)
{
	rmw_ret_t rc = RMW_RET_OK;
	uint32_t member = (uint32_t)d->member;
	if (ros_message == NULL && (cdr == NULL || len < RGAPS_CDR_HEADER)) {
		rgaps_set_error("rmw_rgaps: no message (ros_message null, or cdr null or shorter than its header)");
		rc = RMW_RET_INVALID_ARGUMENT;
	} else if (field != NULL || d->member < 0) {
		/* named, or no default (none, or several and none named data): the walker says which */
		rc = rgaps_ret_of_ts(rgaps_ts_byte_member(d->ts, field, &member));
	}
	size_t n = 0;
	uint8_t *meta = NULL;
	if (rc == RMW_RET_OK && ros_message != NULL) {
		meta = meta_of(d, ros_message, member, &n, &rc);
	} else if (rc == RMW_RET_OK) {
		n = RGAPS_META_HEADER + len;
		if ((meta = meta_header(member, n)) != NULL)
			memcpy(meta + RGAPS_META_HEADER, cdr, len);
		else
			rc = RMW_RET_BAD_ALLOC;
	}
	if (meta == NULL) {
		char keep[512];
		snprintf(keep, sizeof keep, "%s", rgaps_rmw_last_error());
		rgapsgo_gpu_discard(d->go, id);
		rgaps_set_error(keep);
		return rc;
	}
	rc = rgapsgo_gpu_publish(d->go, id, meta, n, (uintptr_t)stream, stream == RGAPS_GPU_SYNC_CONTEXT);
	free(meta);
	return rc;
}

int32_t rgaps_gpu_publisher_publish_v1(const void *publisher, const void *ros_message, const char *field,
	rgaps_gpu_loan_v1 *loan, void *stream)
{
	RGAPS_GO_CALLS;
	const rmw_publisher_t *p = publisher;
	PUB(p, d);
	ARG(loan, RMW_RET_INVALID_ARGUMENT);
	uint64_t id = loan->id;
	loan->id = 0; /* consumed whatever the result */
	if (ros_message == NULL) {
		rgapsgo_gpu_discard(d->go, id);
		FAIL(RMW_RET_INVALID_ARGUMENT, "ros_message argument is null");
	}
	return publish_split(d, ros_message, NULL, 0, field, id, stream);
}

int32_t rgaps_gpu_publisher_publish_serialized_v1(const void *publisher, const uint8_t *cdr, size_t len,
	const char *field, rgaps_gpu_loan_v1 *loan, void *stream)
{
	RGAPS_GO_CALLS;
	const rmw_publisher_t *p = publisher;
	PUB(p, d);
	ARG(loan, RMW_RET_INVALID_ARGUMENT);
	uint64_t id = loan->id;
	loan->id = 0;
	return publish_split(d, NULL, cdr, len, field, id, stream);
}

int32_t rgaps_gpu_subscription_set_device_v1(const void *subscription, const char *field)
{
	RGAPS_GO_CALLS;
	const rmw_subscription_t *s = subscription;
	SUB(s, d);
	if (!d->bytes)
		FAIL(RMW_RET_INVALID_ARGUMENT, "the subscription's message type has no uint8[] field");
	uint32_t member = (uint32_t)d->member;
	if (field != NULL || d->member < 0) {
		rmw_ret_t rc = rgaps_ret_of_ts(rgaps_ts_byte_member(d->ts, field, &member));
		if (rc != RMW_RET_OK)
			return rc;
	}
	rmw_ret_t rc = rgapsgo_sub_set_device(d->go);
	if (rc != RMW_RET_OK)
		return rc;
	__atomic_store_n(&d->member, (int32_t)member, __ATOMIC_RELEASE);
	__atomic_store_n(&d->device, 1, __ATOMIC_RELEASE);
	return RMW_RET_OK;
}

int32_t rgaps_gpu_subscription_claim_v1(const void *subscription, const uint8_t *ticket, size_t ticket_len,
	rgaps_gpu_view_v1 *view)
{
	RGAPS_GO_CALLS;
	const rmw_subscription_t *s = subscription;
	SUB(s, d);
	ARG(ticket, RMW_RET_INVALID_ARGUMENT);
	ARG(view, RMW_RET_INVALID_ARGUMENT);
	memset(view, 0, sizeof *view);
	return rgapsgo_sub_claim(d->go, (uint8_t *)ticket, ticket_len, view);
}

int32_t rgaps_gpu_subscription_claim_message_v1(const void *subscription, void *ros_message, rgaps_gpu_view_v1 *view)
{
	RGAPS_GO_CALLS;
	const rmw_subscription_t *s = subscription;
	SUB(s, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	ARG(view, RMW_RET_INVALID_ARGUMENT);
	memset(view, 0, sizeof *view);
	int32_t member = __atomic_load_n(&d->member, __ATOMIC_ACQUIRE);
	if (member < 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "not a device subscription with a device field (rgaps_gpu_subscription_set_device_v1)");
	const uint8_t *t = NULL;
	size_t n = 0;
	rmw_ret_t rc = rgaps_ret_of_ts(rgaps_ts_member_bytes(d->ts, ros_message, (uint32_t)member, &t, &n));
	if (rc != RMW_RET_OK)
		return rc;
	if (n == 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "the message's device field is empty: no ticket (not taken by a device subscription, or claimed already)");
	rc = rgapsgo_sub_claim(d->go, (uint8_t *)t, n, view);
	if (rc == RMW_RET_OK)
		rgaps_ts_set_member_bytes(d->ts, ros_message, (uint32_t)member, NULL, 0);
	return rc;
}

int32_t rgaps_gpu_subscription_release_v1(const void *subscription, rgaps_gpu_view_v1 *view)
{
	RGAPS_GO_CALLS;
	const rmw_subscription_t *s = subscription;
	SUB(s, d);
	ARG(view, RMW_RET_INVALID_ARGUMENT);
	rmw_ret_t rc = rgapsgo_sub_release(d->go, view->id);
	memset(view, 0, sizeof *view);
	return rc;
}

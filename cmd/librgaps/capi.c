/*
 * The C half of librgaps: the public functions of include/rgaps.h. They
 * check what C alone can check, allocate and free the handle structs, keep
 * the thread-local error state, and call the Go half (rgapsgo_*, see the Go
 * files) for everything else. Compiling this file against rgaps.h checks
 * every public signature against the header.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi.h"
#include "_cgo_export.h"

/* ---- thread-local error state ------------------------------------------ */

static __thread int tls_code;
static __thread char tls_msg[512];

/* begin starts a call: the previous call's state is forgotten. */
static void begin(void)
{
	tls_code = RGAPS_OK;
	tls_msg[0] = '\0';
}

/* finish records a call's result and returns it. */
static int finish(int code)
{
	tls_code = code;
	if (code == RGAPS_OK)
		tls_msg[0] = '\0';
	return code;
}

static int fail(int code, const char *msg)
{
	rgaps__set_message(msg);
	return finish(code);
}

/* finish_value is finish for a call that returns a value (a count, a
 * memory kind) or, when negative, a code. */
static int finish_value(int rc)
{
	finish(rc < 0 ? rc : RGAPS_OK);
	return rc;
}

void rgaps__set_message(const char *msg)
{
	if (msg == NULL) {
		tls_msg[0] = '\0';
		return;
	}
	snprintf(tls_msg, sizeof tls_msg, "%s", msg);
}

int rgaps_last_error(void) { return tls_code; }

const char *rgaps_last_error_message(void)
{
	if (tls_msg[0] != '\0')
		return tls_msg;
	return rgaps_strerror(tls_code);
}

const char *rgaps_strerror(int code)
{
	switch (code) {
	case RGAPS_OK: return "success";
	case RGAPS_ERROR: return "rgaps: operation failed";
	case RGAPS_EINVAL: return "rgaps: invalid argument";
	case RGAPS_EBADHANDLE: return "rgaps: NULL, unknown or destroyed handle";
	case RGAPS_ENOTSUP: return "rgaps: not supported on this machine (no usable GPU)";
	case RGAPS_ETIMEDOUT: return "rgaps: no message within the timeout";
	case RGAPS_ECLOSED: return "rgaps: handle destroyed during the call";
	case RGAPS_EPOOL: return "rgaps: topic pool exhausted";
	case RGAPS_ETOOLARGE: return "rgaps: message larger than the topic pool";
	case RGAPS_EQUEUEFULL: return "rgaps: reliable subscriber queue full";
	case RGAPS_ETYPE: return "rgaps: topic exists with another message type";
	case RGAPS_ELIMIT: return "rgaps: too many endpoints or held messages";
	case RGAPS_ECORRUPT: return "rgaps: corrupt or incompatible shared-memory segment";
	case RGAPS_EDEVICE: return "rgaps: CUDA call failed";
	case RGAPS_EFAULT: return "rgaps: bad address";
	case RGAPS_ENOMEM: return "rgaps: out of host memory";
	case RGAPS_ENOMSG: return "rgaps: no message held";
	case RGAPS_EINTERNAL: return "rgaps: internal error";
	case RGAPS_ENODAEMON: return "rgaps: no GPU pool daemon (rgaps daemon) and none could be started";
	}
	return "unknown rgaps error code";
}

/* ---- handles ---------------------------------------------------------------- */

/* as_handle is a publisher or subscriber handle as the Go half takes it (see
 * capi.h). The conversion reads nothing: Go checks the address first. */
static struct rgaps_handle *as_handle(void *p) { return p; }

/* handle_init makes a handle (marked with magic) for a new endpoint that
 * go_init creates. */
static struct rgaps_handle *handle_init(const char *topic_name, int memory, uint32_t magic,
					int (*go_init)(struct rgaps_handle *, char *, int))
{
	struct rgaps_handle *h;
	int rc;

	begin();
	if (topic_name == NULL) {
		fail(RGAPS_EINVAL, "rgaps: topic_name is NULL");
		return NULL;
	}
	h = calloc(1, sizeof *h);
	if (h == NULL) {
		finish(RGAPS_ENOMEM);
		return NULL;
	}
	rc = go_init(h, (char *)topic_name, memory);
	if (rc != RGAPS_OK) {
		free(h);
		finish(rc);
		return NULL;
	}
	h->magic = magic;
	finish(RGAPS_OK);
	return h;
}

/* handle_destroy destroys the endpoint of h with go_destroy, and frees h
 * once Go forgot it. */
static void handle_destroy(struct rgaps_handle *h, int (*go_destroy)(struct rgaps_handle *, int *))
{
	int removed = 0, rc;
	begin();
	rc = go_destroy(h, &removed);
	if (removed) {
		/* Go forgot the handle (whatever closing reported): free it. */
		h->magic = 0;
		free(h);
	}
	finish(rc);
}

/* ---- publisher ------------------------------------------------------------- */

rgaps_publisher_t *rgaps_publisher_init_memory(const char *topic_name, int memory)
{
	return (rgaps_publisher_t *)handle_init(topic_name, memory, RGAPS_PUB_MAGIC, rgapsgo_publisher_init);
}

rgaps_publisher_t *publisher_init(char *topic_name)
{
	return rgaps_publisher_init_memory(topic_name, RGAPS_MEMORY_AUTO);
}

int publisher_push(rgaps_publisher_t *publisher, size_t message_size, void *device_pointer)
{
	begin();
	return finish(rgapsgo_publisher_push(as_handle(publisher), message_size, device_pointer));
}

int rgaps_publisher_matched(rgaps_publisher_t *publisher)
{
	begin();
	return finish_value(rgapsgo_publisher_matched(as_handle(publisher)));
}

int rgaps_publisher_memory(rgaps_publisher_t *publisher)
{
	begin();
	return finish_value(rgapsgo_publisher_memory(as_handle(publisher)));
}

void publisher_destroy(rgaps_publisher_t *publisher)
{
	handle_destroy(as_handle(publisher), rgapsgo_publisher_destroy);
}

/* ---- subscriber ------------------------------------------------------------ */

rgaps_subscriber_t *rgaps_subscriber_init_memory(const char *topic_name, int memory)
{
	return (rgaps_subscriber_t *)handle_init(topic_name, memory, RGAPS_SUB_MAGIC, rgapsgo_subscriber_init);
}

rgaps_subscriber_t *subscriber_init(char *topic_name)
{
	return rgaps_subscriber_init_memory(topic_name, RGAPS_MEMORY_AUTO);
}

int rgaps_subscriber_set_timeout(rgaps_subscriber_t *subscriber, int64_t timeout_ms)
{
	begin();
	return finish(rgapsgo_subscriber_set_timeout(as_handle(subscriber), timeout_ms));
}

void *subscriber_pull(rgaps_subscriber_t *subscriber)
{
	uintptr_t p = 0;
	int rc;

	begin();
	rc = rgapsgo_subscriber_pull(as_handle(subscriber), &p);
	finish(rc);
	if (rc != RGAPS_OK)
		return NULL;
	return (void *)p;
}

int rgaps_subscriber_message_info(rgaps_subscriber_t *subscriber, rgaps_message_info_t *info)
{
	rgaps_message_info_t tmp;
	int rc;

	begin();
	memset(&tmp, 0, sizeof tmp);
	rc = rgapsgo_subscriber_info(as_handle(subscriber), &tmp);
	if (rc == RGAPS_OK && info == NULL)
		return fail(RGAPS_EINVAL, "rgaps: info is NULL");
	if (rc == RGAPS_OK)
		*info = tmp;
	return finish(rc);
}

size_t rgaps_subscriber_message_size(rgaps_subscriber_t *subscriber)
{
	rgaps_message_info_t tmp;
	int rc;

	begin();
	rc = rgapsgo_subscriber_info(as_handle(subscriber), &tmp);
	finish(rc);
	return rc == RGAPS_OK ? tmp.size : 0;
}

int rgaps_subscriber_release(rgaps_subscriber_t *subscriber)
{
	begin();
	return finish(rgapsgo_subscriber_release(as_handle(subscriber)));
}

int rgaps_subscriber_matched(rgaps_subscriber_t *subscriber)
{
	begin();
	return finish_value(rgapsgo_subscriber_matched(as_handle(subscriber)));
}

int rgaps_subscriber_memory(rgaps_subscriber_t *subscriber)
{
	begin();
	return finish_value(rgapsgo_subscriber_memory(as_handle(subscriber)));
}

void subscriber_destroy(rgaps_subscriber_t *subscriber)
{
	handle_destroy(as_handle(subscriber), rgapsgo_subscriber_destroy);
}

/* ---- device and host helpers -------------------------------------------- */

int rgaps_gpu_available(void)
{
	int rc;
	begin();
	rc = rgapsgo_gpu_available();
	finish(RGAPS_OK);
	return rc;
}

int rgaps_device_alloc(size_t size, void **device_pointer)
{
	uintptr_t p = 0;
	int rc;

	begin();
	if (device_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: device_pointer is NULL");
	if (size == 0)
		return fail(RGAPS_EINVAL, "rgaps: size is 0");
	rc = rgapsgo_device_alloc(size, &p);
	if (rc == RGAPS_OK)
		*device_pointer = (void *)p;
	return finish(rc);
}

int rgaps_device_free(void *device_pointer)
{
	begin();
	if (device_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: device_pointer is NULL");
	return finish(rgapsgo_device_free((uintptr_t)device_pointer));
}

int rgaps_device_fill_pattern(void *device_pointer, size_t size, uint32_t seed)
{
	begin();
	if (device_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: device_pointer is NULL");
	return finish(rgapsgo_device_fill_pattern((uintptr_t)device_pointer, size, seed));
}

int rgaps_device_checksum(const void *device_pointer, size_t size, uint64_t *checksum)
{
	uint64_t sum = 0;
	int rc;

	begin();
	if (device_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: device_pointer is NULL");
	if (checksum == NULL)
		return fail(RGAPS_EINVAL, "rgaps: checksum is NULL");
	rc = rgapsgo_device_checksum((uintptr_t)device_pointer, size, &sum);
	if (rc == RGAPS_OK)
		*checksum = sum;
	return finish(rc);
}

int rgaps_host_fill_pattern(void *host_pointer, size_t size, uint32_t seed)
{
	uint8_t *b = host_pointer;
	size_t i;

	begin();
	if (host_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: host_pointer is NULL");
	for (i = 0; i < size; i++)
		b[i] = (uint8_t)(((uint64_t)i * 2654435761u) ^ (uint64_t)seed);
	return finish(RGAPS_OK);
}

int rgaps_host_checksum(const void *host_pointer, size_t size, uint64_t *checksum)
{
	const uint8_t *b = host_pointer;
	uint64_t sum = 0, m = 0;
	size_t i;

	begin();
	if (host_pointer == NULL)
		return fail(RGAPS_EINVAL, "rgaps: host_pointer is NULL");
	if (checksum == NULL)
		return fail(RGAPS_EINVAL, "rgaps: checksum is NULL");
	for (i = 0; i < size; i++) {
		sum += (uint64_t)b[i] * (m + 1);
		if (++m == 251)
			m = 0;
	}
	*checksum = sum;
	return finish(RGAPS_OK);
}

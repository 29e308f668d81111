/*
 * The C half of librmw_rgaps (rmw_c.h lists its files): what every area
 * uses. The thread-local error state (and rcutils' where rcutils is
 * loaded), the allocation helpers the Go half calls too, the type support
 * helpers, and the implementation's identity.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "rmw_c.h"

const char rgaps_identifier[] = RGAPS_IDENTIFIER;

/* ---- error state ------------------------------------------------------------ */

#ifndef RGAPS_USE_ROS_HEADERS
void rcutils_set_error_state(const char *error_string, const char *file, size_t line_number);
#endif
/* In a ROS process rcutils is loaded and holds the error state rcl reads.
 * Where the program itself links rcutils (rclcpp programs, the CI harness's
 * stand-in) the weak reference finds it. Where rcutils came in with a module
 * loaded RTLD_LOCAL (rclpy's extension, and rcl and rmw_implementation with
 * it) no lookup of this library sees it: it is then found among the loaded
 * libraries by name. Without either, errors stay in tls_error. */
#pragma weak rcutils_set_error_state

typedef void (*set_error_state_fn)(const char *, const char *, size_t);
static set_error_state_fn set_error_state;
static pthread_once_t set_error_state_once = PTHREAD_ONCE_INIT;

static void find_set_error_state(void)
{
	set_error_state = rcutils_set_error_state;
	if (set_error_state != NULL)
		return;
	void *h = dlopen("librcutils.so", RTLD_LAZY | RTLD_NOLOAD); /* kept: rcutils outlives us */
	if (h != NULL)
		set_error_state = (set_error_state_fn)dlsym(h, "rcutils_set_error_state");
}

static __thread char tls_error[1024];

void rgaps_set_error(const char *msg)
{
	snprintf(tls_error, sizeof tls_error, "%s", msg ? msg : "");
	pthread_once(&set_error_state_once, find_set_error_state);
	if (set_error_state != NULL)
		set_error_state(tls_error, __FILE__, __LINE__);
}

const char *rgaps_rmw_last_error(void) { return tls_error; }

/* ---- type support ----------------------------------------------------------- */

rmw_ret_t rgaps_ret_of_ts(int r)
{
	if (r == RGAPS_TS_OK)
		return RMW_RET_OK;
	seterrf("rmw_rgaps: type support: %s", rgaps_ts_last_error());
	switch (r) {
	case RGAPS_TS_BAD_ALLOC: return RMW_RET_BAD_ALLOC;
	case RGAPS_TS_INVALID_ARG: return RMW_RET_INVALID_ARGUMENT;
	}
	return RMW_RET_ERROR;
}

void rgaps_msg_type_hash(const rosidl_message_type_support_t *ts, uint8_t out[RGAPS_TYPE_HASH_SIZE])
{
	memset(out, 0, RGAPS_TYPE_HASH_SIZE);
	const rosidl_type_hash_t *h = NULL;
	if (ts != NULL && ts->get_type_hash_func != NULL)
		h = ts->get_type_hash_func(ts);
	if (h != NULL) {
		out[0] = h->version;
		memcpy(out + 1, h->value, sizeof h->value);
	}
}

const rgaps_ts *rgaps_resolve_msg(const rosidl_message_type_support_t *ts, char *name, size_t n)
{
	const rgaps_ts *t = rgaps_ts_resolve(ts);
	if (t == NULL) {
		seterrf("rmw_rgaps: type support: %s", rgaps_ts_last_error());
		return NULL;
	}
	if (rgaps_ts_type_name(t, name, n) == NULL) {
		rgaps_set_error("rmw_rgaps: type name too long");
		return NULL;
	}
	return t;
}

rgaps_node *rgaps_endpoint_begin(const rmw_node_t *node, const rosidl_message_type_support_t *type_support,
	const char *topic_name, const void *qos, const void *options, rgaps_endpoint_type *out)
{
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(topic_name, NULL);
	ARG(qos, NULL);
	ARG(options, NULL);
	if (topic_name[0] == '\0')
		FAIL(NULL, "topic_name argument is an empty string");
	rgaps_node *nd = node_data(node);
	if (nd == NULL || !live_context(node->context))
		return NULL;
	out->ts = rgaps_resolve_msg(type_support, out->name, sizeof out->name);
	if (out->ts == NULL)
		return NULL;
	rgaps_msg_type_hash(type_support, out->hash);
	return nd;
}

/* ---- allocation ----------------------------------------------------------------- */

int rgaps_allocator_valid(const rcutils_allocator_t *a)
{
	return a != NULL && a->allocate != NULL && a->deallocate != NULL && a->reallocate != NULL &&
	       a->zero_allocate != NULL;
}

void *rgaps_alloc(const rcutils_allocator_t *a, size_t n)
{
	return a->zero_allocate(1, n ? n : 1, a->state);
}

void rgaps_free(const rcutils_allocator_t *a, void *p)
{
	if (p != NULL)
		a->deallocate(p, a->state);
}

char *rgaps_strndup(const rcutils_allocator_t *a, const char *s, size_t n)
{
	char *d = a->allocate(n + 1, a->state);
	if (d == NULL)
		return NULL;
	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *rgaps_strdup(const rcutils_allocator_t *a, const char *s)
{
	return rgaps_strndup(a, s, strlen(s));
}

rmw_ret_t rgaps_string_array_init(rcutils_string_array_t *arr, size_t n, const rcutils_allocator_t *a)
{
	arr->size = 0;
	arr->data = NULL;
	arr->allocator = *a;
	if (n == 0)
		return RMW_RET_OK;
	arr->data = a->zero_allocate(n, sizeof(char *), a->state);
	if (arr->data == NULL) {
		rgaps_set_error("rmw_rgaps: allocating a string array failed");
		return RMW_RET_BAD_ALLOC;
	}
	arr->size = n;
	return RMW_RET_OK;
}

void rgaps_string_array_fini(rcutils_string_array_t *arr)
{
	const rcutils_allocator_t *a = &arr->allocator;
	if (arr->data != NULL) {
		for (size_t i = 0; i < arr->size; i++)
			rgaps_free(a, arr->data[i]);
		rgaps_free(a, arr->data);
	}
	arr->data = NULL;
	arr->size = 0;
}

void rgaps_call_event_callback(uintptr_t cb, uintptr_t user_data, size_t n)
{
	((rmw_event_callback_t)cb)((const void *)user_data, n);
}

/* ---- identity ---------------------------------------------------------------------- */

const char *rmw_get_implementation_identifier(void) { return rgaps_identifier; }

const char *rmw_get_serialization_format(void) { return RGAPS_SERIALIZATION_FORMAT; }

bool rmw_feature_supported(rmw_feature_t feature)
{
	switch (feature) {
	case RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER:
	case RMW_FEATURE_MESSAGE_INFO_RECEPTION_SEQUENCE_NUMBER:
		return true;
	default:
		return false;
	}
}

rmw_ret_t rmw_set_log_severity(rmw_log_severity_t severity)
{
	switch (severity) {
	case RMW_LOG_SEVERITY_DEBUG:
	case RMW_LOG_SEVERITY_INFO:
	case RMW_LOG_SEVERITY_WARN:
	case RMW_LOG_SEVERITY_ERROR:
	case RMW_LOG_SEVERITY_FATAL:
		return RMW_RET_OK; /* the engine logs nothing inside a ROS process */
	}
	FAIL(RMW_RET_INVALID_ARGUMENT, "unknown log severity");
}

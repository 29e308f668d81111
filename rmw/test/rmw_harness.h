/*
 * rmw_harness.h — what the C programs that test librmw_rgaps share: checks
 * that count failures, a counting allocator that can be told to fail, the
 * zero-initialisers and finalisers librmw (the rmw package, absent here)
 * would provide, and hand-written introspection type supports of the test
 * messages (C memory layout, as rosidl_typesupport_introspection_c
 * generates them).
 *
 * The programs call the library the way rcl does: through the rmw_*
 * functions only, with the project's own ABI declarations.
 */
#ifndef RGAPS_RMW_HARNESS_H
#define RGAPS_RMW_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rgaps_rmw_abi.h"
#include "rgaps_rosidl_abi.h"

static int h_failures;

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			h_failures++;                                                        \
			fprintf(stderr, "%s:%d: CHECK failed: %s (rmw error: %s)\n", __FILE__, \
				__LINE__, #cond, rgaps_rmw_last_error());                     \
		}                                                                            \
	} while (0)

#define CHECK_RC(expr, want)                                                                       \
	do {                                                                                       \
		int rc_ = (int)(expr);                                                             \
		if (rc_ != (int)(want)) {                                                          \
			h_failures++;                                                              \
			fprintf(stderr, "%s:%d: %s returned %d, want %d (rmw error: %s)\n", __FILE__, \
				__LINE__, #expr, rc_, (int)(want), rgaps_rmw_last_error());          \
		}                                                                                  \
	} while (0)

/* CHECK_ERR: the call failed with want and left an error message. */
#define CHECK_ERR(expr, want)                                  \
	do {                                                   \
		CHECK_RC(expr, want);                          \
		CHECK(rgaps_rmw_last_error()[0] != '\0');      \
	} while (0)

#define MUST(cond)                                                                                  \
	do {                                                                                        \
		if (!(cond)) {                                                                      \
			fprintf(stderr, "%s:%d: fatal: %s (rmw error: %s)\n", __FILE__, __LINE__, #cond, \
				rgaps_rmw_last_error());                                            \
			exit(2);                                                                    \
		}                                                                                   \
	} while (0)

static int h_failures_before;

/* h_pass reports the test that ends here: FAIL if it added failures. */
static inline void h_pass(const char *name)
{
	printf("%s %s\n", h_failures > h_failures_before ? "FAIL" : "PASS", name);
	h_failures_before = h_failures;
	fflush(stdout);
}

static inline int h_done(void)
{
	printf("%s\n", h_failures ? "FAILURES" : "ALL PASS");
	return h_failures ? 1 : 0;
}

static inline int64_t h_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline void h_sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- a counting allocator that fails on request ------------------------------------ */

static long h_allocs, h_frees;
static long h_fail_after = -1; /* allocations left before every allocation fails; -1: never */

static inline int h_should_fail(void)
{
	if (h_fail_after < 0)
		return 0;
	if (h_fail_after == 0)
		return 1;
	h_fail_after--;
	return 0;
}

static void *h_allocate(size_t n, void *state)
{
	(void)state;
	if (h_should_fail())
		return NULL;
	void *p = malloc(n);
	if (p)
		h_allocs++;
	return p;
}

static void h_deallocate(void *p, void *state)
{
	(void)state;
	if (p)
		h_frees++;
	free(p);
}

static void *h_reallocate(void *p, size_t n, void *state)
{
	(void)state;
	if (h_should_fail())
		return NULL;
	void *q = realloc(p, n);
	if (q && !p)
		h_allocs++;
	return q;
}

static void *h_zero_allocate(size_t n, size_t size, void *state)
{
	(void)state;
	if (h_should_fail())
		return NULL;
	void *p = calloc(n, size);
	if (p)
		h_allocs++;
	return p;
}

static inline rcutils_allocator_t h_allocator(void)
{
	rcutils_allocator_t a = {h_allocate, h_deallocate, h_reallocate, h_zero_allocate, NULL};
	return a;
}

/* ---- what librmw would provide ------------------------------------------------------ */

static inline void h_string_array_fini(rcutils_string_array_t *a)
{
	for (size_t i = 0; i < a->size; i++)
		a->allocator.deallocate(a->data[i], a->allocator.state);
	if (a->data)
		a->allocator.deallocate(a->data, a->allocator.state);
	a->data = NULL;
	a->size = 0;
}

static inline void h_names_and_types_fini(rmw_names_and_types_t *nt)
{
	rcutils_allocator_t a = nt->names.allocator;
	if (nt->types) {
		for (size_t i = 0; i < nt->names.size; i++)
			h_string_array_fini(&nt->types[i]);
		a.deallocate(nt->types, a.state);
	}
	nt->types = NULL;
	h_string_array_fini(&nt->names);
}

static inline void h_endpoint_info_fini(rmw_topic_endpoint_info_array_t *arr, rcutils_allocator_t *a)
{
	for (size_t i = 0; i < arr->size; i++) {
		a->deallocate((void *)arr->info_array[i].node_name, a->state);
		a->deallocate((void *)arr->info_array[i].node_namespace, a->state);
		a->deallocate((void *)arr->info_array[i].topic_type, a->state);
	}
	if (arr->info_array)
		a->deallocate(arr->info_array, a->state);
	arr->info_array = NULL;
	arr->size = 0;
}

static inline int h_has_string(const rcutils_string_array_t *a, const char *s)
{
	for (size_t i = 0; i < a->size; i++)
		if (a->data[i] && strcmp(a->data[i], s) == 0)
			return 1;
	return 0;
}

static inline int h_index_of(const rcutils_string_array_t *a, const char *s)
{
	for (size_t i = 0; i < a->size; i++)
		if (a->data[i] && strcmp(a->data[i], s) == 0)
			return (int)i;
	return -1;
}

static const rmw_qos_profile_t h_qos_default = {
	RMW_QOS_POLICY_HISTORY_KEEP_LAST, 10, RMW_QOS_POLICY_RELIABILITY_RELIABLE,
	RMW_QOS_POLICY_DURABILITY_VOLATILE, RMW_DURATION_UNSPECIFIED, RMW_DURATION_UNSPECIFIED,
	RMW_QOS_POLICY_LIVELINESS_AUTOMATIC, RMW_DURATION_UNSPECIFIED, false};

static const rmw_qos_profile_t h_qos_best_effort = {
	RMW_QOS_POLICY_HISTORY_KEEP_LAST, 5, RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT,
	RMW_QOS_POLICY_DURABILITY_VOLATILE, RMW_DURATION_UNSPECIFIED, RMW_DURATION_UNSPECIFIED,
	RMW_QOS_POLICY_LIVELINESS_AUTOMATIC, RMW_DURATION_UNSPECIFIED, false};

/* An initialised context on ROS_DOMAIN_ID (as rcl reads it) with allocator a. */
static inline void h_init(rmw_context_t *ctx, rmw_init_options_t *opts, rcutils_allocator_t a)
{
	memset(opts, 0, sizeof *opts);
	memset(ctx, 0, sizeof *ctx);
	MUST(rmw_init_options_init(opts, a) == RMW_RET_OK);
	const char *dom = getenv("ROS_DOMAIN_ID");
	if (dom && *dom)
		opts->domain_id = (size_t)strtoul(dom, NULL, 10);
	opts->enclave = a.allocate(2, a.state);
	MUST(opts->enclave != NULL);
	strcpy(opts->enclave, "/");
	MUST(rmw_init(opts, ctx) == RMW_RET_OK);
}

static inline void h_fini(rmw_context_t *ctx, rmw_init_options_t *opts)
{
	CHECK_RC(rmw_shutdown(ctx), RMW_RET_OK);
	CHECK_RC(rmw_context_fini(ctx), RMW_RET_OK);
	CHECK_RC(rmw_init_options_fini(opts), RMW_RET_OK);
}

/* rmw_wait on one subscription: 1 ready, 0 timeout. */
static inline int h_wait_sub(rmw_wait_set_t *ws, const rmw_subscription_t *s, int ms)
{
	void *arr[1] = {s->data};
	rmw_subscriptions_t subs = {1, arr};
	rmw_time_t t = {(uint64_t)(ms / 1000), (uint64_t)(ms % 1000) * 1000000u};
	rmw_ret_t rc = rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &t);
	return rc == RMW_RET_OK && arr[0] != NULL;
}

/* Polls cond (an expression) for up to ms milliseconds. */
/* node_present reads the graph once. */
static inline int node_present(rmw_node_t *n, const char *name, const char *ns)
{
	rcutils_string_array_t names = {0, NULL, {0}}, nss = {0, NULL, {0}};
	if (rmw_get_node_names(n, &names, &nss) != RMW_RET_OK)
		return -1;
	int found = 0;
	for (size_t i = 0; i < names.size; i++)
		if (strcmp(names.data[i], name) == 0 && strcmp(nss.data[i], ns) == 0)
			found = 1;
	h_string_array_fini(&names);
	h_string_array_fini(&nss);
	return found;
}

/* WAIT_GRAPH blocks on n's graph guard condition until cond holds, at
 * most ms, waking every 100 ms to look again; it waits with the program's
 * wait set ws. */
#define WAIT_GRAPH(n, cond, ms)                                                           \
	({                                                                                \
		const rmw_guard_condition_t *g_ = rmw_node_get_graph_guard_condition(n); \
		int64_t end_ = h_now_ns() + (int64_t)(ms) * 1000000LL;                    \
		int ok_ = 0;                                                              \
		while (!(ok_ = (cond)) && h_now_ns() < end_) {                            \
			void *ga_[1] = {g_->data};                                        \
			rmw_guard_conditions_t gcs_ = {1, ga_};                           \
			rmw_time_t t_ = {0, 100000000};                                   \
			rmw_wait(NULL, &gcs_, NULL, NULL, NULL, ws, &t_);                 \
		}                                                                         \
		ok_;                                                                      \
	})

/* topic_has_type reads the graph once. */
static inline int topic_has_type(rmw_node_t *n, const char *topic, const char *type)
{
	rcutils_allocator_t a = h_allocator();
	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	if (rmw_get_topic_names_and_types(n, &a, false, &nt) != RMW_RET_OK)
		return 0;
	int i = h_index_of(&nt.names, topic), ok = i >= 0 && h_has_string(&nt.types[i], type);
	h_names_and_types_fini(&nt);
	return ok;
}

#define H_EVENTUALLY(cond, ms)                                      \
	({                                                          \
		int64_t end_ = h_now_ns() + (int64_t)(ms) * 1000000LL; \
		int ok_ = 0;                                        \
		while (!(ok_ = (cond)) && h_now_ns() < end_)        \
			h_sleep_ms(5);                              \
		ok_;                                                \
	})

/* ---- test message types ------------------------------------------------------------ */

static bool h_resize_uint8(void *p, size_t n)
{
	rosidl_runtime_c__uint8__Sequence *q = p;
	free(q->data);
	q->data = NULL;
	q->size = q->capacity = 0;
	if (n) {
		q->data = calloc(n, 1);
		if (!q->data)
			return false;
	}
	q->size = q->capacity = n;
	return true;
}

static size_t h_size_uint8(const void *p) { return ((const rosidl_runtime_c__uint8__Sequence *)p)->size; }

#define H_M(T, f, tid, arr, n, resize, sizef)                                                            \
	{#f, tid, 0, NULL, false, arr, n, false, (uint32_t)offsetof(T, f), NULL, sizef, NULL, NULL, NULL, NULL, \
		resize}
#define H_SCALAR(T, f, tid) H_M(T, f, tid, false, 0, NULL, NULL)
#define H_ARRAY(T, f, tid, n) H_M(T, f, tid, true, n, NULL, NULL)

static const rosidl_message_type_support_t *h_handle(const rosidl_message_type_support_t *ts, const char *id)
{
	return strcmp(id, ts->typesupport_identifier) == 0 ? ts : NULL;
}

/* Every harness type reports a type hash, as Jazzy's generated type supports
 * do: version 1 and the type's name, NUL padded, as its 32 bytes (what rmw
 * must hand back unchanged in the graph). */
#define H_TYPE(NS, T)                                                                                  \
	static const rosidl_typesupport_introspection_c__MessageMembers T##_mm = {                   \
		NS, #T, sizeof T##_members / sizeof T##_members[0], sizeof(T), false, T##_members,    \
		T##_init, T##_fini};                                                                  \
	static const rosidl_type_hash_t T##_hash = {1, #T};                                          \
	static const void *T##_get_hash(const rosidl_message_type_support_t *ts)                     \
	{                                                                                             \
		(void)ts;                                                                             \
		return &T##_hash;                                                                     \
	}                                                                                             \
	static const rosidl_message_type_support_t T##_ts = {"rosidl_typesupport_introspection_c", \
		&T##_mm, h_handle, T##_get_hash, NULL, NULL};

/* rgaps_test/msg/Chat: int32 id, string text, uint8[] data (not plain). */
typedef struct Chat {
	int32_t id;
	rosidl_runtime_c__String text;
	rosidl_runtime_c__uint8__Sequence data;
} Chat;

static void Chat_init(void *p, int how)
{
	(void)how;
	Chat *m = p;
	memset(m, 0, sizeof *m);
	m->text.data = calloc(1, 1);
	m->text.capacity = 1;
}

static void Chat_fini(void *p)
{
	Chat *m = p;
	free(m->text.data);
	free(m->data.data);
	memset(m, 0, sizeof *m);
}

static inline void chat_set(Chat *m, int32_t id, const char *text, size_t n)
{
	m->id = id;
	size_t l = strlen(text);
	free(m->text.data);
	m->text.data = malloc(l + 1);
	memcpy(m->text.data, text, l + 1);
	m->text.size = l;
	m->text.capacity = l + 1;
	h_resize_uint8(&m->data, n);
	for (size_t i = 0; i < n; i++)
		m->data.data[i] = (uint8_t)(i * 7 + (size_t)id);
}

static inline int chat_ok(const Chat *m, int32_t id, const char *text, size_t n)
{
	if (m->id != id || m->text.size != strlen(text) || strcmp(m->text.data, text) != 0 || m->data.size != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (m->data.data[i] != (uint8_t)(i * 7 + (size_t)id))
			return 0;
	return 1;
}

static const rosidl_typesupport_introspection_c__MessageMember Chat_members[] = {
	H_SCALAR(Chat, id, RGAPS_TYPE_INT32),
	H_SCALAR(Chat, text, RGAPS_TYPE_STRING),
	H_M(Chat, data, RGAPS_TYPE_UINT8, true, 0, h_resize_uint8, h_size_uint8),
};
H_TYPE("rgaps_test__msg", Chat)

/* std_msgs/msg/String: string data (what the rgaps CLI publishes and echoes). */
typedef struct String {
	rosidl_runtime_c__String data;
} String;

static void String_init(void *p, int how)
{
	(void)how;
	String *m = p;
	m->data.data = calloc(1, 1);
	m->data.size = 0;
	m->data.capacity = 1;
}

static void String_fini(void *p)
{
	String *m = p;
	free(m->data.data);
	memset(m, 0, sizeof *m);
}

static inline void string_set(String *m, const char *text)
{
	size_t l = strlen(text);
	free(m->data.data);
	m->data.data = malloc(l + 1);
	memcpy(m->data.data, text, l + 1);
	m->data.size = l;
	m->data.capacity = l + 1;
}

static const rosidl_typesupport_introspection_c__MessageMember String_members[] = {
	H_SCALAR(String, data, RGAPS_TYPE_STRING),
};
H_TYPE("std_msgs__msg", String)

/* rgaps_test/msg/Plain: int64 stamp, float64 x, uint32 seq (plain). */
typedef struct Plain {
	int64_t stamp;
	double x;
	uint32_t seq;
} Plain;

static void Plain_init(void *p, int how)
{
	(void)how;
	memset(p, 0, sizeof(Plain));
}
static void Plain_fini(void *p) { (void)p; }

static const rosidl_typesupport_introspection_c__MessageMember Plain_members[] = {
	H_SCALAR(Plain, stamp, RGAPS_TYPE_INT64),
	H_SCALAR(Plain, x, RGAPS_TYPE_DOUBLE),
	H_SCALAR(Plain, seq, RGAPS_TYPE_UINT32),
};
H_TYPE("rgaps_test__msg", Plain)

/* rgaps_test/msg/Blob64 and Blob4M: int64 stamp, uint8[N] data (plain). */
typedef struct Blob64 {
	int64_t stamp;
	uint8_t data[56];
} Blob64;
static void Blob64_init(void *p, int how)
{
	(void)how;
	memset(p, 0, sizeof(Blob64));
}
static void Blob64_fini(void *p) { (void)p; }
static const rosidl_typesupport_introspection_c__MessageMember Blob64_members[] = {
	H_SCALAR(Blob64, stamp, RGAPS_TYPE_INT64),
	H_ARRAY(Blob64, data, RGAPS_TYPE_UINT8, 56),
};
H_TYPE("rgaps_test__msg", Blob64)

#define BLOB4M_BYTES (4u << 20)
typedef struct Blob4M {
	int64_t stamp;
	uint8_t data[BLOB4M_BYTES - 8];
} Blob4M;
static void Blob4M_init(void *p, int how)
{
	(void)how;
	((Blob4M *)p)->stamp = 0; /* the data is left as is: 4 MB of memset is not what is measured */
}
static void Blob4M_fini(void *p) { (void)p; }
static const rosidl_typesupport_introspection_c__MessageMember Blob4M_members[] = {
	H_SCALAR(Blob4M, stamp, RGAPS_TYPE_INT64),
	H_ARRAY(Blob4M, data, RGAPS_TYPE_UINT8, BLOB4M_BYTES - 8),
};
H_TYPE("rgaps_test__msg", Blob4M)

/* rgaps_test/srv/AddTwoInts: int64 a, int64 b -> int64 sum. */
typedef struct AddTwoInts_Request {
	int64_t a;
	int64_t b;
} AddTwoInts_Request;
typedef struct AddTwoInts_Response {
	int64_t sum;
} AddTwoInts_Response;
static void AddTwoInts_Request_init(void *p, int how)
{
	(void)how;
	memset(p, 0, sizeof(AddTwoInts_Request));
}
static void AddTwoInts_Request_fini(void *p) { (void)p; }
static void AddTwoInts_Response_init(void *p, int how)
{
	(void)how;
	memset(p, 0, sizeof(AddTwoInts_Response));
}
static void AddTwoInts_Response_fini(void *p) { (void)p; }
static const rosidl_typesupport_introspection_c__MessageMember AddTwoInts_Request_members[] = {
	H_SCALAR(AddTwoInts_Request, a, RGAPS_TYPE_INT64),
	H_SCALAR(AddTwoInts_Request, b, RGAPS_TYPE_INT64),
};
static const rosidl_typesupport_introspection_c__MessageMember AddTwoInts_Response_members[] = {
	H_SCALAR(AddTwoInts_Response, sum, RGAPS_TYPE_INT64),
};
H_TYPE("rgaps_test__srv", AddTwoInts_Request)
H_TYPE("rgaps_test__srv", AddTwoInts_Response)

static const rosidl_typesupport_introspection_c__ServiceMembers AddTwoInts_sm = {
	"rgaps_test__srv", "AddTwoInts", &AddTwoInts_Request_mm, &AddTwoInts_Response_mm, NULL};

static const rosidl_service_type_support_t *h_srv_handle(const rosidl_service_type_support_t *ts, const char *id)
{
	return strcmp(id, ts->typesupport_identifier) == 0 ? ts : NULL;
}

static const rosidl_service_type_support_t AddTwoInts_ts = {"rosidl_typesupport_introspection_c",
	&AddTwoInts_sm, h_srv_handle, &AddTwoInts_Request_ts, &AddTwoInts_Response_ts, NULL, NULL, NULL, NULL,
	NULL, NULL};

/* A handle of another implementation, for the identifier checks. */
static const char h_foreign_id[] = "rmw_other";

#endif /* RGAPS_RMW_HARNESS_H */

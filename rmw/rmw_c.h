/*
 * Private to the C half of librmw_rgaps (the rmw_*.c files): the argument
 * checks every rmw_* function makes, and the helpers more than one of the
 * files uses. Not included by the cgo preamble (rmw_impl.h is what both
 * halves share).
 *
 * The files, by area:
 *   rmw_common.c     error state, allocation helpers, identity, type support helpers
 *   rmw_init.c       init options and contexts
 *   rmw_node.c       nodes
 *   rmw_pub.c        publishers, publishing
 *   rmw_sub.c        subscriptions, taking
 *   rmw_loan.c       loans, on both sides
 *   rmw_service.c    clients and services (one pair of endpoints each)
 *   rmw_wait.c       guard conditions, wait sets, rmw_wait
 *   rmw_graph.c      graph queries
 *   rmw_event.c      events and new-data callbacks
 *   rmw_serialize.c  serialisation without a topic
 *   rmw_gpu.c        GPU-loaned messages (rgaps/gpu.h) and the split layout's takes
 *   sig.c            the signal contract (sig.h)
 *
 * Every function that calls Go (rgapsgo_*) starts with RGAPS_GO_CALLS
 * (sig.h), or blocks the signals itself around each call (rmw_wait);
 * TestRmwGoCallsBlockSignals (test/) checks it.
 */
#ifndef RGAPS_RMW_C_H
#define RGAPS_RMW_C_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmw_impl.h"
#include "sig.h"
#include "_cgo_export.h"

/* The implementation identifier: one array, so that handles made in any of
 * the files carry the same pointer. */
RGAPS_HIDDEN extern const char rgaps_identifier[];

#define FAIL(ret, msg)                                  \
	do {                                            \
		rgaps_set_error("rmw_rgaps: " msg);     \
		return ret;                             \
	} while (0)

#define ARG(x, ret)                                                       \
	do {                                                              \
		if ((x) == NULL)                                          \
			FAIL(ret, #x " argument is null");                 \
	} while (0)

static inline void seterrf(const char *fmt, const char *a)
{
	char buf[512];
	snprintf(buf, sizeof buf, fmt, a);
	rgaps_set_error(buf);
}

static inline int ours(const char *id)
{
	return id == rgaps_identifier || (id != NULL && strcmp(id, rgaps_identifier) == 0);
}

#define IMPL(x, ret)                                                                        \
	do {                                                                                \
		if (!ours((x)->implementation_identifier))                                  \
			FAIL(ret, #x " implementation identifier does not match (not rmw_rgaps)"); \
	} while (0)

/* The usual checks of an rmw_ret_t function taking handle x. */
#define HANDLE(x)                                               \
	do {                                                    \
		ARG(x, RMW_RET_INVALID_ARGUMENT);               \
		IMPL(x, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);  \
	} while (0)

static inline const rcutils_allocator_t *ctx_alloc(const rmw_context_t *c) { return &c->options.allocator; }

/* A context handed to create functions: initialised, ours, not shut down. */
static inline int live_context(const rmw_context_t *c)
{
	if (c == NULL) {
		rgaps_set_error("rmw_rgaps: context argument is null");
		return 0;
	}
	if (!ours(c->implementation_identifier)) {
		rgaps_set_error("rmw_rgaps: context implementation identifier does not match (not rmw_rgaps)");
		return 0;
	}
	if (c->impl == NULL || c->impl->magic != RGAPS_MAGIC_CTX) {
		rgaps_set_error("rmw_rgaps: context is not initialised");
		return 0;
	}
	if (c->impl->is_shutdown) {
		rgaps_set_error("rmw_rgaps: context is shut down");
		return 0;
	}
	return 1;
}

/* A node's data, or NULL (error set) if the node is not usable. */
static inline rgaps_node *node_data(const rmw_node_t *n)
{
	if (n == NULL) {
		rgaps_set_error("rmw_rgaps: node argument is null");
		return NULL;
	}
	if (!ours(n->implementation_identifier)) {
		rgaps_set_error("rmw_rgaps: node implementation identifier does not match (not rmw_rgaps)");
		return NULL;
	}
	rgaps_node *d = n->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_NODE || n->context == NULL) {
		rgaps_set_error("rmw_rgaps: node is not valid");
		return NULL;
	}
	return d;
}

/* rmw_ret_t checks of a node argument. */
#define NODE(n, d)                                                           \
	ARG(n, RMW_RET_INVALID_ARGUMENT);                                    \
	IMPL(n, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);                       \
	rgaps_node *d = node_data(n);                                        \
	if (d == NULL)                                                       \
		return RMW_RET_ERROR

/* The data of a handle, or NULL (error set) when it is not one of ours. */
#define RGAPS_DATA_FN(name, handle_t, data_t, magic_, what)                 \
	static inline data_t *name(const handle_t *h)                      \
	{                                                                  \
		data_t *d = h->data;                                       \
		if (d == NULL || d->magic != (magic_)) {                   \
			rgaps_set_error("rmw_rgaps: " what " is not valid"); \
			return NULL;                                       \
		}                                                          \
		return d;                                                  \
	}
RGAPS_DATA_FN(pub_data, rmw_publisher_t, rgaps_pub, RGAPS_MAGIC_PUB, "publisher")
RGAPS_DATA_FN(sub_data, rmw_subscription_t, rgaps_sub, RGAPS_MAGIC_SUB, "subscription")
RGAPS_DATA_FN(cli_data, rmw_client_t, rgaps_svc, RGAPS_MAGIC_CLI, "client")
RGAPS_DATA_FN(srv_data, rmw_service_t, rgaps_svc, RGAPS_MAGIC_SRV, "service")

/* rmw_ret_t checks of a handle argument, declaring d, its data. */
#define PUB(p, d)                                   \
	HANDLE(p);                                  \
	rgaps_pub *d = pub_data(p);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

#define SUB(s, d)                                   \
	HANDLE(s);                                  \
	rgaps_sub *d = sub_data(s);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

#define CLI(c, d)                                   \
	HANDLE(c);                                  \
	rgaps_svc *d = cli_data(c);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

#define SRV(s, d)                                   \
	HANDLE(s);                                  \
	rgaps_svc *d = srv_data(s);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

static inline int loans_disabled(void)
{
	const char *v = getenv("ROS_DISABLE_LOANED_MESSAGES");
	return v != NULL && strcmp(v, "1") == 0;
}

/* rmw_common.c */
RGAPS_HIDDEN char *rgaps_strdup(const rcutils_allocator_t *a, const char *s);
/* The rmw code of a walker's result, with its error set. */
RGAPS_HIDDEN rmw_ret_t rgaps_ret_of_ts(int r);
/* The type hash a type support reports (RIHS01 in Jazzy), or all zeros
 * (version 0: unknown) when it reports none. Graph queries report it. */
RGAPS_HIDDEN void rgaps_msg_type_hash(const rosidl_message_type_support_t *ts, uint8_t out[RGAPS_TYPE_HASH_SIZE]);
/* The walker of a message type support, its name written to name[n]. */
RGAPS_HIDDEN const rgaps_ts *rgaps_resolve_msg(const rosidl_message_type_support_t *ts, char *name, size_t n);

/* What rmw_create_publisher and rmw_create_subscription learn of their
 * type before they make anything. */
typedef struct rgaps_endpoint_type {
	const rgaps_ts *ts;
	char name[512];
	uint8_t hash[RGAPS_TYPE_HASH_SIZE];
} rgaps_endpoint_type;
/* The checks rmw_create_publisher and rmw_create_subscription share (NULL
 * arguments, another implementation's node, an empty topic name, a dead
 * context) and their type support's walker, name and hash: the node's
 * data, or NULL with the error set. */
RGAPS_HIDDEN rgaps_node *rgaps_endpoint_begin(const rmw_node_t *node, const rosidl_message_type_support_t *type_support,
	const char *topic_name, const void *qos, const void *options, rgaps_endpoint_type *out);

/* rmw_pub.c */
RGAPS_HIDDEN rmw_ret_t rgaps_publish_cdr(uintptr_t pub, const rgaps_ts *ts, const void *msg, size_t prefix,
	const void *head, size_t head_len);

/* rmw_sub.c */
RGAPS_HIDDEN rmw_ret_t rgaps_decode(uintptr_t sub, uintptr_t smp, const rgaps_ts *ts, const uint8_t *data,
	size_t size, void *msg, int *again);

/* rmw_gpu.c */
/* The thread's last error (rmw_common.c). */
const char *rgaps_rmw_last_error(void);
/* The default device field of a type (a top-level uint8[]), or -1. */
static inline int32_t rgaps_default_member(const rgaps_ts *ts)
{
	uint32_t m;
	return rgaps_ts_byte_member(ts, NULL, &m) == RGAPS_TS_OK ? (int32_t)m : -1;
}
RGAPS_HIDDEN rmw_ret_t rgaps_decode_split(const rgaps_sub *d, uintptr_t smp, const uint8_t *data, size_t size,
	const uint8_t *meta, size_t meta_len, void *msg, int *again);
RGAPS_HIDDEN rmw_ret_t rgaps_split_to_cdr(const rgaps_sub *d, const uint8_t *data, size_t size,
	const uint8_t *meta, size_t meta_len, rmw_serialized_message_t *m);

#endif /* RGAPS_RMW_C_H */

/*
 * The C half of librmw_rgaps: every rmw_* function with the exact prototype
 * of the rmw headers. It checks what C can check (NULL arguments, handles of
 * another implementation, zero-initialised outputs), allocates the handles
 * rcl sees with the context's allocator, serialises messages with the type
 * support's introspection walkers (typesupport/introspection, rgaps_ts.h)
 * straight into the engine's pool and back, and keeps the thread-local error
 * state. The Go half (rgapsgo_*) owns the engine objects.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmw_impl.h"
#include "sig.h"
#include "_cgo_export.h"

static const char rgaps_identifier[] = RGAPS_IDENTIFIER;

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

static void seterrf(const char *fmt, const char *a)
{
	char buf[512];
	snprintf(buf, sizeof buf, fmt, a);
	rgaps_set_error(buf);
}

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

static int ours(const char *id)
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

static rmw_ret_t ts_ret(int r)
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

/* The type hash a type support reports (RIHS01 in Jazzy), or all zeros
 * (version 0: unknown) when it reports none. Graph queries report it. */
static void msg_type_hash(const rosidl_message_type_support_t *ts, uint8_t out[RGAPS_TYPE_HASH_SIZE])
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

static char *rgaps_strdup(const rcutils_allocator_t *a, const char *s)
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

static const rcutils_allocator_t *ctx_alloc(const rmw_context_t *c) { return &c->options.allocator; }

/* A context handed to create functions: initialised, ours, not shut down. */
static int live_context(const rmw_context_t *c)
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
static rgaps_node *node_data(const rmw_node_t *n)
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

/* ---- init options --------------------------------------------------------------------- */

rmw_ret_t rmw_init_options_init(rmw_init_options_t *init_options, rcutils_allocator_t allocator)
{
	ARG(init_options, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(&allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	if (init_options->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected zero-initialized init_options");
	memset(init_options, 0, sizeof *init_options);
	init_options->instance_id = 0;
	init_options->implementation_identifier = rgaps_identifier;
	init_options->domain_id = RMW_DEFAULT_DOMAIN_ID;
	init_options->security_options.enforce_security = RMW_SECURITY_ENFORCEMENT_PERMISSIVE;
#ifndef RGAPS_ROS_KILTED
	init_options->localhost_only = RMW_LOCALHOST_ONLY_DEFAULT;
#endif
	init_options->discovery_options.automatic_discovery_range = RMW_AUTOMATIC_DISCOVERY_RANGE_NOT_SET;
	init_options->discovery_options.allocator = allocator;
	init_options->enclave = NULL;
	init_options->allocator = allocator;
	init_options->impl = NULL;
	return RMW_RET_OK;
}

static void options_free(rmw_init_options_t *o, const rcutils_allocator_t *a)
{
	rgaps_free(a, o->enclave);
	rgaps_free(a, o->security_options.security_root_path);
	rgaps_free(a, o->discovery_options.static_peers);
	o->enclave = NULL;
	o->security_options.security_root_path = NULL;
	o->discovery_options.static_peers = NULL;
}

rmw_ret_t rmw_init_options_copy(const rmw_init_options_t *src, rmw_init_options_t *dst)
{
	ARG(src, RMW_RET_INVALID_ARGUMENT);
	ARG(dst, RMW_RET_INVALID_ARGUMENT);
	if (src->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized src");
	IMPL(src, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (dst->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected zero-initialized dst");
	const rcutils_allocator_t *a = &src->allocator;
	if (!rgaps_allocator_valid(a))
		FAIL(RMW_RET_INVALID_ARGUMENT, "src allocator is invalid");
	rmw_init_options_t tmp = *src;
	tmp.enclave = NULL;
	tmp.security_options.security_root_path = NULL;
	tmp.discovery_options.static_peers = NULL;
	if (src->enclave != NULL && (tmp.enclave = rgaps_strdup(a, src->enclave)) == NULL)
		goto nomem;
	if (src->security_options.security_root_path != NULL &&
	    (tmp.security_options.security_root_path =
			     rgaps_strdup(a, src->security_options.security_root_path)) == NULL)
		goto nomem;
	if (src->discovery_options.static_peers_count > 0 && src->discovery_options.static_peers != NULL) {
		size_t n = src->discovery_options.static_peers_count * sizeof(rmw_peer_address_t);
		if ((tmp.discovery_options.static_peers = a->allocate(n, a->state)) == NULL)
			goto nomem;
		memcpy(tmp.discovery_options.static_peers, src->discovery_options.static_peers, n);
	} else {
		tmp.discovery_options.static_peers_count = 0;
	}
	*dst = tmp;
	return RMW_RET_OK;
nomem:
	options_free(&tmp, a);
	FAIL(RMW_RET_BAD_ALLOC, "copying init options: allocation failed");
}

rmw_ret_t rmw_init_options_fini(rmw_init_options_t *init_options)
{
	ARG(init_options, RMW_RET_INVALID_ARGUMENT);
	if (init_options->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized init_options");
	IMPL(init_options, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (!rgaps_allocator_valid(&init_options->allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "init_options allocator is invalid");
	rcutils_allocator_t a = init_options->allocator;
	options_free(init_options, &a);
	memset(init_options, 0, sizeof *init_options);
	return RMW_RET_OK;
}

/* ---- context ------------------------------------------------------------------------------ */

rmw_ret_t rmw_init(const rmw_init_options_t *options, rmw_context_t *context)
{
	RGAPS_GO_CALLS;
	ARG(options, RMW_RET_INVALID_ARGUMENT);
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (options->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized init_options");
	IMPL(options, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (options->enclave == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected non-null enclave");
	if (context->implementation_identifier != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected a zero-initialized context");
	if (!rgaps_allocator_valid(&options->allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "init_options allocator is invalid");
	if (options->security_options.enforce_security == RMW_SECURITY_ENFORCEMENT_ENFORCE)
		FAIL(RMW_RET_ERROR, "security is enforced but rmw_rgaps has no security support");
	const rcutils_allocator_t *a = &options->allocator;
	rmw_context_t c;
	memset(&c, 0, sizeof c);
	c.instance_id = options->instance_id;
	c.actual_domain_id = options->domain_id == RMW_DEFAULT_DOMAIN_ID ? 0 : options->domain_id;
	struct rmw_context_impl_s *impl = rgaps_alloc(a, sizeof *impl);
	if (impl == NULL)
		FAIL(RMW_RET_BAD_ALLOC, "allocating the context failed");
	rmw_ret_t rc = rmw_init_options_copy(options, &c.options);
	if (rc != RMW_RET_OK) {
		rgaps_free(a, impl);
		return rc;
	}
	rc = rgapsgo_init(options->domain_id, c.options.enclave, &impl->go);
	if (rc != RMW_RET_OK) {
		if (rmw_init_options_fini(&c.options) != RMW_RET_OK) {
			/* cannot fail: the copy above is ours */
		}
		rgaps_free(a, impl);
		return rc;
	}
	impl->magic = RGAPS_MAGIC_CTX;
	c.impl = impl;
	c.implementation_identifier = rgaps_identifier;
	*context = c;
	return RMW_RET_OK;
}

rmw_ret_t rmw_shutdown(rmw_context_t *context)
{
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (context->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized context");
	IMPL(context, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (context->impl == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context is not initialised");
	context->impl->is_shutdown = 1;
	return RMW_RET_OK;
}

rmw_ret_t rmw_context_fini(rmw_context_t *context)
{
	RGAPS_GO_CALLS;
	ARG(context, RMW_RET_INVALID_ARGUMENT);
	if (context->implementation_identifier == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "expected initialized context");
	IMPL(context, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	if (context->impl == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context is not initialised");
	if (!context->impl->is_shutdown)
		FAIL(RMW_RET_INVALID_ARGUMENT, "context has not been shut down");
	rmw_ret_t rc = rgapsgo_context_close(context->impl->go);
	rcutils_allocator_t a = context->options.allocator;
	rmw_ret_t rc2 = rmw_init_options_fini(&context->options);
	context->impl->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, context->impl);
	memset(context, 0, sizeof *context);
	return rc != RMW_RET_OK ? rc : rc2;
}

/* ---- nodes ----------------------------------------------------------------------------------- */

rmw_node_t *rmw_create_node(rmw_context_t *context, const char *name, const char *namespace_)
{
	RGAPS_GO_CALLS;
	ARG(name, NULL);
	ARG(namespace_, NULL);
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_node_t *n = rgaps_alloc(a, sizeof *n);
	rgaps_node *d = rgaps_alloc(a, sizeof *d);
	char *nm = rgaps_strdup(a, name), *ns = rgaps_strdup(a, namespace_);
	if (n == NULL || d == NULL || nm == NULL || ns == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the node failed");
		goto fail;
	}
	if (rgapsgo_node_create(context->impl->go, nm, ns, &d->go, &d->graph.go) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_NODE;
	d->graph.magic = RGAPS_MAGIC_GC;
	d->graph.kind = RGAPS_GC_GRAPH;
	d->graph_gc.implementation_identifier = rgaps_identifier;
	d->graph_gc.data = &d->graph;
	d->graph_gc.context = context;
	n->implementation_identifier = rgaps_identifier;
	n->data = d;
	n->name = nm;
	n->namespace_ = ns;
	n->context = context;
	return n;
fail:
	rgaps_free(a, nm);
	rgaps_free(a, ns);
	rgaps_free(a, d);
	rgaps_free(a, n);
	return NULL;
}

rmw_ret_t rmw_destroy_node(rmw_node_t *node)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_node_destroy(d->go, d->graph.go);
	d->magic = RGAPS_MAGIC_DEAD;
	d->graph.magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)node->name);
	rgaps_free(&a, (void *)node->namespace_);
	rgaps_free(&a, d);
	rgaps_free(&a, node);
	return rc;
}

rmw_ret_t rmw_node_assert_liveliness(const rmw_node_t *node)
{
	NODE(node, d);
	(void)d;
	return RMW_RET_OK; /* liveliness is automatic: the process's endpoints live with it */
}

const rmw_guard_condition_t *rmw_node_get_graph_guard_condition(const rmw_node_t *node)
{
	rgaps_node *d = node_data(node);
	return d == NULL ? NULL : &d->graph_gc;
}

/* ---- publishers ---------------------------------------------------------------------------------- */

static rgaps_pub *pub_data(const rmw_publisher_t *p)
{
	rgaps_pub *d = p->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_PUB) {
		rgaps_set_error("rmw_rgaps: publisher is not valid");
		return NULL;
	}
	return d;
}

#define PUB(p, d)                                   \
	HANDLE(p);                                  \
	rgaps_pub *d = pub_data(p);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

static int loans_disabled(void)
{
	const char *v = getenv("ROS_DISABLE_LOANED_MESSAGES");
	return v != NULL && strcmp(v, "1") == 0;
}

static const rgaps_ts *resolve(const rosidl_message_type_support_t *ts, char *name, size_t n)
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

rmw_publisher_t *rmw_create_publisher(const rmw_node_t *node, const rosidl_message_type_support_t *type_support,
	const char *topic_name, const rmw_qos_profile_t *qos_profile,
	const rmw_publisher_options_t *publisher_options)
{
	RGAPS_GO_CALLS;
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(topic_name, NULL);
	ARG(qos_profile, NULL);
	ARG(publisher_options, NULL);
	if (topic_name[0] == '\0')
		FAIL(NULL, "topic_name argument is an empty string");
	rgaps_node *nd = node_data(node);
	if (nd == NULL || !live_context(node->context))
		return NULL;
	char type[512];
	const rgaps_ts *ts = resolve(type_support, type, sizeof type);
	if (ts == NULL)
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(node->context);
	rmw_publisher_t *p = rgaps_alloc(a, sizeof *p);
	rgaps_pub *d = rgaps_alloc(a, sizeof *d);
	char *topic = rgaps_strdup(a, topic_name);
	if (p == NULL || d == NULL || topic == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the publisher failed");
		goto fail;
	}
	d->ts = ts;
	d->qos = *qos_profile;
	uint8_t hash[RGAPS_TYPE_HASH_SIZE];
	msg_type_hash(type_support, hash);
	if (rgapsgo_pub_create(nd->go, topic, type, hash, &d->qos, d->gid, &d->go) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_PUB;
	d->plain = rgaps_ts_is_plain(ts) && !loans_disabled();
	d->prefix = rgaps_ts_is_plain(ts) ? RGAPS_MSG_PREFIX : 0; /* never depends on the environment */
	p->implementation_identifier = rgaps_identifier;
	p->data = d;
	p->topic_name = topic;
	p->options = *publisher_options;
	p->can_loan_messages = d->plain;
	return p;
fail:
	rgaps_free(a, topic);
	rgaps_free(a, d);
	rgaps_free(a, p);
	return NULL;
}

rmw_ret_t rmw_destroy_publisher(rmw_node_t *node, rmw_publisher_t *publisher)
{
	RGAPS_GO_CALLS;
	NODE(node, nd);
	(void)nd;
	PUB(publisher, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_pub_destroy(d->go);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)publisher->topic_name);
	rgaps_free(&a, d);
	rgaps_free(&a, publisher);
	return rc;
}

/* publish_cdr serialises msg into a loan of the topic's pool, after
 * `prefix` bytes that fill() writes (or zeroes), and publishes it. */
static rmw_ret_t publish_cdr(uintptr_t pub, const rgaps_ts *ts, const void *msg, size_t prefix,
	const void *head, size_t head_len)
{
	RGAPS_GO_CALLS;
	size_t n;
	rmw_ret_t rc = ts_ret(rgaps_ts_serialized_size(ts, msg, &n));
	if (rc != RMW_RET_OK)
		return rc;
	uint8_t *buf = NULL;
	rc = rgapsgo_pub_loan(pub, prefix + n, 0, &buf);
	if (rc != RMW_RET_OK || buf == NULL)
		return rc; /* NULL: nobody to write for, or a best-effort drop */
	memset(buf, 0, prefix);
	if (head_len)
		memcpy(buf, head, head_len);
	size_t used = 0;
	rc = ts_ret(rgaps_ts_serialize(ts, msg, buf + prefix, n, &used));
	if (rc != RMW_RET_OK) {
		rgapsgo_pub_discard(pub, buf);
		return rc;
	}
	return rgapsgo_pub_publish(pub, buf);
}

rmw_ret_t rmw_publish(const rmw_publisher_t *publisher, const void *ros_message,
	rmw_publisher_allocation_t *allocation)
{
	(void)allocation;
	PUB(publisher, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	return publish_cdr(d->go, d->ts, ros_message, d->prefix, NULL, 0);
}

rmw_ret_t rmw_publish_serialized_message(const rmw_publisher_t *publisher,
	const rmw_serialized_message_t *serialized_message, rmw_publisher_allocation_t *allocation)
{
	RGAPS_GO_CALLS;
	(void)allocation;
	PUB(publisher, d);
	ARG(serialized_message, RMW_RET_INVALID_ARGUMENT);
	if (serialized_message->buffer_length < RGAPS_CDR_HEADER || serialized_message->buffer == NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "serialized message is shorter than a CDR header");
	uint8_t *buf = NULL;
	size_t n = serialized_message->buffer_length;
	rmw_ret_t rc = rgapsgo_pub_loan(d->go, d->prefix + n, 0, &buf);
	if (rc != RMW_RET_OK || buf == NULL)
		return rc;
	memset(buf, 0, d->prefix);
	memcpy(buf + d->prefix, serialized_message->buffer, n);
	return rgapsgo_pub_publish(d->go, buf);
}

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
	rc = ts_ret(rgaps_ts_init(ts, buf + off));
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

rmw_ret_t rmw_publisher_count_matched_subscriptions(const rmw_publisher_t *publisher, size_t *subscription_count)
{
	RGAPS_GO_CALLS;
	PUB(publisher, d);
	ARG(subscription_count, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_pub_matched(d->go, subscription_count);
}

rmw_ret_t rmw_publisher_get_actual_qos(const rmw_publisher_t *publisher, rmw_qos_profile_t *qos)
{
	PUB(publisher, d);
	ARG(qos, RMW_RET_INVALID_ARGUMENT);
	*qos = d->qos;
	return RMW_RET_OK;
}

rmw_ret_t rmw_get_gid_for_publisher(const rmw_publisher_t *publisher, rmw_gid_t *gid)
{
	PUB(publisher, d);
	ARG(gid, RMW_RET_INVALID_ARGUMENT);
	gid->implementation_identifier = rgaps_identifier;
	memcpy(gid->data, d->gid, RMW_GID_STORAGE_SIZE);
	return RMW_RET_OK;
}

rmw_ret_t rmw_publisher_assert_liveliness(const rmw_publisher_t *publisher)
{
	PUB(publisher, d);
	(void)d;
	return RMW_RET_OK; /* liveliness is asserted by the process being alive */
}

rmw_ret_t rmw_publisher_wait_for_all_acked(const rmw_publisher_t *publisher, rmw_time_t wait_timeout)
{
	(void)wait_timeout;
	PUB(publisher, d);
	(void)d;
	/* Delivery is synchronous: a published sample is in every matched
	 * subscription's queue when rmw_publish returns. */
	return RMW_RET_OK;
}

rmw_ret_t rmw_init_publisher_allocation(const rosidl_message_type_support_t *type_support,
	const rosidl_runtime_c__Sequence__bound *message_bounds, rmw_publisher_allocation_t *allocation)
{
	(void)type_support;
	(void)message_bounds;
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "publisher allocations are not supported (publishing allocates nothing per message)");
}

rmw_ret_t rmw_fini_publisher_allocation(rmw_publisher_allocation_t *allocation)
{
	(void)allocation;
	FAIL(RMW_RET_UNSUPPORTED, "publisher allocations are not supported");
}

rmw_ret_t rmw_publisher_get_network_flow_endpoints(const rmw_publisher_t *publisher,
	rcutils_allocator_t *allocator, rmw_network_flow_endpoint_array_t *network_flow_endpoint_array)
{
	(void)publisher;
	(void)allocator;
	(void)network_flow_endpoint_array;
	FAIL(RMW_RET_UNSUPPORTED, "network flow endpoints: shared memory has none");
}

/* ---- subscriptions ---------------------------------------------------------------------------------- */

static rgaps_sub *sub_data(const rmw_subscription_t *s)
{
	rgaps_sub *d = s->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_SUB) {
		rgaps_set_error("rmw_rgaps: subscription is not valid");
		return NULL;
	}
	return d;
}

#define SUB(s, d)                                   \
	HANDLE(s);                                  \
	rgaps_sub *d = sub_data(s);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

rmw_subscription_t *rmw_create_subscription(const rmw_node_t *node,
	const rosidl_message_type_support_t *type_support, const char *topic_name,
	const rmw_qos_profile_t *qos_policies, const rmw_subscription_options_t *subscription_options)
{
	RGAPS_GO_CALLS;
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(topic_name, NULL);
	ARG(qos_policies, NULL);
	ARG(subscription_options, NULL);
	if (topic_name[0] == '\0')
		FAIL(NULL, "topic_name argument is an empty string");
	rgaps_node *nd = node_data(node);
	if (nd == NULL || !live_context(node->context))
		return NULL;
	char type[512];
	const rgaps_ts *ts = resolve(type_support, type, sizeof type);
	if (ts == NULL)
		return NULL;
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
	uint8_t hash[RGAPS_TYPE_HASH_SIZE];
	msg_type_hash(type_support, hash);
	if (rgapsgo_sub_create(nd->go, topic, type, hash, &d->qos, subscription_options->ignore_local_publications,
		    d->gid, &d->go) != RMW_RET_OK)
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
static rmw_ret_t decode(uintptr_t sub, uintptr_t smp, const rgaps_ts *ts, const uint8_t *data, size_t size,
	void *msg, int *again)
{
	int r = rgaps_ts_deserialize(ts, data, size, msg);
	char why[256];
	if (r != RGAPS_TS_OK)
		snprintf(why, sizeof why, "%s", rgaps_ts_last_error());
	rmw_ret_t rc = rgapsgo_sample_return(smp);
	*again = 0;
	if (r == RGAPS_TS_BAD_ALLOC)
		return ts_ret(r);
	if (r != RGAPS_TS_OK) {
		rgapsgo_sub_malformed(sub, why);
		*again = 1;
	}
	return rc;
}

/* take_cdr takes the next message of sub (Go state) and deserialises it
 * from `prefix` bytes on into msg. *taken false: nothing queued. */
static rmw_ret_t take_cdr(uintptr_t sub, const rgaps_ts *ts, size_t prefix, void *msg, bool *taken,
	rmw_message_info_t *info)
{
	RGAPS_GO_CALLS;
	*taken = false;
	for (;;) {
		uint8_t *data = NULL;
		size_t size = 0;
		uintptr_t smp = 0;
		rmw_ret_t rc = rgapsgo_sub_take(sub, prefix + RGAPS_CDR_HEADER, &data, &size, info, 0, &smp);
		if (rc != RMW_RET_OK || smp == 0)
			return rc;
		int again;
		rc = decode(sub, smp, ts, data + prefix, size - prefix, msg, &again);
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
	return take_cdr(d->go, d->ts, d->prefix, ros_message, taken, NULL);
}

rmw_ret_t rmw_take_with_info(const rmw_subscription_t *subscription, void *ros_message, bool *taken,
	rmw_message_info_t *message_info, rmw_subscription_allocation_t *allocation)
{
	(void)allocation;
	SUB(subscription, d);
	ARG(ros_message, RMW_RET_INVALID_ARGUMENT);
	ARG(taken, RMW_RET_INVALID_ARGUMENT);
	ARG(message_info, RMW_RET_INVALID_ARGUMENT);
	return take_cdr(d->go, d->ts, d->prefix, ros_message, taken, message_info);
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
		rc = take_cdr(d->go, d->ts, d->prefix, message_sequence->data[n], &one, &message_info_sequence->data[n]);
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
	uint8_t *data = NULL;
	size_t size = 0;
	uintptr_t smp = 0;
	rmw_ret_t rc = rgapsgo_sub_take(d->go, d->prefix + RGAPS_CDR_HEADER, &data, &size, info, 0, &smp);
	if (rc != RMW_RET_OK || smp == 0)
		return rc;
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
	uint8_t *data = NULL;
	size_t size = 0;
	uintptr_t held = 0;
	size_t off = RGAPS_MSG_PREFIX + RGAPS_CDR_HEADER;
	rmw_ret_t rc = rgapsgo_sub_take(d->go, off + rgaps_ts_plain_size(d->ts), &data, &size, info, 1, &held);
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

rmw_ret_t rmw_serialization_support_init(const char *serialization_lib_name, rcutils_allocator_t *allocator,
	rosidl_dynamic_typesupport_serialization_support_t *serialization_support)
{
	(void)serialization_lib_name;
	(void)allocator;
	(void)serialization_support;
	FAIL(RMW_RET_UNSUPPORTED, "dynamic type support is not supported");
}

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
	rmw_ret_t rc = ts_ret(rgaps_ts_serialized_size(ts, ros_message, &n));
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
	rc = ts_ret(rgaps_ts_serialize(ts, ros_message, m->buffer, m->buffer_capacity, &used));
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
	return ts_ret(rgaps_ts_deserialize(ts, serialized_message->buffer, serialized_message->buffer_length,
		ros_message));
}

/* ---- guard conditions and wait sets ---------------------------------------------------------------------- */

rmw_guard_condition_t *rmw_create_guard_condition(rmw_context_t *context)
{
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_guard_condition_t *g = rgaps_alloc(a, sizeof *g);
	rgaps_gc *d = rgaps_alloc(a, sizeof *d);
	if (g == NULL || d == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the guard condition failed");
		goto fail;
	}
	d->magic = RGAPS_MAGIC_GC;
	d->kind = RGAPS_GC_USER;
	d->alloc = *a;
	g->implementation_identifier = rgaps_identifier;
	g->data = d;
	g->context = context;
	return g;
fail:
	rgaps_free(a, d);
	rgaps_free(a, g);
	return NULL;
}

static rgaps_gc *user_gc(const rmw_guard_condition_t *g)
{
	rgaps_gc *d = g->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_GC) {
		rgaps_set_error("rmw_rgaps: guard condition is not valid");
		return NULL;
	}
	if (d->kind != RGAPS_GC_USER) {
		rgaps_set_error("rmw_rgaps: a node's graph guard condition belongs to the node");
		return NULL;
	}
	return d;
}

rmw_ret_t rmw_destroy_guard_condition(rmw_guard_condition_t *guard_condition)
{
	HANDLE(guard_condition);
	rgaps_gc *d = user_gc(guard_condition);
	if (d == NULL)
		return RMW_RET_INVALID_ARGUMENT;
	rcutils_allocator_t a = d->alloc;
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, d);
	rgaps_free(&a, guard_condition);
	return RMW_RET_OK;
}

rmw_ret_t rmw_trigger_guard_condition(const rmw_guard_condition_t *guard_condition)
{
	HANDLE(guard_condition);
	rgaps_gc *d = user_gc(guard_condition);
	if (d == NULL)
		return RMW_RET_INVALID_ARGUMENT;
	rgaps_word_bump(&d->seq); /* no Go: signal handlers call this (sig.h) */
	return RMW_RET_OK;
}

rmw_wait_set_t *rmw_create_wait_set(rmw_context_t *context, size_t max_conditions)
{
	if (!live_context(context))
		return NULL;
	const rcutils_allocator_t *a = ctx_alloc(context);
	rmw_wait_set_t *w = rgaps_alloc(a, sizeof *w);
	rgaps_ws *d = rgaps_alloc(a, sizeof *d);
	if (w == NULL || d == NULL) {
		rgaps_free(a, d);
		rgaps_free(a, w);
		FAIL(NULL, "allocating the wait set failed");
	}
	d->magic = RGAPS_MAGIC_WS;
	d->max_conditions = max_conditions;
	d->alloc = *a;
	w->implementation_identifier = rgaps_identifier;
	w->guard_conditions = &d->gcs;
	w->data = d;
	return w;
}

rmw_ret_t rmw_destroy_wait_set(rmw_wait_set_t *wait_set)
{
	ARG(wait_set, RMW_RET_ERROR); /* what test_rmw_implementation expects */
	IMPL(wait_set, RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	rgaps_ws *d = wait_set->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_WS)
		FAIL(RMW_RET_ERROR, "wait set is not valid");
	rcutils_allocator_t a = d->alloc;
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, d);
	rgaps_free(&a, wait_set);
	return RMW_RET_OK;
}

rmw_ret_t rmw_wait(rmw_subscriptions_t *subscriptions, rmw_guard_conditions_t *guard_conditions,
	rmw_services_t *services, rmw_clients_t *clients, rmw_events_t *events, rmw_wait_set_t *wait_set,
	const rmw_time_t *wait_timeout)
{
	HANDLE(wait_set);
	rgaps_ws *d = wait_set->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_WS)
		FAIL(RMW_RET_ERROR, "wait set is not valid");
	int64_t ns = -1;
	if (wait_timeout != NULL) {
		if (wait_timeout->sec >= 9223372036ULL)
			ns = -1; /* infinite */
		else
			ns = (int64_t)wait_timeout->sec * 1000000000LL + (int64_t)(wait_timeout->nsec % 1000000000ULL) +
			     (int64_t)(wait_timeout->nsec / 1000000000ULL) * 1000000000LL;
	}
	/* Go plans the sleep, C sleeps with the caller's signal mask (sig.h). */
	rgaps_wait_plan plan;
	sigset_t mask;
	rgaps_sig_block(&mask);
	rmw_ret_t rc = rgapsgo_wait_begin(subscriptions, guard_conditions, services, clients, events, ns, &plan);
	while (rc == RGAPS_WAIT_SLEEP) {
		rgaps_sig_restore(&mask);
		rgaps_wait_sleep(&plan);
		rgaps_sig_block(&mask);
		rc = rgapsgo_wait_next(&plan);
	}
	rgaps_sig_restore(&mask);
	return rc;
}

/* ---- services ---------------------------------------------------------------------------------------- */

static rgaps_cli *cli_data(const rmw_client_t *c)
{
	rgaps_cli *d = c->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_CLI) {
		rgaps_set_error("rmw_rgaps: client is not valid");
		return NULL;
	}
	return d;
}

static rgaps_srv *srv_data(const rmw_service_t *s)
{
	rgaps_srv *d = s->data;
	if (d == NULL || d->magic != RGAPS_MAGIC_SRV) {
		rgaps_set_error("rmw_rgaps: service is not valid");
		return NULL;
	}
	return d;
}

#define CLI(c, d)                                   \
	HANDLE(c);                                  \
	rgaps_cli *d = cli_data(c);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

#define SRV(s, d)                                   \
	HANDLE(s);                                  \
	rgaps_srv *d = srv_data(s);                 \
	if (d == NULL)                              \
		return RMW_RET_ERROR

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

rmw_client_t *rmw_create_client(const rmw_node_t *node, const rosidl_service_type_support_t *type_support,
	const char *service_name, const rmw_qos_profile_t *qos_policies)
{
	RGAPS_GO_CALLS;
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(service_name, NULL);
	ARG(qos_policies, NULL);
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
	rmw_client_t *c = rgaps_alloc(a, sizeof *c);
	rgaps_cli *d = rgaps_alloc(a, sizeof *d);
	char *name = rgaps_strdup(a, service_name);
	if (c == NULL || d == NULL || name == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the client failed");
		goto fail;
	}
	d->req = req;
	d->resp = resp;
	d->req_qos = *qos_policies;
	d->resp_qos = *qos_policies;
	uint8_t hashes[2][RGAPS_TYPE_HASH_SIZE];
	msg_type_hash(type_support->request_typesupport, hashes[0]);
	msg_type_hash(type_support->response_typesupport, hashes[1]);
	if (rgapsgo_service_pair(nd->go, 1, name, reqname, respname, hashes[0], hashes[1], &d->req_qos, &d->resp_qos, d->gid, &d->go, &d->pub,
		    &d->sub) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_CLI;
	c->implementation_identifier = rgaps_identifier;
	c->data = d;
	c->service_name = name;
	return c;
fail:
	rgaps_free(a, name);
	rgaps_free(a, d);
	rgaps_free(a, c);
	return NULL;
}

rmw_ret_t rmw_destroy_client(rmw_node_t *node, rmw_client_t *client)
{
	RGAPS_GO_CALLS;
	NODE(node, nd);
	(void)nd;
	CLI(client, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_service_pair_destroy(d->go, d->pub, d->sub);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)client->service_name);
	rgaps_free(&a, d);
	rgaps_free(&a, client);
	return rc;
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
	rmw_ret_t rc = publish_cdr(d->pub, d->req, ros_request, RGAPS_SRV_PREFIX, head, sizeof head);
	if (rc == RMW_RET_OK)
		*sequence_id = seq;
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
		rmw_ret_t rc = rgapsgo_sub_take(sub, RGAPS_SRV_PREFIX + RGAPS_CDR_HEADER, &data, &size, &info, 0, &smp);
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
		rc = decode(sub, smp, ts, data + RGAPS_SRV_PREFIX, size - RGAPS_SRV_PREFIX, msg, &again);
		if (again)
			continue;
		if (rc != RMW_RET_OK)
			return rc;
		*taken = true;
		return rc;
	}
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

rmw_service_t *rmw_create_service(const rmw_node_t *node, const rosidl_service_type_support_t *type_support,
	const char *service_name, const rmw_qos_profile_t *qos_profile)
{
	RGAPS_GO_CALLS;
	ARG(node, NULL);
	IMPL(node, NULL);
	ARG(type_support, NULL);
	ARG(service_name, NULL);
	ARG(qos_profile, NULL);
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
	rmw_service_t *s = rgaps_alloc(a, sizeof *s);
	rgaps_srv *d = rgaps_alloc(a, sizeof *d);
	char *name = rgaps_strdup(a, service_name);
	uint8_t gid[RMW_GID_STORAGE_SIZE];
	if (s == NULL || d == NULL || name == NULL) {
		rgaps_set_error("rmw_rgaps: allocating the service failed");
		goto fail;
	}
	d->req = req;
	d->resp = resp;
	d->req_qos = *qos_profile;
	d->resp_qos = *qos_profile;
	uint8_t hashes[2][RGAPS_TYPE_HASH_SIZE];
	msg_type_hash(type_support->request_typesupport, hashes[0]);
	msg_type_hash(type_support->response_typesupport, hashes[1]);
	if (rgapsgo_service_pair(nd->go, 0, name, reqname, respname, hashes[0], hashes[1], &d->req_qos, &d->resp_qos, gid, &d->go, &d->pub,
		    &d->sub) != RMW_RET_OK)
		goto fail;
	d->magic = RGAPS_MAGIC_SRV;
	s->implementation_identifier = rgaps_identifier;
	s->data = d;
	s->service_name = name;
	return s;
fail:
	rgaps_free(a, name);
	rgaps_free(a, d);
	rgaps_free(a, s);
	return NULL;
}

rmw_ret_t rmw_destroy_service(rmw_node_t *node, rmw_service_t *service)
{
	RGAPS_GO_CALLS;
	NODE(node, nd);
	(void)nd;
	SRV(service, d);
	const rcutils_allocator_t a = *ctx_alloc(node->context);
	rmw_ret_t rc = rgapsgo_service_pair_destroy(d->go, d->pub, d->sub);
	d->magic = RGAPS_MAGIC_DEAD;
	rgaps_free(&a, (void *)service->service_name);
	rgaps_free(&a, d);
	rgaps_free(&a, service);
	return rc;
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
	return publish_cdr(d->pub, d->resp, ros_response, RGAPS_SRV_PREFIX, head, sizeof head);
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

/* ---- graph --------------------------------------------------------------------------------------------- */

static int string_array_zero(const rcutils_string_array_t *a) { return a->size == 0 && a->data == NULL; }

rmw_ret_t rmw_get_node_names(const rmw_node_t *node, rcutils_string_array_t *node_names,
	rcutils_string_array_t *node_namespaces)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(node_names, RMW_RET_INVALID_ARGUMENT);
	ARG(node_namespaces, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(node_names) || !string_array_zero(node_namespaces))
		FAIL(RMW_RET_INVALID_ARGUMENT, "node_names and node_namespaces must be zero-initialized");
	return rgapsgo_node_names(d->go, (rcutils_allocator_t *)ctx_alloc(node->context), node_names, node_namespaces,
		NULL);
}

rmw_ret_t rmw_get_node_names_with_enclaves(const rmw_node_t *node, rcutils_string_array_t *node_names,
	rcutils_string_array_t *node_namespaces, rcutils_string_array_t *enclaves)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(node_names, RMW_RET_INVALID_ARGUMENT);
	ARG(node_namespaces, RMW_RET_INVALID_ARGUMENT);
	ARG(enclaves, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(node_names) || !string_array_zero(node_namespaces) || !string_array_zero(enclaves))
		FAIL(RMW_RET_INVALID_ARGUMENT, "output arrays must be zero-initialized");
	return rgapsgo_node_names(d->go, (rcutils_allocator_t *)ctx_alloc(node->context), node_names, node_namespaces,
		enclaves);
}

static rmw_ret_t names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator, int q,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(allocator, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	if (!string_array_zero(&out->names) || out->types != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "names and types output must be zero-initialized");
	if (q >= 2) {
		ARG(node_name, RMW_RET_INVALID_ARGUMENT);
		ARG(node_namespace, RMW_RET_INVALID_ARGUMENT);
	}
	return rgapsgo_names_and_types(d->go, allocator, q, (char *)node_name, (char *)node_namespace, out);
}

rmw_ret_t rmw_get_topic_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle; /* names are never mangled */
	return names_and_types(node, allocator, 0, NULL, NULL, topic_names_and_types);
}

rmw_ret_t rmw_get_service_names_and_types(const rmw_node_t *node, rcutils_allocator_t *allocator,
	rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 1, NULL, NULL, service_names_and_types);
}

rmw_ret_t rmw_get_publisher_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle;
	return names_and_types(node, allocator, 2, node_name, node_namespace, topic_names_and_types);
}

rmw_ret_t rmw_get_subscriber_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, bool no_demangle,
	rmw_names_and_types_t *topic_names_and_types)
{
	(void)no_demangle;
	return names_and_types(node, allocator, 3, node_name, node_namespace, topic_names_and_types);
}

rmw_ret_t rmw_get_service_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 4, node_name, node_namespace, service_names_and_types);
}

rmw_ret_t rmw_get_client_names_and_types_by_node(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *node_name, const char *node_namespace, rmw_names_and_types_t *service_names_and_types)
{
	return names_and_types(node, allocator, 5, node_name, node_namespace, service_names_and_types);
}

static rmw_ret_t endpoints_info(const rmw_node_t *node, rcutils_allocator_t *allocator, const char *topic_name,
	int kind, rmw_topic_endpoint_info_array_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(allocator, RMW_RET_INVALID_ARGUMENT);
	if (!rgaps_allocator_valid(allocator))
		FAIL(RMW_RET_INVALID_ARGUMENT, "allocator is invalid");
	ARG(topic_name, RMW_RET_INVALID_ARGUMENT);
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	if (out->size != 0 || out->info_array != NULL)
		FAIL(RMW_RET_INVALID_ARGUMENT, "endpoint info array must be zero-initialized");
	return rgapsgo_endpoints_info(d->go, allocator, (char *)topic_name, kind, out);
}

rmw_ret_t rmw_get_publishers_info_by_topic(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *topic_name, bool no_mangle, rmw_topic_endpoint_info_array_t *publishers_info)
{
	(void)no_mangle;
	return endpoints_info(node, allocator, topic_name, 1, publishers_info);
}

rmw_ret_t rmw_get_subscriptions_info_by_topic(const rmw_node_t *node, rcutils_allocator_t *allocator,
	const char *topic_name, bool no_mangle, rmw_topic_endpoint_info_array_t *subscriptions_info)
{
	(void)no_mangle;
	return endpoints_info(node, allocator, topic_name, 2, subscriptions_info);
}

static rmw_ret_t count(const rmw_node_t *node, int what, const char *name, size_t *out)
{
	RGAPS_GO_CALLS;
	NODE(node, d);
	ARG(name, RMW_RET_INVALID_ARGUMENT);
	ARG(out, RMW_RET_INVALID_ARGUMENT);
	return rgapsgo_count(d->go, what, (char *)name, out);
}

rmw_ret_t rmw_count_publishers(const rmw_node_t *node, const char *topic_name, size_t *count_)
{
	return count(node, 0, topic_name, count_);
}

rmw_ret_t rmw_count_subscribers(const rmw_node_t *node, const char *topic_name, size_t *count_)
{
	return count(node, 1, topic_name, count_);
}

rmw_ret_t rmw_count_clients(const rmw_node_t *node, const char *service_name, size_t *count_)
{
	return count(node, 2, service_name, count_);
}

rmw_ret_t rmw_count_services(const rmw_node_t *node, const char *service_name, size_t *count_)
{
	return count(node, 3, service_name, count_);
}

rmw_ret_t rmw_compare_gids_equal(const rmw_gid_t *gid1, const rmw_gid_t *gid2, bool *result)
{
	HANDLE(gid1);
	HANDLE(gid2);
	ARG(result, RMW_RET_INVALID_ARGUMENT);
	*result = memcmp(gid1->data, gid2->data, RMW_GID_STORAGE_SIZE) == 0;
	return RMW_RET_OK;
}

rmw_ret_t rmw_qos_profile_check_compatible(const rmw_qos_profile_t publisher_profile,
	const rmw_qos_profile_t subscription_profile, rmw_qos_compatibility_type_t *compatibility, char *reason,
	size_t reason_size)
{
	RGAPS_GO_CALLS;
	ARG(compatibility, RMW_RET_INVALID_ARGUMENT);
	if (reason == NULL && reason_size != 0)
		FAIL(RMW_RET_INVALID_ARGUMENT, "reason is null but reason_size is not 0");
	rmw_qos_profile_t p = publisher_profile, s = subscription_profile;
	int c = 0;
	rmw_ret_t rc = rgapsgo_qos_check(&p, &s, &c, reason, reason_size);
	*compatibility = (rmw_qos_compatibility_type_t)c;
	return rc;
}

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

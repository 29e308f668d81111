/*
 * rmw_gpu — GPU-loaned messages (include/rgaps/gpu.h) as rclcpp reaches
 * them through rgaps/gpu.hpp: the entry points are found with dlopen
 * (RTLD_NOLOAD) and dlsym in the loaded librmw_rgaps.so, and called with
 * the rmw handles of ordinary publishers and subscriptions. On a machine
 * without a GPU the loans and views are host memory; with one they are
 * device memory, and the bytes are checked through the CUDA driver.
 *
 * Usage (ROS_DOMAIN_ID and RGAPS_SHM_PREFIX from the environment):
 *   rmw_gpu local              everything in one process (below)
 *   rmw_gpu pub N SUBS SIZE     waits for SUBS matched subscriptions of
 *                              /gpu_images, publishes N rgaps_test/Chat
 *                              messages (id i, text "frame", SIZE bytes of
 *                              data) with device loans, every 20 ms, then
 *                              waits for stdin to close
 *   rmw_gpu cpu_sub N SIZE      takes N messages as an ordinary subscription
 *   rmw_gpu dev_sub N SIZE      takes N messages as a device subscription
 *   rmw_gpu holder SIZE         a device subscription that claims one
 *                              message's view, prints HELD and waits to be
 *                              killed
 *   rmw_gpu lat_pub N SUBS SIZE, rmw_gpu lat_sub N
 *                              latency at the rmw: the publisher stamps each
 *                              message's text with the time before the
 *                              publish call, each subscriber prints
 *                              "lat NS" once it holds the view
 *   rmw_gpu refill SIZE         publishes one SIZE message, prints SENT,
 *                              waits for a line on stdin (the holder was
 *                              killed), then borrows SIZE bytes again:
 *                              the pool has room only if the dead holder's
 *                              block came back
 *
 * Each role prints PASS/FAIL lines and exits 0 only without failures.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "rmw_harness.h"
#include "rgaps/gpu.h"

static rmw_context_t ctx;
static rmw_init_options_t opts;
static rmw_wait_set_t *ws;
static rmw_node_t *node;
static const rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
static const rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};

#define TOPIC "/gpu_images"

/* ---- the entry points, found as rgaps/gpu_core.hpp finds them ------------------------------ */

static struct {
	uint32_t (*abi_version)(void);
	int32_t (*borrow)(const void *, uint64_t, rgaps_gpu_loan_v1 *);
	int32_t (*publish)(const void *, const void *, const char *, rgaps_gpu_loan_v1 *, void *);
	int32_t (*publish_serialized)(const void *, const uint8_t *, size_t, const char *, rgaps_gpu_loan_v1 *, void *);
	int32_t (*discard)(const void *, rgaps_gpu_loan_v1 *);
	int32_t (*set_device)(const void *, const char *);
	int32_t (*claim_message)(const void *, void *, rgaps_gpu_view_v1 *);
	int32_t (*claim)(const void *, const uint8_t *, size_t, rgaps_gpu_view_v1 *);
	int32_t (*release)(const void *, rgaps_gpu_view_v1 *);
	const char *(*last_error)(void);
} api;

static void load_api(void)
{
	void *h = dlopen("librmw_rgaps.so", RTLD_NOLOAD | RTLD_LAZY);
	MUST(h != NULL);
	*(void **)&api.abi_version = dlsym(h, "rgaps_gpu_abi_version");
	*(void **)&api.borrow = dlsym(h, "rgaps_gpu_publisher_borrow_v1");
	*(void **)&api.publish = dlsym(h, "rgaps_gpu_publisher_publish_v1");
	*(void **)&api.publish_serialized = dlsym(h, "rgaps_gpu_publisher_publish_serialized_v1");
	*(void **)&api.discard = dlsym(h, "rgaps_gpu_publisher_discard_v1");
	*(void **)&api.set_device = dlsym(h, "rgaps_gpu_subscription_set_device_v1");
	*(void **)&api.claim_message = dlsym(h, "rgaps_gpu_subscription_claim_message_v1");
	*(void **)&api.claim = dlsym(h, "rgaps_gpu_subscription_claim_v1");
	*(void **)&api.release = dlsym(h, "rgaps_gpu_subscription_release_v1");
	*(void **)&api.last_error = dlsym(h, "rgaps_gpu_last_error_v1");
	MUST(api.abi_version && api.borrow && api.publish && api.publish_serialized && api.discard && api.set_device && api.claim_message &&
		api.claim && api.release && api.last_error);
	MUST(api.abi_version() >= RGAPS_GPU_ABI_VERSION);
}

/* ---- device memory through the driver, when the blocks are on a GPU ------------------------ */

static struct {
	int (*ctx_retain)(void **, int);
	int (*ctx_set)(void *);
	int (*dtoh)(void *, uint64_t, size_t);
	int (*htod)(uint64_t, const void *, size_t);
} cu;

static void cu_load(int device)
{
	if (cu.dtoh != NULL)
		return;
	void *h = dlopen("libcuda.so.1", RTLD_LAZY);
	MUST(h != NULL);
	*(void **)&cu.ctx_retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&cu.ctx_set = dlsym(h, "cuCtxSetCurrent");
	*(void **)&cu.dtoh = dlsym(h, "cuMemcpyDtoH_v2");
	*(void **)&cu.htod = dlsym(h, "cuMemcpyHtoD_v2");
	MUST(cu.ctx_retain && cu.ctx_set && cu.dtoh && cu.htod);
	void *c = NULL;
	MUST(cu.ctx_retain(&c, device) == 0 && cu.ctx_set(c) == 0);
}

/* fill writes message id's data pattern into a loan (chat_set's). */
static void fill(const rgaps_gpu_loan_v1 *l, int32_t id)
{
	uint8_t *b = (l->flags & RGAPS_GPU_ON_DEVICE) ? malloc(l->size) : l->ptr;
	MUST(b != NULL);
	for (size_t i = 0; i < l->size; i++)
		b[i] = (uint8_t)(i * 7 + (size_t)id);
	if (l->flags & RGAPS_GPU_ON_DEVICE) {
		cu_load(l->device);
		MUST(cu.htod((uint64_t)(uintptr_t)l->ptr, b, l->size) == 0);
		free(b);
	}
}

/* view_ok checks a view's bytes against message id's pattern. */
static int view_ok(const rgaps_gpu_view_v1 *v, int32_t id, size_t n)
{
	if (v->size != n || v->ptr == NULL)
		return 0;
	const uint8_t *b = v->ptr;
	uint8_t *copy = NULL;
	if (v->flags & RGAPS_GPU_ON_DEVICE) {
		cu_load(v->device);
		MUST((copy = malloc(n)) != NULL);
		MUST(cu.dtoh(copy, (uint64_t)(uintptr_t)v->ptr, n) == 0);
		b = copy;
	}
	int ok = 1;
	for (size_t i = 0; i < n && ok; i++)
		ok = b[i] == (uint8_t)(i * 7 + (size_t)id);
	free(copy);
	return ok;
}

/* publish_one publishes message id with a device loan of n bytes. */
static int32_t publish_one(rmw_publisher_t *p, int32_t id, size_t n)
{
	rgaps_gpu_loan_v1 l;
	int32_t rc = api.borrow(p, n, &l);
	if (rc != RMW_RET_OK)
		return rc;
	fill(&l, id);
	Chat meta;
	Chat_init(&meta, 0);
	chat_set(&meta, id, "frame", 3); /* the 3 bytes of data it holds are ignored */
	rc = api.publish(p, &meta, NULL, &l, NULL);
	Chat_fini(&meta);
	return rc;
}

/* take_view takes one message of a device subscription and claims its view. */
static int take_view(rmw_subscription_t *s, Chat *m, rgaps_gpu_view_v1 *v, int ms)
{
	if (!h_wait_sub(ws, s, ms))
		return 0;
	bool taken = false;
	if (rmw_take(s, m, &taken, NULL) != RMW_RET_OK || !taken)
		return 0;
	return api.claim_message(s, m, v) == RMW_RET_OK;
}

static int view_chat_ok(const Chat *m, const rgaps_gpu_view_v1 *v, int32_t id, size_t n)
{
	return m->id == id && strcmp(m->text.data, "frame") == 0 && m->data.size == 0 && view_ok(v, id, n);
}

/* ---- local: one process ----------------------------------------------------------------- */

static void test_mixed(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &h_qos_default, &po);
	rmw_subscription_t *cpu = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	rmw_subscription_t *dev = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	rmw_subscription_t *raw = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	MUST(p && cpu && dev && raw);
	CHECK_RC(api.set_device(dev, NULL), RMW_RET_OK);
	size_t matched = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched == 3, 2000));
	static const size_t sizes[] = {1, 3, 4097, 1 << 20};
	Chat in;
	Chat_init(&in, 0);
	for (int32_t i = 0; i < 4; i++) {
		CHECK_RC(publish_one(p, i, sizes[i]), RMW_RET_OK);
		/* an ordinary subscription: the whole message in host memory */
		bool taken = false;
		CHECK(h_wait_sub(ws, cpu, 2000));
		CHECK_RC(rmw_take(cpu, &in, &taken, NULL), RMW_RET_OK);
		CHECK(taken && chat_ok(&in, i, "frame", sizes[i]));
		/* a serialized take (ros2 bag, topic echo): the whole message's CDR */
		rmw_serialized_message_t got = {NULL, 0, 0, h_allocator()};
		CHECK(h_wait_sub(ws, raw, 2000));
		CHECK_RC(rmw_take_serialized_message(raw, &got, &taken, NULL), RMW_RET_OK);
		Chat back;
		Chat_init(&back, 0);
		CHECK(taken && rmw_deserialize(&got, &Chat_ts, &back) == RMW_RET_OK && chat_ok(&back, i, "frame", sizes[i]));
		Chat_fini(&back);
		got.allocator.deallocate(got.buffer, NULL);
		/* a device subscription: the fields, and a view of the block */
		rgaps_gpu_view_v1 v;
		CHECK(take_view(dev, &in, &v, 2000));
		CHECK(view_chat_ok(&in, &v, i, sizes[i]));
		CHECK_RC(api.release(dev, &v), RMW_RET_OK);
	}
	/* messages of an ordinary publisher reach a device subscription as views too */
	Chat out;
	Chat_init(&out, 0);
	chat_set(&out, 9, "frame", 5000);
	CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	rgaps_gpu_view_v1 v;
	CHECK(take_view(dev, &in, &v, 2000));
	CHECK(view_chat_ok(&in, &v, 9, 5000));
	CHECK_RC(api.release(dev, &v), RMW_RET_OK);
	bool taken;
	CHECK_RC(rmw_take(cpu, &in, &taken, NULL), RMW_RET_OK);
	CHECK(taken && chat_ok(&in, 9, "frame", 5000));
	CHECK_RC(rmw_take_serialized_message(raw, &(rmw_serialized_message_t){NULL, 0, 0, h_allocator()}, &taken, NULL), RMW_RET_OK);
	Chat_fini(&out);
	Chat_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, raw), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, dev), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, cpu), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("cpu_device_and_serialized_subscribers");
}

/* The other fields already serialised (what the Python module hands over). */
static void test_serialized_fields(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &h_qos_default, &po);
	rmw_subscription_t *cpu = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	MUST(p && cpu);
	size_t matched = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched == 1, 2000));
	Chat meta;
	Chat_init(&meta, 0);
	chat_set(&meta, 5, "frame", 0);
	rmw_serialized_message_t sm = {NULL, 0, 0, h_allocator()};
	CHECK_RC(rmw_serialize(&meta, &Chat_ts, &sm), RMW_RET_OK);
	rgaps_gpu_loan_v1 l;
	CHECK_RC(api.borrow(p, 777, &l), RMW_RET_OK);
	fill(&l, 5);
	CHECK_RC(api.publish_serialized(p, sm.buffer, sm.buffer_length, NULL, &l, NULL), RMW_RET_OK);
	bool taken = false;
	CHECK(h_wait_sub(ws, cpu, 2000));
	CHECK_RC(rmw_take(cpu, &meta, &taken, NULL), RMW_RET_OK);
	CHECK(taken && chat_ok(&meta, 5, "frame", 777));
	CHECK_RC(api.borrow(p, 10, &l), RMW_RET_OK);
	CHECK_ERR(api.publish_serialized(p, sm.buffer, 2, NULL, &l, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(api.discard(p, &l), RMW_RET_INVALID_ARGUMENT); /* consumed */
	sm.allocator.deallocate(sm.buffer, NULL);
	Chat_fini(&meta);
	CHECK_RC(rmw_destroy_subscription(node, cpu), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("fields_serialized");
}

static void test_tickets(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &h_qos_default, &po);
	rmw_qos_profile_t deep = h_qos_default;
	deep.depth = 100;
	rmw_subscription_t *dev = rmw_create_subscription(node, &Chat_ts, TOPIC, &deep, &so);
	MUST(p && dev);
	CHECK_RC(api.set_device(dev, NULL), RMW_RET_OK);
	size_t matched = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched == 1, 2000));
	Chat in;
	Chat_init(&in, 0);
	rgaps_gpu_view_v1 v;
	/* the ticket's bytes (what Python hands over) claim once */
	CHECK_RC(publish_one(p, 1, 100), RMW_RET_OK);
	bool taken = false;
	CHECK(h_wait_sub(ws, dev, 2000));
	CHECK_RC(rmw_take(dev, &in, &taken, NULL), RMW_RET_OK);
	CHECK(taken && in.data.size == RGAPS_GPU_TICKET_SIZE);
	uint8_t ticket[RGAPS_GPU_TICKET_SIZE];
	memcpy(ticket, in.data.data, sizeof ticket);
	CHECK_RC(api.claim(dev, ticket, sizeof ticket, &v), RMW_RET_OK);
	CHECK(view_ok(&v, 1, 100));
	CHECK_ERR(api.claim(dev, ticket, sizeof ticket, &(rgaps_gpu_view_v1){0}), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(api.release(dev, &v), RMW_RET_OK);
	CHECK_ERR(api.release(dev, &(rgaps_gpu_view_v1){.id = 1}), RMW_RET_INVALID_ARGUMENT);
	/* a forged ticket and a short one are refused */
	ticket[24] ^= 1;
	CHECK_ERR(api.claim(dev, ticket, sizeof ticket, &v), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(api.claim(dev, ticket, 8, &v), RMW_RET_INVALID_ARGUMENT);
	/* tickets nobody claims expire beyond 64: the blocks come back */
	for (int32_t i = 0; i < 70; i++)
		CHECK_RC(publish_one(p, i, 64), RMW_RET_OK);
	uint8_t first[RGAPS_GPU_TICKET_SIZE];
	for (int32_t i = 0; i < 70; i++) {
		CHECK_RC(rmw_take(dev, &in, &taken, NULL), RMW_RET_OK);
		CHECK(taken && in.data.size == RGAPS_GPU_TICKET_SIZE);
		if (i == 0)
			memcpy(first, in.data.data, sizeof first);
	}
	CHECK_ERR(api.claim(dev, first, sizeof first, &v), RMW_RET_ERROR);
	CHECK_RC(api.claim_message(dev, &in, &v), RMW_RET_OK); /* the newest is still there */
	CHECK(view_ok(&v, 69, 64) && in.data.size == 0);
	CHECK_ERR(api.claim_message(dev, &in, &(rgaps_gpu_view_v1){0}), RMW_RET_INVALID_ARGUMENT); /* emptied by the claim */
	CHECK_RC(api.release(dev, &v), RMW_RET_OK);
	Chat_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, dev), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("tickets_claim_once_and_expire");
}

static void test_errors(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &h_qos_default, &po);
	rmw_publisher_t *sp = rmw_create_publisher(node, &String_ts, "/gpu_strings", &h_qos_default, &po);
	rmw_subscription_t *ss = rmw_create_subscription(node, &String_ts, "/gpu_strings", &h_qos_default, &so);
	MUST(p && sp && ss);
	rgaps_gpu_loan_v1 l;
	CHECK_ERR(api.borrow(p, 0, &l), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(api.borrow(NULL, 16, &l), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(api.borrow(sp, 16, &l), RMW_RET_INVALID_ARGUMENT);        /* no uint8[] field */
	CHECK_ERR(api.set_device(ss, NULL), RMW_RET_INVALID_ARGUMENT);       /* the same */
	CHECK_ERR(api.set_device(ss, "data"), RMW_RET_INVALID_ARGUMENT);     /* a string, not bytes */
	rmw_publisher_t fake = *p;
	fake.implementation_identifier = "rmw_cyclonedds_cpp";
	CHECK_ERR(api.borrow(&fake, 16, &l), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	/* a bad field name fails the publish and gives the loan back */
	Chat meta;
	Chat_init(&meta, 0);
	CHECK_RC(api.borrow(p, 1000, &l), RMW_RET_OK);
	CHECK_ERR(api.publish(p, &meta, "text", &l, NULL), RMW_RET_ERROR);
	CHECK_ERR(api.publish(p, &meta, NULL, &l, NULL), RMW_RET_INVALID_ARGUMENT); /* consumed */
	CHECK_RC(api.borrow(p, 1000, &l), RMW_RET_OK);
	CHECK_RC(api.discard(p, &l), RMW_RET_OK);
	CHECK_ERR(api.discard(p, &l), RMW_RET_INVALID_ARGUMENT);
	CHECK(strlen(api.last_error()) > 0);
	Chat_fini(&meta);
	CHECK_RC(rmw_destroy_subscription(node, ss), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, sp), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("bad_arguments");
}

/* rgaps_test/msg/Stereo: uint8[] left, uint32 id, uint8[] right: two byte
 * fields and none named data, so the device field must be named. */
typedef struct Stereo {
	rosidl_runtime_c__uint8__Sequence left;
	uint32_t id;
	rosidl_runtime_c__uint8__Sequence right;
} Stereo;

static void Stereo_init(void *p, int how)
{
	(void)how;
	memset(p, 0, sizeof(Stereo));
}

static void Stereo_fini(void *p)
{
	Stereo *m = p;
	free(m->left.data);
	free(m->right.data);
	memset(m, 0, sizeof *m);
}

static const rosidl_typesupport_introspection_c__MessageMember Stereo_members[] = {
	H_M(Stereo, left, RGAPS_TYPE_UINT8, true, 0, h_resize_uint8, h_size_uint8),
	H_SCALAR(Stereo, id, RGAPS_TYPE_UINT32),
	H_M(Stereo, right, RGAPS_TYPE_UINT8, true, 0, h_resize_uint8, h_size_uint8),
};
H_TYPE("rgaps_test__msg", Stereo)

static void test_named_field(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Stereo_ts, "/gpu_stereo", &h_qos_default, &po);
	rmw_subscription_t *cpu = rmw_create_subscription(node, &Stereo_ts, "/gpu_stereo", &h_qos_default, &so);
	rmw_subscription_t *dev = rmw_create_subscription(node, &Stereo_ts, "/gpu_stereo", &h_qos_default, &so);
	MUST(p && cpu && dev);
	CHECK_ERR(api.set_device(dev, NULL), RMW_RET_ERROR); /* which one? */
	CHECK_RC(api.set_device(dev, "right"), RMW_RET_OK);
	size_t matched = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched == 2, 2000));
	Stereo meta, in;
	Stereo_init(&meta, 0);
	Stereo_init(&in, 0);
	meta.id = 11;
	h_resize_uint8(&meta.left, 3);
	memcpy(meta.left.data, "abc", 3);
	rgaps_gpu_loan_v1 l;
	CHECK_RC(api.borrow(p, 5000, &l), RMW_RET_OK);
	CHECK_ERR(api.publish(p, &meta, NULL, &l, NULL), RMW_RET_ERROR); /* no default field */
	CHECK_RC(api.borrow(p, 5000, &l), RMW_RET_OK);
	fill(&l, 11);
	CHECK_RC(api.publish(p, &meta, "right", &l, NULL), RMW_RET_OK);
	bool taken = false;
	CHECK(h_wait_sub(ws, cpu, 2000));
	CHECK_RC(rmw_take(cpu, &in, &taken, NULL), RMW_RET_OK);
	CHECK(taken && in.id == 11 && in.left.size == 3 && memcmp(in.left.data, "abc", 3) == 0 && in.right.size == 5000);
	int ok = 1;
	for (size_t i = 0; ok && i < in.right.size; i++)
		ok = in.right.data[i] == (uint8_t)(i * 7 + 11);
	CHECK(ok);
	rgaps_gpu_view_v1 v;
	CHECK(h_wait_sub(ws, dev, 2000));
	CHECK_RC(rmw_take(dev, &in, &taken, NULL), RMW_RET_OK);
	CHECK(taken && in.id == 11 && in.left.size == 3 && in.right.size == RGAPS_GPU_TICKET_SIZE);
	CHECK_RC(api.claim_message(dev, &in, &v), RMW_RET_OK);
	CHECK(view_ok(&v, 11, 5000) && in.right.size == 0);
	CHECK_RC(api.release(dev, &v), RMW_RET_OK);
	Stereo_fini(&meta);
	Stereo_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, dev), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, cpu), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("named_device_field");
}

/* discard_later gives a loan back from another thread, 200 ms later: room
 * that comes while a borrow waits for it. */
struct later {
	rmw_publisher_t *p;
	rgaps_gpu_loan_v1 loan;
};

static void *discard_later(void *arg)
{
	struct later *l = arg;
	h_sleep_ms(200);
	CHECK_RC(api.discard(l->p, &l->loan), RMW_RET_OK);
	return NULL;
}

/* Pool exhaustion: RGAPS_POOL_SIZE is 16 MiB in the tests. Both QoS say
 * RMW_RET_BAD_ALLOC when the pool stays full. A RELIABLE publisher waits
 * for room (the engine's BlockTimeout, 1 s): a block given back while it
 * waits is lent to it. A BEST_EFFORT one fails at once: the same block
 * given back later does not help it. */
static void test_exhaustion(void)
{
	const rmw_qos_profile_t *qs[] = {&h_qos_default, &h_qos_best_effort};
	for (int k = 0; k < 2; k++) {
		rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, "/gpu_full", qs[k], &po);
		MUST(p != NULL);
		rgaps_gpu_loan_v1 a, b;
		CHECK_RC(api.borrow(p, 12 << 20, &a), RMW_RET_OK);
		CHECK_ERR(api.borrow(p, 12 << 20, &b), RMW_RET_BAD_ALLOC);
		struct later l = {p, a};
		pthread_t th;
		MUST(pthread_create(&th, NULL, discard_later, &l) == 0);
		int32_t rc = api.borrow(p, 12 << 20, &b);
		CHECK_RC(rc, k == 0 ? RMW_RET_OK : RMW_RET_BAD_ALLOC);
		pthread_join(th, NULL);
		if (rc == RMW_RET_OK)
			CHECK_RC(api.discard(p, &b), RMW_RET_OK);
		CHECK_RC(api.borrow(p, 12 << 20, &b), RMW_RET_OK); /* room came back */
		CHECK_RC(api.discard(p, &b), RMW_RET_OK);
		CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	}
	h_pass("pool_exhaustion_per_qos");
}

static int local(void)
{
	test_mixed();
	test_serialized_fields();
	test_tickets();
	test_errors();
	test_named_field();
	test_exhaustion();
	return 0;
}

/* ---- roles of the multi-process tests ------------------------------------------------------- */

static int pub_role(int n, size_t subs, size_t size)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &h_qos_default, &po);
	MUST(p != NULL);
	size_t matched = 0;
	/* Remote subscribers count once the bridge carries the topic: nothing published after this is lost. */
	MUST(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched >= subs, 30000));
	for (int32_t i = 0; i < n; i++) {
		CHECK_RC(publish_one(p, i, size), RMW_RET_OK);
		h_sleep_ms(20);
	}
	printf("SENT\n");
	fflush(stdout);
	char line[64];
	while (fgets(line, sizeof line, stdin) != NULL) {
	}
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("published");
	return 0;
}

static int sub_role(int n, size_t size, int device)
{
	rmw_subscription_t *s = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	MUST(s != NULL);
	if (device)
		CHECK_RC(api.set_device(s, NULL), RMW_RET_OK);
	printf("READY\n");
	fflush(stdout);
	Chat in;
	Chat_init(&in, 0);
	int got = 0, on_device = 0;
	for (int32_t i = 0; i < n; i++) {
		if (!device) {
			bool taken = false;
			CHECK(h_wait_sub(ws, s, 30000) && rmw_take(s, &in, &taken, NULL) == RMW_RET_OK && taken);
			CHECK(chat_ok(&in, i, "frame", size));
			got += chat_ok(&in, i, "frame", size);
			continue;
		}
		rgaps_gpu_view_v1 v;
		CHECK(take_view(s, &in, &v, 30000));
		CHECK(view_chat_ok(&in, &v, i, size));
		got += view_chat_ok(&in, &v, i, size);
		on_device += (v.flags & RGAPS_GPU_ON_DEVICE) != 0;
		CHECK_RC(api.release(s, &v), RMW_RET_OK);
	}
	printf("GOT %d ON_DEVICE %d\n", got, on_device);
	Chat_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	h_pass(device ? "device_subscriber" : "cpu_subscriber");
	return 0;
}

static int holder_role(size_t size)
{
	rmw_subscription_t *s = rmw_create_subscription(node, &Chat_ts, TOPIC, &h_qos_default, &so);
	MUST(s != NULL);
	MUST(api.set_device(s, NULL) == RMW_RET_OK);
	printf("READY\n");
	fflush(stdout);
	Chat in;
	Chat_init(&in, 0);
	rgaps_gpu_view_v1 v;
	MUST(take_view(s, &in, &v, 30000) && v.size == size);
	printf("HELD\n");
	fflush(stdout);
	for (;;)
		pause(); /* until SIGKILL */
}

static int refill_role(size_t size)
{
	rmw_qos_profile_t q = h_qos_default;
	q.depth = 1;
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, TOPIC, &q, &po);
	MUST(p != NULL);
	size_t matched = 0;
	MUST(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched >= 1, 30000));
	CHECK_RC(publish_one(p, 0, size), RMW_RET_OK);
	printf("SENT\n");
	fflush(stdout);
	char line[64];
	MUST(fgets(line, sizeof line, stdin) != NULL); /* the holder is dead */
	rgaps_gpu_loan_v1 l;
	int32_t rc = RMW_RET_BAD_ALLOC;
	for (int i = 0; i < 10 && rc == RMW_RET_BAD_ALLOC; i++) /* each try waits up to BlockTimeout */
		rc = api.borrow(p, size, &l);
	CHECK_RC(rc, RMW_RET_OK);
	if (rc == RMW_RET_OK)
		CHECK_RC(api.discard(p, &l), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("block_of_killed_holder_came_back");
	return 0;
}

/* ---- latency at the rmw (what rclcpp adds is measured by rgaps-bench ros) ---------------------- */

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* lat_pub N SUBS SIZE: N messages 20 ms apart, each carrying in its text
 * the CLOCK_REALTIME ns taken right before the publish call. */
static int lat_pub(int n, size_t subs, size_t size)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, "/gpu_lat", &h_qos_default, &po);
	MUST(p != NULL);
	size_t matched = 0;
	MUST(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &matched) == RMW_RET_OK && matched >= subs, 30000));
	Chat meta;
	Chat_init(&meta, 0);
	for (int32_t i = 0; i < n; i++) {
		rgaps_gpu_loan_v1 l;
		MUST(api.borrow(p, size, &l) == RMW_RET_OK);
		char t0[32];
		snprintf(t0, sizeof t0, "%lld", (long long)wall_ns());
		chat_set(&meta, i, t0, 0);
		CHECK_RC(api.publish(p, &meta, NULL, &l, NULL), RMW_RET_OK);
		h_sleep_ms(20);
	}
	Chat_fini(&meta);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("lat_published");
	return 0;
}

/* lat_sub N: a device subscription printing "lat NS" per message: from the
 * publish call to holding the view (after rmw_wait, rmw_take, claim). */
static int lat_sub(int n)
{
	rmw_subscription_t *s = rmw_create_subscription(node, &Chat_ts, "/gpu_lat", &h_qos_default, &so);
	MUST(s != NULL && api.set_device(s, NULL) == RMW_RET_OK);
	printf("READY\n");
	fflush(stdout);
	Chat in;
	Chat_init(&in, 0);
	for (int i = 0; i < n; i++) {
		rgaps_gpu_view_v1 v;
		MUST(take_view(s, &in, &v, 30000));
		int64_t t2 = wall_ns();
		printf("lat %lld\n", (long long)(t2 - strtoll(in.text.data, NULL, 10)));
		CHECK_RC(api.release(s, &v), RMW_RET_OK);
	}
	fflush(stdout);
	Chat_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	h_pass("lat_received");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rmw_gpu local | pub N SUBS SIZE | cpu_sub N SIZE | dev_sub N SIZE | holder SIZE | refill SIZE | lat_pub N SUBS SIZE | lat_sub N\n");
		return 2;
	}
	h_init(&ctx, &opts, h_allocator());
	load_api();
	node = rmw_create_node(&ctx, "rmw_gpu", "/");
	ws = rmw_create_wait_set(&ctx, 4);
	MUST(node && ws);
	int rc = 2;
	if (strcmp(argv[1], "local") == 0)
		rc = local();
	else if (strcmp(argv[1], "pub") == 0 && argc == 5)
		rc = pub_role(atoi(argv[2]), strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
	else if (strcmp(argv[1], "cpu_sub") == 0 && argc == 4)
		rc = sub_role(atoi(argv[2]), strtoul(argv[3], NULL, 10), 0);
	else if (strcmp(argv[1], "dev_sub") == 0 && argc == 4)
		rc = sub_role(atoi(argv[2]), strtoul(argv[3], NULL, 10), 1);
	else if (strcmp(argv[1], "holder") == 0 && argc == 3)
		rc = holder_role(strtoul(argv[2], NULL, 10));
	else if (strcmp(argv[1], "refill") == 0 && argc == 3)
		rc = refill_role(strtoul(argv[2], NULL, 10));
	else if (strcmp(argv[1], "lat_pub") == 0 && argc == 5)
		rc = lat_pub(atoi(argv[2]), strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
	else if (strcmp(argv[1], "lat_sub") == 0 && argc == 3)
		rc = lat_sub(atoi(argv[2]));
	else
		fprintf(stderr, "unknown role %s\n", argv[1]);
	CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(node), RMW_RET_OK);
	h_fini(&ctx, &opts);
	return rc ? rc : h_done();
}

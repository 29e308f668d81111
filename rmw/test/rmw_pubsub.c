/*
 * rmw_pubsub — librmw_rgaps in one process, driven as rcl drives it:
 * publish/take round trips (C messages with strings and sequences, plain
 * messages), take_with_info, take_sequence, serialized publish and take,
 * rmw_serialize/rmw_deserialize, loans, rmw_wait's timeout and readiness
 * semantics, guard conditions, the graph guard condition, graph queries,
 * events (matched, incompatible QoS) and new-message callbacks.
 *
 * Usage: rmw_pubsub   (ROS_DOMAIN_ID and RGAPS_SHM_PREFIX from the environment)
 */
#include <pthread.h>

#include "rmw_harness.h"

static rmw_context_t ctx;
static rmw_init_options_t opts;
static rmw_node_t *node;
static rmw_wait_set_t *ws;
static const rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
static const rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};

static void test_round_trip(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Chat_ts, "/chat", &h_qos_default, &po);
	rmw_subscription_t *s = rmw_create_subscription(node, &Chat_ts, "/chat", &h_qos_default, &so);
	MUST(p && s);
	CHECK(strcmp(p->topic_name, "/chat") == 0);
	size_t n = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &n) == RMW_RET_OK && n == 1, 2000));
	CHECK(H_EVENTUALLY(rmw_subscription_count_matched_publishers(s, &n) == RMW_RET_OK && n == 1, 2000));

	Chat out, in;
	Chat_init(&out, 0);
	Chat_init(&in, 0);
	for (int i = 0; i < 5; i++) {
		chat_set(&out, i, i % 2 ? "hello" : "a longer text of the message", (size_t)(i * 100));
		CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	}
	rmw_gid_t pg;
	CHECK_RC(rmw_get_gid_for_publisher(p, &pg), RMW_RET_OK);
	uint64_t last_seq = 0;
	for (int i = 0; i < 5; i++) {
		bool taken = false;
		rmw_message_info_t info;
		memset(&info, 0, sizeof info);
		CHECK_RC(rmw_take_with_info(s, &in, &taken, &info, NULL), RMW_RET_OK);
		CHECK(taken);
		CHECK(chat_ok(&in, i, i % 2 ? "hello" : "a longer text of the message", (size_t)(i * 100)));
		CHECK(info.publication_sequence_number > last_seq);
		last_seq = info.publication_sequence_number;
		CHECK(info.source_timestamp > 0 && info.received_timestamp >= info.source_timestamp);
		CHECK(info.publisher_gid.implementation_identifier == rmw_get_implementation_identifier());
		CHECK(memcmp(info.publisher_gid.data, pg.data, RMW_GID_STORAGE_SIZE) == 0);
		CHECK(!info.from_intra_process);
	}
	bool taken = true;
	CHECK_RC(rmw_take(s, &in, &taken, NULL), RMW_RET_OK);
	CHECK(!taken);

	/* take_sequence: three published, up to four asked */
	for (int i = 10; i < 13; i++) {
		chat_set(&out, i, "seq", 3);
		CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	}
	Chat m[4];
	void *ptrs[4];
	rmw_message_info_t infos[4];
	for (int i = 0; i < 4; i++) {
		Chat_init(&m[i], 0);
		ptrs[i] = &m[i];
	}
	rmw_message_sequence_t seq = {ptrs, 0, 4, NULL};
	rmw_message_info_sequence_t iseq = {infos, 0, 4, NULL};
	size_t nt = 0;
	CHECK_RC(rmw_take_sequence(s, 4, &seq, &iseq, &nt, NULL), RMW_RET_OK);
	CHECK(nt == 3 && seq.size == 3 && iseq.size == 3);
	for (int i = 0; i < 3; i++)
		CHECK(chat_ok(&m[i], 10 + i, "seq", 3));
	for (int i = 0; i < 4; i++)
		Chat_fini(&m[i]);

	/* serialized publish and take, and rmw_serialize/deserialize */
	rmw_serialized_message_t sm = {NULL, 0, 0, h_allocator()};
	chat_set(&out, 42, "serialized", 17);
	CHECK_RC(rmw_serialize(&out, &Chat_ts, &sm), RMW_RET_OK);
	CHECK(sm.buffer_length > 4 && sm.buffer[0] == 0 && sm.buffer[1] == 1); /* CDR_LE header */
	Chat back;
	Chat_init(&back, 0);
	CHECK_RC(rmw_deserialize(&sm, &Chat_ts, &back), RMW_RET_OK);
	CHECK(chat_ok(&back, 42, "serialized", 17));
	CHECK_RC(rmw_publish_serialized_message(p, &sm, NULL), RMW_RET_OK);
	CHECK_RC(rmw_take(s, &in, &taken, NULL), RMW_RET_OK);
	CHECK(taken && chat_ok(&in, 42, "serialized", 17));
	chat_set(&out, 43, "again", 5);
	CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	rmw_serialized_message_t got = {NULL, 0, 0, h_allocator()};
	rmw_message_info_t info;
	CHECK_RC(rmw_take_serialized_message_with_info(s, &got, &taken, &info, NULL), RMW_RET_OK);
	CHECK(taken && got.buffer_capacity >= got.buffer_length);
	CHECK_RC(rmw_deserialize(&got, &Chat_ts, &back), RMW_RET_OK);
	CHECK(chat_ok(&back, 43, "again", 5));
	/* a truncated serialized message is an error, not a crash */
	rmw_serialized_message_t cut = got;
	cut.buffer_length = 6;
	CHECK_ERR(rmw_deserialize(&cut, &Chat_ts, &back), RMW_RET_ERROR);
	/* ... but a malformed message on the topic never fails a take: it is
	 * dropped (and counted) and the take goes on with the next message */
	CHECK_RC(rmw_publish_serialized_message(p, &cut, NULL), RMW_RET_OK);
	uint8_t lie[12] = {0, 1, 0, 0, 7, 0, 0, 0, 0xf0, 0xff, 0xff, 0x7f}; /* id 7, text length 2^31 */
	rmw_serialized_message_t bad = {lie, sizeof lie, sizeof lie, h_allocator()};
	CHECK_RC(rmw_publish_serialized_message(p, &bad, NULL), RMW_RET_OK);
	taken = true;
	CHECK_RC(rmw_take(s, &in, &taken, NULL), RMW_RET_OK);
	CHECK(!taken);
	CHECK_RC(rmw_publish_serialized_message(p, &cut, NULL), RMW_RET_OK);
	CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	CHECK_RC(rmw_take_with_info(s, &in, &taken, &info, NULL), RMW_RET_OK);
	CHECK(taken && chat_ok(&in, 43, "again", 5));
	sm.allocator.deallocate(sm.buffer, NULL);
	got.allocator.deallocate(got.buffer, NULL);
	Chat_fini(&back);
	Chat_fini(&out);
	Chat_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("publish_take_round_trip");
}

static void test_loans(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Plain_ts, "/plain", &h_qos_default, &po);
	rmw_subscription_t *s = rmw_create_subscription(node, &Plain_ts, "/plain", &h_qos_default, &so);
	MUST(p && s);
	CHECK(p->can_loan_messages && s->can_loan_messages);
	size_t n = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &n) == RMW_RET_OK && n == 1, 2000));

	void *loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	MUST(loan != NULL);
	CHECK(((uintptr_t)loan & 7) == 0); /* 8-aligned: the message's own alignment */
	void *other = (void *)1;
	CHECK_ERR(rmw_borrow_loaned_message(p, &Plain_ts, &other), RMW_RET_INVALID_ARGUMENT); /* *msg not NULL */
	CHECK_ERR(rmw_borrow_loaned_message(p, &Chat_ts, &(void *){NULL}), RMW_RET_INVALID_ARGUMENT);
	Plain *pm = loan;
	pm->stamp = 1234;
	pm->x = 2.5;
	pm->seq = 7;
	CHECK_RC(rmw_publish_loaned_message(p, loan, NULL), RMW_RET_OK);
	CHECK_ERR(rmw_publish_loaned_message(p, loan, NULL), RMW_RET_INVALID_ARGUMENT); /* not a loan any more */

	/* taken as a loan: the same bytes, in place */
	void *tl = NULL;
	bool taken = false;
	rmw_message_info_t info;
	CHECK_RC(rmw_take_loaned_message_with_info(s, &tl, &taken, &info, NULL), RMW_RET_OK);
	CHECK(taken && tl != NULL);
	if (tl) {
		const Plain *q = tl;
		CHECK(q->stamp == 1234 && q->x == 2.5 && q->seq == 7);
		CHECK_RC(rmw_return_loaned_message_from_subscription(s, tl), RMW_RET_OK);
		CHECK_ERR(rmw_return_loaned_message_from_subscription(s, tl), RMW_RET_ERROR);
	}

	/* a loan returned unpublished is not delivered */
	loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	CHECK_RC(rmw_return_loaned_message_from_publisher(p, loan), RMW_RET_OK);
	CHECK_RC(rmw_take(s, &(Plain){0}, &taken, NULL), RMW_RET_OK);
	CHECK(!taken);

	/* a copied publish taken as a loan, and a loan taken by copy */
	Plain v = {99, -1.0, 3};
	CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	tl = NULL;
	CHECK_RC(rmw_take_loaned_message(s, &tl, &taken, NULL), RMW_RET_OK);
	CHECK(taken && tl && ((Plain *)tl)->stamp == 99 && ((Plain *)tl)->seq == 3);
	if (tl)
		CHECK_RC(rmw_return_loaned_message_from_subscription(s, tl), RMW_RET_OK);
	loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	*(Plain *)loan = (Plain){5, 6.0, 7};
	CHECK_RC(rmw_publish_loaned_message(p, loan, NULL), RMW_RET_OK);
	Plain got = {0, 0, 0};
	CHECK_RC(rmw_take(s, &got, &taken, NULL), RMW_RET_OK);
	CHECK(taken && got.stamp == 5 && got.x == 6.0 && got.seq == 7);

	/* many loans outstanding, published in another order */
	void *ls[8];
	for (int i = 0; i < 8; i++) {
		ls[i] = NULL;
		CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &ls[i]), RMW_RET_OK);
		((Plain *)ls[i])->seq = (uint32_t)i;
	}
	for (int i = 7; i >= 0; i--)
		CHECK_RC(rmw_publish_loaned_message(p, ls[i], NULL), RMW_RET_OK);
	for (int i = 7; i >= 0; i--) {
		CHECK_RC(rmw_take(s, &got, &taken, NULL), RMW_RET_OK);
		CHECK(taken && got.seq == (uint32_t)i);
	}
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("loans");
}

static void *trigger_later(void *g)
{
	h_sleep_ms(50);
	rmw_ret_t rc = rmw_trigger_guard_condition(g);
	CHECK_RC(rc, RMW_RET_OK);
	return NULL;
}

struct pub_arg {
	rmw_publisher_t *p;
	uint32_t seq;
};

static void *publish_later(void *arg)
{
	struct pub_arg *a = arg;
	h_sleep_ms(50);
	Plain v = {1, 1.0, a->seq};
	CHECK_RC(rmw_publish(a->p, &v, NULL), RMW_RET_OK);
	return NULL;
}

static void test_wait(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Plain_ts, "/waited", &h_qos_default, &po);
	rmw_subscription_t *s1 = rmw_create_subscription(node, &Plain_ts, "/waited", &h_qos_default, &so);
	rmw_subscription_t *s2 = rmw_create_subscription(node, &Plain_ts, "/waited", &h_qos_default, &so);
	rmw_guard_condition_t *g1 = rmw_create_guard_condition(&ctx), *g2 = rmw_create_guard_condition(&ctx);
	MUST(p && s1 && s2 && g1 && g2);
	size_t n;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &n) == RMW_RET_OK && n == 2, 2000));

	/* nothing ready: timeout, every entry NULL */
	void *sa[2] = {s1->data, s2->data};
	void *ga[2] = {g1->data, g2->data};
	rmw_subscriptions_t subs = {2, sa};
	rmw_guard_conditions_t gcs = {2, ga};
	rmw_time_t t10 = {0, 10000000};
	CHECK_RC(rmw_wait(&subs, &gcs, NULL, NULL, NULL, ws, &t10), RMW_RET_TIMEOUT);
	CHECK(sa[0] == NULL && sa[1] == NULL && ga[0] == NULL && ga[1] == NULL);
	/* zero timeout: non-blocking */
	sa[0] = s1->data, sa[1] = s2->data, ga[0] = g1->data, ga[1] = g2->data;
	rmw_time_t zero = {0, 0};
	CHECK_RC(rmw_wait(&subs, &gcs, NULL, NULL, NULL, ws, &zero), RMW_RET_TIMEOUT);
	/* empty sets: timeout */
	CHECK_RC(rmw_wait(NULL, NULL, NULL, NULL, NULL, ws, &zero), RMW_RET_TIMEOUT);

	/* a guard condition: ready once per trigger */
	CHECK_RC(rmw_trigger_guard_condition(g2), RMW_RET_OK);
	sa[0] = s1->data, sa[1] = s2->data, ga[0] = g1->data, ga[1] = g2->data;
	CHECK_RC(rmw_wait(&subs, &gcs, NULL, NULL, NULL, ws, NULL), RMW_RET_OK); /* no timeout: g2 is ready */
	CHECK(sa[0] == NULL && sa[1] == NULL && ga[0] == NULL && ga[1] == g2->data);
	ga[0] = g1->data, ga[1] = g2->data;
	CHECK_RC(rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &zero), RMW_RET_TIMEOUT);

	/* a message: both subscriptions ready; taken from one, only the other */
	Plain v = {1, 2.0, 3};
	CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	sa[0] = s1->data, sa[1] = s2->data;
	CHECK_RC(rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &t10), RMW_RET_OK);
	CHECK(sa[0] == s1->data && sa[1] == s2->data);
	bool taken;
	Plain got;
	CHECK_RC(rmw_take(s1, &got, &taken, NULL), RMW_RET_OK);
	CHECK(taken);
	sa[0] = s1->data, sa[1] = s2->data;
	CHECK_RC(rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &t10), RMW_RET_OK);
	CHECK(sa[0] == NULL && sa[1] == s2->data);
	CHECK_RC(rmw_take(s2, &got, &taken, NULL), RMW_RET_OK);
	/* NULL entries are skipped */
	sa[0] = NULL, sa[1] = s2->data;
	CHECK_RC(rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &zero), RMW_RET_TIMEOUT);

	/* a wait blocked without timeout wakes on a trigger from another thread */
	pthread_t th;
	MUST(pthread_create(&th, NULL, trigger_later, g1) == 0);
	ga[0] = g1->data, ga[1] = g2->data;
	sa[0] = s1->data, sa[1] = s2->data;
	CHECK_RC(rmw_wait(&subs, &gcs, NULL, NULL, NULL, ws, NULL), RMW_RET_OK);
	CHECK(ga[0] == g1->data && ga[1] == NULL && sa[0] == NULL && sa[1] == NULL);
	pthread_join(th, NULL);
	/* ... and on a message published by another thread */
	struct pub_arg pa = {p, 77};
	MUST(pthread_create(&th, NULL, publish_later, &pa) == 0);
	sa[0] = s1->data, sa[1] = NULL;
	ga[0] = g1->data, ga[1] = g2->data;
	CHECK_RC(rmw_wait(&subs, &gcs, NULL, NULL, NULL, ws, NULL), RMW_RET_OK);
	CHECK(sa[0] == s1->data && ga[0] == NULL && ga[1] == NULL);
	pthread_join(th, NULL);
	CHECK_RC(rmw_take(s1, &got, &taken, NULL), RMW_RET_OK);
	CHECK(taken && got.seq == 77);
	CHECK_RC(rmw_take(s2, &got, &taken, NULL), RMW_RET_OK);
	h_pass("wait");
	CHECK_RC(rmw_destroy_guard_condition(g1), RMW_RET_OK);
	CHECK_RC(rmw_destroy_guard_condition(g2), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, s1), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, s2), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
}

static void test_graph(void)
{
	const rmw_guard_condition_t *graph = rmw_node_get_graph_guard_condition(node);
	MUST(graph != NULL);
	rmw_time_t zero = {0, 0};
	void *ga[1] = {graph->data};
	rmw_guard_conditions_t gcs = {1, ga};
	/* drain what happened before */
	rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &zero);

	rmw_node_t *other = rmw_create_node(&ctx, "graph_other", "/graph_ns");
	MUST(other != NULL);
	ga[0] = graph->data;
	rmw_time_t sec = {1, 0};
	CHECK_RC(rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &sec), RMW_RET_OK); /* a node joined */
	CHECK(ga[0] == graph->data);
	ga[0] = graph->data;
	CHECK_RC(rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &zero), RMW_RET_TIMEOUT); /* reported once */

	rmw_publisher_t *p = rmw_create_publisher(other, &Chat_ts, "/graph_ns/talk", &h_qos_default, &po);
	rmw_subscription_t *s = rmw_create_subscription(node, &Chat_ts, "/graph_ns/talk", &h_qos_best_effort, &so);
	rmw_service_t *sv = rmw_create_service(other, &AddTwoInts_ts, "/graph_ns/add", &h_qos_default);
	rmw_client_t *cl = rmw_create_client(node, &AddTwoInts_ts, "/graph_ns/add", &h_qos_default);
	MUST(p && s && sv && cl);
	ga[0] = graph->data;
	CHECK_RC(rmw_wait(NULL, &gcs, NULL, NULL, NULL, ws, &sec), RMW_RET_OK); /* endpoints appeared */

	rcutils_allocator_t a = h_allocator();
	rcutils_string_array_t names = {0, NULL, {0}}, nss = {0, NULL, {0}}, encl = {0, NULL, {0}};
	CHECK_RC(rmw_get_node_names_with_enclaves(node, &names, &nss, &encl), RMW_RET_OK);
	int i = h_index_of(&names, "graph_other");
	CHECK(i >= 0 && strcmp(nss.data[i], "/graph_ns") == 0 && strcmp(encl.data[i], "/") == 0);
	CHECK(h_has_string(&names, "pubsub_node"));
	h_string_array_fini(&names);
	h_string_array_fini(&nss);
	h_string_array_fini(&encl);

	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	CHECK_RC(rmw_get_topic_names_and_types(node, &a, false, &nt), RMW_RET_OK);
	i = h_index_of(&nt.names, "/graph_ns/talk");
	CHECK(i >= 0 && nt.types[i].size == 1 && strcmp(nt.types[i].data[0], "rgaps_test/msg/Chat") == 0);
	for (size_t k = 0; k < nt.names.size; k++)
		CHECK(strstr(nt.names.data[k], "_rgaps_") == NULL); /* service topics are hidden */
	h_names_and_types_fini(&nt);

	CHECK_RC(rmw_get_service_names_and_types(node, &a, &nt), RMW_RET_OK);
	i = h_index_of(&nt.names, "/graph_ns/add");
	CHECK(i >= 0 && nt.types[i].size == 1 && strcmp(nt.types[i].data[0], "rgaps_test/srv/AddTwoInts") == 0);
	h_names_and_types_fini(&nt);

	CHECK_RC(rmw_get_publisher_names_and_types_by_node(node, &a, "graph_other", "/graph_ns", false, &nt),
		RMW_RET_OK);
	CHECK(nt.names.size == 1 && h_has_string(&nt.names, "/graph_ns/talk"));
	h_names_and_types_fini(&nt);
	CHECK_RC(rmw_get_subscriber_names_and_types_by_node(node, &a, "pubsub_node", "/", false, &nt), RMW_RET_OK);
	CHECK(h_has_string(&nt.names, "/graph_ns/talk"));
	h_names_and_types_fini(&nt);
	CHECK_RC(rmw_get_service_names_and_types_by_node(node, &a, "graph_other", "/graph_ns", &nt), RMW_RET_OK);
	CHECK(nt.names.size == 1 && h_has_string(&nt.names, "/graph_ns/add"));
	h_names_and_types_fini(&nt);
	CHECK_RC(rmw_get_client_names_and_types_by_node(node, &a, "pubsub_node", "/", &nt), RMW_RET_OK);
	CHECK(nt.names.size == 1 && h_has_string(&nt.names, "/graph_ns/add"));
	h_names_and_types_fini(&nt);
	CHECK_RC(rmw_get_client_names_and_types_by_node(node, &a, "graph_other", "/graph_ns", &nt), RMW_RET_OK);
	CHECK(nt.names.size == 0);
	h_names_and_types_fini(&nt);

	size_t cnt = 9;
	CHECK_RC(rmw_count_publishers(node, "/graph_ns/talk", &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	CHECK_RC(rmw_count_subscribers(node, "/graph_ns/talk", &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	CHECK_RC(rmw_count_services(node, "/graph_ns/add", &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	CHECK_RC(rmw_count_clients(node, "/graph_ns/add", &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	CHECK_RC(rmw_count_publishers(node, "/nobody/here", &cnt), RMW_RET_OK);
	CHECK(cnt == 0);

	rmw_topic_endpoint_info_array_t eia = {0, NULL};
	CHECK_RC(rmw_get_publishers_info_by_topic(node, &a, "/graph_ns/talk", false, &eia), RMW_RET_OK);
	CHECK(eia.size == 1);
	if (eia.size == 1) {
		rmw_topic_endpoint_info_t *e = &eia.info_array[0];
		rmw_gid_t g;
		rmw_get_gid_for_publisher(p, &g);
		CHECK(strcmp(e->node_name, "graph_other") == 0 && strcmp(e->node_namespace, "/graph_ns") == 0);
		CHECK(strcmp(e->topic_type, "rgaps_test/msg/Chat") == 0);
		CHECK(e->endpoint_type == RMW_ENDPOINT_PUBLISHER);
		CHECK(memcmp(e->endpoint_gid, g.data, RMW_GID_STORAGE_SIZE) == 0);
		CHECK(e->qos_profile.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE && e->qos_profile.depth == 10);
	}
	h_endpoint_info_fini(&eia, &a);
	CHECK_RC(rmw_get_subscriptions_info_by_topic(node, &a, "/graph_ns/talk", false, &eia), RMW_RET_OK);
	CHECK(eia.size == 1 && eia.info_array[0].endpoint_type == RMW_ENDPOINT_SUBSCRIPTION &&
	      eia.info_array[0].qos_profile.reliability == RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT);
	h_endpoint_info_fini(&eia, &a);

	/* /rosout as rcl creates it: the history kept per node is capped */
	rmw_qos_profile_t rq = h_qos_default;
	rq.depth = 1000;
	rq.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
	rq.lifespan = (rmw_time_t){10, 0};
	rmw_publisher_t *ro = rmw_create_publisher(other, &String_ts, "/rosout", &rq, &po);
	MUST(ro != NULL);
	rmw_qos_profile_t aq;
	CHECK_RC(rmw_publisher_get_actual_qos(ro, &aq), RMW_RET_OK);
	CHECK(aq.depth == 100 && aq.durability == RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL && aq.lifespan.sec == 10);
	CHECK_RC(rmw_destroy_publisher(other, ro), RMW_RET_OK);

	CHECK_RC(rmw_destroy_client(node, cl), RMW_RET_OK);
	CHECK_RC(rmw_destroy_service(other, sv), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(other, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(other), RMW_RET_OK);
	names = (rcutils_string_array_t){0, NULL, {0}};
	nss = (rcutils_string_array_t){0, NULL, {0}};
	CHECK_RC(rmw_get_node_names(node, &names, &nss), RMW_RET_OK);
	CHECK(!h_has_string(&names, "graph_other"));
	h_string_array_fini(&names);
	h_string_array_fini(&nss);
	h_pass("graph");
}

static void test_events(void)
{
	/* best-effort publisher, reliable subscription: no match, both told */
	rmw_publisher_t *p = rmw_create_publisher(node, &Plain_ts, "/events", &h_qos_best_effort, &po);
	MUST(p != NULL);
	rmw_event_t pm, pi, sm, si, lost;
	memset(&pm, 0, sizeof pm);
	memset(&pi, 0, sizeof pi);
	memset(&sm, 0, sizeof sm);
	memset(&si, 0, sizeof si);
	memset(&lost, 0, sizeof lost);
	CHECK_RC(rmw_publisher_event_init(&pm, p, RMW_EVENT_PUBLICATION_MATCHED), RMW_RET_OK);
	CHECK_RC(rmw_publisher_event_init(&pi, p, RMW_EVENT_OFFERED_QOS_INCOMPATIBLE), RMW_RET_OK);
	rmw_subscription_t *rel = rmw_create_subscription(node, &Plain_ts, "/events", &h_qos_default, &so);
	MUST(rel != NULL);
	CHECK_RC(rmw_subscription_event_init(&si, rel, RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE), RMW_RET_OK);
	void *ea[2] = {&pi, &si};
	rmw_events_t evs = {2, ea};
	rmw_time_t sec = {1, 0};
	int64_t end = h_now_ns() + 2000000000LL;
	int seen_pub = 0, seen_sub = 0;
	while ((!seen_pub || !seen_sub) && h_now_ns() < end) {
		ea[0] = &pi, ea[1] = &si;
		if (rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &sec) != RMW_RET_OK)
			continue;
		rmw_qos_incompatible_event_status_t st;
		bool taken = false;
		if (ea[0] != NULL) {
			CHECK_RC(rmw_take_event(&pi, &st, &taken), RMW_RET_OK);
			CHECK(taken && st.total_count >= 1 && st.last_policy_kind == RMW_QOS_POLICY_RELIABILITY);
			seen_pub = 1;
		}
		if (ea[1] != NULL) {
			CHECK_RC(rmw_take_event(&si, &st, &taken), RMW_RET_OK);
			CHECK(taken && st.total_count >= 1 && st.last_policy_kind == RMW_QOS_POLICY_RELIABILITY);
			seen_sub = 1;
		}
	}
	CHECK(seen_pub && seen_sub);
	size_t n = 9;
	CHECK_RC(rmw_publisher_count_matched_subscriptions(p, &n), RMW_RET_OK);
	CHECK(n == 0);

	/* a compatible subscription matches: publication and subscription matched */
	rmw_subscription_t *be = rmw_create_subscription(node, &Plain_ts, "/events", &h_qos_best_effort, &so);
	MUST(be != NULL);
	CHECK_RC(rmw_subscription_event_init(&sm, be, RMW_EVENT_SUBSCRIPTION_MATCHED), RMW_RET_OK);
	CHECK_RC(rmw_subscription_event_init(&lost, be, RMW_EVENT_MESSAGE_LOST), RMW_RET_OK);
	rmw_matched_status_t ms;
	bool taken = false;
	CHECK(H_EVENTUALLY(rmw_take_event(&pm, &ms, &taken) == RMW_RET_OK && taken && ms.current_count == 1, 2000));
	CHECK(ms.total_count >= 1);
	ea[0] = &sm;
	evs.event_count = 1;
	CHECK_RC(rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &sec), RMW_RET_OK);
	CHECK(ea[0] == &sm);
	CHECK_RC(rmw_take_event(&sm, &ms, &taken), RMW_RET_OK);
	CHECK(taken && ms.current_count == 1 && ms.current_count_change == 1);
	/* taken: not ready again until something changes */
	ea[0] = &sm;
	rmw_time_t zero = {0, 0};
	CHECK_RC(rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &zero), RMW_RET_TIMEOUT);

	/* KEEP_LAST 5 overflowed by 20 messages: lost messages reported */
	for (uint32_t i = 0; i < 20; i++) {
		Plain v = {0, 0.0, i};
		CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	}
	rmw_message_lost_status_t ls;
	CHECK(H_EVENTUALLY(rmw_take_event(&lost, &ls, &taken) == RMW_RET_OK && ls.total_count >= 15, 2000));
	Plain got;
	uint32_t last = 0;
	int k = 0;
	while (rmw_take(be, &got, &taken, NULL) == RMW_RET_OK && taken) {
		last = got.seq;
		k++;
	}
	CHECK(k == 5 && last == 19);

	/* deadlines: 30 ms asked and offered, one message, then silence */
	rmw_qos_profile_t dq = h_qos_default;
	dq.deadline = (rmw_time_t){0, 30000000};
	rmw_publisher_t *dp = rmw_create_publisher(node, &Plain_ts, "/deadlines", &dq, &po);
	rmw_subscription_t *ds = rmw_create_subscription(node, &Plain_ts, "/deadlines", &dq, &so);
	MUST(dp && ds);
	rmw_event_t od, rd;
	memset(&od, 0, sizeof od);
	memset(&rd, 0, sizeof rd);
	CHECK_RC(rmw_publisher_event_init(&od, dp, RMW_EVENT_OFFERED_DEADLINE_MISSED), RMW_RET_OK);
	CHECK_RC(rmw_subscription_event_init(&rd, ds, RMW_EVENT_REQUESTED_DEADLINE_MISSED), RMW_RET_OK);
	CHECK_RC(rmw_publish(dp, &(Plain){0, 0.0, 0}, NULL), RMW_RET_OK);
	rmw_offered_deadline_missed_status_t ods;
	rmw_requested_deadline_missed_status_t rds;
	CHECK(H_EVENTUALLY(rmw_take_event(&od, &ods, &taken) == RMW_RET_OK && taken && ods.total_count >= 2, 3000));
	CHECK(ods.total_count_change >= 1);
	ea[0] = &rd;
	CHECK_RC(rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &sec), RMW_RET_OK);
	CHECK(ea[0] == &rd);
	CHECK(H_EVENTUALLY(rmw_take_event(&rd, &rds, &taken) == RMW_RET_OK && taken && rds.total_count >= 2, 3000));
	rmw_qos_profile_t aq;
	CHECK_RC(rmw_subscription_get_actual_qos(ds, &aq), RMW_RET_OK);
	CHECK(aq.deadline.sec == 0 && aq.deadline.nsec == 30000000);
	CHECK_RC(rmw_destroy_subscription(node, ds), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, dp), RMW_RET_OK);

	/* the subscription goes: the publisher's match count drops */
	CHECK_RC(rmw_destroy_subscription(node, be), RMW_RET_OK);
	CHECK(H_EVENTUALLY(rmw_take_event(&pm, &ms, &taken) == RMW_RET_OK && taken && ms.current_count == 0, 2000));
	CHECK_RC(rmw_destroy_subscription(node, rel), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("events");
}

static volatile int cb_calls;
static volatile size_t cb_total;
static void on_event(const void *user, size_t n)
{
	if (user == &cb_calls) {
		__atomic_add_fetch(&cb_calls, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&cb_total, n, __ATOMIC_SEQ_CST);
	}
}

static void test_callbacks(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Plain_ts, "/called", &h_qos_default, &po);
	rmw_subscription_t *s = rmw_create_subscription(node, &Plain_ts, "/called", &h_qos_default, &so);
	MUST(p && s);
	size_t n;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &n) == RMW_RET_OK && n == 1, 2000));
	/* a message queued before the callback is set is announced at once */
	Plain v = {1, 1.0, 1};
	CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	CHECK_RC(rmw_subscription_set_on_new_message_callback(s, on_event, (const void *)&cb_calls), RMW_RET_OK);
	CHECK(H_EVENTUALLY(cb_calls >= 1, 2000));
	bool taken;
	Plain got;
	CHECK_RC(rmw_take(s, &got, &taken, NULL), RMW_RET_OK);
	int before = cb_calls;
	v.seq = 2;
	CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	CHECK(H_EVENTUALLY(cb_calls > before, 2000));
	CHECK_RC(rmw_take(s, &got, &taken, NULL), RMW_RET_OK);
	CHECK(taken && got.seq == 2);
	/* removed: no more calls */
	CHECK_RC(rmw_subscription_set_on_new_message_callback(s, NULL, NULL), RMW_RET_OK);
	before = cb_calls;
	CHECK_RC(rmw_publish(p, &v, NULL), RMW_RET_OK);
	h_sleep_ms(100);
	CHECK(cb_calls == before);
	CHECK_RC(rmw_take(s, &got, &taken, NULL), RMW_RET_OK);

	/* an event callback: a new match is announced */
	rmw_event_t pm;
	memset(&pm, 0, sizeof pm);
	CHECK_RC(rmw_publisher_event_init(&pm, p, RMW_EVENT_PUBLICATION_MATCHED), RMW_RET_OK);
	rmw_matched_status_t ms;
	rmw_take_event(&pm, &ms, &taken);
	before = cb_calls;
	CHECK_RC(rmw_event_set_callback(&pm, on_event, (const void *)&cb_calls), RMW_RET_OK);
	rmw_subscription_t *s2 = rmw_create_subscription(node, &Plain_ts, "/called", &h_qos_default, &so);
	MUST(s2 != NULL);
	CHECK(H_EVENTUALLY(cb_calls > before, 2000));
	CHECK_RC(rmw_event_set_callback(&pm, NULL, NULL), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, s2), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("callbacks");
}

static void test_service_local(void)
{
	rmw_service_t *sv = rmw_create_service(node, &AddTwoInts_ts, "/add", &h_qos_default);
	rmw_client_t *c1 = rmw_create_client(node, &AddTwoInts_ts, "/add", &h_qos_default);
	rmw_client_t *c2 = rmw_create_client(node, &AddTwoInts_ts, "/add", &h_qos_default);
	MUST(sv && c1 && c2);
	bool avail = false;
	CHECK(H_EVENTUALLY(rmw_service_server_is_available(node, c1, &avail) == RMW_RET_OK && avail, 2000));
	CHECK(H_EVENTUALLY(rmw_service_server_is_available(node, c2, &avail) == RMW_RET_OK && avail, 2000));
	rmw_gid_t g1, g2;
	CHECK_RC(rmw_get_gid_for_client(c1, &g1), RMW_RET_OK);
	CHECK_RC(rmw_get_gid_for_client(c2, &g2), RMW_RET_OK);
	bool eq = true;
	CHECK_RC(rmw_compare_gids_equal(&g1, &g2, &eq), RMW_RET_OK);
	CHECK(!eq);

	int64_t s1 = 0, s2 = 0, s1b = 0;
	CHECK_RC(rmw_send_request(c1, &(AddTwoInts_Request){2, 3}, &s1), RMW_RET_OK);
	CHECK_RC(rmw_send_request(c2, &(AddTwoInts_Request){10, 20}, &s2), RMW_RET_OK);
	CHECK_RC(rmw_send_request(c1, &(AddTwoInts_Request){100, 1}, &s1b), RMW_RET_OK);
	CHECK(s1 >= 1 && s1b == s1 + 1);

	void *sva[1] = {sv->data};
	rmw_services_t svs = {1, sva};
	rmw_time_t sec = {1, 0};
	CHECK_RC(rmw_wait(NULL, NULL, &svs, NULL, NULL, ws, &sec), RMW_RET_OK);
	CHECK(sva[0] == sv->data);
	for (int i = 0; i < 3; i++) {
		AddTwoInts_Request rq;
		rmw_service_info_t hdr;
		bool taken = false;
		CHECK_RC(rmw_take_request(sv, &hdr, &rq, &taken), RMW_RET_OK);
		CHECK(taken);
		AddTwoInts_Response rs = {rq.a + rq.b};
		CHECK_RC(rmw_send_response(sv, &hdr.request_id, &rs), RMW_RET_OK);
	}
	/* each client gets exactly its own responses, by sequence number */
	void *cla[2] = {c1->data, c2->data};
	rmw_clients_t cls = {2, cla};
	CHECK_RC(rmw_wait(NULL, NULL, NULL, &cls, NULL, ws, &sec), RMW_RET_OK);
	int got1 = 0, got2 = 0;
	for (int round = 0; round < 5; round++) {
		AddTwoInts_Response rs;
		rmw_service_info_t hdr;
		bool taken = false;
		while (rmw_take_response(c1, &hdr, &rs, &taken) == RMW_RET_OK && taken) {
			CHECK(memcmp(hdr.request_id.writer_guid, g1.data, 16) == 0);
			CHECK((hdr.request_id.sequence_number == s1 && rs.sum == 5) ||
			      (hdr.request_id.sequence_number == s1b && rs.sum == 101));
			got1++;
		}
		while (rmw_take_response(c2, &hdr, &rs, &taken) == RMW_RET_OK && taken) {
			CHECK(hdr.request_id.sequence_number == s2 && rs.sum == 30);
			got2++;
		}
		if (got1 == 2 && got2 == 1)
			break;
		h_sleep_ms(20);
	}
	CHECK(got1 == 2 && got2 == 1);
	rmw_qos_profile_t q;
	CHECK_RC(rmw_client_request_publisher_get_actual_qos(c1, &q), RMW_RET_OK);
	CHECK(q.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE);
	CHECK_RC(rmw_service_request_subscription_get_actual_qos(sv, &q), RMW_RET_OK);
	CHECK(q.depth == 10);
	CHECK_RC(rmw_destroy_service(node, sv), RMW_RET_OK);
	CHECK(H_EVENTUALLY(rmw_service_server_is_available(node, c1, &avail) == RMW_RET_OK && !avail, 2000));
	CHECK_RC(rmw_destroy_client(node, c1), RMW_RET_OK);
	CHECK_RC(rmw_destroy_client(node, c2), RMW_RET_OK);
	h_pass("service_in_process");
}

/* A second type on an existing topic (issue 15): the endpoint is created and
 * never matched, both sides get incompatible-type events, the graph lists
 * both types, and each type's messages reach only its own subscribers. */
static void test_type_clash(void)
{
	rmw_publisher_t *p = rmw_create_publisher(node, &Plain_ts, "/clash", &h_qos_default, &po);
	MUST(p != NULL);
	rmw_subscription_t *s = rmw_create_subscription(node, &String_ts, "/clash", &h_qos_default, &so);
	MUST(s != NULL);
	rmw_event_t pe, se;
	memset(&pe, 0, sizeof pe);
	memset(&se, 0, sizeof se);
	CHECK_RC(rmw_publisher_event_init(&pe, p, RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE), RMW_RET_OK);
	CHECK_RC(rmw_subscription_event_init(&se, s, RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE), RMW_RET_OK);
	rmw_incompatible_type_status_t st;
	bool taken = false;
	CHECK(H_EVENTUALLY(rmw_take_event(&pe, &st, &taken) == RMW_RET_OK && taken && st.total_count == 1, 5000));
	CHECK(st.total_count_change == 1);
	CHECK(H_EVENTUALLY(rmw_take_event(&se, &st, &taken) == RMW_RET_OK && taken && st.total_count == 1, 5000));
	size_t n = 9;
	CHECK_RC(rmw_publisher_count_matched_subscriptions(p, &n), RMW_RET_OK);
	CHECK(n == 0);
	CHECK_RC(rmw_subscription_count_matched_publishers(s, &n), RMW_RET_OK);
	CHECK(n == 0);
	CHECK_RC(rmw_count_publishers(node, "/clash", &n), RMW_RET_OK);
	CHECK(n == 1);
	CHECK_RC(rmw_count_subscribers(node, "/clash", &n), RMW_RET_OK);
	CHECK(n == 1);

	/* the graph reports the topic with both types */
	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	rcutils_allocator_t a = h_allocator();
	CHECK_RC(rmw_get_topic_names_and_types(node, &a, false, &nt), RMW_RET_OK);
	int i = h_index_of(&nt.names, "/clash");
	CHECK(i >= 0 && h_has_string(&nt.types[i], "rgaps_test/msg/Plain") && h_has_string(&nt.types[i], "std_msgs/msg/String"));
	h_names_and_types_fini(&nt);

	/* each type's traffic is its own */
	Plain out = {.stamp = 1, .x = 2.5, .seq = 7};
	CHECK_RC(rmw_publish(p, &out, NULL), RMW_RET_OK);
	String in;
	String_init(&in, 0);
	taken = true;
	CHECK_RC(rmw_take(s, &in, &taken, NULL), RMW_RET_OK);
	CHECK(!taken);
	String_fini(&in);
	CHECK_RC(rmw_destroy_subscription(node, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(node, p), RMW_RET_OK);
	h_pass("type_clash");
}

int main(void)
{
	h_init(&ctx, &opts, h_allocator());
	node = rmw_create_node(&ctx, "pubsub_node", "/");
	MUST(node != NULL);
	ws = rmw_create_wait_set(&ctx, 16);
	MUST(ws != NULL);
	test_round_trip();
	test_loans();
	test_wait();
	test_graph();
	test_events();
	test_callbacks();
	test_service_local();
	test_type_clash();
	CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(node), RMW_RET_OK);
	h_fini(&ctx, &opts);
	CHECK(h_allocs == h_frees);
	return h_done();
}

/*
 * rmw_proc — librmw_rgaps across processes. One program, several roles,
 * started by the Go test (test/rmw_test.go):
 *
 *   rmw_proc peer       node /peer_ns/peer_node: publishes Chat on
 *                       /peer_ns/chatter every 20 ms and serves
 *                       /peer_ns/add_two_ints until a request with a == -1
 *                       (or stdin closes); prints READY once set up
 *   rmw_proc observer   finds the peer through the graph (node, topic,
 *                       type, endpoint info, service), receives its
 *                       messages, calls its service, tells it to stop and
 *                       sees its node leave the graph
 *   rmw_proc loan_pub   publishes one loaned Plain on /loans once matched,
 *                       prints PUBLISHED, stays until stdin closes
 *   rmw_proc loan_hold  takes that message as a loan and holds it: prints
 *                       HOLDING and waits to be killed
 *   rmw_proc string_echo  takes a std_msgs/msg/String on /cli_chatter
 *                       (published by a Go program or the rgaps CLI),
 *                       prints GOT <text>, answers "re: <text>" on /cli_reply
 *   rmw_proc plain_echo N  takes a rgaps_test/msg/Plain on /cli_plain_in
 *                       (published by the rgaps CLI), prints GOT <stamp>
 *                       <x> <seq>, and once N subscriptions of
 *                       /cli_plain_out matched answers {stamp+1, x*2,
 *                       seq+1} there with rmw_publish, then {stamp+2, x*3,
 *                       seq+2} as a loan (both in the plain layout)
 *   rmw_proc live_pub   publishes on /lively, prints READY and waits to be
 *                       killed
 *   rmw_proc live_watch subscribes to /lively, prints MATCHED once the
 *                       publisher is alive, then expects the liveliness
 *                       changed event of its death
 *   rmw_proc ros_node talker|listener NS
 *                       a demo_nodes_cpp talker or listener in namespace NS
 *                       with what rclcpp gives every node: /rosout (its
 *                       QoS), /parameter_events (publisher and
 *                       subscription) and the seven parameter and type
 *                       description services, under their real names and
 *                       types. The talker publishes std_msgs/String on
 *                       NS/chatter every 100 ms and logs each to /rosout;
 *                       the listener prints RECEIVED once it has three
 *                       messages and a reply from the talker's
 *                       get_parameters service. Both serve their services
 *                       until stdin closes
 *
 * Each role prints PASS/FAIL lines and exits 0 only without failures.
 */
#include <poll.h>
#include <unistd.h>

#include "rmw_harness.h"

static rmw_context_t ctx;
static rmw_init_options_t opts;
static rmw_wait_set_t *ws;
static const rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
static const rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};

static int stdin_closed(void)
{
	struct pollfd p = {0, POLLIN, 0};
	if (poll(&p, 1, 0) <= 0)
		return 0;
	char buf[64];
	return read(0, buf, sizeof buf) <= 0;
}

static int peer(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "peer_node", "/peer_ns");
	MUST(n != NULL);
	rmw_publisher_t *p = rmw_create_publisher(n, &Chat_ts, "/peer_ns/chatter", &h_qos_default, &po);
	rmw_service_t *sv = rmw_create_service(n, &AddTwoInts_ts, "/peer_ns/add_two_ints", &h_qos_default);
	MUST(p && sv);
	printf("READY\n");
	fflush(stdout);
	Chat m;
	Chat_init(&m, 0);
	int stop = 0, i = 0, served = 0;
	while (!stop && !stdin_closed()) {
		chat_set(&m, i, "from the peer", (size_t)(i % 50));
		CHECK_RC(rmw_publish(p, &m, NULL), RMW_RET_OK);
		i++;
		void *sa[1] = {sv->data};
		rmw_services_t svs = {1, sa};
		rmw_time_t t = {0, 20000000};
		if (rmw_wait(NULL, NULL, &svs, NULL, NULL, ws, &t) != RMW_RET_OK)
			continue;
		for (;;) {
			AddTwoInts_Request rq;
			rmw_service_info_t hdr;
			bool taken = false;
			CHECK_RC(rmw_take_request(sv, &hdr, &rq, &taken), RMW_RET_OK);
			if (!taken)
				break;
			if (rq.a == -1) {
				stop = 1;
				continue;
			}
			AddTwoInts_Response rs = {rq.a + rq.b};
			CHECK_RC(rmw_send_response(sv, &hdr.request_id, &rs), RMW_RET_OK);
			served++;
		}
	}
	CHECK(served >= 3);
	Chat_fini(&m);
	CHECK_RC(rmw_destroy_service(n, sv), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_pass("peer");
	return 0;
}

static int observer(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "observer", "/");
	MUST(n != NULL);
	CHECK(WAIT_GRAPH(n, node_present(n, "peer_node", "/peer_ns") == 1, 10000));
	CHECK(WAIT_GRAPH(n, topic_has_type(n, "/peer_ns/chatter", "rgaps_test/msg/Chat"), 5000));
	size_t cnt = 0;
	CHECK_RC(rmw_count_publishers(n, "/peer_ns/chatter", &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	/* the peer creates its service after its publisher */
	CHECK(WAIT_GRAPH(n, rmw_count_services(n, "/peer_ns/add_two_ints", &cnt) == RMW_RET_OK && cnt == 1, 5000));
	rcutils_allocator_t a = h_allocator();
	rmw_topic_endpoint_info_array_t eia = {0, NULL};
	CHECK_RC(rmw_get_publishers_info_by_topic(n, &a, "/peer_ns/chatter", false, &eia), RMW_RET_OK);
	CHECK(eia.size == 1 && strcmp(eia.info_array[0].node_name, "peer_node") == 0 &&
	      strcmp(eia.info_array[0].node_namespace, "/peer_ns") == 0);
	/* the type hash of the peer's type support, read from shared memory */
	CHECK(eia.size == 1 && eia.info_array[0].topic_type_hash.version == 1 &&
	      memcmp(eia.info_array[0].topic_type_hash.value, Chat_hash.value, 32) == 0);
	h_endpoint_info_fini(&eia, &a);
	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	CHECK_RC(rmw_get_service_names_and_types_by_node(n, &a, "peer_node", "/peer_ns", &nt), RMW_RET_OK);
	CHECK(nt.names.size == 1 && h_has_string(&nt.names, "/peer_ns/add_two_ints") &&
	      h_has_string(&nt.types[0], "rgaps_test/srv/AddTwoInts"));
	h_names_and_types_fini(&nt);
	h_pass("graph_seen_from_another_process");

	/* messages from the peer */
	rmw_subscription_t *s = rmw_create_subscription(n, &Chat_ts, "/peer_ns/chatter", &h_qos_default, &so);
	MUST(s != NULL);
	int got = 0;
	int64_t end = h_now_ns() + 10000000000LL;
	Chat m;
	Chat_init(&m, 0);
	int32_t last = -1;
	while (got < 5 && h_now_ns() < end) {
		if (!h_wait_sub(ws, s, 500))
			continue;
		bool taken = false;
		rmw_message_info_t info;
		CHECK_RC(rmw_take_with_info(s, &m, &taken, &info, NULL), RMW_RET_OK);
		if (!taken)
			continue;
		CHECK(m.id > last && chat_ok(&m, m.id, "from the peer", (size_t)(m.id % 50)));
		last = m.id;
		got++;
	}
	CHECK(got == 5);
	Chat_fini(&m);
	h_pass("messages_from_another_process");

	/* the peer's service */
	rmw_client_t *c = rmw_create_client(n, &AddTwoInts_ts, "/peer_ns/add_two_ints", &h_qos_default);
	MUST(c != NULL);
	bool avail = false;
	CHECK(WAIT_GRAPH(n, rmw_service_server_is_available(n, c, &avail) == RMW_RET_OK && avail, 5000));
	for (int64_t k = 0; k < 3; k++) {
		int64_t seq = 0;
		CHECK_RC(rmw_send_request(c, &(AddTwoInts_Request){k, 1000}, &seq), RMW_RET_OK);
		int done = 0;
		end = h_now_ns() + 5000000000LL;
		while (!done && h_now_ns() < end) {
			void *ca[1] = {c->data};
			rmw_clients_t cls = {1, ca};
			rmw_time_t t = {0, 200000000};
			if (rmw_wait(NULL, NULL, NULL, &cls, NULL, ws, &t) != RMW_RET_OK)
				continue;
			AddTwoInts_Response rs;
			rmw_service_info_t hdr;
			bool taken = false;
			CHECK_RC(rmw_take_response(c, &hdr, &rs, &taken), RMW_RET_OK);
			if (taken) {
				CHECK(hdr.request_id.sequence_number == seq && rs.sum == k + 1000);
				done = 1;
			}
		}
		CHECK(done);
	}
	h_pass("service_round_trip_between_processes");

	/* stop the peer: its node leaves the graph */
	int64_t seq;
	CHECK_RC(rmw_send_request(c, &(AddTwoInts_Request){-1, 0}, &seq), RMW_RET_OK);
	CHECK(WAIT_GRAPH(n, node_present(n, "peer_node", "/peer_ns") == 0, 10000));
	CHECK(WAIT_GRAPH(n, rmw_service_server_is_available(n, c, &avail) == RMW_RET_OK && !avail, 5000));
	h_pass("node_left_graph");
	CHECK_RC(rmw_destroy_client(n, c), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	return 0;
}

static int loan_pub(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "loan_pub", "/");
	MUST(n != NULL);
	rmw_publisher_t *p = rmw_create_publisher(n, &Plain_ts, "/loans", &h_qos_default, &po);
	MUST(p != NULL && p->can_loan_messages);
	printf("READY\n");
	fflush(stdout);
	size_t cnt = 0;
	MUST(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &cnt) == RMW_RET_OK && cnt == 1, 20000));
	void *loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	MUST(loan != NULL);
	*(Plain *)loan = (Plain){42, 4.2, 42};
	CHECK_RC(rmw_publish_loaned_message(p, loan, NULL), RMW_RET_OK);
	printf("PUBLISHED\n");
	fflush(stdout);
	while (!stdin_closed())
		h_sleep_ms(20);
	/* still usable after the holder died */
	loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	CHECK_RC(rmw_return_loaned_message_from_publisher(p, loan), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_pass("loan_publisher");
	return 0;
}

static int loan_hold(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "loan_hold", "/");
	MUST(n != NULL);
	rmw_subscription_t *s = rmw_create_subscription(n, &Plain_ts, "/loans", &h_qos_default, &so);
	MUST(s != NULL && s->can_loan_messages);
	MUST(h_wait_sub(ws, s, 20000));
	void *msg = NULL;
	bool taken = false;
	MUST(rmw_take_loaned_message(s, &msg, &taken, NULL) == RMW_RET_OK && taken);
	MUST(((Plain *)msg)->seq == 42);
	printf("HOLDING\n");
	fflush(stdout);
	for (;;)
		pause(); /* until SIGKILL */
}

static int string_echo(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "string_echo", "/");
	MUST(n != NULL);
	rmw_subscription_t *s = rmw_create_subscription(n, &String_ts, "/cli_chatter", &h_qos_default, &so);
	rmw_publisher_t *p = rmw_create_publisher(n, &String_ts, "/cli_reply", &h_qos_default, &po);
	MUST(s && p);
	CHECK(!s->can_loan_messages);
	printf("READY\n");
	fflush(stdout);
	MUST(h_wait_sub(ws, s, 20000));
	String m;
	String_init(&m, 0);
	bool taken = false;
	CHECK_RC(rmw_take(s, &m, &taken, NULL), RMW_RET_OK);
	MUST(taken);
	printf("GOT %s\n", m.data.data);
	fflush(stdout);
	char reply[256];
	snprintf(reply, sizeof reply, "re: %s", m.data.data);
	string_set(&m, reply);
	size_t cnt = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &cnt) == RMW_RET_OK && cnt >= 1, 10000));
	CHECK_RC(rmw_publish(p, &m, NULL), RMW_RET_OK);
	String_fini(&m);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_pass("string_with_go_programs");
	return 0;
}

static int plain_echo(size_t subs)
{
	rmw_node_t *n = rmw_create_node(&ctx, "plain_echo", "/");
	MUST(n != NULL);
	rmw_subscription_t *s = rmw_create_subscription(n, &Plain_ts, "/cli_plain_in", &h_qos_default, &so);
	rmw_publisher_t *p = rmw_create_publisher(n, &Plain_ts, "/cli_plain_out", &h_qos_default, &po);
	MUST(s && p);
	CHECK(s->can_loan_messages && p->can_loan_messages); /* plain */
	printf("READY\n");
	fflush(stdout);
	MUST(h_wait_sub(ws, s, 20000));
	Plain m;
	Plain_init(&m, 0);
	bool taken = false;
	CHECK_RC(rmw_take(s, &m, &taken, NULL), RMW_RET_OK);
	MUST(taken);
	printf("GOT %lld %.17g %u\n", (long long)m.stamp, m.x, (unsigned)m.seq);
	fflush(stdout);
	size_t cnt = 0;
	CHECK(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &cnt) == RMW_RET_OK && cnt >= subs, 20000));
	Plain r = {m.stamp + 1, m.x * 2, m.seq + 1};
	CHECK_RC(rmw_publish(p, &r, NULL), RMW_RET_OK);
	void *loan = NULL;
	CHECK_RC(rmw_borrow_loaned_message(p, &Plain_ts, &loan), RMW_RET_OK);
	MUST(loan != NULL);
	*(Plain *)loan = (Plain){m.stamp + 2, m.x * 3, m.seq + 2};
	CHECK_RC(rmw_publish_loaned_message(p, loan, NULL), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_pass("plain_with_the_cli");
	return 0;
}

static int live_pub(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "live_pub", "/");
	MUST(n != NULL);
	rmw_publisher_t *p = rmw_create_publisher(n, &Plain_ts, "/lively", &h_qos_default, &po);
	MUST(p != NULL);
	printf("READY\n");
	fflush(stdout);
	for (;;)
		pause(); /* until SIGKILL */
}

static int live_watch(void)
{
	rmw_node_t *n = rmw_create_node(&ctx, "live_watch", "/");
	MUST(n != NULL);
	rmw_subscription_t *s = rmw_create_subscription(n, &Plain_ts, "/lively", &h_qos_default, &so);
	MUST(s != NULL);
	rmw_event_t lc;
	memset(&lc, 0, sizeof lc);
	CHECK_RC(rmw_subscription_event_init(&lc, s, RMW_EVENT_LIVELINESS_CHANGED), RMW_RET_OK);
	rmw_liveliness_changed_status_t st;
	bool taken = false;
	int alive = H_EVENTUALLY(rmw_take_event(&lc, &st, &taken) == RMW_RET_OK && taken && st.alive_count == 1, 10000);
	MUST(alive);
	CHECK(st.alive_count_change == 1 && st.not_alive_count == 0);
	printf("MATCHED\n");
	fflush(stdout);
	/* woken by the event, not polled */
	int dead = 0;
	int64_t end = h_now_ns() + 20000000000LL;
	while (!dead && h_now_ns() < end) {
		void *ea[1] = {&lc};
		rmw_events_t evs = {1, ea};
		rmw_time_t t = {1, 0};
		if (rmw_wait(NULL, NULL, NULL, NULL, &evs, ws, &t) != RMW_RET_OK)
			continue;
		CHECK_RC(rmw_take_event(&lc, &st, &taken), RMW_RET_OK);
		dead = taken && st.not_alive_count >= 1;
	}
	CHECK(dead);
	CHECK(st.alive_count == 0 && st.not_alive_count_change >= 1);
	h_pass("liveliness_lost_with_the_process");
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	return 0;
}

/* Types of the topics rclcpp creates in every node. The payloads are the
 * harness's own (a string, or AddTwoInts for the services): what matters
 * here is the names, types and QoS of the topics. */
#define H_MSG_AS(NS, NAME, T, ID)                                                             \
	static const rosidl_typesupport_introspection_c__MessageMembers ID##_mm = {          \
		NS, NAME, sizeof T##_members / sizeof T##_members[0], sizeof(T), false, T##_members, \
		T##_init, T##_fini};                                                         \
	static const rosidl_message_type_support_t ID##_ts = {"rosidl_typesupport_introspection_c", \
		&ID##_mm, h_handle, NULL, NULL, NULL};
#define H_SRV_AS(NS, NAME, ID)                                                                          \
	H_MSG_AS(NS, NAME "_Request", AddTwoInts_Request, ID##_Request)                                \
	H_MSG_AS(NS, NAME "_Response", AddTwoInts_Response, ID##_Response)                             \
	static const rosidl_typesupport_introspection_c__ServiceMembers ID##_sm = {                    \
		NS, NAME, &ID##_Request_mm, &ID##_Response_mm, NULL};                                  \
	static const rosidl_service_type_support_t ID##_ts = {"rosidl_typesupport_introspection_c", \
		&ID##_sm, h_srv_handle, &ID##_Request_ts, &ID##_Response_ts, NULL, NULL, NULL, NULL, NULL, NULL};

H_MSG_AS("rcl_interfaces__msg", "Log", String, Log)
H_MSG_AS("rcl_interfaces__msg", "ParameterEvent", String, ParameterEvent)
H_SRV_AS("rcl_interfaces__srv", "DescribeParameters", DescribeParameters)
H_SRV_AS("rcl_interfaces__srv", "GetParameters", GetParameters)
H_SRV_AS("rcl_interfaces__srv", "GetParameterTypes", GetParameterTypes)
H_SRV_AS("rcl_interfaces__srv", "ListParameters", ListParameters)
H_SRV_AS("rcl_interfaces__srv", "SetParameters", SetParameters)
H_SRV_AS("rcl_interfaces__srv", "SetParametersAtomically", SetParametersAtomically)
H_SRV_AS("type_description_interfaces__srv", "GetTypeDescription", GetTypeDescription)

static const struct {
	const char *name;
	const rosidl_service_type_support_t *ts;
} node_services[] = {
	{"describe_parameters", &DescribeParameters_ts},
	{"get_parameters", &GetParameters_ts},
	{"get_parameter_types", &GetParameterTypes_ts},
	{"list_parameters", &ListParameters_ts},
	{"set_parameters", &SetParameters_ts},
	{"set_parameters_atomically", &SetParametersAtomically_ts},
	{"get_type_description", &GetTypeDescription_ts},
};
#define NODE_SERVICES (sizeof node_services / sizeof node_services[0])

/* rclcpp's QoS for /rosout (rcl_qos_profile_rosout_default), for
 * /parameter_events and for services. */
static const rmw_qos_profile_t qos_rosout = {RMW_QOS_POLICY_HISTORY_KEEP_LAST, 1000,
	RMW_QOS_POLICY_RELIABILITY_RELIABLE, RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL, RMW_DURATION_UNSPECIFIED,
	{10, 0}, RMW_QOS_POLICY_LIVELINESS_AUTOMATIC, RMW_DURATION_UNSPECIFIED, false};
static const rmw_qos_profile_t qos_param_events = {RMW_QOS_POLICY_HISTORY_KEEP_LAST, 1000,
	RMW_QOS_POLICY_RELIABILITY_RELIABLE, RMW_QOS_POLICY_DURABILITY_VOLATILE, RMW_DURATION_UNSPECIFIED,
	RMW_DURATION_UNSPECIFIED, RMW_QOS_POLICY_LIVELINESS_AUTOMATIC, RMW_DURATION_UNSPECIFIED, false};

static int ros_node(const char *role, const char *ns)
{
	int talker = strcmp(role, "talker") == 0;
	MUST(talker || strcmp(role, "listener") == 0);
	rmw_node_t *n = rmw_create_node(&ctx, role, ns);
	MUST(n != NULL);
	char name[256];
	rmw_publisher_t *rosout = rmw_create_publisher(n, &Log_ts, "/rosout", &qos_rosout, &po);
	rmw_publisher_t *pev = rmw_create_publisher(n, &ParameterEvent_ts, "/parameter_events", &qos_param_events, &po);
	rmw_subscription_t *sev = rmw_create_subscription(n, &ParameterEvent_ts, "/parameter_events", &qos_param_events, &so);
	MUST(rosout && pev && sev);
	rmw_service_t *svc[NODE_SERVICES];
	for (size_t i = 0; i < NODE_SERVICES; i++) {
		snprintf(name, sizeof name, "%s/%s/%s", ns, role, node_services[i].name);
		svc[i] = rmw_create_service(n, node_services[i].ts, name, &h_qos_default);
		MUST(svc[i] != NULL);
	}
	snprintf(name, sizeof name, "%s/chatter", ns);
	rmw_publisher_t *chat = NULL;
	rmw_subscription_t *heard = NULL;
	rmw_client_t *cl = NULL;
	if (talker) {
		chat = rmw_create_publisher(n, &String_ts, name, &h_qos_default, &po);
		MUST(chat != NULL);
	} else {
		heard = rmw_create_subscription(n, &String_ts, name, &h_qos_default, &so);
		snprintf(name, sizeof name, "%s/talker/get_parameters", ns);
		cl = rmw_create_client(n, &GetParameters_ts, name, &h_qos_default);
		MUST(heard && cl);
	}
	rmw_wait_set_t *nws = rmw_create_wait_set(&ctx, NODE_SERVICES + 3);
	MUST(nws != NULL);
	String m;
	String_init(&m, 0);
	string_set(&m, "use_sim_time declared");
	CHECK_RC(rmw_publish(pev, &m, NULL), RMW_RET_OK);
	printf("READY\n");
	fflush(stdout);

	int sent = 0, got = 0, replied = 0, requested = 0, reported = 0;
	int64_t seq = 0, next_pub = h_now_ns();
	char text[128];
	while (!stdin_closed()) {
		if (talker && h_now_ns() >= next_pub) {
			snprintf(text, sizeof text, "Hello World: %d", ++sent);
			string_set(&m, text);
			CHECK_RC(rmw_publish(chat, &m, NULL), RMW_RET_OK);
			snprintf(text, sizeof text, "Publishing: 'Hello World: %d'", sent);
			string_set(&m, text);
			CHECK_RC(rmw_publish(rosout, &m, NULL), RMW_RET_OK);
			next_pub += 100000000;
		}
		if (!talker && !requested) {
			bool avail = false;
			if (rmw_service_server_is_available(n, cl, &avail) == RMW_RET_OK && avail) {
				CHECK_RC(rmw_send_request(cl, &(AddTwoInts_Request){7, 35}, &seq), RMW_RET_OK);
				requested = 1;
			}
		}
		void *sa[NODE_SERVICES];
		for (size_t i = 0; i < NODE_SERVICES; i++)
			sa[i] = svc[i]->data;
		rmw_services_t svs = {NODE_SERVICES, sa};
		void *suba[2] = {sev->data, heard ? heard->data : NULL};
		rmw_subscriptions_t subs = {heard ? 2 : 1, suba};
		void *ca[1] = {cl ? cl->data : NULL};
		rmw_clients_t cls = {cl ? 1 : 0, ca};
		rmw_time_t t = {0, 50000000};
		if (rmw_wait(&subs, NULL, &svs, &cls, NULL, nws, &t) != RMW_RET_OK)
			continue;
		for (size_t i = 0; i < NODE_SERVICES; i++) {
			for (;;) {
				AddTwoInts_Request rq;
				rmw_service_info_t hdr;
				bool taken = false;
				CHECK_RC(rmw_take_request(svc[i], &hdr, &rq, &taken), RMW_RET_OK);
				if (!taken)
					break;
				AddTwoInts_Response rs = {rq.a + rq.b};
				CHECK_RC(rmw_send_response(svc[i], &hdr.request_id, &rs), RMW_RET_OK);
			}
		}
		for (;;) {
			bool taken = false;
			CHECK_RC(rmw_take(sev, &m, &taken, NULL), RMW_RET_OK);
			if (!taken)
				break;
		}
		if (talker)
			continue;
		for (;;) {
			bool taken = false;
			CHECK_RC(rmw_take(heard, &m, &taken, NULL), RMW_RET_OK);
			if (!taken)
				break;
			CHECK(strncmp(m.data.data, "Hello World: ", 13) == 0);
			got++;
			snprintf(text, sizeof text, "I heard: [%s]", m.data.data);
			string_set(&m, text);
			CHECK_RC(rmw_publish(rosout, &m, NULL), RMW_RET_OK);
		}
		if (requested && !replied) {
			AddTwoInts_Response rs;
			rmw_service_info_t hdr;
			bool taken = false;
			CHECK_RC(rmw_take_response(cl, &hdr, &rs, &taken), RMW_RET_OK);
			if (taken) {
				CHECK(hdr.request_id.sequence_number == seq && rs.sum == 42);
				replied = 1;
			}
		}
		if (!reported && got >= 3 && replied) {
			printf("RECEIVED %d\n", got);
			fflush(stdout);
			reported = 1;
		}
	}
	if (!talker) {
		CHECK(reported);
		h_pass("listener_heard_its_talker_and_its_service");
	} else {
		CHECK(sent > 0);
		h_pass("talker_published");
	}
	String_fini(&m);
	CHECK_RC(rmw_destroy_wait_set(nws), RMW_RET_OK);
	if (cl)
		CHECK_RC(rmw_destroy_client(n, cl), RMW_RET_OK);
	if (heard)
		CHECK_RC(rmw_destroy_subscription(n, heard), RMW_RET_OK);
	if (chat)
		CHECK_RC(rmw_destroy_publisher(n, chat), RMW_RET_OK);
	for (size_t i = 0; i < NODE_SERVICES; i++)
		CHECK_RC(rmw_destroy_service(n, svc[i]), RMW_RET_OK);
	CHECK_RC(rmw_destroy_subscription(n, sev), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, pev), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, rosout), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rmw_proc peer|observer|loan_pub|loan_hold|string_echo|plain_echo N|live_pub|live_watch|ros_node ROLE NS\n");
		return 2;
	}
	h_init(&ctx, &opts, h_allocator());
	ws = rmw_create_wait_set(&ctx, 8);
	MUST(ws != NULL);
	int rc = 2;
	if (strcmp(argv[1], "peer") == 0)
		rc = peer();
	else if (strcmp(argv[1], "observer") == 0)
		rc = observer();
	else if (strcmp(argv[1], "loan_pub") == 0)
		rc = loan_pub();
	else if (strcmp(argv[1], "loan_hold") == 0)
		rc = loan_hold();
	else if (strcmp(argv[1], "string_echo") == 0)
		rc = string_echo();
	else if (strcmp(argv[1], "plain_echo") == 0 && argc == 3)
		rc = plain_echo(strtoul(argv[2], NULL, 10));
	else if (strcmp(argv[1], "live_pub") == 0)
		rc = live_pub();
	else if (strcmp(argv[1], "live_watch") == 0)
		rc = live_watch();
	else if (strcmp(argv[1], "ros_node") == 0 && argc == 4)
		rc = ros_node(argv[2], argv[3]);
	else
		fprintf(stderr, "unknown role %s\n", argv[1]);
	CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK);
	h_fini(&ctx, &opts);
	if (rc != 0)
		return rc;
	return h_done();
}

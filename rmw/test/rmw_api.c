/*
 * rmw_api — the argument checks of librmw_rgaps, as test_rmw_implementation
 * makes them: NULL arguments, handles of another implementation
 * (RMW_RET_INCORRECT_RMW_IMPLEMENTATION), zero-initialisation rules,
 * unsupported features (RMW_RET_UNSUPPORTED with an error message), QoS
 * compatibility, and allocation failures at every allocation of the
 * context's allocator without a crash or a leak.
 *
 * Usage: rmw_api   (ROS_DOMAIN_ID and RGAPS_SHM_PREFIX from the environment)
 */
#include "rmw_harness.h"

/* rcutils' error state, as a ROS process has it: the library calls it
 * (weakly bound) on the calling thread. This program is linked with
 * -rdynamic so that the library finds it. */
static __thread char rcutils_error[1024];
static __thread int rcutils_calls;
void rcutils_set_error_state(const char *error_string, const char *file, size_t line_number);
void rcutils_set_error_state(const char *error_string, const char *file, size_t line_number)
{
	(void)file;
	(void)line_number;
	snprintf(rcutils_error, sizeof rcutils_error, "%s", error_string);
	rcutils_calls++;
}

#include <pthread.h>

static void *fail_in_thread(void *arg)
{
	(void)arg;
	CHECK_RC(rmw_init_options_fini(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK(rcutils_calls == 1 && strstr(rcutils_error, "init_options") != NULL);
	return NULL;
}

static void test_error_state(void)
{
	int before = rcutils_calls;
	CHECK_RC(rmw_destroy_node(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK(rcutils_calls == before + 1);
	CHECK(strcmp(rcutils_error, rgaps_rmw_last_error()) == 0);
	CHECK(strstr(rcutils_error, "node") != NULL);
	/* thread-local: another thread's failure is that thread's */
	pthread_t th;
	MUST(pthread_create(&th, NULL, fail_in_thread, NULL) == 0);
	pthread_join(th, NULL);
	CHECK(strstr(rgaps_rmw_last_error(), "node") != NULL);
	CHECK(strstr(rcutils_error, "node") != NULL);
	h_pass("error_state");
}

static void test_identity(void)
{
	CHECK(strcmp(rmw_get_implementation_identifier(), "rmw_rgaps") == 0);
	CHECK(rmw_get_implementation_identifier() == rmw_get_implementation_identifier());
	CHECK(strcmp(rmw_get_serialization_format(), "cdr") == 0);
	CHECK(rmw_feature_supported(RMW_FEATURE_MESSAGE_INFO_PUBLICATION_SEQUENCE_NUMBER));
	CHECK(!rmw_feature_supported(RMW_MIDDLEWARE_CAN_TAKE_DYNAMIC_MESSAGE));
	CHECK_RC(rmw_set_log_severity(RMW_LOG_SEVERITY_WARN), RMW_RET_OK);
	CHECK_ERR(rmw_set_log_severity((rmw_log_severity_t)12345), RMW_RET_INVALID_ARGUMENT);
	h_pass("identity");
}

static void test_init_options(void)
{
	rcutils_allocator_t a = h_allocator();
	rmw_init_options_t o, o2;
	memset(&o, 0, sizeof o);
	memset(&o2, 0, sizeof o2);
	CHECK_ERR(rmw_init_options_init(NULL, a), RMW_RET_INVALID_ARGUMENT);
	rcutils_allocator_t bad = a;
	bad.allocate = NULL;
	CHECK_ERR(rmw_init_options_init(&o, bad), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_init_options_init(&o, a), RMW_RET_OK);
	CHECK(o.implementation_identifier == rmw_get_implementation_identifier());
	CHECK(o.domain_id == RMW_DEFAULT_DOMAIN_ID);
	CHECK_ERR(rmw_init_options_init(&o, a), RMW_RET_INVALID_ARGUMENT); /* not zero-initialised */

	o.enclave = a.allocate(8, NULL);
	strcpy(o.enclave, "/encl");
	CHECK_ERR(rmw_init_options_copy(NULL, &o2), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_init_options_copy(&o, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_init_options_copy(&o, &o2), RMW_RET_OK);
	CHECK(o2.enclave != NULL && o2.enclave != o.enclave && strcmp(o2.enclave, "/encl") == 0);
	CHECK_ERR(rmw_init_options_copy(&o, &o2), RMW_RET_INVALID_ARGUMENT); /* dst not zero */
	CHECK_RC(rmw_init_options_fini(&o2), RMW_RET_OK);
	CHECK(o2.implementation_identifier == NULL);

	/* Copy with every allocation failing, then with each one failing. */
	for (long k = 0; k < 4; k++) {
		rmw_init_options_t d;
		memset(&d, 0, sizeof d);
		long before = h_allocs - h_frees;
		h_fail_after = k;
		rmw_ret_t rc = rmw_init_options_copy(&o, &d);
		h_fail_after = -1;
		if (rc == RMW_RET_OK)
			CHECK_RC(rmw_init_options_fini(&d), RMW_RET_OK);
		else
			CHECK_RC(rc, RMW_RET_BAD_ALLOC);
		CHECK(h_allocs - h_frees == before);
	}

	rmw_init_options_t foreign = o;
	foreign.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_init_options_copy(&foreign, &o2), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_init_options_fini(&foreign), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_init_options_fini(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_init_options_fini(&o), RMW_RET_OK);
	CHECK_ERR(rmw_init_options_fini(&o), RMW_RET_INVALID_ARGUMENT); /* zero now */
	h_pass("init_options");
}

static void test_init_shutdown(void)
{
	rcutils_allocator_t a = h_allocator();
	rmw_init_options_t o;
	rmw_context_t c;
	memset(&o, 0, sizeof o);
	memset(&c, 0, sizeof c);
	CHECK_ERR(rmw_init(NULL, &c), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_init(&o, &c), RMW_RET_INVALID_ARGUMENT); /* options not initialised */
	CHECK_RC(rmw_init_options_init(&o, a), RMW_RET_OK);
	CHECK_ERR(rmw_init(&o, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_init(&o, &c), RMW_RET_INVALID_ARGUMENT); /* no enclave */
	o.enclave = a.allocate(16, NULL);
	strcpy(o.enclave, "/my_enclave");
	rmw_init_options_t foreign = o;
	foreign.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_init(&foreign, &c), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	o.security_options.enforce_security = RMW_SECURITY_ENFORCEMENT_ENFORCE;
	CHECK_ERR(rmw_init(&o, &c), RMW_RET_ERROR);
	o.security_options.enforce_security = RMW_SECURITY_ENFORCEMENT_PERMISSIVE;
	const char *dom = getenv("ROS_DOMAIN_ID");
	o.domain_id = dom ? (size_t)strtoul(dom, NULL, 10) : RMW_DEFAULT_DOMAIN_ID;
	CHECK_RC(rmw_init(&o, &c), RMW_RET_OK);
	CHECK(c.implementation_identifier == rmw_get_implementation_identifier());
	CHECK(c.actual_domain_id == (dom ? (size_t)strtoul(dom, NULL, 10) : 0));
	CHECK(c.options.enclave != NULL && c.options.enclave != o.enclave);
	/* the context's enclave is its nodes' */
	rmw_node_t *en = rmw_create_node(&c, "enclaved", "/");
	MUST(en != NULL);
	rcutils_string_array_t nn = {0, NULL, {0}}, nns = {0, NULL, {0}}, enc = {0, NULL, {0}};
	CHECK_RC(rmw_get_node_names_with_enclaves(en, &nn, &nns, &enc), RMW_RET_OK);
	int ei = h_index_of(&nn, "enclaved");
	CHECK(ei >= 0 && strcmp(enc.data[ei], "/my_enclave") == 0);
	h_string_array_fini(&nn);
	h_string_array_fini(&nns);
	h_string_array_fini(&enc);
	CHECK_RC(rmw_destroy_node(en), RMW_RET_OK);
	CHECK_ERR(rmw_init(&o, &c), RMW_RET_INVALID_ARGUMENT); /* context not zero */
	CHECK_ERR(rmw_context_fini(&c), RMW_RET_INVALID_ARGUMENT); /* not shut down */
	rmw_context_t fc = c;
	fc.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_shutdown(&fc), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_context_fini(&fc), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_shutdown(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_shutdown(&c), RMW_RET_OK);
	CHECK(rmw_create_node(&c, "after_shutdown", "/") == NULL);
	CHECK(rgaps_rmw_last_error()[0] != '\0');
	CHECK_RC(rmw_context_fini(&c), RMW_RET_OK);
	CHECK(c.implementation_identifier == NULL);
	CHECK_ERR(rmw_context_fini(NULL), RMW_RET_INVALID_ARGUMENT);

	/* An out-of-range domain is refused. */
	o.domain_id = 100000;
	CHECK_ERR(rmw_init(&o, &c), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_init_options_fini(&o), RMW_RET_OK);
	h_pass("init_shutdown");
}

static void test_handles(void)
{
	rmw_init_options_t o;
	rmw_context_t c;
	h_init(&c, &o, h_allocator());

	/* nodes */
	CHECK(rmw_create_node(NULL, "n", "/") == NULL);
	CHECK(rmw_create_node(&c, NULL, "/") == NULL);
	CHECK(rmw_create_node(&c, "n", NULL) == NULL);
	CHECK(rmw_create_node(&c, "bad name!", "/") == NULL);
	CHECK(rmw_create_node(&c, "n", "no_leading_slash") == NULL);
	rmw_context_t fc = c;
	fc.implementation_identifier = h_foreign_id;
	CHECK(rmw_create_node(&fc, "n", "/") == NULL);
	rmw_node_t *n = rmw_create_node(&c, "api_node", "/api_ns");
	MUST(n != NULL);
	CHECK(strcmp(n->name, "api_node") == 0 && strcmp(n->namespace_, "/api_ns") == 0);
	CHECK(rmw_node_get_graph_guard_condition(NULL) == NULL);
	CHECK(rmw_node_get_graph_guard_condition(n) != NULL);
	rmw_node_t fnode = *n;
	fnode.implementation_identifier = h_foreign_id;
	CHECK(rmw_node_get_graph_guard_condition(&fnode) == NULL);
	CHECK_ERR(rmw_destroy_node(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_destroy_node(&fnode), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);

	/* publishers */
	rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
	rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};
	const rmw_qos_profile_t *q = &h_qos_default;
	CHECK(rmw_create_publisher(NULL, &Chat_ts, "/api_t", q, &po) == NULL);
	CHECK(rmw_create_publisher(n, NULL, "/api_t", q, &po) == NULL);
	CHECK(rmw_create_publisher(n, &Chat_ts, NULL, q, &po) == NULL);
	CHECK(rmw_create_publisher(n, &Chat_ts, "/api_t", NULL, &po) == NULL);
	CHECK(rmw_create_publisher(n, &Chat_ts, "/api_t", q, NULL) == NULL);
	CHECK(rmw_create_publisher(&fnode, &Chat_ts, "/api_t", q, &po) == NULL);
	CHECK(rmw_create_publisher(n, &Chat_ts, "", q, &po) == NULL);
	CHECK(rmw_create_publisher(n, &Chat_ts, "/bad//name", q, &po) == NULL);
	/* rcl expands names: a relative one reaching the rmw is refused, unless
	 * the QoS avoids ROS's namespace conventions */
	CHECK(rmw_create_publisher(n, &Chat_ts, "api_rel", q, &po) == NULL);
	CHECK(rgaps_rmw_last_error()[0] != '\0');
	rmw_qos_profile_t avoid = *q;
	avoid.avoid_ros_namespace_conventions = true;
	rmw_publisher_t *rel = rmw_create_publisher(n, &Chat_ts, "api_rel", &avoid, &po);
	CHECK(rel != NULL && strcmp(rel->topic_name, "api_rel") == 0);
	if (rel != NULL)
		CHECK_RC(rmw_destroy_publisher(n, rel), RMW_RET_OK);
	rosidl_message_type_support_t foreign_ts = Chat_ts;
	foreign_ts.typesupport_identifier = "rosidl_typesupport_fastrtps_c";
	CHECK(rmw_create_publisher(n, &foreign_ts, "/api_t", q, &po) == NULL);
	CHECK(rgaps_rmw_last_error()[0] != '\0');
	rmw_qos_profile_t badq = *q;
	badq.history = RMW_QOS_POLICY_HISTORY_UNKNOWN;
	CHECK(rmw_create_publisher(n, &Chat_ts, "/api_t", &badq, &po) == NULL);

	rmw_publisher_t *p = rmw_create_publisher(n, &Chat_ts, "/api_t", q, &po);
	MUST(p != NULL);
	CHECK(!p->can_loan_messages); /* strings and sequences: not plain */
	rmw_publisher_t fp = *p;
	fp.implementation_identifier = h_foreign_id;
	Chat msg;
	Chat_init(&msg, 0);
	CHECK_ERR(rmw_publish(NULL, &msg, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_publish(p, NULL, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_publish(&fp, &msg, NULL), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	size_t cnt;
	CHECK_ERR(rmw_publisher_count_matched_subscriptions(p, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_publisher_count_matched_subscriptions(&fp, &cnt), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	rmw_qos_profile_t aq;
	CHECK_ERR(rmw_publisher_get_actual_qos(&fp, &aq), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_RC(rmw_publisher_get_actual_qos(p, &aq), RMW_RET_OK);
	CHECK(aq.reliability == RMW_QOS_POLICY_RELIABILITY_RELIABLE && aq.depth == 10);
	CHECK(aq.history == RMW_QOS_POLICY_HISTORY_KEEP_LAST);
	rmw_gid_t g1, g2;
	CHECK_ERR(rmw_get_gid_for_publisher(&fp, &g1), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_get_gid_for_publisher(p, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_get_gid_for_publisher(p, &g1), RMW_RET_OK);
	CHECK_RC(rmw_get_gid_for_publisher(p, &g2), RMW_RET_OK);
	bool eq = false;
	CHECK_RC(rmw_compare_gids_equal(&g1, &g2, &eq), RMW_RET_OK);
	CHECK(eq);
	rmw_gid_t fg = g1;
	fg.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_compare_gids_equal(&g1, &fg, &eq), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_compare_gids_equal(&g1, &g2, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_publisher_assert_liveliness(p), RMW_RET_OK);
	rmw_time_t tmo = {1, 0};
	CHECK_RC(rmw_publisher_wait_for_all_acked(p, tmo), RMW_RET_OK);
	void *loan = NULL;
	CHECK_ERR(rmw_borrow_loaned_message(p, &Chat_ts, &loan), RMW_RET_UNSUPPORTED);
	CHECK(loan == NULL);
	CHECK_ERR(rmw_publish_loaned_message(p, &msg, NULL), RMW_RET_UNSUPPORTED);
	rmw_serialized_message_t sm = {NULL, 0, 0, h_allocator()};
	CHECK_ERR(rmw_publish_serialized_message(p, NULL, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_publish_serialized_message(p, &sm, NULL), RMW_RET_INVALID_ARGUMENT); /* empty */
	rmw_network_flow_endpoint_array_t nfe = {0, NULL, NULL};
	rcutils_allocator_t a = h_allocator();
	CHECK_ERR(rmw_publisher_get_network_flow_endpoints(p, &a, &nfe), RMW_RET_UNSUPPORTED);
	rmw_publisher_allocation_t pa = {NULL, NULL};
	CHECK_ERR(rmw_init_publisher_allocation(&Chat_ts, NULL, &pa), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_fini_publisher_allocation(&pa), RMW_RET_UNSUPPORTED);

	/* subscriptions */
	CHECK(rmw_create_subscription(NULL, &Chat_ts, "/api_t", q, &so) == NULL);
	CHECK(rmw_create_subscription(n, NULL, "/api_t", q, &so) == NULL);
	CHECK(rmw_create_subscription(n, &Chat_ts, NULL, q, &so) == NULL);
	CHECK(rmw_create_subscription(n, &Chat_ts, "/api_t", NULL, &so) == NULL);
	CHECK(rmw_create_subscription(n, &Chat_ts, "/api_t", q, NULL) == NULL);
	CHECK(rmw_create_subscription(&fnode, &Chat_ts, "/api_t", q, &so) == NULL);
	CHECK(rmw_create_subscription(n, &Chat_ts, "api_t", q, &so) == NULL);
	rmw_subscription_t *s = rmw_create_subscription(n, &Chat_ts, "/api_t", q, &so);
	MUST(s != NULL);
	CHECK(!s->can_loan_messages);
	CHECK(!s->is_cft_enabled);
	rmw_subscription_t fs = *s;
	fs.implementation_identifier = h_foreign_id;
	bool taken = true;
	rmw_message_info_t info;
	CHECK_ERR(rmw_take(NULL, &msg, &taken, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take(s, NULL, &taken, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take(s, &msg, NULL, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take(&fs, &msg, &taken, NULL), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_take_with_info(s, &msg, &taken, NULL, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take_with_info(&fs, &msg, &taken, &info, NULL), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_RC(rmw_take(s, &msg, &taken, NULL), RMW_RET_OK);
	CHECK(!taken);
	rmw_message_sequence_t seq = {NULL, 0, 0, NULL};
	rmw_message_info_sequence_t iseq = {NULL, 0, 0, NULL};
	size_t ntaken;
	CHECK_ERR(rmw_take_sequence(s, 0, &seq, &iseq, &ntaken, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take_sequence(s, 2, &seq, &iseq, &ntaken, NULL), RMW_RET_INVALID_ARGUMENT); /* capacity */
	CHECK_ERR(rmw_take_sequence(&fs, 1, &seq, &iseq, &ntaken, NULL), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_take_loaned_message(s, &loan, &taken, NULL), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_return_loaned_message_from_subscription(s, &msg), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_subscription_count_matched_publishers(&fs, &cnt), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_subscription_get_actual_qos(s, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_subscription_set_content_filter(s, NULL), RMW_RET_UNSUPPORTED);
	rmw_subscription_content_filter_options_t cfo;
	memset(&cfo, 0, sizeof cfo);
	CHECK_ERR(rmw_subscription_get_content_filter(s, &a, &cfo), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_subscription_get_network_flow_endpoints(s, &a, &nfe), RMW_RET_UNSUPPORTED);
	rmw_subscription_allocation_t sa = {NULL, NULL};
	CHECK_ERR(rmw_init_subscription_allocation(&Chat_ts, NULL, &sa), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_fini_subscription_allocation(&sa), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_take_dynamic_message(s, NULL, &taken, NULL), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_take_dynamic_message_with_info(s, NULL, &taken, &info, NULL), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_serialization_support_init("x", &a, NULL), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_get_serialized_message_size(&Chat_ts, NULL, &cnt), RMW_RET_UNSUPPORTED);

	/* events */
	rmw_event_t ev;
	memset(&ev, 0, sizeof ev);
	CHECK_ERR(rmw_publisher_event_init(NULL, p, RMW_EVENT_PUBLICATION_MATCHED), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_publisher_event_init(&ev, &fp, RMW_EVENT_PUBLICATION_MATCHED),
		RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_publisher_event_init(&ev, p, RMW_EVENT_SUBSCRIPTION_MATCHED), RMW_RET_UNSUPPORTED);
	CHECK_ERR(rmw_subscription_event_init(&ev, s, RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE), RMW_RET_UNSUPPORTED);
	CHECK(rmw_event_type_is_supported(RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE));
	CHECK(rmw_event_type_is_supported(RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE));
	CHECK(rmw_event_type_is_supported(RMW_EVENT_PUBLICATION_MATCHED));
	CHECK_RC(rmw_subscription_event_init(&ev, s, RMW_EVENT_SUBSCRIPTION_MATCHED), RMW_RET_OK);
	rmw_matched_status_t ms;
	CHECK_ERR(rmw_take_event(NULL, &ms, &taken), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take_event(&ev, NULL, &taken), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_take_event(&ev, &ms, NULL), RMW_RET_INVALID_ARGUMENT);
	rmw_event_t fev = ev;
	fev.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_take_event(&fev, &ms, &taken), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_event_set_callback(&fev, NULL, NULL), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);

	/* guard conditions and wait sets */
	CHECK(rmw_create_guard_condition(NULL) == NULL);
	CHECK(rmw_create_guard_condition(&fc) == NULL);
	rmw_guard_condition_t *gc = rmw_create_guard_condition(&c);
	MUST(gc != NULL);
	rmw_guard_condition_t fgc = *gc;
	fgc.implementation_identifier = h_foreign_id;
	CHECK_ERR(rmw_trigger_guard_condition(NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_trigger_guard_condition(&fgc), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_guard_condition(&fgc), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_guard_condition((rmw_guard_condition_t *)rmw_node_get_graph_guard_condition(n)),
		RMW_RET_INVALID_ARGUMENT);
	CHECK(rmw_create_wait_set(NULL, 4) == NULL);
	CHECK(rmw_create_wait_set(&fc, 4) == NULL);
	rmw_wait_set_t *ws = rmw_create_wait_set(&c, 4);
	MUST(ws != NULL);
	rmw_wait_set_t fws = *ws;
	fws.implementation_identifier = h_foreign_id;
	rmw_time_t zero = {0, 0};
	CHECK_ERR(rmw_wait(NULL, NULL, NULL, NULL, NULL, NULL, &zero), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_wait(NULL, NULL, NULL, NULL, NULL, &fws, &zero), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_wait_set(NULL), RMW_RET_ERROR);
	CHECK_ERR(rmw_destroy_wait_set(&fws), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	/* An entry that is not ours is refused, not dereferenced blindly. */
	uint32_t junk[8] = {0};
	void *sarr[1] = {junk};
	rmw_subscriptions_t subs = {1, sarr};
	CHECK_ERR(rmw_wait(&subs, NULL, NULL, NULL, NULL, ws, &zero), RMW_RET_INVALID_ARGUMENT);

	/* services */
	CHECK(rmw_create_client(NULL, &AddTwoInts_ts, "/api_srv", q) == NULL);
	CHECK(rmw_create_client(n, NULL, "/api_srv", q) == NULL);
	CHECK(rmw_create_client(n, &AddTwoInts_ts, NULL, q) == NULL);
	CHECK(rmw_create_client(n, &AddTwoInts_ts, "/api_srv", NULL) == NULL);
	CHECK(rmw_create_client(&fnode, &AddTwoInts_ts, "/api_srv", q) == NULL);
	CHECK(rmw_create_client(n, &AddTwoInts_ts, "/bad srv", q) == NULL);
	CHECK(rmw_create_service(NULL, &AddTwoInts_ts, "/api_srv", q) == NULL);
	CHECK(rmw_create_service(n, &AddTwoInts_ts, "", q) == NULL);
	CHECK(rmw_create_service(n, &AddTwoInts_ts, "api_srv", q) == NULL);
	CHECK(rmw_create_client(n, &AddTwoInts_ts, "api_srv", q) == NULL);
	rosidl_service_type_support_t foreign_srv = AddTwoInts_ts;
	foreign_srv.typesupport_identifier = "rosidl_typesupport_fastrtps_c";
	CHECK(rmw_create_service(n, &foreign_srv, "/api_srv", q) == NULL);
	CHECK(rmw_create_client(n, &foreign_srv, "/api_srv", q) == NULL);
	rmw_client_t *cl = rmw_create_client(n, &AddTwoInts_ts, "/api_srv", q);
	MUST(cl != NULL);
	rmw_service_t *sv = rmw_create_service(n, &AddTwoInts_ts, "/api_srv", q);
	MUST(sv != NULL);
	rmw_client_t fcl = *cl;
	fcl.implementation_identifier = h_foreign_id;
	rmw_service_t fsv = *sv;
	fsv.implementation_identifier = h_foreign_id;
	AddTwoInts_Request req = {1, 2};
	int64_t sid;
	CHECK_ERR(rmw_send_request(&fcl, &req, &sid), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_send_request(cl, NULL, &sid), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_send_request(cl, &req, NULL), RMW_RET_INVALID_ARGUMENT);
	rmw_service_info_t sinfo;
	AddTwoInts_Response resp;
	CHECK_ERR(rmw_take_response(&fcl, &sinfo, &resp, &taken), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_take_request(&fsv, &sinfo, &req, &taken), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_take_request(sv, NULL, &req, &taken), RMW_RET_INVALID_ARGUMENT);
	rmw_request_id_t rid;
	memset(&rid, 0, sizeof rid);
	CHECK_ERR(rmw_send_response(&fsv, &rid, &resp), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_send_response(sv, NULL, &resp), RMW_RET_INVALID_ARGUMENT);
	bool avail;
	CHECK_ERR(rmw_service_server_is_available(n, &fcl, &avail), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_service_server_is_available(&fnode, cl, &avail), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_service_server_is_available(n, cl, NULL), RMW_RET_ERROR);
	CHECK_ERR(rmw_service_server_is_available(NULL, cl, &avail), RMW_RET_ERROR);
	CHECK_ERR(rmw_service_server_is_available(n, NULL, &avail), RMW_RET_ERROR);
	CHECK_ERR(rmw_client_request_publisher_get_actual_qos(&fcl, &aq), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_service_response_publisher_get_actual_qos(&fsv, &aq), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_get_gid_for_client(&fcl, &g1), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_client(n, &fcl), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_service(n, &fsv), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);

	/* graph queries */
	rcutils_string_array_t names = {0, NULL, {0}}, nss = {0, NULL, {0}};
	CHECK_ERR(rmw_get_node_names(NULL, &names, &nss), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_get_node_names(&fnode, &names, &nss), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_get_node_names(n, NULL, &nss), RMW_RET_INVALID_ARGUMENT);
	rcutils_string_array_t notzero = {1, NULL, {0}};
	CHECK_ERR(rmw_get_node_names(n, &notzero, &nss), RMW_RET_INVALID_ARGUMENT);
	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	CHECK_ERR(rmw_get_topic_names_and_types(n, NULL, false, &nt), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_get_topic_names_and_types(&fnode, &a, false, &nt), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_get_publisher_names_and_types_by_node(n, &a, "nope", "/", false, &nt),
		RMW_RET_NODE_NAME_NON_EXISTENT);
	CHECK_ERR(rmw_get_publisher_names_and_types_by_node(n, &a, "bad name", "/", false, &nt),
		RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_get_service_names_and_types_by_node(n, &a, NULL, "/", &nt), RMW_RET_INVALID_ARGUMENT);
	rmw_topic_endpoint_info_array_t eia = {0, NULL};
	CHECK_ERR(rmw_get_publishers_info_by_topic(n, &a, NULL, false, &eia), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_get_publishers_info_by_topic(&fnode, &a, "/api_t", false, &eia),
		RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_get_publishers_info_by_topic(n, &a, "not/absolute", false, &eia), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_count_publishers(n, NULL, &cnt), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_count_publishers(n, "/api_t", NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_count_subscribers(&fnode, "/api_t", &cnt), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_count_clients(n, "bad name", &cnt), RMW_RET_INVALID_ARGUMENT);

	/* serialisation */
	CHECK_ERR(rmw_serialize(NULL, &Chat_ts, &sm), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_serialize(&msg, NULL, &sm), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_serialize(&msg, &Chat_ts, NULL), RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_serialize(&msg, &foreign_ts, &sm), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_deserialize(&sm, &foreign_ts, &msg), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_deserialize(NULL, &Chat_ts, &msg), RMW_RET_INVALID_ARGUMENT);

	/* teardown, with the foreign-handle refusals above having changed nothing */
	CHECK_RC(rmw_destroy_client(n, cl), RMW_RET_OK);
	CHECK_RC(rmw_destroy_service(n, sv), RMW_RET_OK);
	CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK);
	CHECK_RC(rmw_destroy_guard_condition(gc), RMW_RET_OK);
	CHECK_ERR(rmw_destroy_subscription(n, &fs), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_subscription(NULL, s), RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_ERR(rmw_destroy_publisher(n, &fp), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_ERR(rmw_destroy_publisher(&fnode, p), RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	Chat_fini(&msg);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_fini(&c, &o);
	h_pass("bad_arguments_and_foreign_handles");
}

static void test_qos_compatible(void)
{
	rmw_qos_compatibility_type_t compat;
	char reason[256];
	CHECK_ERR(rmw_qos_profile_check_compatible(h_qos_default, h_qos_default, NULL, reason, sizeof reason),
		RMW_RET_INVALID_ARGUMENT);
	CHECK_ERR(rmw_qos_profile_check_compatible(h_qos_default, h_qos_default, &compat, NULL, 10),
		RMW_RET_INVALID_ARGUMENT);
	CHECK_RC(rmw_qos_profile_check_compatible(h_qos_default, h_qos_default, &compat, NULL, 0), RMW_RET_OK);
	CHECK(compat == RMW_QOS_COMPATIBILITY_OK);
	/* best-effort publisher, reliable subscription: an error, with a reason */
	CHECK_RC(rmw_qos_profile_check_compatible(h_qos_best_effort, h_qos_default, &compat, reason, sizeof reason),
		RMW_RET_OK);
	CHECK(compat == RMW_QOS_COMPATIBILITY_ERROR);
	CHECK(reason[0] != '\0');
	CHECK_RC(rmw_qos_profile_check_compatible(h_qos_default, h_qos_best_effort, &compat, reason, sizeof reason),
		RMW_RET_OK);
	CHECK(compat == RMW_QOS_COMPATIBILITY_OK);
	rmw_qos_profile_t tl = h_qos_default;
	tl.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
	CHECK_RC(rmw_qos_profile_check_compatible(h_qos_default, tl, &compat, reason, sizeof reason), RMW_RET_OK);
	CHECK(compat == RMW_QOS_COMPATIBILITY_ERROR);
	rmw_qos_profile_t sd = h_qos_default;
	sd.reliability = RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT;
	CHECK_RC(rmw_qos_profile_check_compatible(sd, h_qos_default, &compat, reason, sizeof reason), RMW_RET_OK);
	CHECK(compat == RMW_QOS_COMPATIBILITY_WARNING);
	h_pass("qos_profile_check_compatible");
}

/* Every create function with its k-th allocation failing, for every k until
 * it succeeds: no crash, the error reported, nothing leaked. */
static void test_allocation_failures(void)
{
	rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
	rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};
	long base = h_allocs - h_frees;

	/* rmw_init */
	int succeeded = 0;
	for (long k = 0; k < 64 && !succeeded; k++) {
		rcutils_allocator_t a = h_allocator();
		rmw_init_options_t o;
		rmw_context_t c;
		memset(&o, 0, sizeof o);
		memset(&c, 0, sizeof c);
		MUST(rmw_init_options_init(&o, a) == RMW_RET_OK);
		o.enclave = a.allocate(2, NULL);
		strcpy(o.enclave, "/");
		const char *dom = getenv("ROS_DOMAIN_ID");
		o.domain_id = dom ? (size_t)strtoul(dom, NULL, 10) : RMW_DEFAULT_DOMAIN_ID;
		h_fail_after = k;
		rmw_ret_t rc = rmw_init(&o, &c);
		h_fail_after = -1;
		if (rc == RMW_RET_OK) {
			succeeded = 1;
			CHECK_RC(rmw_shutdown(&c), RMW_RET_OK);
			CHECK_RC(rmw_context_fini(&c), RMW_RET_OK);
		} else {
			CHECK_RC(rc, RMW_RET_BAD_ALLOC);
			CHECK(c.implementation_identifier == NULL);
		}
		CHECK_RC(rmw_init_options_fini(&o), RMW_RET_OK);
	}
	CHECK(succeeded);
	CHECK(h_allocs - h_frees == base);

	rmw_init_options_t o;
	rmw_context_t c;
	h_init(&c, &o, h_allocator());
	long live = h_allocs - h_frees;

#define EACH_K(create, check_null, destroy)                                \
	do {                                                               \
		int ok_ = 0;                                               \
		for (long k = 0; k < 64 && !ok_; k++) {                    \
			h_fail_after = k;                                  \
			void *obj_ = (void *)(create);                     \
			h_fail_after = -1;                                 \
			if (obj_ != NULL) {                                \
				ok_ = 1;                                   \
				destroy;                                   \
			} else {                                           \
				check_null;                                \
				CHECK(h_allocs - h_frees == live);         \
			}                                                  \
		}                                                          \
		CHECK(ok_);                                                \
		CHECK(h_allocs - h_frees == live);                         \
	} while (0)

	rmw_node_t *n = NULL;
	EACH_K(n = rmw_create_node(&c, "alloc_node", "/"), CHECK(rgaps_rmw_last_error()[0] != '\0'),
		CHECK_RC(rmw_destroy_node(n), RMW_RET_OK));
	n = rmw_create_node(&c, "alloc_node", "/");
	MUST(n != NULL);
	live = h_allocs - h_frees;
	rmw_publisher_t *p;
	EACH_K(p = rmw_create_publisher(n, &Chat_ts, "/alloc_t", &h_qos_default, &po), (void)0,
		CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK));
	rmw_subscription_t *s;
	EACH_K(s = rmw_create_subscription(n, &Chat_ts, "/alloc_t", &h_qos_default, &so), (void)0,
		CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK));
	rmw_client_t *cl;
	EACH_K(cl = rmw_create_client(n, &AddTwoInts_ts, "/alloc_srv", &h_qos_default), (void)0,
		CHECK_RC(rmw_destroy_client(n, cl), RMW_RET_OK));
	rmw_service_t *sv;
	EACH_K(sv = rmw_create_service(n, &AddTwoInts_ts, "/alloc_srv", &h_qos_default), (void)0,
		CHECK_RC(rmw_destroy_service(n, sv), RMW_RET_OK));
	rmw_guard_condition_t *gc;
	EACH_K(gc = rmw_create_guard_condition(&c), (void)0, CHECK_RC(rmw_destroy_guard_condition(gc), RMW_RET_OK));
	rmw_wait_set_t *ws;
	EACH_K(ws = rmw_create_wait_set(&c, 8), (void)0, CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK));

	/* Graph queries with failing allocations: an error, nothing left. */
	p = rmw_create_publisher(n, &Chat_ts, "/alloc_t", &h_qos_default, &po);
	MUST(p != NULL);
	live = h_allocs - h_frees;
	rcutils_allocator_t a = h_allocator();
	int ok = 0;
	for (long k = 0; k < 256 && !ok; k++) {
		rcutils_string_array_t names = {0, NULL, {0}}, nss = {0, NULL, {0}};
		h_fail_after = k;
		rmw_ret_t rc = rmw_get_node_names(n, &names, &nss);
		h_fail_after = -1;
		if (rc == RMW_RET_OK) {
			ok = 1;
			CHECK(h_has_string(&names, "alloc_node"));
			h_string_array_fini(&names);
			h_string_array_fini(&nss);
		} else {
			CHECK_RC(rc, RMW_RET_BAD_ALLOC);
			CHECK(names.data == NULL && nss.data == NULL);
		}
		CHECK(h_allocs - h_frees == live);
	}
	CHECK(ok);
	ok = 0;
	for (long k = 0; k < 256 && !ok; k++) {
		rmw_names_and_types_t nt;
		memset(&nt, 0, sizeof nt);
		h_fail_after = k;
		rmw_ret_t rc = rmw_get_topic_names_and_types(n, &a, false, &nt);
		h_fail_after = -1;
		if (rc == RMW_RET_OK) {
			ok = 1;
			CHECK(h_has_string(&nt.names, "/alloc_t"));
			h_names_and_types_fini(&nt);
		} else {
			CHECK_RC(rc, RMW_RET_BAD_ALLOC);
			CHECK(nt.names.data == NULL && nt.types == NULL);
		}
		CHECK(h_allocs - h_frees == live);
	}
	CHECK(ok);
	ok = 0;
	for (long k = 0; k < 64 && !ok; k++) {
		rmw_topic_endpoint_info_array_t eia = {0, NULL};
		h_fail_after = k;
		rmw_ret_t rc = rmw_get_publishers_info_by_topic(n, &a, "/alloc_t", false, &eia);
		h_fail_after = -1;
		if (rc == RMW_RET_OK) {
			ok = 1;
			CHECK(eia.size == 1);
			h_endpoint_info_fini(&eia, &a);
		} else {
			CHECK_RC(rc, RMW_RET_BAD_ALLOC);
			CHECK(eia.info_array == NULL && eia.size == 0);
		}
		CHECK(h_allocs - h_frees == live);
	}
	CHECK(ok);
	/* count_* allocate nothing from the caller's allocator. */
	size_t cnt = 0;
	h_fail_after = 0;
	CHECK_RC(rmw_count_publishers(n, "/alloc_t", &cnt), RMW_RET_OK);
	h_fail_after = -1;
	CHECK(cnt == 1);
	CHECK(h_allocs - h_frees == live);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_fini(&c, &o);
	CHECK(h_allocs - h_frees == base);
	h_pass("allocation_failures");
}

int main(void)
{
	test_identity();
	test_error_state();
	test_init_options();
	test_init_shutdown();
	test_handles();
	test_qos_compatible();
	test_allocation_failures();
	return h_done();
}

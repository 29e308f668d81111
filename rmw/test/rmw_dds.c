/*
 * rmw_dds — librmw_rgaps's graph with ROS 2 nodes on DDS, reported by the
 * daemon's DDS gateway. Started by the Go test (test/rmw_dds_test.go),
 * which runs `rgaps daemon -dds` and plays a ROS 2 node on DDS:
 *
 *   rmw_dds watch NAME TOPIC
 *                  waits until the node /NAME is in rmw_get_node_names,
 *                  with a publisher on TOPIC (std_msgs/msg/String) in the
 *                  topic list, the publisher count and the endpoint info
 *                  (node name, namespace); prints SEEN; then waits until
 *                  the node leaves the graph (the test closes its
 *                  participant)
 *
 * It prints PASS/FAIL lines and exits 0 only without failures.
 */
#include "rmw_harness.h"

static rmw_context_t ctx;
static rmw_init_options_t opts;
static rmw_wait_set_t *ws;

static int watch(const char *name, const char *topic)
{
	rmw_node_t *n = rmw_create_node(&ctx, "dds_watcher", "/");
	MUST(n != NULL);
	CHECK(WAIT_GRAPH(n, node_present(n, name, "/") == 1, 60000));
	CHECK(WAIT_GRAPH(n, topic_has_type(n, topic, "std_msgs/msg/String"), 10000));
	size_t cnt = 0;
	CHECK_RC(rmw_count_publishers(n, topic, &cnt), RMW_RET_OK);
	CHECK(cnt == 1);
	rcutils_allocator_t a = h_allocator();
	rmw_topic_endpoint_info_array_t eia = {0, NULL};
	CHECK_RC(rmw_get_publishers_info_by_topic(n, &a, topic, false, &eia), RMW_RET_OK);
	CHECK(eia.size == 1 && strcmp(eia.info_array[0].node_name, name) == 0 &&
	      strcmp(eia.info_array[0].node_namespace, "/") == 0 &&
	      strcmp(eia.info_array[0].topic_type, "std_msgs/msg/String") == 0);
	h_endpoint_info_fini(&eia, &a);
	rmw_names_and_types_t nt;
	memset(&nt, 0, sizeof nt);
	CHECK_RC(rmw_get_publisher_names_and_types_by_node(n, &a, name, "/", false, &nt), RMW_RET_OK);
	CHECK(h_index_of(&nt.names, topic) >= 0);
	h_names_and_types_fini(&nt);
	h_pass("dds_node_in_the_graph");
	printf("SEEN\n");
	fflush(stdout);
	CHECK(WAIT_GRAPH(n, node_present(n, name, "/") == 0, 60000));
	CHECK_RC(rmw_count_publishers(n, topic, &cnt), RMW_RET_OK);
	CHECK(cnt == 0);
	h_pass("dds_node_left_the_graph");
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "watch") != 0) {
		fprintf(stderr, "usage: rmw_dds watch NAME TOPIC\n");
		return 2;
	}
	h_init(&ctx, &opts, h_allocator());
	ws = rmw_create_wait_set(&ctx, 8);
	MUST(ws != NULL);
	int rc = watch(argv[2], argv[3]);
	CHECK_RC(rmw_destroy_wait_set(ws), RMW_RET_OK);
	h_fini(&ctx, &opts);
	if (rc != 0)
		return rc;
	return h_done();
}

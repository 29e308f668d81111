/*
 * rmw_bench — publish → take latency through librmw_rgaps, one publisher
 * and one subscription in one process (the Go benchmark
 * BenchmarkRmwLatency runs the same loop on the Go API and prints the
 * ratio): each message is published and then taken, its stamp checked.
 *
 *   rmw_copy_ns  rmw_publish (serialised into the pool) + rmw_take
 *                (deserialised out of it)
 *   rmw_loan_ns  rmw_borrow_loaned_message + rmw_publish_loaned_message +
 *                rmw_take_loaned_message + rmw_return_loaned_message_from_subscription
 *
 * Usage: rmw_bench <64|4194304> <iterations>
 */
#include "rmw_harness.h"

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rmw_bench <64|4194304> <iterations>\n");
		return 2;
	}
	size_t size = (size_t)strtoul(argv[1], NULL, 10);
	long iters = strtol(argv[2], NULL, 10);
	const rosidl_message_type_support_t *ts;
	size_t msize;
	if (size == 64) {
		ts = &Blob64_ts;
		msize = sizeof(Blob64);
	} else if (size == BLOB4M_BYTES) {
		ts = &Blob4M_ts;
		msize = sizeof(Blob4M);
	} else {
		fprintf(stderr, "size must be 64 or %u\n", BLOB4M_BYTES);
		return 2;
	}
	rmw_context_t ctx;
	rmw_init_options_t opts;
	h_init(&ctx, &opts, h_allocator());
	rmw_node_t *n = rmw_create_node(&ctx, "rmw_bench", "/");
	MUST(n != NULL);
	char topic[64];
	snprintf(topic, sizeof topic, "/rmw_bench_%zu", size);
	rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
	rmw_subscription_options_t so = {NULL, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, NULL};
	rmw_publisher_t *p = rmw_create_publisher(n, ts, topic, &h_qos_default, &po);
	rmw_subscription_t *s = rmw_create_subscription(n, ts, topic, &h_qos_default, &so);
	MUST(p && s && p->can_loan_messages && s->can_loan_messages);
	size_t cnt = 0;
	MUST(H_EVENTUALLY(rmw_publisher_count_matched_subscriptions(p, &cnt) == RMW_RET_OK && cnt == 1, 5000));

	int64_t *out = calloc(1, msize), *in = calloc(1, msize);
	MUST(out && in);
	memset(out, 0x5a, msize);
	long warm = iters < 100 ? iters : 100;
	int64_t start = 0;
	for (long i = -warm; i < iters; i++) {
		if (i == 0)
			start = h_now_ns();
		*out = i;
		MUST(rmw_publish(p, out, NULL) == RMW_RET_OK);
		bool taken = false;
		MUST(rmw_take(s, in, &taken, NULL) == RMW_RET_OK && taken && *in == i);
	}
	double copy_ns = (double)(h_now_ns() - start) / (double)iters;

	for (long i = -warm; i < iters; i++) {
		if (i == 0)
			start = h_now_ns();
		void *loan = NULL;
		MUST(rmw_borrow_loaned_message(p, ts, &loan) == RMW_RET_OK);
		*(int64_t *)loan = i;
		MUST(rmw_publish_loaned_message(p, loan, NULL) == RMW_RET_OK);
		void *got = NULL;
		bool taken = false;
		MUST(rmw_take_loaned_message(s, &got, &taken, NULL) == RMW_RET_OK && taken);
		MUST(*(const int64_t *)got == i);
		MUST(rmw_return_loaned_message_from_subscription(s, got) == RMW_RET_OK);
	}
	double loan_ns = (double)(h_now_ns() - start) / (double)iters;
	printf("rmw_copy_ns %.1f\nrmw_loan_ns %.1f\n", copy_ns, loan_ns);
	free(out);
	free(in);
	CHECK_RC(rmw_destroy_subscription(n, s), RMW_RET_OK);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_fini(&ctx, &opts);
	return h_failures ? 1 : 0;
}

// A Cyclone DDS program with IDL-generated types (no rgaps code): takes
// count std_msgs/String messages from rt/rgaps_idl_in, prints each as
// "got <data>", and writes "echo <data>" on rt/rgaps_idl_out.
// Usage: idl_echo DOMAIN COUNT. Discovery comes from CYCLONEDDS_URI.
#include <stdio.h>
#include <stdlib.h>
#include "dds/dds.h"
#include "String.h"

static int fail(const char *what, int32_t rc) {
	fprintf(stderr, "%s: %s\n", what, dds_strretcode(rc));
	return 1;
}

int main(int argc, char **argv) {
	if (argc != 3)
		return 2;
	uint32_t domain = (uint32_t)atoi(argv[1]);
	int count = atoi(argv[2]);
	dds_entity_t pp = dds_create_participant(domain, NULL, NULL);
	if (pp < 0)
		return fail("participant", pp);
	dds_qos_t *q = dds_create_qos();
	dds_qset_reliability(q, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
	dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
	dds_entity_t tin = dds_create_topic(pp, &std_msgs_msg_dds__String__desc, "rt/rgaps_idl_in", NULL, NULL);
	dds_entity_t tout = dds_create_topic(pp, &std_msgs_msg_dds__String__desc, "rt/rgaps_idl_out", NULL, NULL);
	if (tin < 0 || tout < 0)
		return fail("topic", tin < 0 ? tin : tout);
	dds_entity_t r = dds_create_reader(pp, tin, q, NULL);
	dds_entity_t w = dds_create_writer(pp, tout, q, NULL);
	if (r < 0 || w < 0)
		return fail("endpoint", r < 0 ? r : w);
	dds_entity_t ws = dds_create_waitset(pp);
	dds_waitset_attach(ws, dds_create_readcondition(r, DDS_ANY_STATE), 0);
	printf("ready\n");
	fflush(stdout);
	for (int got = 0; got < count;) {
		int32_t n = dds_waitset_wait(ws, NULL, 0, DDS_SECS(30));
		if (n <= 0)
			return fail("wait", n == 0 ? DDS_RETCODE_TIMEOUT : n);
		void *buf[1] = {NULL};
		dds_sample_info_t si;
		n = dds_take(r, buf, &si, 1, 1);
		if (n < 0)
			return fail("take", n);
		if (n == 1 && si.valid_data) {
			const std_msgs_msg_dds__String_ *m = buf[0];
			char text[256];
			snprintf(text, sizeof text, "echo %s", m->data);
			printf("got %s\n", m->data);
			fflush(stdout);
			std_msgs_msg_dds__String_ out = {.data = text};
			int32_t rc = dds_write(w, &out);
			if (rc < 0)
				return fail("write", rc);
			got++;
		}
		if (n > 0)
			dds_return_loan(r, buf, n);
	}
	dds_wait_for_acks(w, DDS_SECS(10));
	dds_delete_qos(q);
	dds_delete(pp);
	return 0;
}

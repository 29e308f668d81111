/*
 * rgaps_example — a publisher and a subscriber of the rgaps C API.
 *
 *   rgaps_example pub TOPIC COUNT [SIZE] [auto|host|gpu]
 *   rgaps_example sub TOPIC COUNT [SIZE] [auto|host|gpu]
 *
 * The publisher waits (up to 30 s) for a subscriber, then publishes COUNT
 * messages of about SIZE bytes (default 65536). Message number s (its
 * sequence number, 1, 2, ...) has size msg_size(s) and holds the test
 * pattern of seed s. With GPU memory the pattern is written into device
 * memory by the library (rgaps_device_fill_pattern: this program does not
 * link CUDA) and publisher_push copies it device-to-device into the topic's
 * GPU pool; with host memory (no GPU, or "host") it is written with
 * rgaps_host_fill_pattern into a malloc'd buffer.
 *
 * The subscriber prints "ready" once subscribed, pulls COUNT messages
 * (waiting up to 30 s for each) and verifies every one: the sequence numbers
 * follow each other, the size is msg_size(seq), and the payload is the
 * pattern of seed seq (compared byte for byte in host memory, by checksum
 * computed on the GPU in device memory). It prints
 * "verified COUNT messages" and exits 0, or says what is wrong and exits 1.
 *
 * Build (see Makefile): cc -I../../include rgaps_example.c -L../../build -lrgaps
 * Run:   LD_LIBRARY_PATH=../../build ./rgaps_example sub /demo 100 &
 *        LD_LIBRARY_PATH=../../build ./rgaps_example pub /demo 100
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rgaps.h"

static void die(const char *what)
{
	fprintf(stderr, "rgaps_example: %s: %s (%d)\n", what, rgaps_last_error_message(), rgaps_last_error());
	exit(1);
}

/* msg_size is the size of message seq: between 3/4 of size and size. */
static size_t msg_size(uint64_t seq, size_t size)
{
	return size - (size_t)((seq * 37) % (size / 4 + 1));
}

static int parse_memory(const char *s)
{
	if (s == NULL || strcmp(s, "auto") == 0)
		return RGAPS_MEMORY_AUTO;
	if (strcmp(s, "host") == 0)
		return RGAPS_MEMORY_HOST;
	if (strcmp(s, "gpu") == 0)
		return RGAPS_MEMORY_GPU;
	fprintf(stderr, "rgaps_example: memory must be auto, host or gpu, not %s\n", s);
	exit(2);
}

static const char *memory_name(int memory)
{
	return memory == RGAPS_MEMORY_GPU ? "gpu" : "host";
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int run_pub(const char *topic, long count, size_t size, int memory)
{
	rgaps_publisher_t *pub;
	void *buf = NULL;
	double t0;
	long i;
	int mem;

	pub = rgaps_publisher_init_memory(topic, memory);
	if (pub == NULL)
		die("publisher_init");
	mem = rgaps_publisher_memory(pub);
	printf("publisher on %s: %s memory\n", topic, memory_name(mem));
	fflush(stdout);

	if (mem == RGAPS_MEMORY_GPU) {
		if (rgaps_device_alloc(size, &buf) != RGAPS_OK)
			die("rgaps_device_alloc");
	} else if ((buf = malloc(size)) == NULL) {
		fprintf(stderr, "rgaps_example: out of memory\n");
		return 1;
	}

	/* Volatile QoS: what is published before a subscriber matched is lost. */
	t0 = now_s();
	for (;;) {
		int n = rgaps_publisher_matched(pub);
		if (n < 0)
			die("rgaps_publisher_matched");
		if (n > 0)
			break;
		if (now_s() - t0 > 30) {
			fprintf(stderr, "rgaps_example: no subscriber on %s after 30 s\n", topic);
			return 1;
		}
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	}

	t0 = now_s();
	for (i = 0; i < count; i++) {
		uint64_t seq = (uint64_t)i + 1; /* the sequence number it will get */
		size_t n = msg_size(seq, size);
		int rc = mem == RGAPS_MEMORY_GPU ? rgaps_device_fill_pattern(buf, n, (uint32_t)seq)
		                                 : rgaps_host_fill_pattern(buf, n, (uint32_t)seq);
		if (rc != RGAPS_OK)
			die("fill_pattern");
		/* The payload is in device memory (host memory on the host path). */
		if (publisher_push(pub, n, buf) != RGAPS_OK)
			die("publisher_push");
	}
	printf("published %ld messages in %.3f s\n", count, now_s() - t0);

	if (mem == RGAPS_MEMORY_GPU)
		rgaps_device_free(buf);
	else
		free(buf);
	publisher_destroy(pub);
	return 0;
}

static int run_sub(const char *topic, long count, size_t size, int memory)
{
	rgaps_subscriber_t *sub;
	uint8_t *expect;
	uint64_t last = 0, bytes = 0;
	double t0 = 0;
	long got;
	int mem;

	sub = rgaps_subscriber_init_memory(topic, memory);
	if (sub == NULL)
		die("subscriber_init");
	if (rgaps_subscriber_set_timeout(sub, 30000) != RGAPS_OK)
		die("rgaps_subscriber_set_timeout");
	mem = rgaps_subscriber_memory(sub);
	if ((expect = malloc(size)) == NULL) {
		fprintf(stderr, "rgaps_example: out of memory\n");
		return 1;
	}
	printf("ready: subscriber on %s: %s memory\n", topic, memory_name(mem));
	fflush(stdout);

	for (got = 0; got < count; got++) {
		rgaps_message_info_t info;
		void *p = subscriber_pull(sub);
		if (p == NULL)
			die("subscriber_pull");
		if (got == 0)
			t0 = now_s();
		if (rgaps_subscriber_message_info(sub, &info) != RGAPS_OK)
			die("rgaps_subscriber_message_info");
		if (info.sequence != last + 1) {
			fprintf(stderr, "rgaps_example: message %" PRIu64 " after %" PRIu64 ": lost or reordered\n",
			        info.sequence, last);
			return 1;
		}
		if (info.size != msg_size(info.sequence, size)) {
			fprintf(stderr, "rgaps_example: message %" PRIu64 " has %zu bytes, not %zu\n", info.sequence,
			        info.size, msg_size(info.sequence, size));
			return 1;
		}
		rgaps_host_fill_pattern(expect, info.size, (uint32_t)info.sequence);
		if (mem == RGAPS_MEMORY_GPU) {
			/* p is a device pointer into the topic's GPU pool. */
			uint64_t want, have;
			rgaps_host_checksum(expect, info.size, &want);
			if (rgaps_device_checksum(p, info.size, &have) != RGAPS_OK)
				die("rgaps_device_checksum");
			if (have != want) {
				fprintf(stderr, "rgaps_example: message %" PRIu64 ": checksum %" PRIu64 ", want %" PRIu64 "\n",
				        info.sequence, have, want);
				return 1;
			}
		} else if (memcmp(p, expect, info.size) != 0) {
			/* p is a host pointer into the topic's read-only pool. */
			fprintf(stderr, "rgaps_example: message %" PRIu64 ": payload differs\n", info.sequence);
			return 1;
		}
		last = info.sequence;
		bytes += info.size;
	}
	printf("verified %ld messages (%" PRIu64 " bytes) in %.3f s\n", got, bytes, got ? now_s() - t0 : 0.0);
	free(expect);
	subscriber_destroy(sub); /* gives the last message back */
	return 0;
}

int main(int argc, char **argv)
{
	long count;
	size_t size = 65536;
	char *end;

	if (argc < 4 || (strcmp(argv[1], "pub") != 0 && strcmp(argv[1], "sub") != 0)) {
		fprintf(stderr, "usage: %s pub|sub TOPIC COUNT [SIZE] [auto|host|gpu]\n", argv[0]);
		return 2;
	}
	count = strtol(argv[3], &end, 10);
	if (*end != '\0' || count < 0) {
		fprintf(stderr, "rgaps_example: bad COUNT %s\n", argv[3]);
		return 2;
	}
	if (argc > 4) {
		unsigned long long v = strtoull(argv[4], &end, 10);
		if (*end != '\0' || v == 0) {
			fprintf(stderr, "rgaps_example: bad SIZE %s\n", argv[4]);
			return 2;
		}
		size = (size_t)v;
	}
	if (strcmp(argv[1], "pub") == 0)
		return run_pub(argv[2], count, size, parse_memory(argc > 5 ? argv[5] : NULL));
	return run_sub(argv[2], count, size, parse_memory(argc > 5 ? argv[5] : NULL));
}

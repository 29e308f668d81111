/*
 * Private declarations of librmw_rgaps shared by the C half (rmw_*.c) and the
 * Go half (the cgo preamble of the Go files). Only declarations and type
 * definitions: cgo includes this in more than one translation unit.
 *
 * Every handle rcl sees (rmw_node_t, rmw_publisher_t, ...) lives in C memory
 * allocated with the context's allocator; its `data` points at one of the
 * structs below (also C memory), which holds the cgo.Handle (an integer) of
 * the Go state. No Go pointer is ever stored in C memory.
 */
#ifndef RGAPS_RMW_IMPL_H
#define RGAPS_RMW_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "include/rgaps_rmw_abi.h"
#include "rgaps_ts.h"
#include "rgaps/gpu.h"

#define RGAPS_IDENTIFIER "rmw_rgaps"
#define RGAPS_SERIALIZATION_FORMAT "cdr"

/* Magic numbers of the data structs: a cheap check that `data` is ours. */
#define RGAPS_MAGIC_CTX 0x52474358u  /* RGCX */
#define RGAPS_MAGIC_NODE 0x52474e44u /* RGND */
#define RGAPS_MAGIC_PUB 0x52475042u  /* RGPB */
#define RGAPS_MAGIC_SUB 0x52475342u  /* RGSB */
#define RGAPS_MAGIC_GC 0x52474743u   /* RGGC */
#define RGAPS_MAGIC_WS 0x52475753u   /* RGWS */
#define RGAPS_MAGIC_SRV 0x52475356u  /* RGSV */
#define RGAPS_MAGIC_CLI 0x5247434cu  /* RGCL */
#define RGAPS_MAGIC_EV 0x52474556u   /* RGEV */
#define RGAPS_MAGIC_DEAD 0xdeaddeadu

/* Payload layouts on a topic (what the engine carries), version
 * RGAPS_PAYLOAD_VERSION (docs/ARCHITECTURE.md §3.10):
 *   message:        [CDR: 4-byte encapsulation header, body], as ROS 2
 *                   puts it on the wire (the rgaps CLI and Go programs
 *                   read and write the same bytes)
 *   plain message:  [4 reserved bytes][CDR ...] for the types whose memory
 *                   layout is their CDR layout (rgaps_ts_is_plain): the
 *                   reserved bytes put the body at offset 8 of the pool
 *                   block, which is 64-byte aligned, so the message lies in
 *                   place at its own alignment (loans). Both sides know the
 *                   layout from the type.
 *   service:        [16-byte writer GID][int64 sequence][4 reserved][CDR ...]
 */
/* The version of these layouts. Not written in version 1 (the reserved
 * bytes are zero); a later version puts its number in the first reserved
 * byte of the plain and service layouts. */
#define RGAPS_PAYLOAD_VERSION 1
#define RGAPS_MSG_PREFIX 4u
#define RGAPS_SRV_PREFIX 28u
#define RGAPS_CDR_HEADER 4u

/* The meta block of a message published with a device loan (§3.12): the
 * sample's payload is the device field's bytes, its meta block is
 *   [0,4) "RGDM"  [4] RGAPS_META_VERSION  [5,8) 0  [8,12) u32 LE index of the
 *   device field among the type's members  [12,16) 0  [16,…) the message's
 *   CDR (encapsulation header first) with the device field empty. */
#define RGAPS_META_HEADER 16u
#define RGAPS_META_VERSION 1

/* A type hash as the engine stores it: version byte, 32 bytes of value. */
#define RGAPS_TYPE_HASH_SIZE 33

/* rmw_context_t.impl */
struct rmw_context_impl_s {
	uint32_t magic;
	int is_shutdown;
	uintptr_t go; /* context state */
};

/* Guard condition kinds. */
#define RGAPS_GC_USER 1
#define RGAPS_GC_GRAPH 2

/* rmw_guard_condition_t.data */
typedef struct rgaps_gc {
	uint32_t magic;
	int kind;
	uintptr_t go;
	rcutils_allocator_t alloc; /* what the handle was allocated with (user kind) */
	/* User kind: futex words, no Go state (sig.h: a signal handler may
	 * trigger it). seq counts triggers; seen is seq when rmw_wait last
	 * reported the condition, so it is raised while they differ. */
	uint32_t seq, seen;
} rgaps_gc;

/* rmw_node_t.data */
typedef struct rgaps_node {
	uint32_t magic;
	uintptr_t go;
	rmw_guard_condition_t graph_gc; /* the node's graph guard condition */
	rgaps_gc graph;
} rgaps_node;

/* rmw_publisher_t.data */
typedef struct rgaps_pub {
	uint32_t magic;
	uintptr_t go;
	const rgaps_ts *ts;
	rmw_qos_profile_t qos; /* actual QoS */
	uint8_t gid[RMW_GID_STORAGE_SIZE];
	int plain;     /* can loan */
	size_t prefix; /* bytes before the CDR stream: RGAPS_MSG_PREFIX for plain types, else 0 */
	int32_t member; /* the default device field (rgaps_ts_byte_member), -1 if none (or it must be named) */
	int bytes;      /* the type has uint8[] members: GPU loans may be published (rmw_gpu.c) */
} rgaps_pub;

/* rmw_subscription_t.data */
typedef struct rgaps_sub {
	uint32_t magic;
	uintptr_t go;
	const rgaps_ts *ts;
	rmw_qos_profile_t qos;
	uint8_t gid[RMW_GID_STORAGE_SIZE];
	int plain;     /* can loan */
	size_t prefix; /* as rgaps_pub's */
	int32_t member; /* the device field, -1 if none (or not named yet); atomic: set_device writes it */
	int bytes;      /* the type has uint8[] members: takes split (rmw_gpu.c) */
	int device;     /* a device subscription: takes leave tickets (rmw_gpu.c); atomic */
} rgaps_sub;

/* rmw_client_t.data and rmw_service_t.data: the pair of endpoints on the
 * service's request and response topics. A client (RGAPS_MAGIC_CLI)
 * publishes requests and takes responses; a service (RGAPS_MAGIC_SRV) takes
 * requests and publishes responses. */
typedef struct rgaps_svc {
	uint32_t magic;
	uintptr_t go;  /* pair state (owns both endpoints) */
	uintptr_t pub; /* publisher state: requests (client), responses (service) */
	uintptr_t sub; /* subscription state: responses (client), requests (service) */
	const rgaps_ts *req, *resp;
	rmw_qos_profile_t req_qos, resp_qos;
	uint8_t gid[RMW_GID_STORAGE_SIZE]; /* the publisher's: a client's requests carry it */
	int64_t next_seq;                  /* client: the last request's sequence number */
} rgaps_svc;

/* rmw_wait_set_t.data */
typedef struct rgaps_ws {
	uint32_t magic;
	size_t max_conditions;
	rcutils_allocator_t alloc;
	rmw_guard_conditions_t gcs; /* rmw_wait_set_t.guard_conditions points here */
} rgaps_ws;

/* rmw_event_t.data */
typedef struct rgaps_ev {
	uint32_t magic;
	uintptr_t go;
} rgaps_ev;

/* Helpers of the C half that the Go half calls (hidden: not exported). */
#define RGAPS_HIDDEN __attribute__((visibility("hidden")))
RGAPS_HIDDEN void rgaps_set_error(const char *msg);
RGAPS_HIDDEN void *rgaps_alloc(const rcutils_allocator_t *a, size_t n);
RGAPS_HIDDEN void rgaps_free(const rcutils_allocator_t *a, void *p);
RGAPS_HIDDEN char *rgaps_strndup(const rcutils_allocator_t *a, const char *s, size_t n);
RGAPS_HIDDEN int rgaps_allocator_valid(const rcutils_allocator_t *a);
RGAPS_HIDDEN rmw_ret_t rgaps_string_array_init(rcutils_string_array_t *arr, size_t n,
	const rcutils_allocator_t *a);
RGAPS_HIDDEN void rgaps_string_array_fini(rcutils_string_array_t *arr);
RGAPS_HIDDEN void rgaps_call_event_callback(uintptr_t cb, uintptr_t user_data, size_t n);

#endif /* RGAPS_RMW_IMPL_H */

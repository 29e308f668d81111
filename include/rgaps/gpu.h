/*
 * rgaps/gpu.h: GPU-loaned messages from ROS 2 nodes, the C contract.
 *
 * librmw_rgaps.so exports the functions below. A program does not link
 * them: ROS 2's rmw_implementation loads the rmw at run time, so a program
 * (or rgaps/gpu.hpp, or the rgaps_gpu Python module) finds them with
 * dlopen("librmw_rgaps.so", RTLD_NOLOAD | RTLD_LAZY) and dlsym, after it has
 * checked that an rmw handle's implementation_identifier is "rmw_rgaps"
 * (rgaps/gpu_core.hpp's rgaps::Api does exactly that).
 *
 * Version: RGAPS_GPU_ABI_VERSION. The names carry the version they belong
 * to (_v1); rgaps_gpu_abi_version() says the newest the library has. A later
 * version adds functions with a new suffix and keeps the _v1 ones.
 *
 * Model (docs/ARCHITECTURE.md §3.12):
 *  - One uint8[] (or byte[]/char[]) field of a standard message, the
 *    "device field", travels as a block of the topic's shared GPU pool;
 *    the other fields travel as usual. Default field: the one named
 *    "data", else the only such top-level field; or name it.
 *  - Publishing: borrow a block, fill it on a CUDA stream, publish it
 *    with the message that carries the other fields and that stream. The
 *    publish waits for the stream's work (an event on that stream, not the
 *    whole context) before any subscriber can see the message; the call
 *    returns once the message is queued.
 *  - CPU subscribers of the topic (any rclcpp/rclpy subscription, ros2
 *    topic echo, a recorder) receive the whole message in host memory: one
 *    device-to-host copy per host, shared by all of them.
 *  - A device subscription (rgaps_gpu_subscription_set_device_v1 on an
 *    ordinary subscription) receives the other fields as usual, and in the
 *    device field a 32-byte ticket instead of the bytes. The ticket is
 *    claimed for a view (device pointer, size) that stays valid until it is
 *    released; the block lives until every subscriber on every host has
 *    released it (or died: a SIGKILLed holder gives it back).
 *  - Without a GPU (no device, no driver) the same calls work on pinned
 *    or plain host shared memory: the flags say RGAPS_GPU_ON_DEVICE is not
 *    set and the pointers are host pointers.
 *
 *  - Lifetimes: a view holds its block until it is released, and at most
 *    until its subscription is destroyed (which gives every block back);
 *    kernels that read a view must be done (their stream synchronised)
 *    before it is released. A loan's pointer is the publisher's until it
 *    is published or discarded.
 *  - Limits: the other fields of a message (its CDR without the device
 *    field) take at most 64 KiB.
 *
 * Every function returns an rmw_ret_t value: 0 (RMW_RET_OK), 1
 * (RMW_RET_ERROR), 2 (RMW_RET_TIMEOUT), 3 (RMW_RET_UNSUPPORTED), 10
 * (RMW_RET_BAD_ALLOC: a full pool), 11 (RMW_RET_INVALID_ARGUMENT), 12
 * (RMW_RET_INCORRECT_RMW_IMPLEMENTATION);
 * rgaps_gpu_last_error_v1() says why (per thread), and the rmw's error
 * state (rcutils) is set as for any rmw call. All functions are thread safe.
 */
#ifndef RGAPS_GPU_H_
#define RGAPS_GPU_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RGAPS_GPU_ABI_VERSION 1u

/* Flags of a loan or a view. */
#define RGAPS_GPU_ON_DEVICE 0x1u /* ptr is a CUDA device address in the device below */

/* Bytes of a ticket, the device field's content in a device subscription's message. */
#define RGAPS_GPU_TICKET_SIZE 32u

/* The stream argument that asks publish to wait for every device write of
 * the process (cuCtxSynchronize), for writers that used several streams. */
#define RGAPS_GPU_SYNC_CONTEXT ((void *)~(uintptr_t)0)

/* A block lent to a publisher. Owned by the library until published or
 * discarded; copy the struct freely, but publish or discard it once. */
typedef struct rgaps_gpu_loan_v1 {
	void *ptr;        /* where to write: device address, or host memory without RGAPS_GPU_ON_DEVICE */
	uint64_t size;    /* bytes lent (what was asked for) */
	uint32_t flags;   /* RGAPS_GPU_ON_DEVICE */
	int32_t device;   /* CUDA device ordinal (-1 for host memory) */
	uint64_t id;      /* the library's name for the loan */
} rgaps_gpu_loan_v1;

/* A received block. Read-only: other subscribers read the same bytes. */
typedef struct rgaps_gpu_view_v1 {
	const void *ptr;  /* device address, or host memory without RGAPS_GPU_ON_DEVICE */
	uint64_t size;    /* bytes of the device field */
	uint32_t flags;   /* RGAPS_GPU_ON_DEVICE */
	int32_t device;   /* CUDA device ordinal (-1 for host memory) */
	uint64_t id;      /* the library's name for the view */
} rgaps_gpu_view_v1;

/* The newest ABI version the library implements (RGAPS_GPU_ABI_VERSION or later). */
uint32_t rgaps_gpu_abi_version(void);

/* Lends size (> 0) bytes of the publisher's topic pool: device memory of the
 * topic's GPU pool when this host has a GPU, else host memory. publisher is
 * the rmw_publisher_t of an rclcpp/rclpy/rcl publisher (rcl_publisher_get_rmw_handle).
 * A RELIABLE publisher waits for room as rmw_publish does; pool exhausted is
 * RMW_RET_BAD_ALLOC. */
int32_t rgaps_gpu_publisher_borrow_v1(const void *publisher, uint64_t size, rgaps_gpu_loan_v1 *loan);

/* Publishes ros_message (the publisher's message type, C or C++ memory as
 * the publisher's type support says) with its device field replaced by the
 * loan: what ros_message holds in that field is ignored. field: the device
 * field's name, or NULL for the default. stream: the CUstream the writes
 * into the loan were queued on (NULL: the legacy default stream;
 * RGAPS_GPU_SYNC_CONTEXT: all the process's device work). The loan is
 * consumed whatever the result. */
int32_t rgaps_gpu_publisher_publish_v1(const void *publisher, const void *ros_message, const char *field,
	rgaps_gpu_loan_v1 *loan, void *stream);

/* The same with the other fields already serialised: cdr[0:len] is the
 * message in CDR (rmw_serialize, rclpy.serialization.serialize_message),
 * encapsulation header first, its device field best left empty (its
 * content is ignored). What the rgaps_gpu Python module uses. */
int32_t rgaps_gpu_publisher_publish_serialized_v1(const void *publisher, const uint8_t *cdr, size_t len,
	const char *field, rgaps_gpu_loan_v1 *loan, void *stream);

/* Gives an unpublished loan back. */
int32_t rgaps_gpu_publisher_discard_v1(const void *publisher, rgaps_gpu_loan_v1 *loan);

/* Makes subscription (an rmw_subscription_t) a device subscription: from
 * now on its takes leave a ticket in the device field (field, or NULL for
 * the default) and the block stays held for a view. Without a GPU it still
 * succeeds; views are then host memory. Messages published by ordinary CPU
 * publishers are delivered the same way (the view points into the message
 * as it lies in the pool). */
int32_t rgaps_gpu_subscription_set_device_v1(const void *subscription, const char *field);

/* Claims the view of a taken message, from the message itself (its device
 * field holds the ticket; the field is emptied) ... */
int32_t rgaps_gpu_subscription_claim_message_v1(const void *subscription, void *ros_message, rgaps_gpu_view_v1 *view);
/* ... or from the ticket's bytes (Python hands these over). A ticket can be
 * claimed once. Unclaimed tickets are released oldest first beyond 64 per
 * subscription, or beyond its KEEP_LAST depth if that is smaller; claiming
 * one of those is RMW_RET_ERROR ("expired"). Ids of loans and views are
 * unique in the process: one handed to another endpoint is refused. */
int32_t rgaps_gpu_subscription_claim_v1(const void *subscription, const uint8_t *ticket, size_t ticket_len,
	rgaps_gpu_view_v1 *view);

/* Releases a claimed view: the block is the subscription's no more. */
int32_t rgaps_gpu_subscription_release_v1(const void *subscription, rgaps_gpu_view_v1 *view);

/* Why the last failing call of this thread failed (never NULL). */
const char *rgaps_gpu_last_error_v1(void);

#ifdef __cplusplus
}
#endif

#endif /* RGAPS_GPU_H_ */

/*
 * rgaps.h — the C API of rmw_rgaps (librgaps.so).
 *
 * The six primitives of the RGAPS thesis, §3.7 "Programming Interface",
 * with the thesis' names and parameter lists:
 *
 *     rgaps_publisher_t  *publisher_init(char *topic_name);
 *     int                 publisher_push(rgaps_publisher_t *publisher,
 *                                        size_t message_size, void *device_pointer);
 *     void                publisher_destroy(rgaps_publisher_t *publisher);
 *     rgaps_subscriber_t *subscriber_init(char *topic_name);
 *     void               *subscriber_pull(rgaps_subscriber_t *subscriber);
 *     void                subscriber_destroy(rgaps_subscriber_t *subscriber);
 *
 * and, prefixed rgaps_, what the thesis leaves open: error codes and their
 * text, the size and metadata of a pulled message, the pull timeout, the
 * choice of host or device memory, and a few device-memory helpers so that
 * a program can use the API without linking CUDA itself.
 *
 * Build:   go build -buildmode=c-shared -o build/librgaps.so ./cmd/librgaps
 * Use:     cc -I include app.c -L build -lrgaps   (LD_LIBRARY_PATH=build ./a.out)
 *
 * ------------------------------------------------------------------------
 * MODEL
 *
 * A publisher or subscriber handle is one endpoint on a ROS 2 topic of this
 * host, of message type "rgaps/msg/Bytes" (opaque bytes: `rgaps topic echo
 * -type rgaps/msg/Bytes` and `rgaps topic hz` see it). The first handle a
 * process creates joins the ROS domain named by ROS_DOMAIN_ID (default 0)
 * and registers a node "rgaps_capi_<pid>" in namespace "/"; the last handle
 * destroyed leaves it. Topic names follow ROS 2 rules; a relative name
 * ("image") is taken relative to "/" ("/image").
 *
 * QoS is RELIABLE, KEEP_ALL, VOLATILE: a subscriber receives every message
 * published after it was matched, in order; a publisher whose subscriber
 * lags by a full queue (1024 messages) or whose topic pool is full waits up
 * to 1 s and then fails with RGAPS_EQUEUEFULL or RGAPS_EPOOL. The
 * environment variable RGAPS_QOS, read when a handle is created, selects a
 * ROS 2 named profile instead ("default", "sensor_data", "system_default",
 * ...; "keep_all" names the default above). Other environment variables of
 * the engine apply as documented in README.md (RGAPS_POOL_SIZE,
 * RGAPS_GPU_DEVICE, RGAPS_SHM_PREFIX, RGAPS_BUSY_POLL, RGAPS_DAEMON, ...).
 *
 * ------------------------------------------------------------------------
 * HOST AND DEVICE MEMORY
 *
 * Every handle has a memory kind, fixed when it is created:
 *
 *   RGAPS_MEMORY_GPU   publisher_push reads the payload from *device*
 *                      memory (one device-to-device copy into the topic's
 *                      GPU pool); subscriber_pull returns a *device*
 *                      pointer into the pool (no copy: every GPU subscriber
 *                      of the host reads the same block).
 *   RGAPS_MEMORY_HOST  publisher_push reads the payload from *host* memory
 *                      (one copy into the topic's shared-memory pool);
 *                      subscriber_pull returns a *host* pointer into the
 *                      pool, mapped read-only.
 *
 * publisher_init and subscriber_init choose RGAPS_MEMORY_AUTO: GPU when this
 * process can use a CUDA device, else HOST (the host fallback, which is what
 * runs on a machine without a GPU). rgaps_publisher_init_memory and
 * rgaps_subscriber_init_memory choose explicitly; RGAPS_MEMORY_GPU without
 * a usable GPU fails with RGAPS_ENOTSUP. rgaps_publisher_memory and
 * rgaps_subscriber_memory tell which kind a handle got, so a program knows
 * what kind of pointer to pass and to expect. Publishers and subscribers of
 * different kinds on one topic interoperate (the engine makes the missing
 * form of a message once, for all readers that need it).
 *
 * Device pointers — those passed to publisher_push and
 * rgaps_device_*, and those returned by subscriber_pull and
 * rgaps_device_alloc — are addresses in the *primary context* of CUDA device
 * RGAPS_GPU_DEVICE (default 0) of the calling process: the context the CUDA
 * runtime API uses, so memory from cudaMalloc after cudaSetDevice(that
 * device), and kernels launched with the runtime API, work with them
 * directly. Pointers of other contexts (cuCtxCreate) or other devices are
 * not valid here. A GPU topic's device pool is owned by the per-host daemon
 * (`rgaps daemon`), started automatically on first use: the `rgaps` binary
 * must be on PATH, next to the program, or named by RGAPS_DAEMON, else the
 * call that first needs the pool (the init that creates a GPU topic, or a
 * push or pull that maps its pool) fails with RGAPS_ENODAEMON.
 *
 * ------------------------------------------------------------------------
 * ERRORS
 *
 * Functions returning int return RGAPS_OK (0) or one of the negative
 * RGAPS_E* codes below; their values are stable across versions. Functions
 * returning a pointer return NULL on failure. Every function except
 * rgaps_strerror, rgaps_last_error and rgaps_last_error_message records its
 * result code (RGAPS_OK on success) and, on failure, a detailed message in
 * thread-local storage: rgaps_last_error() and rgaps_last_error_message()
 * read them, as errno and strerror do. Invalid arguments (NULL or unknown
 * handles, NULL pointers, zero sizes, bad topic names) are reported, never
 * crash; arguments are checked before availability (a bad argument to a GPU
 * function gives RGAPS_EINVAL even without a GPU). A Go panic inside the
 * library is caught and reported as RGAPS_EINTERNAL. A payload pointer that
 * cannot be read (unmapped memory) is reported as RGAPS_EFAULT where the
 * library reads it itself (host publish, topic names); the rgaps_host_*
 * helpers are plain C loops and do not catch faults.
 *
 * ------------------------------------------------------------------------
 * HANDLES, OWNERSHIP, THREADS
 *
 * Handles are opaque, allocated by the library and freed by the matching
 * destroy function; the caller never frees them. A handle holds no pointer
 * into the Go heap. Passing NULL, a pointer that is not a live handle of
 * that kind, or a destroyed handle gives RGAPS_EBADHANDLE (a destroyed
 * handle is recognised as long as its address has not been reused by a
 * newer handle: do not use handles after destroy).
 *
 * All functions may be called from any thread. A publisher may push from
 * several threads at once. Calls on one subscriber are serialised by the
 * library; its pulled message is per subscriber, not per thread (see
 * subscriber_pull), so one thread per subscriber is the natural use.
 * Destroying a handle while another thread is inside a call on it is
 * allowed: destroy waits for that call to end (a push ends within the 1 s
 * block timeout at most; a blocked subscriber_pull is woken, within about
 * 100 ms, and returns NULL with RGAPS_ECLOSED). Calls made after destroy
 * returned are use-after-free, as above.
 *
 * The library starts the Go runtime when it is loaded. It may be loaded with
 * dlopen; it is never unloaded (it is linked with -z nodelete: dlclose does
 * not unmap it, because the runtime's threads keep running). A child made
 * with fork() must not call it (only exec).
 */
#ifndef RGAPS_H
#define RGAPS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this API; grows when functions are added. */
#define RGAPS_API_VERSION 1

/* ---- handles ----------------------------------------------------------- */

/* A publisher on one topic (thesis: per-topic publisher handle). */
typedef struct rgaps_publisher rgaps_publisher_t;
/* A subscriber on one topic (thesis: per-topic subscriber handle). */
typedef struct rgaps_subscriber rgaps_subscriber_t;

/* ---- result codes (stable values) ------------------------------------- */

enum {
    RGAPS_OK = 0,           /* success */
    RGAPS_ERROR = -1,       /* failure not covered below (see the message) */
    RGAPS_EINVAL = -2,      /* invalid argument: NULL pointer, zero size, bad
                               topic name, unknown memory kind, bad RGAPS_QOS
                               or ROS_DOMAIN_ID */
    RGAPS_EBADHANDLE = -3,  /* NULL, unknown or destroyed handle */
    RGAPS_ENOTSUP = -4,     /* not supported on this machine: no usable GPU
                               (no driver, no device, no VMM/IPC support) */
    RGAPS_ETIMEDOUT = -5,   /* no message within the subscriber's timeout */
    RGAPS_ECLOSED = -6,     /* the handle was destroyed during the call */
    RGAPS_EPOOL = -7,       /* the topic's pool stayed full (1 s) */
    RGAPS_ETOOLARGE = -8,   /* message larger than the topic's pool */
    RGAPS_EQUEUEFULL = -9,  /* a reliable subscriber's queue stayed full (1 s);
                               nothing was delivered */
    RGAPS_ETYPE = -10,      /* the topic exists with another message type */
    RGAPS_ELIMIT = -11,     /* too many endpoints on the topic, or too many
                               samples held by one endpoint */
    RGAPS_ECORRUPT = -12,   /* a shared-memory segment is corrupt or of
                               another layout version */
    RGAPS_EDEVICE = -13,    /* a CUDA call failed (e.g. a device pointer not
                               valid in the primary context, out of memory) */
    RGAPS_EFAULT = -14,     /* a pointer given to the library could not be
                               read (the fault was caught) */
    RGAPS_ENOMEM = -15,     /* host memory allocation failed, or /dev/shm had
                               no room for a new topic or endpoint */
    RGAPS_ENOMSG = -16,     /* the subscriber holds no pulled message */
    RGAPS_EINTERNAL = -17,  /* internal error (a bug: please report) */
    RGAPS_ENODAEMON = -18   /* a GPU topic needs the per-host pool daemon and
                               none runs or could be started (put `rgaps` on
                               PATH or set RGAPS_DAEMON) */
};

/* A static, never-NULL English description of a code ("success" for
 * RGAPS_OK, "unknown rgaps error code" for values not listed above). The
 * string must not be freed or modified. Thread-safe; sets nothing. */
const char *rgaps_strerror(int code);

/* The code recorded by the last library call made on this thread
 * (RGAPS_OK when it succeeded). */
int rgaps_last_error(void);

/* A thread-local description of the last call's failure, with details
 * (e.g. which character of a topic name is wrong); rgaps_strerror's text
 * when there are none, "success" after a successful call. Valid until the
 * next library call on this thread; do not free it. */
const char *rgaps_last_error_message(void);

/* ---- memory kinds -------------------------------------------------------- */

enum {
    RGAPS_MEMORY_AUTO = 0, /* GPU if this process can use one, else HOST */
    RGAPS_MEMORY_HOST = 1, /* payloads in host memory */
    RGAPS_MEMORY_GPU = 2   /* payloads in device memory */
};

/* 1 if this process can use CUDA device RGAPS_GPU_DEVICE (what
 * RGAPS_MEMORY_AUTO picks GPU on), else 0. The first call initialises CUDA
 * (can take hundreds of milliseconds); later calls are cheap. */
int rgaps_gpu_available(void);

/* ---- publisher (thesis §3.7) -------------------------------------------- */

/* Attaches the calling process as a publisher to topic_name (a NUL-
 * terminated ROS 2 topic name, read and not kept; the library never writes
 * to it) with memory kind RGAPS_MEMORY_AUTO. Returns the handle, or NULL
 * (see rgaps_last_error: RGAPS_EINVAL for a NULL or invalid name,
 * RGAPS_ETYPE, RGAPS_ELIMIT, ...). Destroy with publisher_destroy. */
rgaps_publisher_t *publisher_init(char *topic_name);

/* publisher_init with an explicit memory kind (RGAPS_MEMORY_*).
 * RGAPS_MEMORY_GPU without a usable GPU fails with RGAPS_ENOTSUP. */
rgaps_publisher_t *rgaps_publisher_init_memory(const char *topic_name, int memory);

/* Publishes one message of message_size bytes (> 0) read from
 * device_pointer:
 *   - GPU publisher: device_pointer is device memory (see HOST AND DEVICE
 *     MEMORY). The library copies it into a block of the topic's GPU pool
 *     and publishes. It first waits for all work queued in the primary
 *     context (cuCtxSynchronize), so a kernel that produced the payload
 *     needs no explicit synchronisation.
 *   - HOST publisher (the host fallback): device_pointer is host memory,
 *     copied into the topic's shared-memory pool.
 * The caller keeps ownership of the buffer, which may be reused as soon as
 * the call returns. Returns RGAPS_OK, or RGAPS_EBADHANDLE, RGAPS_EINVAL
 * (size 0, NULL pointer), RGAPS_ETOOLARGE, RGAPS_EPOOL, RGAPS_EQUEUEFULL,
 * RGAPS_EFAULT (host pointer not readable), RGAPS_EDEVICE (device pointer
 * rejected by CUDA), RGAPS_ENODAEMON, RGAPS_ECLOSED. With no matched
 * subscriber the message is dropped and RGAPS_OK returned (with the
 * default VOLATILE QoS nobody could receive it; a TRANSIENT_LOCAL profile
 * from RGAPS_QOS keeps it for late subscribers). A BEST_EFFORT profile
 * drops a message that finds the pool full and returns RGAPS_OK. */
int publisher_push(rgaps_publisher_t *publisher, size_t message_size, void *device_pointer);

/* The number of subscribers (of any process on this host) matched with the
 * publisher, >= 0, or a negative code. A publisher that must not lose its
 * first messages waits for this to be > 0. */
int rgaps_publisher_matched(rgaps_publisher_t *publisher);

/* The publisher's memory kind: RGAPS_MEMORY_HOST or RGAPS_MEMORY_GPU, or a
 * negative code. */
int rgaps_publisher_memory(rgaps_publisher_t *publisher);

/* Detaches the publisher from its topic and frees the handle. Messages it
 * already published stay readable by the subscribers that received them.
 * NULL or an unknown handle only records RGAPS_EBADHANDLE. */
void publisher_destroy(rgaps_publisher_t *publisher);

/* ---- subscriber (thesis §3.7) ------------------------------------------- */

/* Attaches the calling process as a subscriber to topic_name (read, not
 * kept) with memory kind RGAPS_MEMORY_AUTO and an infinite pull timeout.
 * Returns the handle, or NULL (see rgaps_last_error). It receives the
 * messages published after it is matched. Destroy with subscriber_destroy. */
rgaps_subscriber_t *subscriber_init(char *topic_name);

/* subscriber_init with an explicit memory kind (RGAPS_MEMORY_*).
 * RGAPS_MEMORY_GPU without a usable GPU fails with RGAPS_ENOTSUP. */
rgaps_subscriber_t *rgaps_subscriber_init_memory(const char *topic_name, int memory);

/* Sets how long subscriber_pull waits for a message: timeout_ms < 0 waits
 * for ever (the default), 0 only takes a message already queued, > 0 waits
 * up to that many milliseconds. Returns RGAPS_OK or a negative code. */
int rgaps_subscriber_set_timeout(rgaps_subscriber_t *subscriber, int64_t timeout_ms);

/* Retrieves the oldest message queued for the subscriber, waiting for one
 * up to the subscriber's timeout (rgaps_subscriber_set_timeout; default:
 * for ever), and returns a pointer to its payload, in place in the topic's
 * pool (no copy):
 *   - GPU subscriber: a device pointer (see HOST AND DEVICE MEMORY). The
 *     publisher's writes are complete before the message is visible.
 *   - HOST subscriber: a host pointer into a read-only mapping (writing
 *     through it raises SIGSEGV).
 * Its size, sequence number and timestamps: rgaps_subscriber_message_size
 * and rgaps_subscriber_message_info. The payload is shared with the other
 * subscribers of the topic and must not be modified.
 *
 * Lifetime: the message belongs to the subscriber until the next
 * subscriber_pull, rgaps_subscriber_release or subscriber_destroy on this
 * subscriber, which give it back to the pool; the pointer is invalid from
 * then on. Each pull gives the previous message back first, even when it
 * then fails.
 *
 * Returns NULL on failure with rgaps_last_error() set: RGAPS_ETIMEDOUT (no
 * message within the timeout), RGAPS_EBADHANDLE, RGAPS_ECLOSED (destroyed
 * by another thread meanwhile), RGAPS_ELIMIT, RGAPS_EDEVICE,
 * RGAPS_ENODAEMON, ... */
void *subscriber_pull(rgaps_subscriber_t *subscriber);

/* The size in bytes of the message the subscriber holds (from its last
 * successful subscriber_pull), or 0 when it holds none or on error (a
 * message is never empty). */
size_t rgaps_subscriber_message_size(rgaps_subscriber_t *subscriber);

/* Metadata of the message the subscriber holds. */
typedef struct rgaps_message_info {
    size_t size;                   /* payload bytes */
    uint64_t sequence;             /* the publisher's sequence number: 1, 2, ... */
    int64_t source_timestamp_ns;   /* publish time, ns since the Unix epoch */
    int64_t received_timestamp_ns; /* pull time, ns since the Unix epoch */
    int memory;                    /* RGAPS_MEMORY_HOST or _GPU: the pointer's kind */
    uint8_t publisher_gid[16];     /* the publishing endpoint's ROS GID */
} rgaps_message_info_t;

/* Fills *info for the message the subscriber holds. Returns RGAPS_OK,
 * RGAPS_ENOMSG when it holds none, RGAPS_EINVAL for info == NULL, or
 * RGAPS_EBADHANDLE. */
int rgaps_subscriber_message_info(rgaps_subscriber_t *subscriber, rgaps_message_info_t *info);

/* Gives the held message back to the pool early (before the next pull).
 * Returns RGAPS_OK, RGAPS_ENOMSG when none is held, or RGAPS_EBADHANDLE. */
int rgaps_subscriber_release(rgaps_subscriber_t *subscriber);

/* The number of publishers matched with the subscriber, >= 0, or a
 * negative code. */
int rgaps_subscriber_matched(rgaps_subscriber_t *subscriber);

/* The subscriber's memory kind: RGAPS_MEMORY_HOST or RGAPS_MEMORY_GPU, or a
 * negative code. */
int rgaps_subscriber_memory(rgaps_subscriber_t *subscriber);

/* Gives back the held message, detaches the subscriber from its topic
 * (dropping the messages still queued for it) and frees the handle. A pull
 * blocked in another thread returns RGAPS_ECLOSED first. NULL or an unknown
 * handle only records RGAPS_EBADHANDLE. */
void subscriber_destroy(rgaps_subscriber_t *subscriber);

/* ---- device-memory helpers (no CUDA needed at build time) ---------------
 *
 * They act on device memory of the primary context of RGAPS_GPU_DEVICE.
 * Without a usable GPU each returns RGAPS_ENOTSUP (after checking its
 * arguments). They are synchronous: the device work is complete when they
 * return. */

/* Allocates size (> 0) bytes of device memory (cuMemAlloc) into
 * *device_pointer. Free it with rgaps_device_free. The memory, and the
 * primary context, live until freed (at the latest, until exit). */
int rgaps_device_alloc(size_t size, void **device_pointer);

/* Frees memory from rgaps_device_alloc. */
int rgaps_device_free(void *device_pointer);

/* Fills size bytes at device_pointer with the test pattern of seed:
 * byte i = (uint8_t)(((uint64_t)i * 2654435761u) ^ seed). */
int rgaps_device_fill_pattern(void *device_pointer, size_t size, uint32_t seed);

/* Computes into *checksum the sum over i of byte[i] * (i % 251 + 1), modulo
 * 2^64, of size bytes at device_pointer (device memory, or a pointer from a
 * GPU subscriber's subscriber_pull). */
int rgaps_device_checksum(const void *device_pointer, size_t size, uint64_t *checksum);

/* The same pattern and checksum over host memory (plain C, any machine).
 * They return RGAPS_EINVAL for a NULL pointer, else RGAPS_OK; size 0 is
 * allowed (checksum 0). */
int rgaps_host_fill_pattern(void *host_pointer, size_t size, uint32_t seed);
int rgaps_host_checksum(const void *host_pointer, size_t size, uint64_t *checksum);

/* Symbols of librgaps.so starting with "rgapsgo_" are private. */

#ifdef __cplusplus
}
#endif

#endif /* RGAPS_H */

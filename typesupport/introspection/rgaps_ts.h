/*
 * rgaps_ts.h — the introspection walkers of rmw_rgaps' type support: ROS 2
 * messages in C memory (rosidl_typesupport_introspection_c) or C++ memory
 * (rosidl_typesupport_introspection_cpp) to and from classic CDR. They live
 * in typesupport/introspection (ts_cdr.c, ts_member.c, ts_cxx.cpp), a cgo
 * package the rmw library imports so that its C code (rmw/rmw_*.c) links
 * them; nothing here knows the rmw, shared memory or the network.
 *
 * Wire format: XCDR1 as ROS 2's DDS middlewares write it, byte for byte what
 * the Go codec (typesupport/cdr, typesupport/schema) produces: the 4-byte
 * encapsulation header 00 01 00 00 (CDR_LE; CDR_BE 00 00 00 00 is accepted
 * when reading), primitives aligned to their size (at most 8) relative to
 * the first byte after the header, bool/octet/char/int8/uint8 1 byte, wchar
 * 2, long double 16 (aligned to 8), string = uint32 length counting the NUL,
 * the bytes, the NUL; wstring = uint32 count of UTF-16 units then each unit
 * as a uint32; sequences (T[] and T[<=N]) a uint32 count then the elements,
 * fixed arrays T[N] only the elements, nested messages inline. Bounds of
 * bounded strings and sequences are enforced both ways; trailing bytes after
 * the last field are ignored when reading.
 *
 * Thread safety: a resolved rgaps_ts is immutable and lives until the
 * process ends; every function may be called from any thread. Errors are
 * described by rgaps_ts_last_error(), which is per thread.
 */
#ifndef RGAPS_TS_H_
#define RGAPS_TS_H_

#include <stddef.h>
#include <stdint.h>

#include "rgaps_rosidl_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define RGAPS_TS_OK 0
#define RGAPS_TS_ERROR 1       /* malformed input, bound exceeded, buffer too small, unsupported */
#define RGAPS_TS_BAD_ALLOC 2   /* an allocation (or a resize function) failed */
#define RGAPS_TS_INVALID_ARG 3 /* NULL where an object is needed */

/* Largest length prefix accepted when reading (string bytes, wstring units,
 * sequence elements): 1 GiB, as the Go decoder. */
#define RGAPS_TS_MAX_LENGTH (1u << 30)

typedef struct rgaps_ts rgaps_ts;

/* Resolves the type support of one message type: an introspection C or C++
 * handle directly, or any handle whose func(handle, identifier) yields one
 * (rosidl_typesupport_c / _cpp). The result is cached by type: resolving
 * the same type again is a lookup. NULL (and last_error set) if no
 * introspection type support is found or the tables are inconsistent. */
const rgaps_ts *rgaps_ts_resolve(const rosidl_message_type_support_t *ts);

/* Resolves a service's request and response types (either may be NULL if
 * not wanted). Returns the request type (non-NULL) on success, NULL on
 * failure with last_error set. */
const rgaps_ts *rgaps_ts_resolve_service(const rosidl_service_type_support_t *ts,
                                         const rgaps_ts **request, const rgaps_ts **response);

/* Writes "pkg/msg/Type" (from namespace "pkg__msg" or "pkg::msg" and the
 * name) into buf; returns buf, or NULL if it does not fit in n bytes. */
const char *rgaps_ts_type_name(const rgaps_ts *t, char *buf, size_t n);

/* The CDR size of ros_msg, encapsulation header included. */
int rgaps_ts_serialized_size(const rgaps_ts *t, const void *ros_msg, size_t *out);

/* Serialises ros_msg (header included) into buf[0:cap]. On success *used is
 * the number of bytes written. If cap is too small, returns RGAPS_TS_ERROR
 * and *used is the size needed (buf may then have been partly written). */
int rgaps_ts_serialize(const rgaps_ts *t, const void *ros_msg, uint8_t *buf, size_t cap, size_t *used);

/* Deserialises buf[0:len] into ros_msg, which the caller has initialised
 * (rgaps_ts_init or the type's own init). Strings and sequences are resized
 * to what the input holds. Every length is checked against the input before
 * anything is allocated. On error ros_msg is left valid (it can be finalised)
 * but its content is unspecified. */
int rgaps_ts_deserialize(const rgaps_ts *t, const uint8_t *buf, size_t len, void *ros_msg);

/* Detached byte members. A message such as sensor_msgs/Image can travel as
 * two parts: its large byte field ("data", the device block) and the rest
 * ("meta"), the CDR of the message with that field written empty. The
 * member is a TOP-LEVEL sequence (unbounded or bounded) of uint8, octet or
 * char; int8 (signed numbers) and bool sequences are not byte members, nor
 * are fixed arrays or members of nested messages. These functions live in
 * ts_member.c. For any message m and byte member k,
 *   rgaps_ts_serialize_detached(m, k) == rgaps_ts_serialize(m with k emptied)
 * and rgaps_ts_deserialize_detached of rgaps_ts_serialize(m) followed by
 * rgaps_ts_set_member_bytes(buf + *data_off, *data_len) gives m again. */

/* How many top-level members are sequences of uint8, octet or char (the
 * members rgaps_ts_byte_member can name); 0 for a NULL type. */
size_t rgaps_ts_byte_member_count(const rgaps_ts *t);

/* The index in the type's members of a byte member: name non-NULL, the
 * member of that name, which must be a byte sequence; name NULL, the
 * default rule: the member named "data" if it is a byte sequence, else the
 * only byte sequence of the type. RGAPS_TS_ERROR otherwise, last_error
 * naming the type and its byte sequences (or saying there are none). */
int rgaps_ts_byte_member(const rgaps_ts *t, const char *name, uint32_t *index);

/* rgaps_ts_serialized_size and rgaps_ts_serialize with byte member `member`
 * written as an empty sequence (length 0) whatever the message holds. An
 * index out of range or not a byte member is RGAPS_TS_ERROR. */
int rgaps_ts_serialized_size_detached(const rgaps_ts *t, const void *ros_msg, uint32_t member, size_t *out);
int rgaps_ts_serialize_detached(const rgaps_ts *t, const void *ros_msg, uint32_t member, uint8_t *buf, size_t cap,
                                size_t *used);

/* rgaps_ts_deserialize, except that the bytes of byte member `member` are
 * not copied: the member is left an empty sequence, and *data_off and
 * *data_len say where its bytes lie in buf (*data_off counts from buf[0],
 * the encapsulation header included) and how many there are. They are
 * checked as by rgaps_ts_deserialize: within buf[0:len], and at most the
 * bound of a bounded sequence. *data_off and *data_len are set only on
 * success. */
int rgaps_ts_deserialize_detached(const rgaps_ts *t, const uint8_t *buf, size_t len, void *ros_msg,
                                  uint32_t member, size_t *data_off, size_t *data_len);

/* The current bytes of byte member `member` of ros_msg, in the message's
 * memory (no copy; valid until the member is changed). *data is not NULL
 * even when *len is 0. */
int rgaps_ts_member_bytes(const rgaps_ts *t, const void *ros_msg, uint32_t member, const uint8_t **data,
                          size_t *len);

/* Resizes byte member `member` of ros_msg to len bytes (C memory as
 * rgaps_ts_deserialize resizes sequences, C++ through the member's
 * resize_function) and copies data[0:len] in; data may be NULL when len is
 * 0. RGAPS_TS_ERROR if len exceeds a bounded sequence's bound (the message
 * is then unchanged), RGAPS_TS_BAD_ALLOC if the resize fails. */
int rgaps_ts_set_member_bytes(const rgaps_ts *t, void *ros_msg, uint32_t member, const uint8_t *data, size_t len);

/* 1 if the type is self-contained (no strings, wstrings or sequences at any
 * depth, no long double) and the first rgaps_ts_plain_size() bytes of its
 * memory are exactly its CDR payload (the bytes after the header); such a
 * message can be loaned and sent as it lies in memory. 0 otherwise. */
int rgaps_ts_is_plain(const rgaps_ts *t);

/* For a plain type: the CDR payload size (header excluded), which is at
 * most rgaps_ts_size_of(); 0 for other types. */
size_t rgaps_ts_plain_size(const rgaps_ts *t);

/* sizeof the message in memory (the introspection size_of_). */
size_t rgaps_ts_size_of(const rgaps_ts *t);

/* Runs the type's init function (all fields to their defaults) on
 * rgaps_ts_size_of() bytes at msg; fini releases what the message owns (not
 * msg itself). */
int rgaps_ts_init(const rgaps_ts *t, void *msg);
void rgaps_ts_fini(const rgaps_ts *t, void *msg);

/* 1 for a C++ (rosidl_typesupport_introspection_cpp) type, 0 for C. */
int rgaps_ts_is_cpp(const rgaps_ts *t);

/* What the last failing call of this thread said (never NULL). */
const char *rgaps_ts_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RGAPS_TS_H_ */

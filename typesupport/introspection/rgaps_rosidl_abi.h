/*
 * rgaps_rosidl_abi.h — the parts of the rosidl ABI (ROS 2 Jazzy, LP64) that
 * rmw_rgaps uses, declared by the project itself so that the rmw library
 * builds without a ROS 2 installation.
 *
 * Every layout below is checked with static assertions (sizes and the
 * offsets in /work/shared/RMW_NOTES.md). Built with -DRGAPS_USE_ROS_HEADERS
 * the real rosidl headers are included instead of these declarations and the
 * same assertions run against them, so a mismatch with an installed ROS 2
 * fails the build instead of corrupting memory.
 *
 * The C++ introspection tables (rosidl_typesupport_introspection_cpp::
 * MessageMember and friends) have the C tables' layout; two function types
 * differ (resize returns void, init takes a C++ enum class with an int
 * representation). C cannot include the C++ header, so they are declared
 * here as rgaps_introspection_cpp_* in both modes.
 */
#ifndef RGAPS_ROSIDL_ABI_H_
#define RGAPS_ROSIDL_ABI_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define RGAPS_STATIC_ASSERT(c, m) static_assert(c, m)
extern "C" {
#else
#define RGAPS_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* Type support identifiers (compared by content, never by address). */
#define RGAPS_TS_ID_INTROSPECTION_C "rosidl_typesupport_introspection_c"
#define RGAPS_TS_ID_INTROSPECTION_CPP "rosidl_typesupport_introspection_cpp"

/* Introspection field type ids (field_types.h; the same in C and C++). */
enum {
  RGAPS_TYPE_FLOAT = 1,
  RGAPS_TYPE_DOUBLE = 2,
  RGAPS_TYPE_LONG_DOUBLE = 3,
  RGAPS_TYPE_CHAR = 4,
  RGAPS_TYPE_WCHAR = 5,
  RGAPS_TYPE_BOOLEAN = 6,
  RGAPS_TYPE_OCTET = 7,
  RGAPS_TYPE_UINT8 = 8,
  RGAPS_TYPE_INT8 = 9,
  RGAPS_TYPE_UINT16 = 10,
  RGAPS_TYPE_INT16 = 11,
  RGAPS_TYPE_UINT32 = 12,
  RGAPS_TYPE_INT32 = 13,
  RGAPS_TYPE_UINT64 = 14,
  RGAPS_TYPE_INT64 = 15,
  RGAPS_TYPE_STRING = 16,
  RGAPS_TYPE_WSTRING = 17,
  RGAPS_TYPE_MESSAGE = 18
};

/* rosidl_runtime_c__message_initialization: ALL is the one rmw uses. */
#define RGAPS_MSG_INIT_ALL 0

#ifdef RGAPS_USE_ROS_HEADERS

#include <rosidl_runtime_c/message_initialization.h>
#include <rosidl_runtime_c/message_type_support_struct.h>
#include <rosidl_runtime_c/primitives_sequence.h>
#include <rosidl_runtime_c/service_type_support_struct.h>
#include <rosidl_runtime_c/string.h>
#include <rosidl_runtime_c/u16string.h>
#include <rosidl_typesupport_introspection_c/field_types.h>
#include <rosidl_typesupport_introspection_c/message_introspection.h>
#include <rosidl_typesupport_introspection_c/service_introspection.h>

/* compared as int: the two enums are different types (-Wenum-compare) */
RGAPS_STATIC_ASSERT((int)rosidl_typesupport_introspection_c__ROS_TYPE_FLOAT == (int)RGAPS_TYPE_FLOAT &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_LONG_DOUBLE == (int)RGAPS_TYPE_LONG_DOUBLE &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_WCHAR == (int)RGAPS_TYPE_WCHAR &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_BOOLEAN == (int)RGAPS_TYPE_BOOLEAN &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_INT64 == (int)RGAPS_TYPE_INT64 &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_STRING == (int)RGAPS_TYPE_STRING &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_WSTRING == (int)RGAPS_TYPE_WSTRING &&
                        (int)rosidl_typesupport_introspection_c__ROS_TYPE_MESSAGE == (int)RGAPS_TYPE_MESSAGE,
                    "field type ids");
RGAPS_STATIC_ASSERT(ROSIDL_RUNTIME_C_MSG_INIT_ALL == RGAPS_MSG_INIT_ALL, "MSG_INIT_ALL");

#else /* !RGAPS_USE_ROS_HEADERS */

typedef struct rosidl_message_type_support_t rosidl_message_type_support_t;
typedef const rosidl_message_type_support_t *(*rosidl_message_typesupport_handle_function)(
    const rosidl_message_type_support_t *, const char *);

/* rosidl_runtime_c/message_type_support_struct.h */
struct rosidl_message_type_support_t {
  const char *typesupport_identifier;
  const void *data;
  rosidl_message_typesupport_handle_function func;
  const void *(*get_type_hash_func)(const rosidl_message_type_support_t *);
  const void *(*get_type_description_func)(const rosidl_message_type_support_t *);
  const void *(*get_type_description_sources_func)(const rosidl_message_type_support_t *);
};

typedef struct rosidl_service_type_support_t rosidl_service_type_support_t;
typedef const rosidl_service_type_support_t *(*rosidl_service_typesupport_handle_function)(
    const rosidl_service_type_support_t *, const char *);

/* rosidl_runtime_c/service_type_support_struct.h (Jazzy: with the service
 * event type support and its create/destroy functions). */
struct rosidl_service_type_support_t {
  const char *typesupport_identifier;
  const void *data;
  rosidl_service_typesupport_handle_function func;
  const rosidl_message_type_support_t *request_typesupport;
  const rosidl_message_type_support_t *response_typesupport;
  const rosidl_message_type_support_t *event_typesupport;
  void *(*event_message_create_handle_function)(const void *info, void *allocator,
                                                const void *request_message,
                                                const void *response_message);
  bool (*event_message_destroy_handle_function)(void *event_message, void *allocator);
  const void *(*get_type_hash_func)(const rosidl_service_type_support_t *);
  const void *(*get_type_description_func)(const rosidl_service_type_support_t *);
  const void *(*get_type_description_sources_func)(const rosidl_service_type_support_t *);
};

/* rosidl_runtime_c/string.h, u16string.h */
typedef struct rosidl_runtime_c__String {
  char *data;      /* NUL-terminated */
  size_t size;     /* bytes, NUL excluded */
  size_t capacity; /* bytes allocated, NUL included */
} rosidl_runtime_c__String;

typedef struct rosidl_runtime_c__U16String {
  uint_least16_t *data; /* 0-terminated */
  size_t size;          /* code units, terminator excluded */
  size_t capacity;      /* units allocated, terminator included */
} rosidl_runtime_c__U16String;

/* rosidl_runtime_c/primitives_sequence.h: every sequence of the C type
 * support (primitives, strings, nested messages) is {data, size, capacity}. */
#define RGAPS_ROSIDL_SEQUENCE(NAME, T) \
  typedef struct rosidl_runtime_c__##NAME##__Sequence { \
    T *data; \
    size_t size; \
    size_t capacity; \
  } rosidl_runtime_c__##NAME##__Sequence;
RGAPS_ROSIDL_SEQUENCE(float, float)
RGAPS_ROSIDL_SEQUENCE(double, double)
RGAPS_ROSIDL_SEQUENCE(long_double, long double)
RGAPS_ROSIDL_SEQUENCE(char, signed char)
RGAPS_ROSIDL_SEQUENCE(wchar, uint16_t)
RGAPS_ROSIDL_SEQUENCE(boolean, bool)
RGAPS_ROSIDL_SEQUENCE(octet, uint8_t)
RGAPS_ROSIDL_SEQUENCE(uint8, uint8_t)
RGAPS_ROSIDL_SEQUENCE(int8, int8_t)
RGAPS_ROSIDL_SEQUENCE(uint16, uint16_t)
RGAPS_ROSIDL_SEQUENCE(int16, int16_t)
RGAPS_ROSIDL_SEQUENCE(uint32, uint32_t)
RGAPS_ROSIDL_SEQUENCE(int32, int32_t)
RGAPS_ROSIDL_SEQUENCE(uint64, uint64_t)
RGAPS_ROSIDL_SEQUENCE(int64, int64_t)
RGAPS_ROSIDL_SEQUENCE(String, rosidl_runtime_c__String)
RGAPS_ROSIDL_SEQUENCE(U16String, rosidl_runtime_c__U16String)
#undef RGAPS_ROSIDL_SEQUENCE

/* rosidl_typesupport_introspection_c/message_introspection.h */
typedef struct rosidl_typesupport_introspection_c__MessageMember_s {
  const char *name_;
  uint8_t type_id_;
  size_t string_upper_bound_;
  const rosidl_message_type_support_t *members_;
  bool is_key_;
  bool is_array_;
  size_t array_size_;
  bool is_upper_bound_;
  uint32_t offset_;
  const void *default_value_;
  size_t (*size_function)(const void *);
  const void *(*get_const_function)(const void *, size_t index);
  void *(*get_function)(void *, size_t index);
  void (*fetch_function)(const void *, size_t index, void *);
  void (*assign_function)(void *, size_t index, const void *);
  bool (*resize_function)(void *, size_t size);
} rosidl_typesupport_introspection_c__MessageMember;

typedef struct rosidl_typesupport_introspection_c__MessageMembers_s {
  const char *message_namespace_; /* "pkg__msg" */
  const char *message_name_;
  uint32_t member_count_;
  size_t size_of_;
  bool has_any_key_member_;
  const rosidl_typesupport_introspection_c__MessageMember *members_;
  void (*init_function)(void *, int /* enum rosidl_runtime_c__message_initialization */);
  void (*fini_function)(void *);
} rosidl_typesupport_introspection_c__MessageMembers;

/* rosidl_typesupport_introspection_c/service_introspection.h */
typedef struct rosidl_typesupport_introspection_c__ServiceMembers_s {
  const char *service_namespace_;
  const char *service_name_;
  const rosidl_typesupport_introspection_c__MessageMembers *request_members_;
  const rosidl_typesupport_introspection_c__MessageMembers *response_members_;
  const rosidl_typesupport_introspection_c__MessageMembers *event_members_;
} rosidl_typesupport_introspection_c__ServiceMembers;

#endif /* RGAPS_USE_ROS_HEADERS */

/* rosidl_typesupport_introspection_cpp::MessageMember, MessageMembers and
 * ServiceMembers (message_introspection.hpp, service_introspection.hpp).
 * The message memory they describe is C++: std::string, std::u16string,
 * std::vector (also behind rosidl_runtime_cpp::BoundedVector) and
 * std::array; message_namespace_ is "pkg::msg". */
typedef struct rgaps_introspection_cpp_MessageMember {
  const char *name_;
  uint8_t type_id_;
  size_t string_upper_bound_;
  const rosidl_message_type_support_t *members_;
  bool is_key_;
  bool is_array_;
  size_t array_size_;
  bool is_upper_bound_;
  uint32_t offset_;
  const void *default_value_;
  size_t (*size_function)(const void *);
  const void *(*get_const_function)(const void *, size_t index);
  void *(*get_function)(void *, size_t index);
  void (*fetch_function)(const void *, size_t index, void *);
  void (*assign_function)(void *, size_t index, const void *);
  void (*resize_function)(void *, size_t size);
} rgaps_introspection_cpp_MessageMember;

typedef struct rgaps_introspection_cpp_MessageMembers {
  const char *message_namespace_;
  const char *message_name_;
  uint32_t member_count_;
  size_t size_of_;
  bool has_any_key_member_;
  const rgaps_introspection_cpp_MessageMember *members_;
  void (*init_function)(void *, int /* rosidl_runtime_cpp::MessageInitialization */);
  void (*fini_function)(void *);
} rgaps_introspection_cpp_MessageMembers;

typedef struct rgaps_introspection_cpp_ServiceMembers {
  const char *service_namespace_;
  const char *service_name_;
  const rgaps_introspection_cpp_MessageMembers *request_members_;
  const rgaps_introspection_cpp_MessageMembers *response_members_;
  const rgaps_introspection_cpp_MessageMembers *event_members_;
} rgaps_introspection_cpp_ServiceMembers;

/* ---- layout checks (RMW_NOTES.md; x86-64 / aarch64 LP64) ---- */

RGAPS_STATIC_ASSERT(sizeof(void *) == 8, "rmw_rgaps assumes LP64");

RGAPS_STATIC_ASSERT(sizeof(rosidl_message_type_support_t) == 48, "rosidl_message_type_support_t size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_message_type_support_t, typesupport_identifier) == 0, "ts identifier");
RGAPS_STATIC_ASSERT(offsetof(rosidl_message_type_support_t, data) == 8, "ts data");
RGAPS_STATIC_ASSERT(offsetof(rosidl_message_type_support_t, func) == 16, "ts func");
RGAPS_STATIC_ASSERT(sizeof(rosidl_service_type_support_t) == 88, "rosidl_service_type_support_t size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_service_type_support_t, func) == 16, "srv ts func");
RGAPS_STATIC_ASSERT(offsetof(rosidl_service_type_support_t, request_typesupport) == 24, "srv request");
RGAPS_STATIC_ASSERT(offsetof(rosidl_service_type_support_t, response_typesupport) == 32, "srv response");

RGAPS_STATIC_ASSERT(sizeof(rosidl_runtime_c__String) == 24, "String size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_runtime_c__String, size) == 8, "String.size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_runtime_c__String, capacity) == 16, "String.capacity");
RGAPS_STATIC_ASSERT(sizeof(rosidl_runtime_c__U16String) == 24, "U16String size");
RGAPS_STATIC_ASSERT(sizeof(uint_least16_t) == 2, "U16String unit");
RGAPS_STATIC_ASSERT(sizeof(rosidl_runtime_c__uint8__Sequence) == 24, "sequence size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_runtime_c__uint8__Sequence, size) == 8, "sequence.size");
RGAPS_STATIC_ASSERT(offsetof(rosidl_runtime_c__uint8__Sequence, capacity) == 16, "sequence.capacity");
RGAPS_STATIC_ASSERT(sizeof(rosidl_runtime_c__String__Sequence) == 24, "String sequence size");

#define RGAPS_CHECK_MEMBER_LAYOUT(T, what) \
  RGAPS_STATIC_ASSERT(sizeof(T) == 112, what " size"); \
  RGAPS_STATIC_ASSERT(offsetof(T, name_) == 0, what ".name_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, type_id_) == 8, what ".type_id_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, string_upper_bound_) == 16, what ".string_upper_bound_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, members_) == 24, what ".members_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, is_key_) == 32, what ".is_key_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, is_array_) == 33, what ".is_array_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, array_size_) == 40, what ".array_size_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, is_upper_bound_) == 48, what ".is_upper_bound_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, offset_) == 52, what ".offset_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, default_value_) == 56, what ".default_value_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, size_function) == 64, what ".size_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, get_const_function) == 72, what ".get_const_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, get_function) == 80, what ".get_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, fetch_function) == 88, what ".fetch_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, assign_function) == 96, what ".assign_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, resize_function) == 104, what ".resize_function");

#define RGAPS_CHECK_MEMBERS_LAYOUT(T, what) \
  RGAPS_STATIC_ASSERT(sizeof(T) == 64, what " size"); \
  RGAPS_STATIC_ASSERT(offsetof(T, message_namespace_) == 0, what ".message_namespace_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, message_name_) == 8, what ".message_name_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, member_count_) == 16, what ".member_count_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, size_of_) == 24, what ".size_of_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, has_any_key_member_) == 32, what ".has_any_key_member_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, members_) == 40, what ".members_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, init_function) == 48, what ".init_function"); \
  RGAPS_STATIC_ASSERT(offsetof(T, fini_function) == 56, what ".fini_function");

#define RGAPS_CHECK_SERVICE_LAYOUT(T, what) \
  RGAPS_STATIC_ASSERT(sizeof(T) == 40, what " size"); \
  RGAPS_STATIC_ASSERT(offsetof(T, request_members_) == 16, what ".request_members_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, response_members_) == 24, what ".response_members_"); \
  RGAPS_STATIC_ASSERT(offsetof(T, event_members_) == 32, what ".event_members_");

RGAPS_CHECK_MEMBER_LAYOUT(rosidl_typesupport_introspection_c__MessageMember, "C MessageMember")
RGAPS_CHECK_MEMBERS_LAYOUT(rosidl_typesupport_introspection_c__MessageMembers, "C MessageMembers")
RGAPS_CHECK_SERVICE_LAYOUT(rosidl_typesupport_introspection_c__ServiceMembers, "C ServiceMembers")
RGAPS_CHECK_MEMBER_LAYOUT(rgaps_introspection_cpp_MessageMember, "C++ MessageMember")
RGAPS_CHECK_MEMBERS_LAYOUT(rgaps_introspection_cpp_MessageMembers, "C++ MessageMembers")
RGAPS_CHECK_SERVICE_LAYOUT(rgaps_introspection_cpp_ServiceMembers, "C++ ServiceMembers")

#ifdef __cplusplus
}
#endif

#endif /* RGAPS_ROSIDL_ABI_H_ */

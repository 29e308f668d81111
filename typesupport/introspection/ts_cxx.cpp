// ts_cxx.cpp — the C++ side of ts_cdr.c: what C cannot do with the memory of
// a rosidl_typesupport_introspection_cpp message (std::string and
// std::u16string contents) and the calls into generated C++ functions that
// may throw (sequence resize, message constructors), wrapped so that no
// exception ever crosses into C.
//
// Every function here has C linkage and is declared (only) in ts_cdr.c.

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>
#include <string>

#include "rgaps_rosidl_abi.h"

#ifdef RGAPS_USE_ROS_HEADERS
#include <rosidl_typesupport_introspection_cpp/message_introspection.hpp>
#include <rosidl_typesupport_introspection_cpp/service_introspection.hpp>
// The C declarations of the C++ tables must match the real ones.
static_assert(sizeof(rgaps_introspection_cpp_MessageMember) ==
                  sizeof(rosidl_typesupport_introspection_cpp::MessageMember),
              "C++ MessageMember size");
static_assert(offsetof(rosidl_typesupport_introspection_cpp::MessageMember, offset_) == 52,
              "C++ MessageMember.offset_");
static_assert(offsetof(rosidl_typesupport_introspection_cpp::MessageMember, resize_function) == 104,
              "C++ MessageMember.resize_function");
static_assert(sizeof(rgaps_introspection_cpp_MessageMembers) ==
                  sizeof(rosidl_typesupport_introspection_cpp::MessageMembers),
              "C++ MessageMembers size");
static_assert(offsetof(rosidl_typesupport_introspection_cpp::MessageMembers, init_function) == 48,
              "C++ MessageMembers.init_function");
static_assert(sizeof(rgaps_introspection_cpp_ServiceMembers) ==
                  sizeof(rosidl_typesupport_introspection_cpp::ServiceMembers),
              "C++ ServiceMembers size");
#endif

static_assert(sizeof(char16_t) == sizeof(uint16_t), "char16_t is 2 bytes");

extern "C" {

size_t rgaps_ts_cxx_string_sizeof(void) { return sizeof(std::string); }
size_t rgaps_ts_cxx_u16string_sizeof(void) { return sizeof(std::u16string); }

void rgaps_ts_cxx_string_get(const void *s, const char **data, size_t *len) {
  const std::string &str = *static_cast<const std::string *>(s);
  *data = str.data();
  *len = str.size();
}

// Resizes the std::string at s to n bytes and returns where to write them
// (NULL if the allocation failed; the string is then unchanged).
char *rgaps_ts_cxx_string_resize(void *s, size_t n) {
  std::string &str = *static_cast<std::string *>(s);
  try {
    str.resize(n);
  } catch (...) {
    return nullptr;
  }
  return &str[0];
}

void rgaps_ts_cxx_u16string_get(const void *s, const uint16_t **data, size_t *len) {
  const std::u16string &str = *static_cast<const std::u16string *>(s);
  *data = reinterpret_cast<const uint16_t *>(str.data());
  *len = str.size();
}

uint16_t *rgaps_ts_cxx_u16string_resize(void *s, size_t n) {
  std::u16string &str = *static_cast<std::u16string *>(s);
  try {
    str.resize(n);
  } catch (...) {
    return nullptr;
  }
  return reinterpret_cast<uint16_t *>(&str[0]);
}

// Calls a generated resize function (std::vector::resize): 0, or 2 if it
// threw (bad_alloc, length_error).
int rgaps_ts_cxx_resize(void (*fn)(void *, size_t), void *member, size_t n) {
  try {
    fn(member, n);
  } catch (...) {
    return 2;
  }
  return 0;
}

// Calls a generated init function (placement new of the message): 0, or 2
// if the constructor threw.
int rgaps_ts_cxx_init(void (*fn)(void *, int), void *msg, int how) {
  try {
    fn(msg, how);
  } catch (...) {
    return 2;
  }
  return 0;
}

// Calls a generated fini function (the destructor; destructors do not
// throw, but nothing may escape into C even so).
void rgaps_ts_cxx_fini(void (*fn)(void *), void *msg) {
  try {
    fn(msg);
  } catch (...) {
  }
}

}  // extern "C"

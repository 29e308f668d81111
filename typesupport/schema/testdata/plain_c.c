/*
 * plain_c.c — what the rmw library's walkers (typesupport/introspection,
 * ts_cdr.c) decide about plain layouts, for the Go test of
 * schema.PlainSize (plain_test.go). Each type is a C struct as
 * rosidl_generator_c writes it and a hand-written introspection table of
 * it, offsets and sizes from the compiler. For every type the program
 * prints one line: the type's name, rgaps_ts_is_plain, rgaps_ts_plain_size
 * and sizeof.
 */
#include <stdio.h>
#include <string.h>

#include "rgaps_ts.h"

#define M_(T, f, tid, nested, arr, n, ub) \
  {#f, tid, 0, nested, false, arr, n, ub, (uint32_t)offsetof(T, f), NULL, NULL, NULL, NULL, NULL, NULL, NULL}
#define SCALAR(T, f, tid) M_(T, f, tid, NULL, false, 0, false)
#define ARRAY(T, f, tid, n) M_(T, f, tid, NULL, true, n, false)
#define SEQ(T, f, tid) M_(T, f, tid, NULL, true, 0, false)
#define BSEQ(T, f, tid, n) M_(T, f, tid, NULL, true, n, true)
#define MSG(T, f, U) M_(T, f, RGAPS_TYPE_MESSAGE, &U##_ts, false, 0, false)
#define MSGS(T, f, U, n) M_(T, f, RGAPS_TYPE_MESSAGE, &U##_ts, true, n, false)

#define TYPE(NS, T)                                                                                    \
  static const rosidl_typesupport_introspection_c__MessageMembers T##_mm = {                           \
      NS, #T, (uint32_t)(sizeof T##_members / sizeof T##_members[0]), sizeof(T), false, T##_members, \
      NULL, NULL};                                                                                     \
  static const rosidl_message_type_support_t T##_ts = {RGAPS_TS_ID_INTROSPECTION_C, &T##_mm, NULL, NULL, NULL, NULL};

/* ---- std_msgs, builtin_interfaces, geometry_msgs, sensor_msgs ---- */

typedef struct Int32 {
  int32_t data;
} Int32;
static const rosidl_typesupport_introspection_c__MessageMember Int32_members[] = {SCALAR(Int32, data, RGAPS_TYPE_INT32)};
TYPE("std_msgs__msg", Int32)

typedef struct Float64 {
  double data;
} Float64;
static const rosidl_typesupport_introspection_c__MessageMember Float64_members[] = {SCALAR(Float64, data, RGAPS_TYPE_DOUBLE)};
TYPE("std_msgs__msg", Float64)

typedef struct Bool {
  bool data;
} Bool;
static const rosidl_typesupport_introspection_c__MessageMember Bool_members[] = {SCALAR(Bool, data, RGAPS_TYPE_BOOLEAN)};
TYPE("std_msgs__msg", Bool)

typedef struct String {
  rosidl_runtime_c__String data;
} String;
static const rosidl_typesupport_introspection_c__MessageMember String_members[] = {SCALAR(String, data, RGAPS_TYPE_STRING)};
TYPE("std_msgs__msg", String)

typedef struct Time {
  int32_t sec;
  uint32_t nanosec;
} Time;
static const rosidl_typesupport_introspection_c__MessageMember Time_members[] = {
    SCALAR(Time, sec, RGAPS_TYPE_INT32), SCALAR(Time, nanosec, RGAPS_TYPE_UINT32)};
TYPE("builtin_interfaces__msg", Time)

typedef struct Header {
  Time stamp;
  rosidl_runtime_c__String frame_id;
} Header;
static const rosidl_typesupport_introspection_c__MessageMember Header_members[] = {
    MSG(Header, stamp, Time), SCALAR(Header, frame_id, RGAPS_TYPE_STRING)};
TYPE("std_msgs__msg", Header)

typedef struct Point {
  double x, y, z;
} Point;
static const rosidl_typesupport_introspection_c__MessageMember Point_members[] = {
    SCALAR(Point, x, RGAPS_TYPE_DOUBLE), SCALAR(Point, y, RGAPS_TYPE_DOUBLE), SCALAR(Point, z, RGAPS_TYPE_DOUBLE)};
TYPE("geometry_msgs__msg", Point)

typedef struct Vector3 {
  double x, y, z;
} Vector3;
static const rosidl_typesupport_introspection_c__MessageMember Vector3_members[] = {
    SCALAR(Vector3, x, RGAPS_TYPE_DOUBLE), SCALAR(Vector3, y, RGAPS_TYPE_DOUBLE),
    SCALAR(Vector3, z, RGAPS_TYPE_DOUBLE)};
TYPE("geometry_msgs__msg", Vector3)

typedef struct Quaternion {
  double x, y, z, w;
} Quaternion;
static const rosidl_typesupport_introspection_c__MessageMember Quaternion_members[] = {
    SCALAR(Quaternion, x, RGAPS_TYPE_DOUBLE), SCALAR(Quaternion, y, RGAPS_TYPE_DOUBLE),
    SCALAR(Quaternion, z, RGAPS_TYPE_DOUBLE), SCALAR(Quaternion, w, RGAPS_TYPE_DOUBLE)};
TYPE("geometry_msgs__msg", Quaternion)

typedef struct Pose {
  Point position;
  Quaternion orientation;
} Pose;
static const rosidl_typesupport_introspection_c__MessageMember Pose_members[] = {
    MSG(Pose, position, Point), MSG(Pose, orientation, Quaternion)};
TYPE("geometry_msgs__msg", Pose)

typedef struct Twist {
  Vector3 linear, angular;
} Twist;
static const rosidl_typesupport_introspection_c__MessageMember Twist_members[] = {
    MSG(Twist, linear, Vector3), MSG(Twist, angular, Vector3)};
TYPE("geometry_msgs__msg", Twist)

typedef struct PoseStamped {
  Header header;
  Pose pose;
} PoseStamped;
static const rosidl_typesupport_introspection_c__MessageMember PoseStamped_members[] = {
    MSG(PoseStamped, header, Header), MSG(PoseStamped, pose, Pose)};
TYPE("geometry_msgs__msg", PoseStamped)

typedef struct Image {
  Header header;
  uint32_t height;
  uint32_t width;
  rosidl_runtime_c__String encoding;
  uint8_t is_bigendian;
  uint32_t step;
  rosidl_runtime_c__uint8__Sequence data;
} Image;
static const rosidl_typesupport_introspection_c__MessageMember Image_members[] = {
    MSG(Image, header, Header),         SCALAR(Image, height, RGAPS_TYPE_UINT32),
    SCALAR(Image, width, RGAPS_TYPE_UINT32), SCALAR(Image, encoding, RGAPS_TYPE_STRING),
    SCALAR(Image, is_bigendian, RGAPS_TYPE_UINT8), SCALAR(Image, step, RGAPS_TYPE_UINT32),
    SEQ(Image, data, RGAPS_TYPE_UINT8)};
TYPE("sensor_msgs__msg", Image)

/* ---- plain_test: layouts chosen for their padding ---- */

/* mixed sizes, every one at its C alignment, which CDR shares: plain */
typedef struct Mixed {
  uint8_t a;
  uint32_t b;
  uint8_t c;
  double d;
  int16_t e;
  int8_t f;
} Mixed;
static const rosidl_typesupport_introspection_c__MessageMember Mixed_members[] = {
    SCALAR(Mixed, a, RGAPS_TYPE_UINT8), SCALAR(Mixed, b, RGAPS_TYPE_UINT32), SCALAR(Mixed, c, RGAPS_TYPE_UINT8),
    SCALAR(Mixed, d, RGAPS_TYPE_DOUBLE), SCALAR(Mixed, e, RGAPS_TYPE_INT16), SCALAR(Mixed, f, RGAPS_TYPE_INT8)};
TYPE("plain_test__msg", Mixed)

/* Mixed aligned to 8 in C, not in CDR (a byte field starts it): not plain */
typedef struct MixedNested {
  int16_t tag;
  Mixed m;
} MixedNested;
static const rosidl_typesupport_introspection_c__MessageMember MixedNested_members[] = {
    SCALAR(MixedNested, tag, RGAPS_TYPE_INT16), MSG(MixedNested, m, Mixed)};
TYPE("plain_test__msg", MixedNested)

typedef struct Inner {
  uint8_t x;
  uint32_t y;
} Inner;
static const rosidl_typesupport_introspection_c__MessageMember Inner_members[] = {
    SCALAR(Inner, x, RGAPS_TYPE_UINT8), SCALAR(Inner, y, RGAPS_TYPE_UINT32)};
TYPE("plain_test__msg", Inner)

typedef struct Outer {
  uint8_t a;
  Inner b;
} Outer;
static const rosidl_typesupport_introspection_c__MessageMember Outer_members[] = {
    SCALAR(Outer, a, RGAPS_TYPE_UINT8), MSG(Outer, b, Inner)};
TYPE("plain_test__msg", Outer)

/* trailing padding: 8 bytes in C, 5 in CDR */
typedef struct Tail {
  int32_t a;
  uint8_t b;
} Tail;
static const rosidl_typesupport_introspection_c__MessageMember Tail_members[] = {
    SCALAR(Tail, a, RGAPS_TYPE_INT32), SCALAR(Tail, b, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", Tail)

/* a byte after it lies at 8 in C, at 5 in CDR: not plain */
typedef struct TailThenByte {
  Tail t;
  uint8_t c;
} TailThenByte;
static const rosidl_typesupport_introspection_c__MessageMember TailThenByte_members[] = {
    MSG(TailThenByte, t, Tail), SCALAR(TailThenByte, c, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", TailThenByte)

/* an int32 after it is aligned to 8 in both: plain */
typedef struct TailThenInt {
  Tail t;
  int32_t c;
} TailThenInt;
static const rosidl_typesupport_introspection_c__MessageMember TailThenInt_members[] = {
    MSG(TailThenInt, t, Tail), SCALAR(TailThenInt, c, RGAPS_TYPE_INT32)};
TYPE("plain_test__msg", TailThenInt)

typedef struct TailArray {
  Tail t[3];
} TailArray;
static const rosidl_typesupport_introspection_c__MessageMember TailArray_members[] = {MSGS(TailArray, t, Tail, 3)};
TYPE("plain_test__msg", TailArray)

/* longer than the walker's probe */
typedef struct TailArray20 {
  Tail t[20];
} TailArray20;
static const rosidl_typesupport_introspection_c__MessageMember TailArray20_members[] = {
    MSGS(TailArray20, t, Tail, 20)};
TYPE("plain_test__msg", TailArray20)

typedef struct TailGrid {
  uint8_t tag;
  TailArray20 rows[18];
} TailGrid;
static const rosidl_typesupport_introspection_c__MessageMember TailGrid_members[] = {
    SCALAR(TailGrid, tag, RGAPS_TYPE_UINT8), MSGS(TailGrid, rows, TailArray20, 18)};
TYPE("plain_test__msg", TailGrid)

/* plain alone, but in an array the next element starts with a byte that
 * lies after C's trailing padding and right after the last in CDR */
typedef struct ByteTail {
  uint8_t a;
  uint32_t b;
  uint8_t c;
} ByteTail;
static const rosidl_typesupport_introspection_c__MessageMember ByteTail_members[] = {
    SCALAR(ByteTail, a, RGAPS_TYPE_UINT8), SCALAR(ByteTail, b, RGAPS_TYPE_UINT32),
    SCALAR(ByteTail, c, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", ByteTail)

typedef struct ByteTails {
  ByteTail v[20];
} ByteTails;
static const rosidl_typesupport_introspection_c__MessageMember ByteTails_members[] = {MSGS(ByteTails, v, ByteTail, 20)};
TYPE("plain_test__msg", ByteTails)

typedef struct Padded {
  int64_t a;
  uint8_t b;
} Padded;
static const rosidl_typesupport_introspection_c__MessageMember Padded_members[] = {
    SCALAR(Padded, a, RGAPS_TYPE_INT64), SCALAR(Padded, b, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", Padded)

typedef struct PaddedPair {
  Padded p[2];
} PaddedPair;
static const rosidl_typesupport_introspection_c__MessageMember PaddedPair_members[] = {MSGS(PaddedPair, p, Padded, 2)};
TYPE("plain_test__msg", PaddedPair)

typedef struct Points20 {
  Point p[20];
} Points20;
static const rosidl_typesupport_introspection_c__MessageMember Points20_members[] = {MSGS(Points20, p, Point, 20)};
TYPE("plain_test__msg", Points20)

typedef struct Poses {
  Pose poses[3];
  uint8_t n;
} Poses;
static const rosidl_typesupport_introspection_c__MessageMember Poses_members[] = {
    MSGS(Poses, poses, Pose, 3), SCALAR(Poses, n, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", Poses)

typedef struct Bools {
  bool flags[5];
  int64_t stamp;
} Bools;
static const rosidl_typesupport_introspection_c__MessageMember Bools_members[] = {
    ARRAY(Bools, flags, RGAPS_TYPE_BOOLEAN, 5), SCALAR(Bools, stamp, RGAPS_TYPE_INT64)};
TYPE("plain_test__msg", Bools)

typedef struct BoolsShort {
  bool b[3];
  int16_t s;
} BoolsShort;
static const rosidl_typesupport_introspection_c__MessageMember BoolsShort_members[] = {
    ARRAY(BoolsShort, b, RGAPS_TYPE_BOOLEAN, 3), SCALAR(BoolsShort, s, RGAPS_TYPE_INT16)};
TYPE("plain_test__msg", BoolsShort)

typedef struct Floats {
  float f[3];
  double d;
} Floats;
static const rosidl_typesupport_introspection_c__MessageMember Floats_members[] = {
    ARRAY(Floats, f, RGAPS_TYPE_FLOAT, 3), SCALAR(Floats, d, RGAPS_TYPE_DOUBLE)};
TYPE("plain_test__msg", Floats)

/* IDL char and wchar (a uint16_t in C), which .msg files cannot name */
typedef struct Chars {
  char c;
  uint16_t w;
  uint8_t u;
} Chars;
static const rosidl_typesupport_introspection_c__MessageMember Chars_members[] = {
    SCALAR(Chars, c, RGAPS_TYPE_CHAR), SCALAR(Chars, w, RGAPS_TYPE_WCHAR), SCALAR(Chars, u, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", Chars)

typedef struct LongD {
  int32_t a;
  long double l;
} LongD;
static const rosidl_typesupport_introspection_c__MessageMember LongD_members[] = {
    SCALAR(LongD, a, RGAPS_TYPE_INT32), SCALAR(LongD, l, RGAPS_TYPE_LONG_DOUBLE)};
TYPE("plain_test__msg", LongD)

typedef struct Seq {
  int32_t x;
  rosidl_runtime_c__int32__Sequence v;
} Seq;
static const rosidl_typesupport_introspection_c__MessageMember Seq_members[] = {
    SCALAR(Seq, x, RGAPS_TYPE_INT32), SEQ(Seq, v, RGAPS_TYPE_INT32)};
TYPE("plain_test__msg", Seq)

typedef struct Bounded {
  rosidl_runtime_c__int32__Sequence v;
} Bounded;
static const rosidl_typesupport_introspection_c__MessageMember Bounded_members[] = {BSEQ(Bounded, v, RGAPS_TYPE_INT32, 3)};
TYPE("plain_test__msg", Bounded)

typedef struct Empty {
  uint8_t structure_needs_at_least_one_member;
} Empty;
static const rosidl_typesupport_introspection_c__MessageMember Empty_members[] = {
    SCALAR(Empty, structure_needs_at_least_one_member, RGAPS_TYPE_UINT8)};
TYPE("plain_test__msg", Empty)

static const rosidl_message_type_support_t *const all[] = {
    &Int32_ts,   &Float64_ts,     &Bool_ts,        &String_ts,       &Time_ts,        &Header_ts,
    &Point_ts,   &Vector3_ts,     &Quaternion_ts,  &Pose_ts,         &Twist_ts,       &PoseStamped_ts,
    &Image_ts,   &Mixed_ts,       &MixedNested_ts, &Inner_ts,        &Outer_ts,       &Tail_ts,
    &TailThenByte_ts, &TailThenInt_ts, &TailArray_ts, &TailArray20_ts, &TailGrid_ts, &ByteTail_ts,
    &ByteTails_ts, &Padded_ts,    &PaddedPair_ts,  &Points20_ts,     &Poses_ts,       &Bools_ts,
    &BoolsShort_ts, &Floats_ts,   &Chars_ts,       &LongD_ts,        &Seq_ts,         &Bounded_ts,
    &Empty_ts,
};

int main(void) {
  int rc = 0;
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    const rgaps_ts *t = rgaps_ts_resolve(all[i]);
    char name[256];
    if (!t || !rgaps_ts_type_name(t, name, sizeof name)) {
      fprintf(stderr, "type %zu: %s\n", i, rgaps_ts_last_error());
      rc = 1;
      continue;
    }
    printf("%s %d %zu %zu\n", name, rgaps_ts_is_plain(t), rgaps_ts_plain_size(t), rgaps_ts_size_of(t));
  }
  return rc;
}

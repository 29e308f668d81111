/*
 * ts_c_test.c — tests of the introspection walkers (../ts_cdr.c) with C messages and hand-written
 * rosidl_typesupport_introspection_c tables, laid out as rosidl_generator_c
 * and rosidl_typesupport_introspection_c generate them (init/fini functions,
 * {data, size, capacity} sequences, resize functions on some sequences and
 * not on others so that both ways of resizing run).
 *
 *   ts_c_test selftest      resolution, is_plain, bounds, hostile input
 *   ts_c_test detached      byte members and the detached (de)serialisation
 *   ts_c_test threads       concurrent resolution and serialisation
 *   ts_c_test vectors DIR   writes DIR/c_<name>.cdr for every vector and
 *                           checks the Go encoder's DIR/go_<name>.cdr (and
 *                           go_<name>_be.cdr) deserialise to the same values
 *
 * Exit status 0 only if every check passed. Built by test/ts_test.go.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_test_util.h"

/* ------------------------------------------------ a small rosidl_runtime_c */

static void str_init(rosidl_runtime_c__String *s) {
  s->data = calloc(1, 1);
  s->size = 0;
  s->capacity = 1;
}
static void str_set(rosidl_runtime_c__String *s, const char *v) {
  size_t n = strlen(v);
  s->data = realloc(s->data, n + 1);
  memcpy(s->data, v, n + 1);
  s->size = n;
  s->capacity = n + 1;
}
static void str_fini(rosidl_runtime_c__String *s) {
  free(s->data);
  s->data = NULL;
  s->size = s->capacity = 0;
}
static void wstr_init(rosidl_runtime_c__U16String *s) {
  s->data = calloc(1, 2);
  s->size = 0;
  s->capacity = 1;
}
static void wstr_set(rosidl_runtime_c__U16String *s, const uint16_t *u, size_t n) {
  s->data = realloc(s->data, (n + 1) * 2);
  memcpy(s->data, u, n * 2);
  s->data[n] = 0;
  s->size = n;
  s->capacity = n + 1;
}
static void wstr_fini(rosidl_runtime_c__U16String *s) {
  free(s->data);
  s->data = NULL;
  s->size = s->capacity = 0;
}
static int str_eq(const rosidl_runtime_c__String *s, const char *v) {
  return s->data && s->size == strlen(v) && memcmp(s->data, v, s->size + 1) == 0;
}
static int wstr_eq(const rosidl_runtime_c__U16String *s, const uint16_t *u, size_t n) {
  return s->data && s->size == n && (n == 0 || memcmp(s->data, u, n * 2) == 0) && s->data[n] == 0;
}

/* primitive sequences: rosidl allocates them zeroed */
#define SEQ_SET(seq, T, ...)                              \
  do {                                                    \
    static const T v_[] = {__VA_ARGS__};                  \
    free((seq).data);                                     \
    (seq).data = malloc(sizeof v_);                       \
    memcpy((seq).data, v_, sizeof v_);                    \
    (seq).size = (seq).capacity = sizeof v_ / sizeof(T);  \
  } while (0)
#define SEQ_EQ(seq, T, ...)                                                             \
  ({                                                                                    \
    static const T v_[] = {__VA_ARGS__};                                                \
    (seq).size == sizeof v_ / sizeof(T) && memcmp((seq).data, v_, sizeof v_) == 0;      \
  })
#define SEQ_FREE(seq)    \
  do {                   \
    free((seq).data);    \
    (seq).data = NULL;   \
    (seq).size = (seq).capacity = 0; \
  } while (0)

static void strseq_init(rosidl_runtime_c__String__Sequence *q, size_t n) {
  q->data = n ? calloc(n, sizeof *q->data) : NULL;
  for (size_t i = 0; i < n; i++) str_init(&q->data[i]);
  q->size = q->capacity = n;
}
static void strseq_fini(rosidl_runtime_c__String__Sequence *q) {
  for (size_t i = 0; i < q->size; i++) str_fini(&q->data[i]);
  SEQ_FREE(*q);
}
static void wstrseq_fini(rosidl_runtime_c__U16String__Sequence *q) {
  for (size_t i = 0; i < q->size; i++) wstr_fini(&q->data[i]);
  SEQ_FREE(*q);
}

/* generated-style resize functions: fini then init */
static bool resize_uint8(void *p, size_t n) {
  rosidl_runtime_c__uint8__Sequence *q = p;
  SEQ_FREE(*q);
  if (n) {
    q->data = calloc(n, 1);
    if (!q->data) return false;
  }
  q->size = q->capacity = n;
  return true;
}
static bool resize_strings(void *p, size_t n) {
  rosidl_runtime_c__String__Sequence *q = p;
  strseq_fini(q);
  strseq_init(q, n);
  return true;
}

/* --------------------------------------------------------------- AllTypes */

typedef struct AllTypes {
  bool b;
  uint8_t o;
  signed char c;
  uint16_t wc;
  float f;
  double d;
  long double ld;
  int8_t i8;
  uint8_t u8;
  int16_t i16;
  uint16_t u16;
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  rosidl_runtime_c__String s;
  rosidl_runtime_c__String sb; /* string<=5 */
  rosidl_runtime_c__U16String ws;
  rosidl_runtime_c__U16String wsb; /* wstring<=4 */
  int32_t ai32[3];
  bool ab[3];
  double ad[2];
  rosidl_runtime_c__String as[2];
  uint8_t au8[5];
  rosidl_runtime_c__U16String aws[2];
  rosidl_runtime_c__uint8__Sequence su8;
  rosidl_runtime_c__int16__Sequence si16;
  rosidl_runtime_c__double__Sequence sd;
  rosidl_runtime_c__boolean__Sequence sbool;
  rosidl_runtime_c__float__Sequence sf;
  rosidl_runtime_c__uint64__Sequence su64;
  rosidl_runtime_c__String__Sequence ss;
  rosidl_runtime_c__U16String__Sequence sws;
  rosidl_runtime_c__char__Sequence sc;
  rosidl_runtime_c__wchar__Sequence swc;
  rosidl_runtime_c__long_double__Sequence sld;
  rosidl_runtime_c__int32__Sequence bi32;       /* int32[<=3] */
  rosidl_runtime_c__String__Sequence bss;       /* string<=3[<=2] */
  rosidl_runtime_c__double__Sequence empty_d;   /* always empty: the count alone */
  uint8_t tail;
} AllTypes;

static void AllTypes_init(void *p, int how) {
  (void)how;
  AllTypes *m = p;
  memset(m, 0, sizeof *m);
  str_init(&m->s);
  str_init(&m->sb);
  wstr_init(&m->ws);
  wstr_init(&m->wsb);
  for (int i = 0; i < 2; i++) {
    str_init(&m->as[i]);
    wstr_init(&m->aws[i]);
  }
}

static void AllTypes_fini(void *p) {
  AllTypes *m = p;
  str_fini(&m->s);
  str_fini(&m->sb);
  wstr_fini(&m->ws);
  wstr_fini(&m->wsb);
  for (int i = 0; i < 2; i++) {
    str_fini(&m->as[i]);
    wstr_fini(&m->aws[i]);
  }
  SEQ_FREE(m->su8);
  SEQ_FREE(m->si16);
  SEQ_FREE(m->sd);
  SEQ_FREE(m->sbool);
  SEQ_FREE(m->sf);
  SEQ_FREE(m->su64);
  strseq_fini(&m->ss);
  wstrseq_fini(&m->sws);
  SEQ_FREE(m->sc);
  SEQ_FREE(m->swc);
  SEQ_FREE(m->sld);
  SEQ_FREE(m->bi32);
  strseq_fini(&m->bss);
  SEQ_FREE(m->empty_d);
}

#define M_(T, f, tid, sb, nested, arr, n, ub, resize) \
  {#f, tid, sb, nested, false, arr, n, ub, (uint32_t)offsetof(T, f), NULL, NULL, NULL, NULL, NULL, NULL, resize}
#define SCALAR(T, f, tid) M_(T, f, tid, 0, NULL, false, 0, false, NULL)
#define ARRAY(T, f, tid, n) M_(T, f, tid, 0, NULL, true, n, false, NULL)
#define SEQ(T, f, tid, resize) M_(T, f, tid, 0, NULL, true, 0, false, resize)

static const rosidl_typesupport_introspection_c__MessageMember AllTypes_members[] = {
    SCALAR(AllTypes, b, RGAPS_TYPE_BOOLEAN),
    SCALAR(AllTypes, o, RGAPS_TYPE_OCTET),
    SCALAR(AllTypes, c, RGAPS_TYPE_CHAR),
    SCALAR(AllTypes, wc, RGAPS_TYPE_WCHAR),
    SCALAR(AllTypes, f, RGAPS_TYPE_FLOAT),
    SCALAR(AllTypes, d, RGAPS_TYPE_DOUBLE),
    SCALAR(AllTypes, ld, RGAPS_TYPE_LONG_DOUBLE),
    SCALAR(AllTypes, i8, RGAPS_TYPE_INT8),
    SCALAR(AllTypes, u8, RGAPS_TYPE_UINT8),
    SCALAR(AllTypes, i16, RGAPS_TYPE_INT16),
    SCALAR(AllTypes, u16, RGAPS_TYPE_UINT16),
    SCALAR(AllTypes, i32, RGAPS_TYPE_INT32),
    SCALAR(AllTypes, u32, RGAPS_TYPE_UINT32),
    SCALAR(AllTypes, i64, RGAPS_TYPE_INT64),
    SCALAR(AllTypes, u64, RGAPS_TYPE_UINT64),
    SCALAR(AllTypes, s, RGAPS_TYPE_STRING),
    M_(AllTypes, sb, RGAPS_TYPE_STRING, 5, NULL, false, 0, false, NULL),
    SCALAR(AllTypes, ws, RGAPS_TYPE_WSTRING),
    M_(AllTypes, wsb, RGAPS_TYPE_WSTRING, 4, NULL, false, 0, false, NULL),
    ARRAY(AllTypes, ai32, RGAPS_TYPE_INT32, 3),
    ARRAY(AllTypes, ab, RGAPS_TYPE_BOOLEAN, 3),
    ARRAY(AllTypes, ad, RGAPS_TYPE_DOUBLE, 2),
    ARRAY(AllTypes, as, RGAPS_TYPE_STRING, 2),
    ARRAY(AllTypes, au8, RGAPS_TYPE_UINT8, 5),
    ARRAY(AllTypes, aws, RGAPS_TYPE_WSTRING, 2),
    SEQ(AllTypes, su8, RGAPS_TYPE_UINT8, resize_uint8),
    SEQ(AllTypes, si16, RGAPS_TYPE_INT16, NULL),
    SEQ(AllTypes, sd, RGAPS_TYPE_DOUBLE, NULL),
    SEQ(AllTypes, sbool, RGAPS_TYPE_BOOLEAN, NULL),
    SEQ(AllTypes, sf, RGAPS_TYPE_FLOAT, NULL),
    SEQ(AllTypes, su64, RGAPS_TYPE_UINT64, NULL),
    SEQ(AllTypes, ss, RGAPS_TYPE_STRING, resize_strings),
    SEQ(AllTypes, sws, RGAPS_TYPE_WSTRING, NULL),
    SEQ(AllTypes, sc, RGAPS_TYPE_CHAR, NULL),
    SEQ(AllTypes, swc, RGAPS_TYPE_WCHAR, NULL),
    SEQ(AllTypes, sld, RGAPS_TYPE_LONG_DOUBLE, NULL),
    M_(AllTypes, bi32, RGAPS_TYPE_INT32, 0, NULL, true, 3, true, NULL),
    M_(AllTypes, bss, RGAPS_TYPE_STRING, 3, NULL, true, 2, true, NULL),
    SEQ(AllTypes, empty_d, RGAPS_TYPE_DOUBLE, NULL),
    SCALAR(AllTypes, tail, RGAPS_TYPE_UINT8),
};

#define NMEMBERS(a) (uint32_t)(sizeof(a) / sizeof((a)[0]))
#define MEMBERS(ns, T) \
  {ns, #T, NMEMBERS(T##_members), sizeof(T), false, T##_members, T##_init, T##_fini}
#define HANDLE(T) \
  {RGAPS_TS_ID_INTROSPECTION_C, &T##_mm, NULL, NULL, NULL, NULL}

static const rosidl_typesupport_introspection_c__MessageMembers AllTypes_mm = MEMBERS("rgaps_test__msg", AllTypes);
static const rosidl_message_type_support_t AllTypes_ts = HANDLE(AllTypes);

static const uint16_t W_HELLO[] = {0x68, 0xE9, 0x20AC, 0xD83D, 0xDE00}; /* "hé€😀" */
static const uint16_t W_WXYZ[] = {'w', 'x', 'y', 'z'};
static const uint16_t W_A[] = {'a'};
static const uint16_t W_OMEGA[] = {0x3C9}; /* "ω" */

static void AllTypes_fill(AllTypes *m) {
  m->b = true;
  m->o = 0xAB;
  m->c = 'A';
  m->wc = 0x20AC;
  m->f = 1.5f;
  m->d = -2.25;
  m->ld = 3.0L;
  m->i8 = -5;
  m->u8 = 250;
  m->i16 = -300;
  m->u16 = 60000;
  m->i32 = -70000;
  m->u32 = 4000000000u;
  m->i64 = -5000000000LL;
  m->u64 = 18000000000000000000ULL;
  str_set(&m->s, "hello, w\xc3\xb6rld");
  str_set(&m->sb, "abcde");
  wstr_set(&m->ws, W_HELLO, 5);
  wstr_set(&m->wsb, W_WXYZ, 4);
  m->ai32[0] = 1, m->ai32[1] = -2, m->ai32[2] = 3;
  m->ab[0] = true, m->ab[1] = false, m->ab[2] = true;
  m->ad[0] = 0.5, m->ad[1] = -0.25;
  str_set(&m->as[1], "x");
  for (int i = 0; i < 5; i++) m->au8[i] = (uint8_t)(i + 1);
  wstr_set(&m->aws[0], W_A, 1);
  SEQ_SET(m->su8, uint8_t, 9, 8, 7);
  SEQ_SET(m->si16, int16_t, -1, 2, -3, 4);
  SEQ_SET(m->sd, double, 1e10, -1e-10);
  SEQ_SET(m->sbool, bool, false, true, true);
  SEQ_SET(m->sf, float, 0.125f);
  SEQ_SET(m->su64, uint64_t, 1, UINT64_MAX);
  strseq_init(&m->ss, 3);
  str_set(&m->ss.data[0], "one");
  str_set(&m->ss.data[2], "three");
  m->sws.data = calloc(1, sizeof *m->sws.data);
  m->sws.size = m->sws.capacity = 1;
  wstr_init(&m->sws.data[0]);
  wstr_set(&m->sws.data[0], W_OMEGA, 1);
  SEQ_SET(m->sc, signed char, 'x', 'y');
  SEQ_SET(m->swc, uint16_t, 0x3A9, 0x41);
  SEQ_SET(m->sld, long double, -0.5L);
  SEQ_SET(m->bi32, int32_t, 7, 8, 9);
  strseq_init(&m->bss, 2);
  str_set(&m->bss.data[0], "abc");
  str_set(&m->bss.data[1], "de");
  m->tail = 0x5A;
}

static int AllTypes_check_filled(const AllTypes *m) {
  int ok = m->b == true && m->o == 0xAB && m->c == 'A' && m->wc == 0x20AC && m->f == 1.5f && m->d == -2.25 &&
           m->ld == 3.0L && m->i8 == -5 && m->u8 == 250 && m->i16 == -300 && m->u16 == 60000 && m->i32 == -70000 &&
           m->u32 == 4000000000u && m->i64 == -5000000000LL && m->u64 == 18000000000000000000ULL &&
           str_eq(&m->s, "hello, w\xc3\xb6rld") && str_eq(&m->sb, "abcde") && wstr_eq(&m->ws, W_HELLO, 5) &&
           wstr_eq(&m->wsb, W_WXYZ, 4) && m->ai32[0] == 1 && m->ai32[1] == -2 && m->ai32[2] == 3 && m->ab[0] &&
           !m->ab[1] && m->ab[2] && m->ad[0] == 0.5 && m->ad[1] == -0.25 && str_eq(&m->as[0], "") &&
           str_eq(&m->as[1], "x") && m->au8[0] == 1 && m->au8[4] == 5 && wstr_eq(&m->aws[0], W_A, 1) &&
           wstr_eq(&m->aws[1], NULL, 0) && SEQ_EQ(m->su8, uint8_t, 9, 8, 7) &&
           SEQ_EQ(m->si16, int16_t, -1, 2, -3, 4) && SEQ_EQ(m->sd, double, 1e10, -1e-10) &&
           SEQ_EQ(m->sbool, bool, false, true, true) && SEQ_EQ(m->sf, float, 0.125f) &&
           SEQ_EQ(m->su64, uint64_t, 1, UINT64_MAX) && m->ss.size == 3 && str_eq(&m->ss.data[0], "one") &&
           str_eq(&m->ss.data[1], "") && str_eq(&m->ss.data[2], "three") && m->sws.size == 1 &&
           wstr_eq(&m->sws.data[0], W_OMEGA, 1) && SEQ_EQ(m->sc, signed char, 'x', 'y') &&
           SEQ_EQ(m->swc, uint16_t, 0x3A9, 0x41) && m->sld.size == 1 && m->sld.data[0] == -0.5L &&
           SEQ_EQ(m->bi32, int32_t, 7, 8, 9) && m->bss.size == 2 && str_eq(&m->bss.data[0], "abc") &&
           str_eq(&m->bss.data[1], "de") && m->empty_d.size == 0 && m->tail == 0x5A;
  return ok;
}

static int AllTypes_check_zero(const AllTypes *m) {
  return !m->b && m->o == 0 && m->c == 0 && m->ld == 0 && m->u64 == 0 && str_eq(&m->s, "") && str_eq(&m->sb, "") &&
         wstr_eq(&m->ws, NULL, 0) && m->ai32[2] == 0 && !m->ab[0] && str_eq(&m->as[1], "") && m->su8.size == 0 &&
         m->ss.size == 0 && m->sws.size == 0 && m->bss.size == 0 && m->tail == 0;
}

/* ------------------------------------------------- nested: Image, PoseArray */

typedef struct Time {
  int32_t sec;
  uint32_t nanosec;
} Time;
static void Time_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Time));
}
static void Time_fini(void *p) { (void)p; }
static const rosidl_typesupport_introspection_c__MessageMember Time_members[] = {
    SCALAR(Time, sec, RGAPS_TYPE_INT32),
    SCALAR(Time, nanosec, RGAPS_TYPE_UINT32),
};
static const rosidl_typesupport_introspection_c__MessageMembers Time_mm = MEMBERS("builtin_interfaces__msg", Time);
static const rosidl_message_type_support_t Time_ts = HANDLE(Time);

typedef struct Header {
  Time stamp;
  rosidl_runtime_c__String frame_id;
} Header;
static void Header_init(void *p, int how) {
  Header *m = p;
  Time_init(&m->stamp, how);
  str_init(&m->frame_id);
}
static void Header_fini(void *p) { str_fini(&((Header *)p)->frame_id); }
static const rosidl_typesupport_introspection_c__MessageMember Header_members[] = {
    M_(Header, stamp, RGAPS_TYPE_MESSAGE, 0, &Time_ts, false, 0, false, NULL),
    SCALAR(Header, frame_id, RGAPS_TYPE_STRING),
};
static const rosidl_typesupport_introspection_c__MessageMembers Header_mm = MEMBERS("std_msgs__msg", Header);
static const rosidl_message_type_support_t Header_ts = HANDLE(Header);

typedef struct Image {
  Header header;
  uint32_t height;
  uint32_t width;
  rosidl_runtime_c__String encoding;
  uint8_t is_bigendian;
  uint32_t step;
  rosidl_runtime_c__uint8__Sequence data;
} Image;
static void Image_init(void *p, int how) {
  Image *m = p;
  memset(m, 0, sizeof *m);
  Header_init(&m->header, how);
  str_init(&m->encoding);
}
static void Image_fini(void *p) {
  Image *m = p;
  Header_fini(&m->header);
  str_fini(&m->encoding);
  SEQ_FREE(m->data);
}
static const rosidl_typesupport_introspection_c__MessageMember Image_members[] = {
    M_(Image, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts, false, 0, false, NULL),
    SCALAR(Image, height, RGAPS_TYPE_UINT32),
    SCALAR(Image, width, RGAPS_TYPE_UINT32),
    SCALAR(Image, encoding, RGAPS_TYPE_STRING),
    SCALAR(Image, is_bigendian, RGAPS_TYPE_UINT8),
    SCALAR(Image, step, RGAPS_TYPE_UINT32),
    SEQ(Image, data, RGAPS_TYPE_UINT8, resize_uint8),
};
static const rosidl_typesupport_introspection_c__MessageMembers Image_mm = MEMBERS("sensor_msgs__msg", Image);
static const rosidl_message_type_support_t Image_ts = HANDLE(Image);

#define IMAGE_W 20
#define IMAGE_H 10
static void Image_fill(Image *m) {
  m->header.stamp.sec = 1700000000;
  m->header.stamp.nanosec = 123456789;
  str_set(&m->header.frame_id, "camera");
  m->height = IMAGE_H;
  m->width = IMAGE_W;
  str_set(&m->encoding, "rgb8");
  m->is_bigendian = 0;
  m->step = 3 * IMAGE_W;
  size_t n = 3 * IMAGE_W * IMAGE_H;
  free(m->data.data);
  m->data.data = malloc(n);
  for (size_t i = 0; i < n; i++) m->data.data[i] = (uint8_t)(i * 7 + 3);
  m->data.size = m->data.capacity = n;
}
static int Image_check(const Image *m) {
  int ok = m->header.stamp.sec == 1700000000 && m->header.stamp.nanosec == 123456789 &&
           str_eq(&m->header.frame_id, "camera") && m->height == IMAGE_H && m->width == IMAGE_W &&
           str_eq(&m->encoding, "rgb8") && m->is_bigendian == 0 && m->step == 3 * IMAGE_W &&
           m->data.size == 3 * IMAGE_W * IMAGE_H;
  for (size_t i = 0; ok && i < m->data.size; i++) ok = m->data.data[i] == (uint8_t)(i * 7 + 3);
  return ok;
}

typedef struct Point {
  double x, y, z;
} Point;
typedef struct Quaternion {
  double x, y, z, w;
} Quaternion;
typedef struct Pose {
  Point position;
  Quaternion orientation;
} Pose;
static void Point_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Point));
}
static void Quaternion_init(void *p, int how) {
  (void)how;
  Quaternion *q = p;
  q->x = q->y = q->z = 0;
  q->w = 1; /* the .msg default */
}
static void Pose_init(void *p, int how) {
  Pose *m = p;
  Point_init(&m->position, how);
  Quaternion_init(&m->orientation, how);
}
static void Point_fini(void *p) { (void)p; }
#define Quaternion_fini Point_fini
#define Pose_fini Point_fini
static const rosidl_typesupport_introspection_c__MessageMember Point_members[] = {
    SCALAR(Point, x, RGAPS_TYPE_DOUBLE), SCALAR(Point, y, RGAPS_TYPE_DOUBLE), SCALAR(Point, z, RGAPS_TYPE_DOUBLE)};
static const rosidl_typesupport_introspection_c__MessageMember Quaternion_members[] = {
    SCALAR(Quaternion, x, RGAPS_TYPE_DOUBLE), SCALAR(Quaternion, y, RGAPS_TYPE_DOUBLE),
    SCALAR(Quaternion, z, RGAPS_TYPE_DOUBLE), SCALAR(Quaternion, w, RGAPS_TYPE_DOUBLE)};
static const rosidl_message_type_support_t Point_ts, Quaternion_ts;
static const rosidl_typesupport_introspection_c__MessageMember Pose_members[] = {
    M_(Pose, position, RGAPS_TYPE_MESSAGE, 0, &Point_ts, false, 0, false, NULL),
    M_(Pose, orientation, RGAPS_TYPE_MESSAGE, 0, &Quaternion_ts, false, 0, false, NULL),
};
static const rosidl_typesupport_introspection_c__MessageMembers Point_mm = MEMBERS("geometry_msgs__msg", Point);
static const rosidl_typesupport_introspection_c__MessageMembers Quaternion_mm =
    MEMBERS("geometry_msgs__msg", Quaternion);
static const rosidl_typesupport_introspection_c__MessageMembers Pose_mm = MEMBERS("geometry_msgs__msg", Pose);
static const rosidl_message_type_support_t Point_ts = HANDLE(Point);
static const rosidl_message_type_support_t Quaternion_ts = HANDLE(Quaternion);
static const rosidl_message_type_support_t Pose_ts = HANDLE(Pose);

typedef struct Pose__Sequence {
  Pose *data;
  size_t size, capacity;
} Pose__Sequence;
typedef struct PoseArray {
  Header header;
  Pose__Sequence poses;
} PoseArray;
/* rosidl-style resize: fini then init with every element initialised */
static bool resize_poses(void *p, size_t n) {
  Pose__Sequence *q = p;
  free(q->data);
  q->data = n ? calloc(n, sizeof(Pose)) : NULL;
  if (n && !q->data) return false;
  for (size_t i = 0; i < n; i++) Pose_init(&q->data[i], 0);
  q->size = q->capacity = n;
  return true;
}
static void PoseArray_init(void *p, int how) {
  PoseArray *m = p;
  memset(m, 0, sizeof *m);
  Header_init(&m->header, how);
}
static void PoseArray_fini(void *p) {
  PoseArray *m = p;
  Header_fini(&m->header);
  free(m->poses.data);
}
static const rosidl_typesupport_introspection_c__MessageMember PoseArray_members[] = {
    M_(PoseArray, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts, false, 0, false, NULL),
    M_(PoseArray, poses, RGAPS_TYPE_MESSAGE, 0, &Pose_ts, true, 0, false, resize_poses),
};
static const rosidl_typesupport_introspection_c__MessageMembers PoseArray_mm =
    MEMBERS("geometry_msgs__msg", PoseArray);
static const rosidl_message_type_support_t PoseArray_ts = HANDLE(PoseArray);

static void PoseArray_fill(PoseArray *m) {
  m->header.stamp.sec = -1;
  m->header.stamp.nanosec = 999999999;
  str_set(&m->header.frame_id, "map");
  resize_poses(&m->poses, 3);
  for (int i = 0; i < 3; i++) {
    m->poses.data[i].position.x = i + 0.5;
    m->poses.data[i].position.y = -i;
    m->poses.data[i].position.z = i * 100.0;
    m->poses.data[i].orientation.z = 0.25 * i;
  }
}
static int PoseArray_check(const PoseArray *m) {
  int ok = m->header.stamp.sec == -1 && m->header.stamp.nanosec == 999999999 && str_eq(&m->header.frame_id, "map") &&
           m->poses.size == 3;
  for (int i = 0; ok && i < 3; i++) {
    const Pose *p = &m->poses.data[i];
    ok = p->position.x == i + 0.5 && p->position.y == -i && p->position.z == i * 100.0 && p->orientation.x == 0 &&
         p->orientation.y == 0 && p->orientation.z == 0.25 * i && p->orientation.w == 1;
  }
  return ok;
}

/* Nested: fixed arrays, bounded and unbounded sequences of nested messages
 * (the unbounded one without a resize function: realloc path). */
typedef struct Time__Sequence {
  Time *data;
  size_t size, capacity;
} Time__Sequence;
typedef struct Header__Sequence {
  Header *data;
  size_t size, capacity;
} Header__Sequence;
typedef struct Nested {
  uint8_t lead;
  Header pair[2];
  Time__Sequence times; /* Time[<=3] */
  Header__Sequence headers;
  Pose pose;
  PoseArray arrays[1];
  uint16_t tail;
} Nested;
static void Nested_init(void *p, int how) {
  Nested *m = p;
  memset(m, 0, sizeof *m);
  Header_init(&m->pair[0], how);
  Header_init(&m->pair[1], how);
  Pose_init(&m->pose, how);
  PoseArray_init(&m->arrays[0], how);
}
static void Nested_fini(void *p) {
  Nested *m = p;
  Header_fini(&m->pair[0]);
  Header_fini(&m->pair[1]);
  free(m->times.data);
  for (size_t i = 0; i < m->headers.size; i++) Header_fini(&m->headers.data[i]);
  free(m->headers.data);
  PoseArray_fini(&m->arrays[0]);
}
static const rosidl_typesupport_introspection_c__MessageMember Nested_members[] = {
    SCALAR(Nested, lead, RGAPS_TYPE_UINT8),
    M_(Nested, pair, RGAPS_TYPE_MESSAGE, 0, &Header_ts, true, 2, false, NULL),
    M_(Nested, times, RGAPS_TYPE_MESSAGE, 0, &Time_ts, true, 3, true, NULL),
    M_(Nested, headers, RGAPS_TYPE_MESSAGE, 0, &Header_ts, true, 0, false, NULL),
    M_(Nested, pose, RGAPS_TYPE_MESSAGE, 0, &Pose_ts, false, 0, false, NULL),
    M_(Nested, arrays, RGAPS_TYPE_MESSAGE, 0, &PoseArray_ts, true, 1, false, NULL),
    SCALAR(Nested, tail, RGAPS_TYPE_UINT16),
};
static const rosidl_typesupport_introspection_c__MessageMembers Nested_mm = MEMBERS("rgaps_test__msg", Nested);
static const rosidl_message_type_support_t Nested_ts = HANDLE(Nested);

static void Nested_fill(Nested *m) {
  m->lead = 1;
  m->pair[0].stamp.sec = 10;
  str_set(&m->pair[0].frame_id, "left");
  m->pair[1].stamp.nanosec = 20;
  str_set(&m->pair[1].frame_id, "right");
  m->times.data = calloc(2, sizeof(Time));
  m->times.size = m->times.capacity = 2;
  m->times.data[0].sec = 1, m->times.data[0].nanosec = 2;
  m->times.data[1].sec = 3, m->times.data[1].nanosec = 4;
  m->headers.data = calloc(3, sizeof(Header));
  m->headers.size = m->headers.capacity = 3;
  const char *ids[3] = {"a", "", "ccc"};
  for (int i = 0; i < 3; i++) {
    Header_init(&m->headers.data[i], 0);
    m->headers.data[i].stamp.sec = 100 + i;
    str_set(&m->headers.data[i].frame_id, ids[i]);
  }
  m->pose.position.y = 2.5;
  PoseArray_fill(&m->arrays[0]);
  m->tail = 0xBEEF;
}
static int Nested_check(const Nested *m) {
  int ok = m->lead == 1 && m->pair[0].stamp.sec == 10 && str_eq(&m->pair[0].frame_id, "left") &&
           m->pair[1].stamp.nanosec == 20 && str_eq(&m->pair[1].frame_id, "right") && m->times.size == 2 &&
           m->times.data[0].sec == 1 && m->times.data[0].nanosec == 2 && m->times.data[1].sec == 3 &&
           m->times.data[1].nanosec == 4 && m->headers.size == 3 && m->pose.position.y == 2.5 &&
           m->pose.orientation.w == 1 && PoseArray_check(&m->arrays[0]) && m->tail == 0xBEEF;
  const char *ids[3] = {"a", "", "ccc"};
  for (int i = 0; ok && i < 3; i++)
    ok = m->headers.data[i].stamp.sec == 100 + i && str_eq(&m->headers.data[i].frame_id, ids[i]);
  return ok;
}

/* --------------------------------------------------- layout (plain) types */

typedef struct Padded {
  double x;
  uint8_t a;
} Padded; /* 16 bytes in memory, 9 on the wire */
static void Padded_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Padded));
}
static void Padded_fini(void *p) { (void)p; }
static const rosidl_typesupport_introspection_c__MessageMember Padded_members[] = {
    SCALAR(Padded, x, RGAPS_TYPE_DOUBLE), SCALAR(Padded, a, RGAPS_TYPE_UINT8)};
static const rosidl_typesupport_introspection_c__MessageMembers Padded_mm = MEMBERS("rgaps_test__msg", Padded);
static const rosidl_message_type_support_t Padded_ts = HANDLE(Padded);

typedef struct PaddedArray {
  uint8_t lead;
  Padded p[3];
  double tail;
} PaddedArray;
#define PaddedArray_init Padded_init_any
static void Padded_init_any(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(PaddedArray));
}
#define PaddedArray_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember PaddedArray_members[] = {
    SCALAR(PaddedArray, lead, RGAPS_TYPE_UINT8),
    M_(PaddedArray, p, RGAPS_TYPE_MESSAGE, 0, &Padded_ts, true, 3, false, NULL),
    SCALAR(PaddedArray, tail, RGAPS_TYPE_DOUBLE),
};
static const rosidl_typesupport_introspection_c__MessageMembers PaddedArray_mm =
    MEMBERS("rgaps_test__msg", PaddedArray);
static const rosidl_message_type_support_t PaddedArray_ts = HANDLE(PaddedArray);

typedef struct PaddedShort {
  Padded p[1];
  int16_t tail;
} PaddedShort;
static void PaddedShort_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(PaddedShort));
}
#define PaddedShort_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember PaddedShort_members[] = {
    M_(PaddedShort, p, RGAPS_TYPE_MESSAGE, 0, &Padded_ts, true, 1, false, NULL),
    SCALAR(PaddedShort, tail, RGAPS_TYPE_INT16),
};
static const rosidl_typesupport_introspection_c__MessageMembers PaddedShort_mm =
    MEMBERS("rgaps_test__msg", PaddedShort);
static const rosidl_message_type_support_t PaddedShort_ts = HANDLE(PaddedShort);

/* Inner {uint8 x; uint32 y} is plain; Outer {uint8 a; Inner b} is not: C
 * aligns b to 4 (b.x at 4), CDR puts b.x right after a (at 1). */
typedef struct Inner {
  uint8_t x;
  uint32_t y;
} Inner;
typedef struct Outer {
  uint8_t a;
  Inner b;
} Outer;
static void Inner_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Inner));
}
static void Outer_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Outer));
}
#define Inner_fini Padded_fini
#define Outer_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember Inner_members[] = {
    SCALAR(Inner, x, RGAPS_TYPE_UINT8), SCALAR(Inner, y, RGAPS_TYPE_UINT32)};
static const rosidl_typesupport_introspection_c__MessageMembers Inner_mm = MEMBERS("rgaps_test__msg", Inner);
static const rosidl_message_type_support_t Inner_ts = HANDLE(Inner);
static const rosidl_typesupport_introspection_c__MessageMember Outer_members[] = {
    SCALAR(Outer, a, RGAPS_TYPE_UINT8),
    M_(Outer, b, RGAPS_TYPE_MESSAGE, 0, &Inner_ts, false, 0, false, NULL),
};
static const rosidl_typesupport_introspection_c__MessageMembers Outer_mm = MEMBERS("rgaps_test__msg", Outer);
static const rosidl_message_type_support_t Outer_ts = HANDLE(Outer);

typedef struct LongD {
  long double v;
} LongD;
static void LongD_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(LongD));
}
#define LongD_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember LongD_members[] = {
    SCALAR(LongD, v, RGAPS_TYPE_LONG_DOUBLE)};
static const rosidl_typesupport_introspection_c__MessageMembers LongD_mm = MEMBERS("rgaps_test__msg", LongD);
static const rosidl_message_type_support_t LongD_ts = HANDLE(LongD);

typedef struct Bools {
  bool a;
  bool b[3];
  int16_t c;
} Bools;
static void Bools_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Bools));
}
#define Bools_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember Bools_members[] = {
    SCALAR(Bools, a, RGAPS_TYPE_BOOLEAN), ARRAY(Bools, b, RGAPS_TYPE_BOOLEAN, 3), SCALAR(Bools, c, RGAPS_TYPE_INT16)};
static const rosidl_typesupport_introspection_c__MessageMembers Bools_mm = MEMBERS("rgaps_test__msg", Bools);
static const rosidl_message_type_support_t Bools_ts = HANDLE(Bools);

/* ------------------------------------------------- detachable byte fields */

/* PointCloud2-like: the byte field in the middle, fields of every alignment
 * after it, a char sequence (a byte member too) and an int8 one (not). data
 * has no resize function (the realloc path; Image's has one). */
typedef struct Cloud {
  Header header;
  uint32_t height;
  rosidl_runtime_c__uint8__Sequence data;
  uint32_t row_step;
  double scale;
  bool is_dense;
  rosidl_runtime_c__char__Sequence label;
  rosidl_runtime_c__int8__Sequence samples;
} Cloud;
static void Cloud_init(void *p, int how) {
  Cloud *m = p;
  memset(m, 0, sizeof *m);
  Header_init(&m->header, how);
}
static void Cloud_fini(void *p) {
  Cloud *m = p;
  Header_fini(&m->header);
  SEQ_FREE(m->data);
  SEQ_FREE(m->label);
  SEQ_FREE(m->samples);
}
static const rosidl_typesupport_introspection_c__MessageMember Cloud_members[] = {
    M_(Cloud, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts, false, 0, false, NULL),
    SCALAR(Cloud, height, RGAPS_TYPE_UINT32),
    SEQ(Cloud, data, RGAPS_TYPE_UINT8, NULL),
    SCALAR(Cloud, row_step, RGAPS_TYPE_UINT32),
    SCALAR(Cloud, scale, RGAPS_TYPE_DOUBLE),
    SCALAR(Cloud, is_dense, RGAPS_TYPE_BOOLEAN),
    SEQ(Cloud, label, RGAPS_TYPE_CHAR, NULL),
    SEQ(Cloud, samples, RGAPS_TYPE_INT8, NULL),
};
static const rosidl_typesupport_introspection_c__MessageMembers Cloud_mm = MEMBERS("rgaps_test__msg", Cloud);
static const rosidl_message_type_support_t Cloud_ts = HANDLE(Cloud);
static void Cloud_fill(Cloud *m) {
  m->header.stamp.sec = 7;
  str_set(&m->header.frame_id, "lidar");
  m->height = 1;
  m->row_step = 0xA1B2C3D4;
  m->scale = -0.75;
  m->is_dense = true;
  SEQ_SET(m->label, signed char, 'x', 'y', 'z');
  SEQ_SET(m->samples, int8_t, -1, 2);
}

/* Only one byte member, bounded and not named data, before a float64. */
typedef struct Blob {
  uint8_t kind;
  rosidl_runtime_c__octet__Sequence blob;
  double after;
} Blob;
static void Blob_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Blob));
}
static void Blob_fini(void *p) { SEQ_FREE(((Blob *)p)->blob); }
static const rosidl_typesupport_introspection_c__MessageMember Blob_members[] = {
    SCALAR(Blob, kind, RGAPS_TYPE_UINT8),
    M_(Blob, blob, RGAPS_TYPE_OCTET, 0, NULL, true, 16, true, resize_uint8),
    SCALAR(Blob, after, RGAPS_TYPE_DOUBLE),
};
static const rosidl_typesupport_introspection_c__MessageMembers Blob_mm = MEMBERS("rgaps_test__msg", Blob);
static const rosidl_message_type_support_t Blob_ts = HANDLE(Blob);

/* ------------------------------------------------ handles reached by func */

/* A rosidl_typesupport_c-style handle: its func hands out the introspection
 * handle when asked for it, NULL for anything else (as a typesupport_c
 * library without that type support does). */
static const rosidl_message_type_support_t *pose_array_func(const rosidl_message_type_support_t *h,
                                                            const char *id) {
  (void)h;
  return strcmp(id, RGAPS_TS_ID_INTROSPECTION_C) == 0 ? &PoseArray_ts : NULL;
}
static const rosidl_message_type_support_t PoseArray_ts_c = {"rosidl_typesupport_c", NULL, pose_array_func,
                                                             NULL, NULL, NULL};
static const rosidl_message_type_support_t *nothing_func(const rosidl_message_type_support_t *h, const char *id) {
  (void)h;
  (void)id;
  return NULL;
}
static const rosidl_message_type_support_t Fastrtps_only_ts = {"rosidl_typesupport_fastrtps_c", NULL,
                                                               nothing_func, NULL, NULL, NULL};

/* A service: AddTwoInts (int64 a, int64 b → int64 sum). */
typedef struct Req {
  int64_t a, b;
} Req;
typedef struct Resp {
  int64_t sum;
} Resp;
static void Req_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Req));
}
static void Resp_init(void *p, int how) {
  (void)how;
  memset(p, 0, sizeof(Resp));
}
#define Req_fini Padded_fini
#define Resp_fini Padded_fini
static const rosidl_typesupport_introspection_c__MessageMember Req_members[] = {SCALAR(Req, a, RGAPS_TYPE_INT64),
                                                                               SCALAR(Req, b, RGAPS_TYPE_INT64)};
static const rosidl_typesupport_introspection_c__MessageMember Resp_members[] = {
    SCALAR(Resp, sum, RGAPS_TYPE_INT64)};
static const rosidl_typesupport_introspection_c__MessageMembers Req_mm = {
    "example_interfaces__srv", "AddTwoInts_Request", 2, sizeof(Req), false, Req_members, Req_init, Req_fini};
static const rosidl_typesupport_introspection_c__MessageMembers Resp_mm = {
    "example_interfaces__srv", "AddTwoInts_Response", 1, sizeof(Resp), false, Resp_members, Resp_init, Resp_fini};
static const rosidl_message_type_support_t Req_ts = HANDLE(Req);
static const rosidl_message_type_support_t Resp_ts = HANDLE(Resp);
static const rosidl_typesupport_introspection_c__ServiceMembers AddTwoInts_sm = {
    "example_interfaces__srv", "AddTwoInts", &Req_mm, &Resp_mm, NULL};
static const rosidl_service_type_support_t AddTwoInts_ts = {
    RGAPS_TS_ID_INTROSPECTION_C, &AddTwoInts_sm, NULL, &Req_ts, &Resp_ts, NULL, NULL, NULL, NULL, NULL, NULL};
static const rosidl_service_type_support_t *srv_func(const rosidl_service_type_support_t *h, const char *id) {
  (void)h;
  return strcmp(id, RGAPS_TS_ID_INTROSPECTION_C) == 0 ? &AddTwoInts_ts : NULL;
}
static const rosidl_service_type_support_t AddTwoInts_ts_c = {
    "rosidl_typesupport_c", NULL, srv_func, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
/* no introspection service handle, but request/response type supports */
static const rosidl_service_type_support_t AddTwoInts_ts_msgs = {
    "rosidl_typesupport_c", NULL, NULL, &Req_ts, &Resp_ts, NULL, NULL, NULL, NULL, NULL, NULL};

/* A type containing itself (rosidl cannot generate one; tables can lie). */
typedef struct Loop {
  uint8_t x;
} Loop;
static const rosidl_message_type_support_t Loop_ts;
static const rosidl_typesupport_introspection_c__MessageMember Loop_members[] = {
    M_(Loop, x, RGAPS_TYPE_MESSAGE, 0, &Loop_ts, false, 0, false, NULL)};
static const rosidl_typesupport_introspection_c__MessageMembers Loop_mm = {
    "rgaps_test__msg", "Loop", 1, sizeof(Loop), false, Loop_members, Padded_init, Padded_fini};
static const rosidl_message_type_support_t Loop_ts = HANDLE(Loop);

/* A member beyond the message's size. */
static const rosidl_typesupport_introspection_c__MessageMember Bad_members[] = {
    {"far", RGAPS_TYPE_UINT64, 0, NULL, false, false, 0, false, 12, NULL, NULL, NULL, NULL, NULL, NULL, NULL}};
static const rosidl_typesupport_introspection_c__MessageMembers Bad_mm = {
    "rgaps_test__msg", "Bad", 1, 16, false, Bad_members, Padded_init, Padded_fini};
static const rosidl_message_type_support_t Bad_ts = HANDLE(Bad);

/* -------------------------------------------------------------- selftests */

static const rgaps_ts *resolve(const rosidl_message_type_support_t *h) {
  const rgaps_ts *t = rgaps_ts_resolve(h);
  if (!t) {
    fprintf(stderr, "resolve failed: %s\n", rgaps_ts_last_error());
    exit(2);
  }
  return t;
}

static void test_resolve(void) {
  const rgaps_ts *pa = resolve(&PoseArray_ts);
  CHECK(rgaps_ts_resolve(&PoseArray_ts) == pa); /* cached */
  CHECK(rgaps_ts_resolve(&PoseArray_ts_c) == pa); /* through func */
  CHECK(rgaps_ts_is_cpp(pa) == 0);
  CHECK(rgaps_ts_size_of(pa) == sizeof(PoseArray));
  char name[64];
  CHECK(rgaps_ts_type_name(pa, name, sizeof name) == name && strcmp(name, "geometry_msgs/msg/PoseArray") == 0);
  CHECK(rgaps_ts_type_name(pa, name, 10) == NULL);
  CHECK(rgaps_ts_type_name(pa, name, 27) == NULL); /* one short of the NUL */
  CHECK(rgaps_ts_type_name(pa, name, 28) == name && strcmp(name, "geometry_msgs/msg/PoseArray") == 0);
  CHECK(rgaps_ts_resolve(&Fastrtps_only_ts) == NULL);
  CHECK(strstr(rgaps_ts_last_error(), "rosidl_typesupport_fastrtps_c") != NULL);
  CHECK(rgaps_ts_resolve(NULL) == NULL);
  CHECK(rgaps_ts_resolve(&Loop_ts) == NULL);
  CHECK(strstr(rgaps_ts_last_error(), "contains itself") != NULL);
  CHECK(rgaps_ts_resolve(&Bad_ts) == NULL);
  CHECK(strstr(rgaps_ts_last_error(), "beyond") != NULL);

  const rgaps_ts *rq = NULL, *rs = NULL;
  CHECK(rgaps_ts_resolve_service(&AddTwoInts_ts, &rq, &rs) == rq && rq && rs);
  CHECK(rq == resolve(&Req_ts) && rs == resolve(&Resp_ts));
  CHECK(rgaps_ts_type_name(rq, name, sizeof name) && strcmp(name, "example_interfaces/srv/AddTwoInts_Request") == 0);
  const rgaps_ts *rq2 = NULL, *rs2 = NULL;
  CHECK(rgaps_ts_resolve_service(&AddTwoInts_ts_c, &rq2, &rs2) == rq && rs2 == rs);
  rq2 = rs2 = NULL;
  CHECK(rgaps_ts_resolve_service(&AddTwoInts_ts_msgs, &rq2, &rs2) == rq && rs2 == rs);
  CHECK(rgaps_ts_resolve_service(NULL, &rq2, &rs2) == NULL);
  tu_pass("resolve");
}

static void test_plain(void) {
  CHECK(rgaps_ts_is_plain(resolve(&Time_ts)) && rgaps_ts_plain_size(resolve(&Time_ts)) == 8);
  CHECK(rgaps_ts_is_plain(resolve(&Pose_ts)) && rgaps_ts_plain_size(resolve(&Pose_ts)) == 56);
  CHECK(rgaps_ts_is_plain(resolve(&Padded_ts)) && rgaps_ts_plain_size(resolve(&Padded_ts)) == 9);
  /* lead at 0, p[k] at 8 + 16k (x) and 16 + 16k (a), tail at 56 */
  CHECK(rgaps_ts_is_plain(resolve(&PaddedArray_ts)) && rgaps_ts_plain_size(resolve(&PaddedArray_ts)) == 64);
  /* but an int16 after the array sits at 10 on the wire, 16 in memory */
  CHECK(!rgaps_ts_is_plain(resolve(&PaddedShort_ts)));
  CHECK(rgaps_ts_is_plain(resolve(&Inner_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&Outer_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&LongD_ts)));
  CHECK(rgaps_ts_is_plain(resolve(&Bools_ts)) && rgaps_ts_plain_size(resolve(&Bools_ts)) == 6);
  CHECK(!rgaps_ts_is_plain(resolve(&Header_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&Image_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&AllTypes_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&PoseArray_ts)));
  CHECK(rgaps_ts_plain_size(resolve(&PoseArray_ts)) == 0);

  /* plain means: the payload is the memory */
  const rosidl_message_type_support_t *plains[] = {&Time_ts, &Pose_ts, &PaddedArray_ts, &Bools_ts, &Inner_ts};
  for (size_t k = 0; k < sizeof plains / sizeof plains[0]; k++) {
    const rgaps_ts *t = resolve(plains[k]);
    unsigned char *m = tu_new_msg(t);
    for (size_t i = 0; i < rgaps_ts_plain_size(t); i++) m[i] = (unsigned char)(i * 13 + 1);
    /* padding and bools as a valid message has them */
    unsigned char *ser = NULL;
    size_t n = 0;
    if (plains[k] == &Bools_ts) {
      Bools *b = (Bools *)m;
      b->a = true, b->b[0] = false, b->b[1] = true, b->b[2] = false;
    } else if (plains[k] == &PaddedArray_ts || plains[k] == &Inner_ts) {
      unsigned char *z = tu_new_msg(t);
      /* write the fields through a round trip so padding is what CDR says */
      memcpy(z, m, rgaps_ts_size_of(t));
      ser = tu_serialize(t, z, &n);
      tu_free_msg(t, z);
      memset(m, 0, rgaps_ts_size_of(t));
      CHECK_RC(rgaps_ts_deserialize(t, ser, n, m), 0);
      free(ser);
    }
    ser = tu_serialize(t, m, &n);
    CHECK(ser && n == 4 + rgaps_ts_plain_size(t) && memcmp(ser + 4, m, n - 4) == 0);
    free(ser);
    tu_free_msg(t, m);
  }
  tu_pass("plain");
}

static void test_alltypes_hostile(void) {
  const rgaps_ts *t = resolve(&AllTypes_ts);
  AllTypes *m = tu_new_msg(t);
  AllTypes_fill(m);
  size_t n = 0;
  unsigned char *good = tu_serialize(t, m, &n);
  CHECK(good != NULL);
  tu_check_truncations(t, good, n);
  tu_check_headers(t, good, n);
  tu_fuzz(t, good, n, 7, 3000);

  /* serialising values beyond their bounds is refused */
  size_t used;
  unsigned char buf[4096];
  str_set(&m->sb, "abcdef");
  CHECK_RC(rgaps_ts_serialize(t, m, buf, sizeof buf, &used), RGAPS_TS_ERROR);
  CHECK(strstr(rgaps_ts_last_error(), "sb") != NULL);
  str_set(&m->sb, "abcde");
  SEQ_SET(m->bi32, int32_t, 1, 2, 3, 4);
  CHECK_RC(rgaps_ts_serialize(t, m, buf, sizeof buf, &used), RGAPS_TS_ERROR);
  SEQ_SET(m->bi32, int32_t, 7, 8, 9);
  str_set(&m->bss.data[1], "defg");
  CHECK_RC(rgaps_ts_serialize(t, m, buf, sizeof buf, &used), RGAPS_TS_ERROR);
  str_set(&m->bss.data[1], "de");
  uint16_t five[5] = {1, 2, 3, 4, 5};
  wstr_set(&m->wsb, five, 5);
  CHECK_RC(rgaps_ts_serialize(t, m, buf, sizeof buf, &used), RGAPS_TS_ERROR);
  wstr_set(&m->wsb, W_WXYZ, 4);
  CHECK_RC(rgaps_ts_serialize(t, m, buf, sizeof buf, &used), 0);
  CHECK(used == n && memcmp(buf, good, n) == 0);
  /* a NULL data with size 0 is the empty string; with size > 0 an error */
  free(m->s.data);
  m->s.data = NULL;
  m->s.size = 0;
  CHECK_RC(rgaps_ts_serialized_size(t, m, &used), 0);
  m->s.size = 3;
  CHECK_RC(rgaps_ts_serialized_size(t, m, &used), RGAPS_TS_ERROR);
  m->s.size = 0;
  str_init(&m->s);

  /* hostile lengths: the string "hello, wörld" (14 bytes + NUL) */
  size_t at = tu_find_u32(good, n, 4, 14);
  tu_expect_bad_u32(t, good, n, at, 0xFFFFFFFFu, "string length 2^32-1");
  tu_expect_bad_u32(t, good, n, at, (unsigned)(n - at - 4 + 1), "string length one past the end");
  tu_expect_bad_u32(t, good, n, at, 13, "string not NUL-terminated");
  /* sb "abcde" has length 6: 7 would exceed the bound (and misparse) */
  size_t at_sb = tu_find_u32(good, n, at + 4, 6);
  tu_expect_bad_u32(t, good, n, at_sb, 7, "bounded string over its bound");
  /* ws has 5 units: a count beyond the bytes left */
  size_t at_ws = tu_find_u32(good, n, at_sb + 4, 5);
  tu_expect_bad_u32(t, good, n, at_ws, 0x40000000u, "wstring count huge");
  /* its first unit is 'h' (0x68): a unit above 0xFFFF */
  tu_expect_bad_u32(t, good, n, at_ws + 4, 0x10068u, "wstring unit above 0xFFFF");
  /* wsb "wxyz" has 4 units, bound 4 */
  size_t at_wsb = tu_find_u32(good, n, at_ws + 4, 4);
  CHECK(good[at_wsb + 4] == 'w');
  /* su8 {9,8,7}: count 3 followed by 09 08 07 */
  size_t at_su8 = (size_t)-1;
  for (size_t i = 4; i + 7 <= n; i++)
    if ((i - 4) % 4 == 0 && good[i] == 3 && !good[i + 1] && !good[i + 2] && !good[i + 3] && good[i + 4] == 9 &&
        good[i + 5] == 8 && good[i + 6] == 7) {
      at_su8 = i;
      break;
    }
  tu_expect_bad_u32(t, good, n, at_su8, 0xFFFFFFFFu, "sequence count 2^32-1");
  tu_expect_bad_u32(t, good, n, at_su8, RGAPS_TS_MAX_LENGTH + 1, "sequence count over the limit");
  tu_expect_bad_u32(t, good, n, at_su8, (unsigned)(n - at_su8 - 4 + 1), "sequence count one past the end");
  /* bi32 {7,8,9}: count 3 then 7 */
  size_t at_bi = (size_t)-1;
  for (size_t i = 4; i + 8 <= n; i++)
    if ((i - 4) % 4 == 0 && good[i] == 3 && !good[i + 1] && !good[i + 2] && !good[i + 3] && good[i + 4] == 7 &&
        !good[i + 5]) {
      at_bi = i;
      break;
    }
  tu_expect_bad_u32(t, good, n, at_bi, 4, "bounded sequence over its bound");
  /* a string length of 0 is accepted as "" (as rmw_cyclonedds and Fast-CDR
   * do): a Header whose frame_id has length 0 and no bytes */
  {
    const rgaps_ts *th = resolve(&Header_ts);
    static const unsigned char hb[] = {0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
    Header *h = tu_new_msg(th);
    str_set(&h->frame_id, "not empty");
    CHECK_RC(rgaps_ts_deserialize(th, hb, sizeof hb, h), 0);
    CHECK(str_eq(&h->frame_id, "") && h->stamp.sec == 1 && h->stamp.nanosec == 2);
    tu_free_msg(th, h);
  }

  free(good);
  tu_free_msg(t, m);
  tu_pass("alltypes hostile");
}

static void test_resize_paths(void) {
  /* a message deserialised over one that holds more, and less */
  const rgaps_ts *t = resolve(&Nested_ts);
  Nested *big = tu_new_msg(t), *small = tu_new_msg(t);
  Nested_fill(big);
  size_t nb, ns;
  unsigned char *bb = tu_serialize(t, big, &nb);
  unsigned char *sb = tu_serialize(t, small, &ns);
  CHECK_RC(rgaps_ts_deserialize(t, sb, ns, big), 0); /* shrink: headers finalised */
  CHECK(big->headers.size == 0 && big->times.size == 0 && big->arrays[0].poses.size == 0);
  CHECK_RC(rgaps_ts_deserialize(t, bb, nb, small), 0); /* grow: new headers initialised */
  CHECK(Nested_check(small));
  CHECK_RC(rgaps_ts_deserialize(t, bb, nb, big), 0);
  CHECK(Nested_check(big));
  tu_check_truncations(t, bb, nb);
  tu_check_headers(t, bb, nb);
  tu_fuzz(t, bb, nb, 11, 3000);
  free(bb);
  free(sb);
  tu_free_msg(t, big);
  tu_free_msg(t, small);

  const rgaps_ts *ti = resolve(&Image_ts);
  Image *img = tu_new_msg(ti);
  Image_fill(img);
  size_t ni;
  unsigned char *ib = tu_serialize(ti, img, &ni);
  tu_check_truncations(ti, ib, ni);
  tu_fuzz(ti, ib, ni, 5, 1000);
  free(ib);
  tu_free_msg(ti, img);
  tu_pass("resize paths");
}

/* Byte members: the default rule and its errors, the detached invariants
 * with the byte field last (Image), in the middle (Cloud) and bounded
 * (Blob), and the refusals. */
static void test_detached(void) {
  const rgaps_ts *ti = resolve(&Image_ts), *tc = resolve(&Cloud_ts), *tb = resolve(&Blob_ts);
  tu_check_byte_members(ti, tc, tb, resolve(&AllTypes_ts), resolve(&Time_ts));
  Image *img = tu_new_msg(ti);
  Image_fill(img);
  tu_check_detached_lengths(ti, img, 6, 0);
  tu_check_detached_errors(ti, img, 7, 3);
  tu_free_msg(ti, img);
  Cloud *c = tu_new_msg(tc);
  Cloud_fill(c);
  tu_check_detached_lengths(tc, c, 2, 0);
  tu_check_detached_lengths(tc, c, 6, 0);
  tu_check_detached_errors(tc, c, 8, 7);
  tu_free_msg(tc, c);
  Blob *b = tu_new_msg(tb);
  b->kind = 3;
  b->after = 1.25;
  tu_check_detached_lengths(tb, b, 1, 16);
  tu_free_msg(tb, b);
  tu_pass("detached byte members");
}

/* Threads resolving the same (not yet cached) types and serialising at
 * once; each thread's last error stays its own. Run under ThreadSanitizer
 * by the Go test. */
static void *thread_main(void *arg) {
  int id = (int)(intptr_t)arg;
  long bad = 0;
  for (int round = 0; round < 200; round++) {
    const rgaps_ts *t = rgaps_ts_resolve(id % 2 ? &Nested_ts : &PoseArray_ts_c);
    const rgaps_ts *img = rgaps_ts_resolve(&Image_ts);
    if (!t || !img) {
      bad++;
      continue;
    }
    void *m = tu_new_msg(t);
    if (id % 2)
      Nested_fill(m);
    else
      PoseArray_fill(m);
    size_t n = 0;
    unsigned char *b = tu_serialize(t, m, &n);
    void *back = tu_new_msg(t);
    if (!b || rgaps_ts_deserialize(t, b, n, back) != 0 ||
        !(id % 2 ? Nested_check(back) : PoseArray_check(back)))
      bad++;
    /* an error of this thread's own: a buffer id + 5 bytes short */
    size_t used;
    if (b && (rgaps_ts_serialize(t, m, b, n > (size_t)id + 5 ? n - id - 5 : 0, &used) != RGAPS_TS_ERROR ||
              used != n))
      bad++;
    char want[64];
    snprintf(want, sizeof want, "buffer of %zu bytes", n > (size_t)id + 5 ? n - id - 5 : 0);
    if (!strstr(rgaps_ts_last_error(), want)) bad++;
    free(b);
    tu_free_msg(t, back);
    tu_free_msg(t, m);
  }
  return (void *)bad;
}

static void test_threads(void) {
  pthread_t th[8];
  for (int i = 0; i < 8; i++) CHECK(pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i) == 0);
  for (int i = 0; i < 8; i++) {
    void *bad = NULL;
    pthread_join(th[i], &bad);
    CHECK(bad == NULL);
  }
  CHECK(rgaps_ts_resolve(&Nested_ts) == rgaps_ts_resolve(&Nested_ts));
  tu_pass("threads");
}

/* ---------------------------------------------------------------- vectors */

typedef struct vector {
  const char *name;
  const rosidl_message_type_support_t *ts;
  void (*fill)(void *);
  int (*check)(const void *);
} vector;

static void fill_all(void *m) { AllTypes_fill(m); }
static int check_all(const void *m) { return AllTypes_check_filled(m); }
static void fill_none(void *m) { (void)m; }
static int check_zero(const void *m) { return AllTypes_check_zero(m); }
static void fill_image(void *m) { Image_fill(m); }
static int check_image(const void *m) { return Image_check(m); }
static void fill_posearray(void *m) { PoseArray_fill(m); }
static int check_posearray(const void *m) { return PoseArray_check(m); }
static void fill_nested(void *m) { Nested_fill(m); }
static int check_nested(const void *m) { return Nested_check(m); }
static void fill_padded(void *p) {
  PaddedArray *m = p;
  m->lead = 7;
  for (int i = 0; i < 3; i++) m->p[i].x = i - 1.5, m->p[i].a = (uint8_t)(0xF0 + i);
  m->tail = -2;
}
static int check_padded(const void *p) {
  const PaddedArray *m = p;
  int ok = m->lead == 7 && m->tail == -2;
  for (int i = 0; ok && i < 3; i++) ok = m->p[i].x == i - 1.5 && m->p[i].a == 0xF0 + i;
  return ok;
}
static void fill_outer(void *p) {
  Outer *m = p;
  m->a = 1, m->b.x = 2, m->b.y = 0x03040506;
}
static int check_outer(const void *p) {
  const Outer *m = p;
  return m->a == 1 && m->b.x == 2 && m->b.y == 0x03040506;
}

static const vector vectors[] = {
    {"all", &AllTypes_ts, fill_all, check_all},
    {"zero", &AllTypes_ts, fill_none, check_zero},
    {"image", &Image_ts, fill_image, check_image},
    {"posearray", &PoseArray_ts, fill_posearray, check_posearray},
    {"nested", &Nested_ts, fill_nested, check_nested},
    {"padded", &PaddedArray_ts, fill_padded, check_padded},
    {"outer", &Outer_ts, fill_outer, check_outer},
};

static void run_vectors(const char *dir, const char *prefix) {
  for (size_t k = 0; k < sizeof vectors / sizeof vectors[0]; k++) {
    const vector *v = &vectors[k];
    const rgaps_ts *t = resolve(v->ts);
    void *m = tu_new_msg(t);
    v->fill(m);
    size_t n = 0;
    unsigned char *b = tu_serialize(t, m, &n);
    CHECK(b != NULL);
    char name[256];
    snprintf(name, sizeof name, "%s_%s.cdr", prefix, v->name);
    CHECK(b && tu_write_file(dir, name, b, n) == 0);
    free(b);
    tu_free_msg(t, m);

    const char *variants[2] = {"go_%s.cdr", "go_%s_be.cdr"};
    for (int be = 0; be < 2; be++) {
      snprintf(name, sizeof name, variants[be], v->name);
      size_t gn = 0;
      unsigned char *g = tu_read_file(dir, name, &gn);
      if (!g) {
        tu_failures++;
        fprintf(stderr, "%s: missing\n", name);
        continue;
      }
      void *d = tu_new_msg(t);
      int rc = rgaps_ts_deserialize(t, g, gn, d);
      if (rc != 0 || !v->check(d)) {
        tu_failures++;
        fprintf(stderr, "%s: deserialise rc %d (%s), fields %s\n", name, rc, rgaps_ts_last_error(),
                rc == 0 ? "differ" : "-");
      }
      if (!be) {
        /* and back to exactly the Go bytes */
        size_t n2 = 0;
        unsigned char *again = tu_serialize(t, d, &n2);
        if (!again || n2 != gn || memcmp(again, g, gn) != 0) {
          tu_failures++;
          fprintf(stderr, "%s: reserialised bytes differ\n", name);
          if (again) tu_hex(stderr, again, n2);
        }
        free(again);
      }
      tu_free_msg(t, d);
      free(g);
    }
    printf("%s vector %s\n", tu_failures ? "FAILING" : "PASS", v->name);
  }
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "selftest") == 0) {
    test_resolve();
    test_plain();
    test_alltypes_hostile();
    test_resize_paths();
  } else if (argc >= 2 && strcmp(argv[1], "detached") == 0) {
    test_detached();
  } else if (argc >= 2 && strcmp(argv[1], "threads") == 0) {
    test_threads();
  } else if (argc >= 3 && strcmp(argv[1], "vectors") == 0) {
    run_vectors(argv[2], "c");
  } else {
    fprintf(stderr, "usage: %s selftest | detached | threads | vectors DIR\n", argv[0]);
    return 2;
  }
  if (tu_failures) {
    fprintf(stderr, "%d check(s) failed\n", tu_failures);
    return 1;
  }
  printf("OK\n");
  return 0;
}

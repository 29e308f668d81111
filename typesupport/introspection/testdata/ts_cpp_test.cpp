// ts_cpp_test.cpp — tests of the introspection walkers (../ts_cdr.c) with C++ messages (std::string,
// std::u16string, std::array, std::vector, std::vector<bool>) and
// hand-written rosidl_typesupport_introspection_cpp tables with the
// accessor functions rosidl generates (size, get_const, get, fetch, assign,
// resize; no get functions for a bool sequence).
//
//   ts_cpp_test selftest      resolution, bounds, hostile input
//   ts_cpp_test detached      byte members and the detached (de)serialisation
//   ts_cpp_test vectors DIR   writes DIR/cpp_<name>.cdr and checks that the
//                             Go encoder's DIR/go_<name>.cdr (and _be)
//                             deserialise to the same values
//
// Built by test/ts_test.go.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "ts_test_util.h"

// ------------------------------------------------------ accessor functions

template <class C>
size_t f_size(const void *p) {
  return static_cast<const C *>(p)->size();
}
template <class C>
const void *f_getc(const void *p, size_t i) {
  return &(*static_cast<const C *>(p))[i];
}
template <class C>
void *f_get(void *p, size_t i) {
  return &(*static_cast<C *>(p))[i];
}
template <class C>
void f_fetch(const void *p, size_t i, void *out) {
  *static_cast<typename C::value_type *>(out) = (*static_cast<const C *>(p))[i];
}
template <class C>
void f_assign(void *p, size_t i, const void *in) {
  (*static_cast<C *>(p))[i] = *static_cast<const typename C::value_type *>(in);
}
template <class C>
void f_resize(void *p, size_t n) {
  static_cast<C *>(p)->resize(n);
}
template <class T>
void f_init(void *p, int) {
  new (p) T();
}
template <class T>
void f_fini(void *p) {
  static_cast<T *>(p)->~T();
}

using Member = rgaps_introspection_cpp_MessageMember;
using Members = rgaps_introspection_cpp_MessageMembers;

#define TYPE_OF(T, f) decltype(T::f)
#define CSCALAR(T, f, tid, sbound, nested) \
  {#f, tid, sbound, nested, false, false, 0, false, (uint32_t)offsetof(T, f), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}
#define CARRAY(T, f, tid, n, sbound, nested)                                                                   \
  {#f, tid, sbound, nested, false, true, n, false, (uint32_t)offsetof(T, f), nullptr, f_size<TYPE_OF(T, f)>, \
   f_getc<TYPE_OF(T, f)>, f_get<TYPE_OF(T, f)>, f_fetch<TYPE_OF(T, f)>, f_assign<TYPE_OF(T, f)>, nullptr}
#define CSEQ(T, f, tid, bound, sbound, nested)                                                                   \
  {#f, tid, sbound, nested, false, true, bound, bound != 0, (uint32_t)offsetof(T, f), nullptr,                 \
   f_size<TYPE_OF(T, f)>, f_getc<TYPE_OF(T, f)>, f_get<TYPE_OF(T, f)>, f_fetch<TYPE_OF(T, f)>,                  \
   f_assign<TYPE_OF(T, f)>, f_resize<TYPE_OF(T, f)>}
#define CVBOOL(T, f)                                                                                             \
  {#f, RGAPS_TYPE_BOOLEAN, 0, nullptr, false, true, 0, false, (uint32_t)offsetof(T, f), nullptr,               \
   f_size<TYPE_OF(T, f)>, nullptr, nullptr, f_fetch<TYPE_OF(T, f)>, f_assign<TYPE_OF(T, f)>,                    \
   f_resize<TYPE_OF(T, f)>}
#define CMEMBERS(ns, T) \
  {ns, #T, (uint32_t)(sizeof(T##_members) / sizeof(T##_members[0])), sizeof(T), false, T##_members, f_init<T>, f_fini<T>}
#define CHANDLE(T) \
  {RGAPS_TS_ID_INTROSPECTION_CPP, &T##_mm, nullptr, nullptr, nullptr, nullptr}

// ----------------------------------------------------------------- AllTypes

struct AllTypes {
  bool b = false;
  uint8_t o = 0;
  unsigned char c = 0;
  char16_t wc = 0;
  float f = 0;
  double d = 0;
  long double ld = 0;
  int8_t i8 = 0;
  uint8_t u8 = 0;
  int16_t i16 = 0;
  uint16_t u16 = 0;
  int32_t i32 = 0;
  uint32_t u32 = 0;
  int64_t i64 = 0;
  uint64_t u64 = 0;
  std::string s, sb;
  std::u16string ws, wsb;
  std::array<int32_t, 3> ai32{};
  std::array<bool, 3> ab{};
  std::array<double, 2> ad{};
  std::array<std::string, 2> as;
  std::array<uint8_t, 5> au8{};
  std::array<std::u16string, 2> aws;
  std::vector<uint8_t> su8;
  std::vector<int16_t> si16;
  std::vector<double> sd;
  std::vector<bool> sbool;
  std::vector<float> sf;
  std::vector<uint64_t> su64;
  std::vector<std::string> ss;
  std::vector<std::u16string> sws;
  std::vector<unsigned char> sc;
  std::vector<char16_t> swc;
  std::vector<long double> sld;
  std::vector<int32_t> bi32;
  std::vector<std::string> bss;
  std::vector<double> empty_d;
  uint8_t tail = 0;
  bool operator==(const AllTypes &) const = default;
};

static const Member AllTypes_members[] = {
    CSCALAR(AllTypes, b, RGAPS_TYPE_BOOLEAN, 0, nullptr),
    CSCALAR(AllTypes, o, RGAPS_TYPE_OCTET, 0, nullptr),
    CSCALAR(AllTypes, c, RGAPS_TYPE_CHAR, 0, nullptr),
    CSCALAR(AllTypes, wc, RGAPS_TYPE_WCHAR, 0, nullptr),
    CSCALAR(AllTypes, f, RGAPS_TYPE_FLOAT, 0, nullptr),
    CSCALAR(AllTypes, d, RGAPS_TYPE_DOUBLE, 0, nullptr),
    CSCALAR(AllTypes, ld, RGAPS_TYPE_LONG_DOUBLE, 0, nullptr),
    CSCALAR(AllTypes, i8, RGAPS_TYPE_INT8, 0, nullptr),
    CSCALAR(AllTypes, u8, RGAPS_TYPE_UINT8, 0, nullptr),
    CSCALAR(AllTypes, i16, RGAPS_TYPE_INT16, 0, nullptr),
    CSCALAR(AllTypes, u16, RGAPS_TYPE_UINT16, 0, nullptr),
    CSCALAR(AllTypes, i32, RGAPS_TYPE_INT32, 0, nullptr),
    CSCALAR(AllTypes, u32, RGAPS_TYPE_UINT32, 0, nullptr),
    CSCALAR(AllTypes, i64, RGAPS_TYPE_INT64, 0, nullptr),
    CSCALAR(AllTypes, u64, RGAPS_TYPE_UINT64, 0, nullptr),
    CSCALAR(AllTypes, s, RGAPS_TYPE_STRING, 0, nullptr),
    CSCALAR(AllTypes, sb, RGAPS_TYPE_STRING, 5, nullptr),
    CSCALAR(AllTypes, ws, RGAPS_TYPE_WSTRING, 0, nullptr),
    CSCALAR(AllTypes, wsb, RGAPS_TYPE_WSTRING, 4, nullptr),
    CARRAY(AllTypes, ai32, RGAPS_TYPE_INT32, 3, 0, nullptr),
    CARRAY(AllTypes, ab, RGAPS_TYPE_BOOLEAN, 3, 0, nullptr),
    CARRAY(AllTypes, ad, RGAPS_TYPE_DOUBLE, 2, 0, nullptr),
    CARRAY(AllTypes, as, RGAPS_TYPE_STRING, 2, 0, nullptr),
    CARRAY(AllTypes, au8, RGAPS_TYPE_UINT8, 5, 0, nullptr),
    CARRAY(AllTypes, aws, RGAPS_TYPE_WSTRING, 2, 0, nullptr),
    CSEQ(AllTypes, su8, RGAPS_TYPE_UINT8, 0, 0, nullptr),
    CSEQ(AllTypes, si16, RGAPS_TYPE_INT16, 0, 0, nullptr),
    CSEQ(AllTypes, sd, RGAPS_TYPE_DOUBLE, 0, 0, nullptr),
    CVBOOL(AllTypes, sbool),
    CSEQ(AllTypes, sf, RGAPS_TYPE_FLOAT, 0, 0, nullptr),
    CSEQ(AllTypes, su64, RGAPS_TYPE_UINT64, 0, 0, nullptr),
    CSEQ(AllTypes, ss, RGAPS_TYPE_STRING, 0, 0, nullptr),
    CSEQ(AllTypes, sws, RGAPS_TYPE_WSTRING, 0, 0, nullptr),
    CSEQ(AllTypes, sc, RGAPS_TYPE_CHAR, 0, 0, nullptr),
    CSEQ(AllTypes, swc, RGAPS_TYPE_WCHAR, 0, 0, nullptr),
    CSEQ(AllTypes, sld, RGAPS_TYPE_LONG_DOUBLE, 0, 0, nullptr),
    CSEQ(AllTypes, bi32, RGAPS_TYPE_INT32, 3, 0, nullptr),
    CSEQ(AllTypes, bss, RGAPS_TYPE_STRING, 2, 3, nullptr),
    CSEQ(AllTypes, empty_d, RGAPS_TYPE_DOUBLE, 0, 0, nullptr),
    CSCALAR(AllTypes, tail, RGAPS_TYPE_UINT8, 0, nullptr),
};
static const Members AllTypes_mm = CMEMBERS("rgaps_test::msg", AllTypes);
static const rosidl_message_type_support_t AllTypes_ts = CHANDLE(AllTypes);

static AllTypes all_filled() {
  AllTypes m;
  m.b = true;
  m.o = 0xAB;
  m.c = 'A';
  m.wc = 0x20AC;
  m.f = 1.5f;
  m.d = -2.25;
  m.ld = 3.0L;
  m.i8 = -5;
  m.u8 = 250;
  m.i16 = -300;
  m.u16 = 60000;
  m.i32 = -70000;
  m.u32 = 4000000000u;
  m.i64 = -5000000000LL;
  m.u64 = 18000000000000000000ULL;
  m.s = "hello, w\xc3\xb6rld";
  m.sb = "abcde";
  m.ws = u"h\u00e9\u20ac\U0001F600";
  m.wsb = u"wxyz";
  m.ai32 = {1, -2, 3};
  m.ab = {true, false, true};
  m.ad = {0.5, -0.25};
  m.as = {"", "x"};
  m.au8 = {1, 2, 3, 4, 5};
  m.aws = {u"a", u""};
  m.su8 = {9, 8, 7};
  m.si16 = {-1, 2, -3, 4};
  m.sd = {1e10, -1e-10};
  m.sbool = {false, true, true};
  m.sf = {0.125f};
  m.su64 = {1, UINT64_MAX};
  m.ss = {"one", "", "three"};
  m.sws = {u"\u03c9"};
  m.sc = {'x', 'y'};
  m.swc = {0x3A9, 0x41};
  m.sld = {-0.5L};
  m.bi32 = {7, 8, 9};
  m.bss = {"abc", "de"};
  m.tail = 0x5A;
  return m;
}

// ------------------------------------------------------------------ nested

struct Time {
  int32_t sec = 0;
  uint32_t nanosec = 0;
  bool operator==(const Time &) const = default;
};
static const Member Time_members[] = {CSCALAR(Time, sec, RGAPS_TYPE_INT32, 0, nullptr),
                                      CSCALAR(Time, nanosec, RGAPS_TYPE_UINT32, 0, nullptr)};
static const Members Time_mm = CMEMBERS("builtin_interfaces::msg", Time);
static const rosidl_message_type_support_t Time_ts = CHANDLE(Time);

struct Header {
  Time stamp;
  std::string frame_id;
  bool operator==(const Header &) const = default;
};
static const Member Header_members[] = {CSCALAR(Header, stamp, RGAPS_TYPE_MESSAGE, 0, &Time_ts),
                                        CSCALAR(Header, frame_id, RGAPS_TYPE_STRING, 0, nullptr)};
static const Members Header_mm = CMEMBERS("std_msgs::msg", Header);
static const rosidl_message_type_support_t Header_ts = CHANDLE(Header);

struct Image {
  Header header;
  uint32_t height = 0, width = 0;
  std::string encoding;
  uint8_t is_bigendian = 0;
  uint32_t step = 0;
  std::vector<uint8_t> data;
  bool operator==(const Image &) const = default;
};
static const Member Image_members[] = {
    CSCALAR(Image, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts),
    CSCALAR(Image, height, RGAPS_TYPE_UINT32, 0, nullptr),
    CSCALAR(Image, width, RGAPS_TYPE_UINT32, 0, nullptr),
    CSCALAR(Image, encoding, RGAPS_TYPE_STRING, 0, nullptr),
    CSCALAR(Image, is_bigendian, RGAPS_TYPE_UINT8, 0, nullptr),
    CSCALAR(Image, step, RGAPS_TYPE_UINT32, 0, nullptr),
    CSEQ(Image, data, RGAPS_TYPE_UINT8, 0, 0, nullptr),
};
static const Members Image_mm = CMEMBERS("sensor_msgs::msg", Image);
static const rosidl_message_type_support_t Image_ts = CHANDLE(Image);

// PointCloud2-like (the byte field in the middle) and a bounded octet
// sequence: ts_c_test.c's Cloud and Blob.
struct Cloud {
  Header header;
  uint32_t height = 0;
  std::vector<uint8_t> data;
  uint32_t row_step = 0;
  double scale = 0;
  bool is_dense = false;
  std::vector<unsigned char> label;
  std::vector<int8_t> samples;
  bool operator==(const Cloud &) const = default;
};
static const Member Cloud_members[] = {
    CSCALAR(Cloud, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts),
    CSCALAR(Cloud, height, RGAPS_TYPE_UINT32, 0, nullptr),
    CSEQ(Cloud, data, RGAPS_TYPE_UINT8, 0, 0, nullptr),
    CSCALAR(Cloud, row_step, RGAPS_TYPE_UINT32, 0, nullptr),
    CSCALAR(Cloud, scale, RGAPS_TYPE_DOUBLE, 0, nullptr),
    CSCALAR(Cloud, is_dense, RGAPS_TYPE_BOOLEAN, 0, nullptr),
    CSEQ(Cloud, label, RGAPS_TYPE_CHAR, 0, 0, nullptr),
    CSEQ(Cloud, samples, RGAPS_TYPE_INT8, 0, 0, nullptr),
};
static const Members Cloud_mm = CMEMBERS("rgaps_test::msg", Cloud);
static const rosidl_message_type_support_t Cloud_ts = CHANDLE(Cloud);

struct Blob {
  uint8_t kind = 0;
  std::vector<uint8_t> blob;
  double after = 0;
  bool operator==(const Blob &) const = default;
};
static const Member Blob_members[] = {
    CSCALAR(Blob, kind, RGAPS_TYPE_UINT8, 0, nullptr),
    CSEQ(Blob, blob, RGAPS_TYPE_OCTET, 16, 0, nullptr),
    CSCALAR(Blob, after, RGAPS_TYPE_DOUBLE, 0, nullptr),
};
static const Members Blob_mm = CMEMBERS("rgaps_test::msg", Blob);
static const rosidl_message_type_support_t Blob_ts = CHANDLE(Blob);

static Image image_filled() {
  Image m;
  m.header.stamp = {1700000000, 123456789};
  m.header.frame_id = "camera";
  m.height = 10;
  m.width = 20;
  m.encoding = "rgb8";
  m.step = 60;
  m.data.resize(600);
  for (size_t i = 0; i < m.data.size(); i++) m.data[i] = (uint8_t)(i * 7 + 3);
  return m;
}

struct Point {
  double x = 0, y = 0, z = 0;
  bool operator==(const Point &) const = default;
};
struct Quaternion {
  double x = 0, y = 0, z = 0, w = 1;
  bool operator==(const Quaternion &) const = default;
};
struct Pose {
  Point position;
  Quaternion orientation;
  bool operator==(const Pose &) const = default;
};
static const Member Point_members[] = {CSCALAR(Point, x, RGAPS_TYPE_DOUBLE, 0, nullptr),
                                       CSCALAR(Point, y, RGAPS_TYPE_DOUBLE, 0, nullptr),
                                       CSCALAR(Point, z, RGAPS_TYPE_DOUBLE, 0, nullptr)};
static const Member Quaternion_members[] = {
    CSCALAR(Quaternion, x, RGAPS_TYPE_DOUBLE, 0, nullptr), CSCALAR(Quaternion, y, RGAPS_TYPE_DOUBLE, 0, nullptr),
    CSCALAR(Quaternion, z, RGAPS_TYPE_DOUBLE, 0, nullptr), CSCALAR(Quaternion, w, RGAPS_TYPE_DOUBLE, 0, nullptr)};
static const Members Point_mm = CMEMBERS("geometry_msgs::msg", Point);
static const Members Quaternion_mm = CMEMBERS("geometry_msgs::msg", Quaternion);
static const rosidl_message_type_support_t Point_ts = CHANDLE(Point);
static const rosidl_message_type_support_t Quaternion_ts = CHANDLE(Quaternion);
static const Member Pose_members[] = {CSCALAR(Pose, position, RGAPS_TYPE_MESSAGE, 0, &Point_ts),
                                      CSCALAR(Pose, orientation, RGAPS_TYPE_MESSAGE, 0, &Quaternion_ts)};
static const Members Pose_mm = CMEMBERS("geometry_msgs::msg", Pose);
static const rosidl_message_type_support_t Pose_ts = CHANDLE(Pose);

struct PoseArray {
  Header header;
  std::vector<Pose> poses;
  bool operator==(const PoseArray &) const = default;
};
static const Member PoseArray_members[] = {CSCALAR(PoseArray, header, RGAPS_TYPE_MESSAGE, 0, &Header_ts),
                                           CSEQ(PoseArray, poses, RGAPS_TYPE_MESSAGE, 0, 0, &Pose_ts)};
static const Members PoseArray_mm = CMEMBERS("geometry_msgs::msg", PoseArray);
static const rosidl_message_type_support_t PoseArray_ts = CHANDLE(PoseArray);

static PoseArray posearray_filled() {
  PoseArray m;
  m.header.stamp = {-1, 999999999};
  m.header.frame_id = "map";
  m.poses.resize(3);
  for (int i = 0; i < 3; i++) {
    m.poses[i].position = {i + 0.5, (double)-i, i * 100.0};
    m.poses[i].orientation.z = 0.25 * i;
  }
  return m;
}

struct Nested {
  uint8_t lead = 0;
  std::array<Header, 2> pair;
  std::vector<Time> times;  // Time[<=3]
  std::vector<Header> headers;
  Pose pose;
  std::array<PoseArray, 1> arrays;
  uint16_t tail = 0;
  bool operator==(const Nested &) const = default;
};
static const Member Nested_members[] = {
    CSCALAR(Nested, lead, RGAPS_TYPE_UINT8, 0, nullptr),
    CARRAY(Nested, pair, RGAPS_TYPE_MESSAGE, 2, 0, &Header_ts),
    CSEQ(Nested, times, RGAPS_TYPE_MESSAGE, 3, 0, &Time_ts),
    CSEQ(Nested, headers, RGAPS_TYPE_MESSAGE, 0, 0, &Header_ts),
    CSCALAR(Nested, pose, RGAPS_TYPE_MESSAGE, 0, &Pose_ts),
    CARRAY(Nested, arrays, RGAPS_TYPE_MESSAGE, 1, 0, &PoseArray_ts),
    CSCALAR(Nested, tail, RGAPS_TYPE_UINT16, 0, nullptr),
};
static const Members Nested_mm = CMEMBERS("rgaps_test::msg", Nested);
static const rosidl_message_type_support_t Nested_ts = CHANDLE(Nested);

static Nested nested_filled() {
  Nested m;
  m.lead = 1;
  m.pair[0].stamp.sec = 10;
  m.pair[0].frame_id = "left";
  m.pair[1].stamp.nanosec = 20;
  m.pair[1].frame_id = "right";
  m.times = {{1, 2}, {3, 4}};
  const char *ids[3] = {"a", "", "ccc"};
  m.headers.resize(3);
  for (int i = 0; i < 3; i++) {
    m.headers[i].stamp.sec = 100 + i;
    m.headers[i].frame_id = ids[i];
  }
  m.pose.position.y = 2.5;
  m.arrays[0] = posearray_filled();
  m.tail = 0xBEEF;
  return m;
}

// A rosidl_typesupport_cpp-style handle that yields the introspection one.
static const rosidl_message_type_support_t *image_func(const rosidl_message_type_support_t *, const char *id) {
  return std::strcmp(id, RGAPS_TS_ID_INTROSPECTION_CPP) == 0 ? &Image_ts : nullptr;
}
static const rosidl_message_type_support_t Image_ts_cpp = {"rosidl_typesupport_cpp", nullptr, image_func,
                                                            nullptr, nullptr, nullptr};

// A service in C++ memory.
struct Req {
  int64_t a = 0, b = 0;
};
struct Resp {
  int64_t sum = 0;
};
static const Member Req_members[] = {CSCALAR(Req, a, RGAPS_TYPE_INT64, 0, nullptr),
                                     CSCALAR(Req, b, RGAPS_TYPE_INT64, 0, nullptr)};
static const Member Resp_members[] = {CSCALAR(Resp, sum, RGAPS_TYPE_INT64, 0, nullptr)};
static const Members Req_mm = {"example_interfaces::srv", "AddTwoInts_Request", 2, sizeof(Req), false,
                               Req_members, f_init<Req>, f_fini<Req>};
static const Members Resp_mm = {"example_interfaces::srv", "AddTwoInts_Response", 1, sizeof(Resp), false,
                                Resp_members, f_init<Resp>, f_fini<Resp>};
static const rgaps_introspection_cpp_ServiceMembers AddTwoInts_sm = {"example_interfaces::srv", "AddTwoInts",
                                                                     &Req_mm, &Resp_mm, nullptr};
static const rosidl_service_type_support_t AddTwoInts_ts = {
    RGAPS_TS_ID_INTROSPECTION_CPP, &AddTwoInts_sm, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
    nullptr, nullptr, nullptr};

// A C++ sequence without a resize function cannot be read into.
struct NoResize {
  std::vector<int32_t> v;
};
static const Member NoResize_members[] = {
    {"v", RGAPS_TYPE_INT32, 0, nullptr, false, true, 0, false, (uint32_t)offsetof(NoResize, v), nullptr,
     f_size<std::vector<int32_t>>, f_getc<std::vector<int32_t>>, f_get<std::vector<int32_t>>, nullptr, nullptr,
     nullptr}};
static const Members NoResize_mm = CMEMBERS("rgaps_test::msg", NoResize);
static const rosidl_message_type_support_t NoResize_ts = CHANDLE(NoResize);

// ------------------------------------------------------------------- tests

static const rgaps_ts *resolve(const rosidl_message_type_support_t *h) {
  const rgaps_ts *t = rgaps_ts_resolve(h);
  if (!t) {
    fprintf(stderr, "resolve failed: %s\n", rgaps_ts_last_error());
    exit(2);
  }
  return t;
}

template <class T>
static std::vector<unsigned char> ser(const rgaps_ts *t, const T &m) {
  size_t n = 0;
  unsigned char *b = tu_serialize(t, &m, &n);
  CHECK(b != nullptr);
  std::vector<unsigned char> v(b, b + (b ? n : 0));
  free(b);
  return v;
}

static void test_resolve() {
  const rgaps_ts *img = resolve(&Image_ts);
  CHECK(rgaps_ts_is_cpp(img) == 1);
  CHECK(rgaps_ts_resolve(&Image_ts_cpp) == img);
  char name[64];
  CHECK(rgaps_ts_type_name(img, name, sizeof name) && std::strcmp(name, "sensor_msgs/msg/Image") == 0);
  CHECK(rgaps_ts_size_of(img) == sizeof(Image));
  CHECK(!rgaps_ts_is_plain(img));
  CHECK(rgaps_ts_is_plain(resolve(&Pose_ts)) && rgaps_ts_plain_size(resolve(&Pose_ts)) == 56);
  CHECK(rgaps_ts_is_plain(resolve(&Time_ts)));
  CHECK(!rgaps_ts_is_plain(resolve(&Header_ts)));
  const rgaps_ts *rq = nullptr, *rs = nullptr;
  CHECK(rgaps_ts_resolve_service(&AddTwoInts_ts, &rq, &rs) == rq && rq && rs);
  CHECK(rgaps_ts_type_name(rs, name, sizeof name) &&
        std::strcmp(name, "example_interfaces/srv/AddTwoInts_Response") == 0);
  Req r;
  r.a = 2;
  r.b = -3;
  auto b = ser(rq, r);
  CHECK(b.size() == 20 && b[4] == 2 && b[12] == 0xFD && b[19] == 0xFF);
  CHECK(rgaps_ts_resolve(&NoResize_ts) == nullptr);
  CHECK(std::strstr(rgaps_ts_last_error(), "resize") != nullptr);
  tu_pass("resolve");
}

// init/fini through the library run the constructor and destructor
static void test_init() {
  const rgaps_ts *t = resolve(&PoseArray_ts);
  void *p = tu_new_msg(t);
  auto *pa = static_cast<PoseArray *>(p);
  CHECK(pa->poses.empty() && pa->header.frame_id.empty());
  pa->poses.resize(100);  // freed by fini (LeakSanitizer would say otherwise)
  pa->header.frame_id.assign(1000, 'x');
  tu_free_msg(t, p);
  const rgaps_ts *q = resolve(&Quaternion_ts);
  void *qp = tu_new_msg(q);
  CHECK(static_cast<Quaternion *>(qp)->w == 1);
  tu_free_msg(q, qp);
  tu_pass("init fini");
}

static void test_hostile() {
  const rgaps_ts *t = resolve(&AllTypes_ts);
  AllTypes m = all_filled();
  auto good = ser(t, m);
  tu_check_truncations(t, good.data(), good.size());
  tu_check_headers(t, good.data(), good.size());
  tu_fuzz(t, good.data(), good.size(), 9, 3000);
  size_t used = 0;
  std::vector<unsigned char> buf(4096);
  m.sb = "abcdef";
  CHECK_RC(rgaps_ts_serialize(t, &m, buf.data(), buf.size(), &used), RGAPS_TS_ERROR);
  m.sb = "abcde";
  m.bi32.push_back(10);
  CHECK_RC(rgaps_ts_serialize(t, &m, buf.data(), buf.size(), &used), RGAPS_TS_ERROR);
  m.bi32.pop_back();
  m.bss.push_back("f");
  CHECK_RC(rgaps_ts_serialize(t, &m, buf.data(), buf.size(), &used), RGAPS_TS_ERROR);
  m.bss.pop_back();
  m.wsb = u"12345";
  CHECK_RC(rgaps_ts_serialize(t, &m, buf.data(), buf.size(), &used), RGAPS_TS_ERROR);
  m.wsb = u"wxyz";
  CHECK_RC(rgaps_ts_serialize(t, &m, buf.data(), buf.size(), &used), 0);
  CHECK(used == good.size() && std::memcmp(buf.data(), good.data(), used) == 0);
  // hostile counts on the unbounded uint8 sequence {9, 8, 7}
  size_t at = (size_t)-1;
  for (size_t i = 4; i + 7 <= good.size(); i++)
    if ((i - 4) % 4 == 0 && good[i] == 3 && !good[i + 1] && !good[i + 2] && !good[i + 3] && good[i + 4] == 9 &&
        good[i + 5] == 8) {
      at = i;
      break;
    }
  tu_expect_bad_u32(t, good.data(), good.size(), at, 0xFFFFFFFFu, "sequence count 2^32-1");
  tu_expect_bad_u32(t, good.data(), good.size(), at, (unsigned)(good.size() - at - 4 + 1), "count one past the end");
  // the bool sequence {false, true, true} (std::vector<bool>): count 3 then 00 01 01
  size_t atb = (size_t)-1;
  for (size_t i = 4; i + 7 <= good.size(); i++)
    if ((i - 4) % 4 == 0 && good[i] == 3 && !good[i + 1] && !good[i + 2] && !good[i + 3] && good[i + 4] == 0 &&
        good[i + 5] == 1 && good[i + 6] == 1) {
      atb = i;
      break;
    }
  tu_expect_bad_u32(t, good.data(), good.size(), atb, 0x7FFFFFFFu, "bool sequence count huge");
  {
    // a non-zero bool byte other than 1 reads as true and writes back as 1
    auto b2 = good;
    b2[atb + 5] = 0x7F;
    AllTypes back;
    CHECK_RC(rgaps_ts_deserialize(t, b2.data(), b2.size(), &back), 0);
    CHECK(back == all_filled());
    CHECK(ser(t, back) == good);
  }
  tu_pass("alltypes hostile");
}

static void test_resize() {
  const rgaps_ts *t = resolve(&Nested_ts);
  Nested big = nested_filled(), small;
  auto bb = ser(t, big);
  auto sb = ser(t, small);
  CHECK_RC(rgaps_ts_deserialize(t, sb.data(), sb.size(), &big), 0);
  CHECK(big == Nested());
  CHECK_RC(rgaps_ts_deserialize(t, bb.data(), bb.size(), &small), 0);
  CHECK(small == nested_filled());
  tu_check_truncations(t, bb.data(), bb.size());
  tu_check_headers(t, bb.data(), bb.size());
  tu_fuzz(t, bb.data(), bb.size(), 13, 3000);
  const rgaps_ts *ti = resolve(&Image_ts);
  auto ib = ser(ti, image_filled());
  tu_check_truncations(ti, ib.data(), ib.size());
  tu_fuzz(ti, ib.data(), ib.size(), 17, 1000);
  tu_pass("resize paths");
}

// The detached byte members (the checks of ts_test_util.h, as in C), and
// the reassembled messages compared as C++ values.
template <class T>
static void detached_case(const rgaps_ts *t, T m, uint32_t k, size_t bound) {
  tu_check_detached_lengths(t, &m, k, bound);
  auto full = ser(t, m);
  T d;
  size_t off = 0, len = 0;
  CHECK_RC(rgaps_ts_deserialize_detached(t, full.data(), full.size(), &d, k, &off, &len), 0);
  CHECK(!(d == m) || len == 0);
  CHECK_RC(rgaps_ts_set_member_bytes(t, &d, k, full.data() + off, len), 0);
  CHECK(d == m);
}

static void test_detached() {
  const rgaps_ts *ti = resolve(&Image_ts), *tc = resolve(&Cloud_ts), *tb = resolve(&Blob_ts);
  tu_check_byte_members(ti, tc, tb, resolve(&AllTypes_ts), resolve(&Time_ts));
  Image img = image_filled();
  detached_case(ti, img, 6, 0);
  tu_check_detached_errors(ti, &img, 7, 3);
  Cloud c;
  c.header.stamp.sec = 7;
  c.header.frame_id = "lidar";
  c.height = 1;
  c.row_step = 0xA1B2C3D4;
  c.scale = -0.75;
  c.is_dense = true;
  c.label = {'x', 'y', 'z'};
  c.samples = {-1, 2};
  detached_case(tc, c, 2, 0);
  detached_case(tc, c, 6, 0);
  tu_check_detached_errors(tc, &c, 8, 7);
  Blob b;
  b.kind = 3;
  b.after = 1.25;
  detached_case(tb, b, 1, 16);
  tu_pass("detached byte members");
}

// ----------------------------------------------------------------- vectors

template <class T>
static void vector_case(const char *dir, const char *name, const rosidl_message_type_support_t *ts,
                        const T &want) {
  const rgaps_ts *t = resolve(ts);
  auto b = ser(t, want);
  char file[256];
  snprintf(file, sizeof file, "cpp_%s.cdr", name);
  CHECK(tu_write_file(dir, file, b.data(), b.size()) == 0);
  const char *variants[2] = {"go_%s.cdr", "go_%s_be.cdr"};
  for (int be = 0; be < 2; be++) {
    snprintf(file, sizeof file, variants[be], name);
    size_t gn = 0;
    unsigned char *g = tu_read_file(dir, file, &gn);
    if (!g) {
      tu_failures++;
      fprintf(stderr, "%s: missing\n", file);
      continue;
    }
    T got;
    int rc = rgaps_ts_deserialize(t, g, gn, &got);
    if (rc != 0 || !(got == want)) {
      tu_failures++;
      fprintf(stderr, "%s: deserialise rc %d (%s), fields %s\n", file, rc, rgaps_ts_last_error(),
              rc == 0 ? "differ" : "-");
    }
    if (!be) {
      auto again = ser(t, got);
      if (again.size() != gn || std::memcmp(again.data(), g, gn) != 0) {
        tu_failures++;
        fprintf(stderr, "%s: reserialised bytes differ\n", file);
      }
    }
    free(g);
  }
  printf("%s vector %s\n", tu_failures ? "FAILING" : "PASS", name);
}

int main(int argc, char **argv) {
  if (argc >= 2 && std::strcmp(argv[1], "selftest") == 0) {
    test_resolve();
    test_init();
    test_hostile();
    test_resize();
  } else if (argc >= 2 && std::strcmp(argv[1], "detached") == 0) {
    test_detached();
  } else if (argc >= 3 && std::strcmp(argv[1], "vectors") == 0) {
    vector_case(argv[2], "all", &AllTypes_ts, all_filled());
    vector_case(argv[2], "zero", &AllTypes_ts, AllTypes());
    vector_case(argv[2], "image", &Image_ts, image_filled());
    vector_case(argv[2], "posearray", &PoseArray_ts, posearray_filled());
    vector_case(argv[2], "nested", &Nested_ts, nested_filled());
  } else {
    fprintf(stderr, "usage: %s selftest | detached | vectors DIR\n", argv[0]);
    return 2;
  }
  if (tu_failures) {
    fprintf(stderr, "%d check(s) failed\n", tu_failures);
    return 1;
  }
  printf("OK\n");
  return 0;
}

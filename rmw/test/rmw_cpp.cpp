// rmw_cpp — librmw_rgaps with C++ messages, as rclcpp hands them over
// (rosidl_typesupport_introspection_cpp tables over std::string,
// std::vector): round trips between C++ endpoints, between C++ and C
// endpoints of the same type (the same bytes on the topic), and loans of a
// plain C++ type.
//
// Usage: rmw_cpp   (ROS_DOMAIN_ID and RGAPS_SHM_PREFIX from the environment)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <string>
#include <vector>

#include "rgaps/gpu_core.hpp"
#include "rgaps_rmw_abi.h"
#include "rgaps_rosidl_abi.h"

static int failures;

#define CHECK(cond)                                                                                     \
  do {                                                                                                  \
    if (!(cond)) {                                                                                      \
      failures++;                                                                                       \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s (rmw error: %s)\n", __FILE__, __LINE__, #cond,     \
                   rgaps_rmw_last_error());                                                             \
    }                                                                                                   \
  } while (0)

#define MUST(cond)                                                                                            \
  do {                                                                                                        \
    if (!(cond)) {                                                                                            \
      std::fprintf(stderr, "%s:%d: fatal: %s (rmw error: %s)\n", __FILE__, __LINE__, #cond, rgaps_rmw_last_error()); \
      std::exit(2);                                                                                           \
    }                                                                                                         \
  } while (0)

// ---- C++ type supports (what rosidl_typesupport_introspection_cpp generates)

template <class C>
size_t f_size(const void *p) { return static_cast<const C *>(p)->size(); }
template <class C>
const void *f_getc(const void *p, size_t i) { return &(*static_cast<const C *>(p))[i]; }
template <class C>
void *f_get(void *p, size_t i) { return &(*static_cast<C *>(p))[i]; }
template <class C>
void f_fetch(const void *p, size_t i, void *out) {
  *static_cast<typename C::value_type *>(out) = (*static_cast<const C *>(p))[i];
}
template <class C>
void f_assign(void *p, size_t i, const void *in) {
  (*static_cast<C *>(p))[i] = *static_cast<const typename C::value_type *>(in);
}
template <class C>
void f_resize(void *p, size_t n) { static_cast<C *>(p)->resize(n); }
template <class T>
void f_init(void *p, int) { new (p) T(); }
template <class T>
void f_fini(void *p) { static_cast<T *>(p)->~T(); }

using Member = rgaps_introspection_cpp_MessageMember;
using Members = rgaps_introspection_cpp_MessageMembers;

#define SCALAR(T, f, tid) \
  {#f, tid, 0, nullptr, false, false, 0, false, (uint32_t)offsetof(T, f), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}
#define SEQ(T, f, tid)                                                                                          \
  {#f, tid, 0, nullptr, false, true, 0, false, (uint32_t)offsetof(T, f), nullptr, f_size<decltype(T::f)>,       \
   f_getc<decltype(T::f)>, f_get<decltype(T::f)>, f_fetch<decltype(T::f)>, f_assign<decltype(T::f)>,          \
   f_resize<decltype(T::f)>}

static const rosidl_message_type_support_t *cpp_handle(const rosidl_message_type_support_t *ts, const char *id) {
  return std::strcmp(id, ts->typesupport_identifier) == 0 ? ts : nullptr;
}

// rgaps_test/msg/Chat in C++ memory
struct ChatCpp {
  int32_t id = 0;
  std::string text;
  std::vector<uint8_t> data;
};
static const Member ChatCpp_members[] = {
    SCALAR(ChatCpp, id, RGAPS_TYPE_INT32),
    SCALAR(ChatCpp, text, RGAPS_TYPE_STRING),
    SEQ(ChatCpp, data, RGAPS_TYPE_UINT8),
};
static const Members ChatCpp_mm = {"rgaps_test::msg", "Chat", 3, sizeof(ChatCpp), false, ChatCpp_members,
                                   f_init<ChatCpp>, f_fini<ChatCpp>};
static const rosidl_message_type_support_t ChatCpp_ts = {RGAPS_TS_ID_INTROSPECTION_CPP, &ChatCpp_mm, cpp_handle,
                                                         nullptr, nullptr, nullptr};

// rgaps_test/msg/Plain in C++ memory (plain: loanable)
struct PlainCpp {
  int64_t stamp = 0;
  double x = 0;
  uint32_t seq = 0;
};
static const Member PlainCpp_members[] = {
    SCALAR(PlainCpp, stamp, RGAPS_TYPE_INT64),
    SCALAR(PlainCpp, x, RGAPS_TYPE_DOUBLE),
    SCALAR(PlainCpp, seq, RGAPS_TYPE_UINT32),
};
static const Members PlainCpp_mm = {"rgaps_test::msg", "Plain", 3, sizeof(PlainCpp), false, PlainCpp_members,
                                    f_init<PlainCpp>, f_fini<PlainCpp>};
static const rosidl_message_type_support_t PlainCpp_ts = {RGAPS_TS_ID_INTROSPECTION_CPP, &PlainCpp_mm, cpp_handle,
                                                          nullptr, nullptr, nullptr};

// ---- the same Chat in C memory (rosidl_typesupport_introspection_c)

struct ChatC {
  int32_t id;
  rosidl_runtime_c__String text;
  rosidl_runtime_c__uint8__Sequence data;
};
static void ChatC_init(void *p, int) {
  ChatC *m = static_cast<ChatC *>(p);
  std::memset(m, 0, sizeof *m);
  m->text.data = static_cast<char *>(std::calloc(1, 1));
  m->text.capacity = 1;
}
static void ChatC_fini(void *p) {
  ChatC *m = static_cast<ChatC *>(p);
  std::free(m->text.data);
  std::free(m->data.data);
  std::memset(m, 0, sizeof *m);
}
static bool ChatC_resize(void *p, size_t n) {
  auto *q = static_cast<rosidl_runtime_c__uint8__Sequence *>(p);
  std::free(q->data);
  q->data = n ? static_cast<uint8_t *>(std::calloc(n, 1)) : nullptr;
  q->size = q->capacity = n;
  return n == 0 || q->data != nullptr;
}
static size_t ChatC_size(const void *p) { return static_cast<const rosidl_runtime_c__uint8__Sequence *>(p)->size; }
static const rosidl_typesupport_introspection_c__MessageMember ChatC_members[] = {
    {"id", RGAPS_TYPE_INT32, 0, nullptr, false, false, 0, false, (uint32_t)offsetof(ChatC, id), nullptr, nullptr,
     nullptr, nullptr, nullptr, nullptr, nullptr},
    {"text", RGAPS_TYPE_STRING, 0, nullptr, false, false, 0, false, (uint32_t)offsetof(ChatC, text), nullptr,
     nullptr, nullptr, nullptr, nullptr, nullptr, nullptr},
    {"data", RGAPS_TYPE_UINT8, 0, nullptr, false, true, 0, false, (uint32_t)offsetof(ChatC, data), nullptr,
     ChatC_size, nullptr, nullptr, nullptr, nullptr, ChatC_resize},
};
static const rosidl_typesupport_introspection_c__MessageMembers ChatC_mm = {
    "rgaps_test__msg", "Chat", 3, sizeof(ChatC), false, ChatC_members, ChatC_init, ChatC_fini};
static const rosidl_message_type_support_t ChatC_ts = {"rosidl_typesupport_introspection_c", &ChatC_mm, cpp_handle,
                                                       nullptr, nullptr, nullptr};

// ---- helpers

static void *allocate(size_t n, void *) { return std::malloc(n); }
static void deallocate(void *p, void *) { std::free(p); }
static void *reallocate(void *p, size_t n, void *) { return std::realloc(p, n); }
static void *zero_allocate(size_t n, size_t s, void *) { return std::calloc(n, s); }

static bool eventually(bool (*cond)(void *), void *arg) {
  for (int i = 0; i < 400; i++) {
    if (cond(arg)) return true;
    struct timespec ts = {0, 5000000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

struct MatchArg {
  const rmw_publisher_t *p;
  size_t want;
};
static bool matched(void *a) {
  auto *m = static_cast<MatchArg *>(a);
  size_t n = 0;
  return rmw_publisher_count_matched_subscriptions(m->p, &n) == RMW_RET_OK && n == m->want;
}

static void fill(ChatCpp &m, int32_t id, size_t n) {
  m.id = id;
  m.text = "C++ says " + std::to_string(id);
  m.data.resize(n);
  for (size_t i = 0; i < n; i++) m.data[i] = static_cast<uint8_t>(i * 3 + id);
}

static bool same(const ChatCpp &m, int32_t id, size_t n) {
  if (m.id != id || m.text != "C++ says " + std::to_string(id) || m.data.size() != n) return false;
  for (size_t i = 0; i < n; i++)
    if (m.data[i] != static_cast<uint8_t>(i * 3 + id)) return false;
  return true;
}

static bool same_c(const ChatC &m, int32_t id, size_t n) {
  std::string want = "C++ says " + std::to_string(id);
  if (m.id != id || m.text.size != want.size() || std::strcmp(m.text.data, want.c_str()) != 0 || m.data.size != n)
    return false;
  for (size_t i = 0; i < n; i++)
    if (m.data.data[i] != static_cast<uint8_t>(i * 3 + id)) return false;
  return true;
}

int main() {
  rcutils_allocator_t a = {allocate, deallocate, reallocate, zero_allocate, nullptr};
  rmw_init_options_t opts;
  rmw_context_t ctx;
  std::memset(&opts, 0, sizeof opts);
  std::memset(&ctx, 0, sizeof ctx);
  MUST(rmw_init_options_init(&opts, a) == RMW_RET_OK);
  const char *dom = std::getenv("ROS_DOMAIN_ID");
  if (dom) opts.domain_id = std::strtoul(dom, nullptr, 10);
  opts.enclave = static_cast<char *>(a.allocate(2, nullptr));
  std::strcpy(opts.enclave, "/");
  MUST(rmw_init(&opts, &ctx) == RMW_RET_OK);
  rmw_node_t *node = rmw_create_node(&ctx, "cpp_node", "/");
  MUST(node != nullptr);

  rmw_qos_profile_t q;
  std::memset(&q, 0, sizeof q);
  q.history = RMW_QOS_POLICY_HISTORY_KEEP_LAST;
  q.depth = 10;
  q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  q.durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
  q.liveliness = RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
  rmw_publisher_options_t po = {nullptr, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
  rmw_subscription_options_t so = {nullptr, false, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED, nullptr};

  // C++ publisher; a C++ and a C subscription of the same type
  rmw_publisher_t *pcpp = rmw_create_publisher(node, &ChatCpp_ts, "/cpp_chat", &q, &po);
  rmw_subscription_t *scpp = rmw_create_subscription(node, &ChatCpp_ts, "/cpp_chat", &q, &so);
  rmw_subscription_t *sc = rmw_create_subscription(node, &ChatC_ts, "/cpp_chat", &q, &so);
  rmw_publisher_t *pc = rmw_create_publisher(node, &ChatC_ts, "/cpp_chat", &q, &po);
  MUST(pcpp && scpp && sc && pc);
  CHECK(!pcpp->can_loan_messages);
  MatchArg ma = {pcpp, 2};
  CHECK(eventually(matched, &ma));
  for (int32_t i = 0; i < 3; i++) {
    ChatCpp out;
    fill(out, i, static_cast<size_t>(i) * 40);
    CHECK(rmw_publish(pcpp, &out, nullptr) == RMW_RET_OK);
  }
  for (int32_t i = 0; i < 3; i++) {
    ChatCpp in;
    in.text = "stale text that must be replaced";
    in.data.assign(999, 1);
    bool taken = false;
    CHECK(rmw_take(scpp, &in, &taken, nullptr) == RMW_RET_OK && taken);
    CHECK(same(in, i, static_cast<size_t>(i) * 40));
    ChatC inc;
    ChatC_init(&inc, 0);
    CHECK(rmw_take(sc, &inc, &taken, nullptr) == RMW_RET_OK && taken);
    CHECK(same_c(inc, i, static_cast<size_t>(i) * 40));
    ChatC_fini(&inc);
  }
  std::printf("%s cpp_to_cpp_and_c\n", failures ? "FAIL" : "PASS");

  // C publisher, C++ subscription
  int before = failures;
  ChatC outc;
  ChatC_init(&outc, 0);
  outc.id = 7;
  std::string t = "C++ says 7";
  std::free(outc.text.data);
  outc.text.data = strdup(t.c_str());
  outc.text.size = t.size();
  outc.text.capacity = t.size() + 1;
  ChatC_resize(&outc.data, 5);
  for (size_t i = 0; i < 5; i++) outc.data.data[i] = static_cast<uint8_t>(i * 3 + 7);
  CHECK(rmw_publish(pc, &outc, nullptr) == RMW_RET_OK);
  ChatC_fini(&outc);
  ChatCpp in;
  bool taken = false;
  CHECK(rmw_take(scpp, &in, &taken, nullptr) == RMW_RET_OK && taken && same(in, 7, 5));
  ChatC drain;
  ChatC_init(&drain, 0);
  CHECK(rmw_take(sc, &drain, &taken, nullptr) == RMW_RET_OK && taken && same_c(drain, 7, 5));
  ChatC_fini(&drain);
  std::printf("%s c_to_cpp\n", failures > before ? "FAIL" : "PASS");

  // serialize/deserialize with the C++ type support: the C type's bytes
  before = failures;
  ChatCpp s;
  fill(s, 9, 17);
  rmw_serialized_message_t sm = {nullptr, 0, 0, a};
  CHECK(rmw_serialize(&s, &ChatCpp_ts, &sm) == RMW_RET_OK);
  ChatC fromc;
  ChatC_init(&fromc, 0);
  CHECK(rmw_deserialize(&sm, &ChatC_ts, &fromc) == RMW_RET_OK && same_c(fromc, 9, 17));
  rmw_serialized_message_t sm2 = {nullptr, 0, 0, a};
  CHECK(rmw_serialize(&fromc, &ChatC_ts, &sm2) == RMW_RET_OK);
  CHECK(sm.buffer_length == sm2.buffer_length && std::memcmp(sm.buffer, sm2.buffer, sm.buffer_length) == 0);
  ChatC_fini(&fromc);
  std::free(sm.buffer);
  std::free(sm2.buffer);
  std::printf("%s serialize_cpp_equals_c\n", failures > before ? "FAIL" : "PASS");

  // loans of a plain C++ type
  before = failures;
  rmw_publisher_t *pp = rmw_create_publisher(node, &PlainCpp_ts, "/cpp_plain", &q, &po);
  rmw_subscription_t *sp = rmw_create_subscription(node, &PlainCpp_ts, "/cpp_plain", &q, &so);
  MUST(pp && sp);
  CHECK(pp->can_loan_messages && sp->can_loan_messages);
  MatchArg mp = {pp, 1};
  CHECK(eventually(matched, &mp));
  void *loan = nullptr;
  CHECK(rmw_borrow_loaned_message(pp, &PlainCpp_ts, &loan) == RMW_RET_OK && loan != nullptr);
  if (loan) {
    auto *m = static_cast<PlainCpp *>(loan);
    CHECK(m->stamp == 0 && m->x == 0 && m->seq == 0);  // constructed
    m->stamp = 11;
    m->x = 1.5;
    m->seq = 3;
    CHECK(rmw_publish_loaned_message(pp, loan, nullptr) == RMW_RET_OK);
    void *got = nullptr;
    CHECK(rmw_take_loaned_message(sp, &got, &taken, nullptr) == RMW_RET_OK && taken && got != nullptr);
    if (got) {
      auto *g = static_cast<const PlainCpp *>(got);
      CHECK(g->stamp == 11 && g->x == 1.5 && g->seq == 3);
      CHECK(rmw_return_loaned_message_from_subscription(sp, got) == RMW_RET_OK);
    }
  }
  std::printf("%s cpp_loans\n", failures > before ? "FAIL" : "PASS");

  // GPU-loaned messages with C++ memory, through rgaps/gpu_core.hpp (what
  // rgaps/gpu.hpp builds on): a device loan published with the other
  // fields of a C++ message, received whole by a C++ and a C subscription
  // and as a DeviceView by a device subscription. Host memory here.
  before = failures;
  rmw_publisher_t *pg = rmw_create_publisher(node, &ChatCpp_ts, "/cpp_gpu", &q, &po);
  rmw_subscription_t *gcpp = rmw_create_subscription(node, &ChatCpp_ts, "/cpp_gpu", &q, &so);
  rmw_subscription_t *gc = rmw_create_subscription(node, &ChatC_ts, "/cpp_gpu", &q, &so);
  rmw_subscription_t *gdev = rmw_create_subscription(node, &ChatCpp_ts, "/cpp_gpu", &q, &so);
  MUST(pg && gcpp && gc && gdev);
  rgaps::make_device_subscription(gdev);
  MatchArg mg = {pg, 3};
  CHECK(eventually(matched, &mg));
  {
    rgaps::DeviceLoan loan(pg, 5000);
    CHECK(loan && loan.size() == 5000 && !loan.on_device() && loan.device() == -1);
    auto *b = static_cast<uint8_t *>(loan.data());
    for (size_t i = 0; i < 5000; i++) b[i] = static_cast<uint8_t>(i * 3 + 12);
    rgaps::DeviceLoan moved(std::move(loan));
    CHECK(!loan && moved);
    ChatCpp meta;
    fill(meta, 12, 0);
    moved.publish_loan(&meta, nullptr);
    CHECK(!moved);
  }
  ChatCpp gin;
  CHECK(rmw_take(gcpp, &gin, &taken, nullptr) == RMW_RET_OK && taken && same(gin, 12, 5000));
  ChatC gcin;
  ChatC_init(&gcin, 0);
  CHECK(rmw_take(gc, &gcin, &taken, nullptr) == RMW_RET_OK && taken && same_c(gcin, 12, 5000));
  ChatC_fini(&gcin);
  ChatCpp dmeta;
  CHECK(rmw_take(gdev, &dmeta, &taken, nullptr) == RMW_RET_OK && taken && dmeta.data.size() == RGAPS_GPU_TICKET_SIZE);
  {
    ChatCpp again = dmeta;
    rgaps::DeviceView v(gdev, &dmeta);
    CHECK(v.size() == 5000 && dmeta.data.empty() && dmeta.id == 12 && dmeta.text == "C++ says 12");
    const auto *vb = static_cast<const uint8_t *>(v.ptr());
    bool ok = vb != nullptr;
    for (size_t i = 0; ok && i < 5000; i++) ok = vb[i] == static_cast<uint8_t>(i * 3 + 12);
    CHECK(ok);
    int32_t code = 0;
    try {
      rgaps::DeviceView twice(gdev, &again);  // the same ticket: claimed already
    } catch (const rgaps::Error &e) {
      code = e.code();
    }
    CHECK(code == RMW_RET_INVALID_ARGUMENT);
    v.reset();
    CHECK(!v && v.ptr() == nullptr);
  }
  CHECK(rmw_destroy_subscription(node, gdev) == RMW_RET_OK);
  CHECK(rmw_destroy_subscription(node, gc) == RMW_RET_OK);
  CHECK(rmw_destroy_subscription(node, gcpp) == RMW_RET_OK);
  CHECK(rmw_destroy_publisher(node, pg) == RMW_RET_OK);
  std::printf("%s gpu_loans_cpp_memory\n", failures > before ? "FAIL" : "PASS");

  CHECK(rmw_destroy_subscription(node, sp) == RMW_RET_OK);
  CHECK(rmw_destroy_publisher(node, pp) == RMW_RET_OK);
  CHECK(rmw_destroy_publisher(node, pc) == RMW_RET_OK);
  CHECK(rmw_destroy_subscription(node, sc) == RMW_RET_OK);
  CHECK(rmw_destroy_subscription(node, scpp) == RMW_RET_OK);
  CHECK(rmw_destroy_publisher(node, pcpp) == RMW_RET_OK);
  CHECK(rmw_destroy_node(node) == RMW_RET_OK);
  CHECK(rmw_shutdown(&ctx) == RMW_RET_OK);
  CHECK(rmw_context_fini(&ctx) == RMW_RET_OK);
  CHECK(rmw_init_options_fini(&opts) == RMW_RET_OK);
  std::printf("%s\n", failures ? "FAILURES" : "ALL PASS");
  return failures ? 1 : 0;
}

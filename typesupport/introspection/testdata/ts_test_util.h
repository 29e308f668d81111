/*
 * ts_test_util.h — what the C and C++ test programs of the walkers share: checks
 * that count failures, file I/O for the vectors exchanged with the Go test,
 * and the hostile-input checks that only need a type and valid bytes.
 */
#ifndef RGAPS_TS_TEST_UTIL_H_
#define RGAPS_TS_TEST_UTIL_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rgaps_ts.h"

static int tu_failures;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      tu_failures++;                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, rgaps_ts_last_error());                                            \
    }                                                                                   \
  } while (0)

#define CHECK_RC(expr, want)                                                                   \
  do {                                                                                         \
    int rc_ = (expr);                                                                          \
    if (rc_ != (want)) {                                                                       \
      tu_failures++;                                                                           \
      fprintf(stderr, "%s:%d: %s returned %d, want %d (last error: %s)\n", __FILE__, __LINE__, \
              #expr, rc_, (int)(want), rgaps_ts_last_error());                                 \
    }                                                                                          \
  } while (0)

static inline void tu_pass(const char *name) {
  printf("%s %s\n", tu_failures ? "FAILING" : "PASS", name);
  fflush(stdout);
}

static inline int tu_write_file(const char *dir, const char *name, const unsigned char *b, size_t n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(b, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

/* Reads a whole file into an exactly sized malloc'ed buffer (so that an
 * overread is caught by AddressSanitizer); NULL if it does not exist. */
static inline unsigned char *tu_read_file(const char *dir, const char *name, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = (unsigned char *)malloc(sz > 0 ? (size_t)sz : 1);
  if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *n = (size_t)sz;
  return b;
}

/* Serialises msg into an exactly sized malloc'ed buffer. */
static inline unsigned char *tu_serialize(const rgaps_ts *t, const void *msg, size_t *n) {
  size_t need = 0, used = 0;
  if (rgaps_ts_serialized_size(t, msg, &need) != 0) return NULL;
  unsigned char *b = (unsigned char *)malloc(need);
  if (!b) return NULL;
  if (rgaps_ts_serialize(t, msg, b, need, &used) != 0 || used != need) {
    free(b);
    return NULL;
  }
  *n = used;
  return b;
}

/* A fresh message of type t, initialised; free with tu_free_msg. */
static inline void *tu_new_msg(const rgaps_ts *t) {
  void *m = malloc(rgaps_ts_size_of(t));
  if (m && rgaps_ts_init(t, m) != 0) {
    free(m);
    return NULL;
  }
  return m;
}

static inline void tu_free_msg(const rgaps_ts *t, void *m) {
  if (!m) return;
  rgaps_ts_fini(t, m);
  free(m);
}

#define TU_NO_MEMBER UINT32_MAX

/* rgaps_ts_deserialize, or with member detached unless it is TU_NO_MEMBER. */
static inline int tu_deserialize(const rgaps_ts *t, const unsigned char *b, size_t n, void *m, uint32_t member) {
  size_t off = 0, len = 0;
  if (member == TU_NO_MEMBER) return rgaps_ts_deserialize(t, b, n, m);
  return rgaps_ts_deserialize_detached(t, b, n, m, member, &off, &len);
}

/* Every strict prefix of a valid message must be refused (writers add no
 * trailing bytes, so the last field is always cut), reading from an exactly
 * sized copy; the message stays valid and is finalised without leaks. */
static inline void tu_check_prefixes(const rgaps_ts *t, const unsigned char *good, size_t n, uint32_t member) {
  for (size_t k = 0; k < n; k++) {
    unsigned char *cut = (unsigned char *)malloc(k ? k : 1);
    memcpy(cut, good, k);
    void *m = tu_new_msg(t);
    int rc = tu_deserialize(t, cut, k, m, member);
    if (rc != RGAPS_TS_ERROR) {
      tu_failures++;
      fprintf(stderr, "prefix of %zu of %zu bytes (detached %u): rc %d, want %d\n", k, n, member, rc,
              RGAPS_TS_ERROR);
    }
    tu_free_msg(t, m);
    free(cut);
  }
}

static inline void tu_check_truncations(const rgaps_ts *t, const unsigned char *good, size_t n) {
  tu_check_prefixes(t, good, n, TU_NO_MEMBER);
  /* and the whole message, deserialised twice into the same message
   * (sizes already right the second time), serialises back to itself */
  void *m = tu_new_msg(t);
  CHECK_RC(rgaps_ts_deserialize(t, good, n, m), 0);
  CHECK_RC(rgaps_ts_deserialize(t, good, n, m), 0);
  size_t n2 = 0;
  unsigned char *again = tu_serialize(t, m, &n2);
  CHECK(again && n2 == n && memcmp(again, good, n) == 0);
  free(again);
  tu_free_msg(t, m);
}

/* Random corruptions of a valid message: never a crash, an overread or a
 * leak (under the sanitizers), only 0 or RGAPS_TS_ERROR; whatever is
 * accepted serialises again. */
static inline void tu_fuzz(const rgaps_ts *t, const unsigned char *good, size_t n, unsigned seed, int rounds) {
  unsigned x = seed ? seed : 1;
  for (int r = 0; r < rounds; r++) {
    unsigned char *b = (unsigned char *)malloc(n);
    memcpy(b, good, n);
    int flips = 1 + r % 4;
    for (int k = 0; k < flips; k++) {
      x = x * 1103515245u + 12345u;
      size_t at = 4 + (x >> 8) % (n - 4);
      x = x * 1103515245u + 12345u;
      unsigned v = (x >> 16) & 0xff;
      b[at] = (r % 3 == 0) ? 0xff : (unsigned char)v; /* 0xff makes big counts */
    }
    void *m = tu_new_msg(t);
    int rc = rgaps_ts_deserialize(t, b, n, m);
    if (rc != 0 && rc != RGAPS_TS_ERROR) {
      tu_failures++;
      fprintf(stderr, "fuzz round %d: rc %d (%s)\n", r, rc, rgaps_ts_last_error());
    }
    if (rc == 0) {
      size_t n2 = 0;
      unsigned char *again = tu_serialize(t, m, &n2);
      free(again);
    }
    tu_free_msg(t, m);
    free(b);
  }
}

/* Hostile headers and lengths common to every type. */
static inline void tu_check_headers(const rgaps_ts *t, const unsigned char *good, size_t n) {
  void *m = tu_new_msg(t);
  unsigned char *b = (unsigned char *)malloc(n);
  memcpy(b, good, n);
  b[0] = 1; /* not an encapsulation kind */
  CHECK_RC(rgaps_ts_deserialize(t, b, n, m), RGAPS_TS_ERROR);
  b[0] = 0;
  b[1] = 2; /* PL_CDR_BE */
  CHECK_RC(rgaps_ts_deserialize(t, b, n, m), RGAPS_TS_ERROR);
  b[1] = 7; /* XCDR2 */
  CHECK_RC(rgaps_ts_deserialize(t, b, n, m), RGAPS_TS_ERROR);
  b[1] = 1;
  b[2] = 0xAA; /* options are ignored */
  b[3] = 0x55;
  CHECK_RC(rgaps_ts_deserialize(t, b, n, m), 0);
  CHECK_RC(rgaps_ts_deserialize(t, NULL, 0, m), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_deserialize(t, b, n, NULL), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_deserialize(NULL, b, n, m), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_deserialize(t, b, 3, m), RGAPS_TS_ERROR);
  /* trailing bytes are ignored */
  unsigned char *longer = (unsigned char *)calloc(1, n + 7);
  memcpy(longer, good, n);
  CHECK_RC(rgaps_ts_deserialize(t, longer, n + 7, m), 0);
  free(longer);
  /* serialize: too small a buffer says how much is needed */
  size_t used = 0;
  CHECK_RC(rgaps_ts_serialize(t, m, b, n - 1, &used), RGAPS_TS_ERROR);
  CHECK(used == n);
  CHECK_RC(rgaps_ts_serialize(t, m, NULL, 0, &used), RGAPS_TS_ERROR);
  CHECK(used == n);
  CHECK_RC(rgaps_ts_serialize(t, NULL, b, n, &used), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_serialized_size(t, m, NULL), RGAPS_TS_INVALID_ARG);
  free(b);
  tu_free_msg(t, m);
}

/* Finds the first occurrence of a 4-byte little-endian value at a 4-aligned
 * payload offset at or after from (a length prefix to corrupt). */
static inline size_t tu_find_u32(const unsigned char *b, size_t n, size_t from, unsigned v) {
  for (size_t i = from; i + 4 <= n; i++) {
    if ((i - 4) % 4 != 0) continue;
    unsigned x = b[i] | (unsigned)b[i + 1] << 8 | (unsigned)b[i + 2] << 16 | (unsigned)b[i + 3] << 24;
    if (x == v) return i;
  }
  return (size_t)-1;
}

/* Replaces the u32 at off with v and expects RGAPS_TS_ERROR. */
static inline void tu_expect_bad_u32(const rgaps_ts *t, const unsigned char *good, size_t n, size_t off, unsigned v,
                              const char *what) {
  if (off == (size_t)-1 || off + 4 > n) {
    tu_failures++;
    fprintf(stderr, "%s: length prefix not found\n", what);
    return;
  }
  unsigned char *b = (unsigned char *)malloc(n);
  memcpy(b, good, n);
  b[off] = (unsigned char)v;
  b[off + 1] = (unsigned char)(v >> 8);
  b[off + 2] = (unsigned char)(v >> 16);
  b[off + 3] = (unsigned char)(v >> 24);
  void *m = tu_new_msg(t);
  int rc = rgaps_ts_deserialize(t, b, n, m);
  if (rc != RGAPS_TS_ERROR) {
    tu_failures++;
    fprintf(stderr, "%s: rc %d, want %d\n", what, rc, RGAPS_TS_ERROR);
  }
  tu_free_msg(t, m);
  free(b);
}

/* ------------------------------------------------ detached byte members */

static inline unsigned tu_u32_at(const unsigned char *b) {
  return b[0] | (unsigned)b[1] << 8 | (unsigned)b[2] << 16 | (unsigned)b[3] << 24;
}

static inline void tu_put_u32(unsigned char *b, unsigned v) {
  b[0] = (unsigned char)v;
  b[1] = (unsigned char)(v >> 8);
  b[2] = (unsigned char)(v >> 16);
  b[3] = (unsigned char)(v >> 24);
}

/* Whether msg serialises to exactly want[0:n]. */
static inline int tu_serializes_to(const rgaps_ts *t, const void *msg, const unsigned char *want, size_t n) {
  size_t got_n = 0;
  unsigned char *got = tu_serialize(t, msg, &got_n);
  int ok = got && want && got_n == n && memcmp(got, want, n) == 0;
  free(got);
  return ok;
}

/* The invariants of byte member k for message m as it is:
 * serialize_detached(m) is serialize(m with k emptied); deserialize_detached
 * of serialize(m) leaves k empty, points at its bytes (after their u32
 * length), and set_member_bytes of those gives m again; every prefix of
 * serialize(m) is refused. */
static inline void tu_check_detached(const rgaps_ts *t, const void *m, uint32_t k) {
  size_t n = 0, en = 0, dn = 0, used = 0, off = 0, len = 0, blen = 0;
  const uint8_t *bytes = NULL;
  unsigned char *full = tu_serialize(t, m, &n);
  CHECK_RC(rgaps_ts_member_bytes(t, m, k, &bytes, &blen), 0);
  void *e = tu_new_msg(t); /* m with k emptied */
  CHECK_RC(rgaps_ts_deserialize(t, full, n, e), 0);
  CHECK_RC(rgaps_ts_set_member_bytes(t, e, k, NULL, 0), 0);
  unsigned char *empty = tu_serialize(t, e, &en);
  CHECK_RC(rgaps_ts_serialized_size_detached(t, m, k, &dn), 0);
  CHECK(full && bytes && empty && dn == en);
  unsigned char *meta = (unsigned char *)malloc(dn);
  CHECK_RC(rgaps_ts_serialize_detached(t, m, k, meta, dn, &used), 0);
  CHECK(used == dn && memcmp(meta, empty, en) == 0);
  CHECK_RC(rgaps_ts_serialize_detached(t, m, k, meta, dn - 1, &used), RGAPS_TS_ERROR);
  CHECK(used == dn);

  void *d = tu_new_msg(t);
  CHECK_RC(rgaps_ts_deserialize_detached(t, full, n, d, k, &off, &len), 0);
  CHECK(len == blen && off >= 8 && off + len <= n && (off - 4) % 4 == 0 && tu_u32_at(full + off - 4) == len);
  CHECK(len == 0 || memcmp(full + off, bytes, len) == 0);
  const uint8_t *db = NULL;
  size_t dl = 1;
  CHECK_RC(rgaps_ts_member_bytes(t, d, k, &db, &dl), 0);
  CHECK(db != NULL && dl == 0);
  CHECK(tu_serializes_to(t, d, empty, en));
  CHECK_RC(rgaps_ts_set_member_bytes(t, d, k, full + off, len), 0);
  CHECK(tu_serializes_to(t, d, full, n));
  /* the meta part detaches to nothing, and reads as e */
  CHECK_RC(rgaps_ts_deserialize_detached(t, meta, dn, d, k, &off, &len), 0);
  CHECK(len == 0 && off <= dn && tu_serializes_to(t, d, empty, en));
  tu_check_prefixes(t, full, n, k);
  tu_free_msg(t, d);
  tu_free_msg(t, e);
  free(meta);
  free(empty);
  free(full);
}

/* A bounded byte member k (bound > 0) holding bound bytes, its length on
 * the wire made bound+1: refused detached and not. */
static inline void tu_check_detached_bound(const rgaps_ts *t, void *m, uint32_t k, size_t bound) {
  unsigned char *pat = (unsigned char *)calloc(1, bound + 1);
  CHECK_RC(rgaps_ts_set_member_bytes(t, m, k, pat, bound + 1), RGAPS_TS_ERROR);
  CHECK_RC(rgaps_ts_set_member_bytes(t, m, k, pat, bound), 0);
  size_t n = 0, off = 0, len = 0;
  unsigned char *b = tu_serialize(t, m, &n);
  void *d = tu_new_msg(t);
  CHECK_RC(rgaps_ts_deserialize_detached(t, b, n, d, k, &off, &len), 0);
  CHECK(len == bound);
  tu_put_u32(b + off - 4, (unsigned)bound + 1);
  CHECK_RC(rgaps_ts_deserialize_detached(t, b, n, d, k, &off, &len), RGAPS_TS_ERROR);
  CHECK(strstr(rgaps_ts_last_error(), "bound") != NULL);
  CHECK_RC(rgaps_ts_deserialize(t, b, n, d), RGAPS_TS_ERROR);
  tu_free_msg(t, d);
  free(b);
  free(pat);
}

/* Byte member k of m set to each of the lengths below (up to its bound,
 * 0: unbounded), read back, and tu_check_detached. */
static inline void tu_check_detached_lengths(const rgaps_ts *t, void *m, uint32_t k, size_t bound) {
  static const size_t lens[] = {0, 1, 3, 7, 4096 + 1};
  unsigned char *pat = (unsigned char *)malloc(4096 + 1);
  for (size_t i = 0; i < 4096 + 1; i++) pat[i] = (unsigned char)(i * 13 + 5);
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    if (bound && lens[i] > bound) continue;
    const uint8_t *got = NULL;
    size_t got_n = 0;
    CHECK_RC(rgaps_ts_set_member_bytes(t, m, k, pat, lens[i]), 0);
    CHECK_RC(rgaps_ts_member_bytes(t, m, k, &got, &got_n), 0);
    CHECK(got_n == lens[i] && (got_n == 0 || memcmp(got, pat, got_n) == 0));
    tu_check_detached(t, m, k);
  }
  if (bound) tu_check_detached_bound(t, m, k, bound);
  free(pat);
}

/* Refusals for a message m of type t (nfields members) whose member
 * not_bytes is not a byte sequence. */
static inline void tu_check_detached_errors(const rgaps_ts *t, void *m, uint32_t nfields, uint32_t not_bytes) {
  unsigned char buf[64] = {0, 1, 0, 0};
  const uint8_t *d = NULL;
  size_t n = 0, off = 0;
  const uint32_t bad[2] = {nfields, not_bytes};
  for (int i = 0; i < 2; i++) {
    uint32_t k = bad[i];
    CHECK_RC(rgaps_ts_serialized_size_detached(t, m, k, &n), RGAPS_TS_ERROR);
    CHECK_RC(rgaps_ts_serialize_detached(t, m, k, buf, sizeof buf, &n), RGAPS_TS_ERROR);
    CHECK_RC(rgaps_ts_deserialize_detached(t, buf, sizeof buf, m, k, &off, &n), RGAPS_TS_ERROR);
    CHECK_RC(rgaps_ts_member_bytes(t, m, k, &d, &n), RGAPS_TS_ERROR);
    CHECK_RC(rgaps_ts_set_member_bytes(t, m, k, NULL, 0), RGAPS_TS_ERROR);
  }
  CHECK(strstr(rgaps_ts_last_error(), "not a sequence of uint8") != NULL);
  CHECK_RC(rgaps_ts_serialized_size_detached(NULL, m, 0, &n), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_serialize_detached(t, m, 0, NULL, 1, &n), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_deserialize_detached(t, buf, sizeof buf, m, 0, NULL, &n), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_member_bytes(t, m, 0, NULL, &n), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_set_member_bytes(t, m, 0, NULL, 1), RGAPS_TS_INVALID_ARG);
  CHECK_RC(rgaps_ts_byte_member(t, NULL, NULL), RGAPS_TS_INVALID_ARG);
}

/* rgaps_ts_byte_member(t, name): want (an index), or an error whose text
 * contains every string of err (NULL-terminated; want is then ignored). */
static inline void tu_check_byte_member(const rgaps_ts *t, const char *name, uint32_t want, const char *const *err) {
  uint32_t k = 12345;
  int rc = rgaps_ts_byte_member(t, name, &k);
  if (!err) {
    if (rc != 0 || k != want) {
      tu_failures++;
      fprintf(stderr, "byte member %s: rc %d index %u, want %u (%s)\n", name ? name : "(default)", rc, k, want,
              rgaps_ts_last_error());
    }
    return;
  }
  CHECK(rc == RGAPS_TS_ERROR && k == 12345);
  for (; *err; err++)
    if (!strstr(rgaps_ts_last_error(), *err)) {
      tu_failures++;
      fprintf(stderr, "byte member %s: error \"%s\" does not say \"%s\"\n", name ? name : "(default)",
              rgaps_ts_last_error(), *err);
    }
}

/* rgaps_ts_byte_member on the test programs' types, the same in C and C++:
 * Image (data last), Cloud (data, label; samples int8), Blob (one bounded
 * octet sequence), AllTypes (su8 and sc, neither named data) and Time (no
 * byte sequence). */
static inline void tu_check_byte_members(const rgaps_ts *image, const rgaps_ts *cloud, const rgaps_ts *blob,
                                         const rgaps_ts *all, const rgaps_ts *time) {
  static const char *const img_enc[] = {"sensor_msgs/msg/Image", "encoding", "not a sequence", "data", NULL};
  static const char *const img_nope[] = {"sensor_msgs/msg/Image", "nope", "no such member", "data", NULL};
  static const char *const all_default[] = {"rgaps_test/msg/AllTypes", "none named data", "su8, sc", NULL};
  static const char *const all_au8[] = {"au8", "not a sequence", "su8, sc", NULL};
  static const char *const cloud_int8[] = {"rgaps_test/msg/Cloud", "samples", "not a sequence", "data, label", NULL};
  static const char *const none[] = {"builtin_interfaces/msg/Time", "no sequence of uint8", NULL};
  tu_check_byte_member(image, NULL, 6, NULL);
  tu_check_byte_member(image, "data", 6, NULL);
  tu_check_byte_member(image, "encoding", 0, img_enc);
  tu_check_byte_member(image, "nope", 0, img_nope);
  tu_check_byte_member(cloud, NULL, 2, NULL);
  tu_check_byte_member(cloud, "label", 6, NULL);
  tu_check_byte_member(cloud, "samples", 0, cloud_int8);
  tu_check_byte_member(blob, NULL, 1, NULL);
  tu_check_byte_member(all, NULL, 0, all_default);
  tu_check_byte_member(all, "su8", 25, NULL);
  tu_check_byte_member(all, "sc", 33, NULL);
  tu_check_byte_member(all, "au8", 0, all_au8);
  tu_check_byte_member(time, NULL, 0, none);
}

static inline void tu_hex(FILE *f, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x%s", b[i], (i % 32 == 31) ? "\n" : " ");
  fprintf(f, "\n");
}

#endif /* RGAPS_TS_TEST_UTIL_H_ */

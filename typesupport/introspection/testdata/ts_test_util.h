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

/* Every strict prefix of a valid message must be refused (writers add no
 * trailing bytes, so the last field is always cut), reading from an exactly
 * sized copy; the message stays valid and is finalised without leaks. */
static inline void tu_check_truncations(const rgaps_ts *t, const unsigned char *good, size_t n) {
  for (size_t k = 0; k < n; k++) {
    unsigned char *cut = (unsigned char *)malloc(k ? k : 1);
    memcpy(cut, good, k);
    void *m = tu_new_msg(t);
    int rc = rgaps_ts_deserialize(t, cut, k, m);
    if (rc != RGAPS_TS_ERROR) {
      tu_failures++;
      fprintf(stderr, "prefix of %zu of %zu bytes: rc %d, want %d\n", k, n, rc, RGAPS_TS_ERROR);
    }
    tu_free_msg(t, m);
    free(cut);
  }
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

static inline void tu_hex(FILE *f, const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++) fprintf(f, "%02x%s", b[i], (i % 32 == 31) ? "\n" : " ");
  fprintf(f, "\n");
}

#endif /* RGAPS_TS_TEST_UTIL_H_ */

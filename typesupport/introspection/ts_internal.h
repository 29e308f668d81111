/*
 * ts_internal.h — what the walkers' C files share (ts_cdr.c, ts_member.c):
 * the resolved description of a type and the entry points of the writer and
 * reader. Not an API: the rmw uses rgaps_ts.h only. The functions declared
 * here have external linkage and the rgaps_ts__ prefix, so that the library
 * objects define no symbol outside rgaps_ts_*.
 */
#ifndef RGAPS_TS_INTERNAL_H_
#define RGAPS_TS_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rgaps_ts.h"

#define HEADER_SIZE 4
#define NO_MEMBER UINT32_MAX /* no top-level member detached */

enum { FORM_SCALAR, FORM_ARRAY, FORM_SEQ };

/* The accessor functions of an array or sequence member (C: resize only,
 * when the member has one; C++: all but resize_c). */
typedef struct accessors {
  size_t (*size_fn)(const void *);
  const void *(*get_const_fn)(const void *, size_t);
  void *(*get_fn)(void *, size_t);
  void (*fetch_fn)(const void *, size_t, void *);
  void (*assign_fn)(void *, size_t, const void *);
  bool (*resize_c)(void *, size_t);
  void (*resize_cpp)(void *, size_t);
} accessors;

typedef struct field {
  const char *name;
  uint8_t type;
  uint8_t form;
  uint8_t cpp_vbool; /* C++ bool sequence (std::vector<bool>): fetch/assign only */
  uint32_t offset;
  size_t count;     /* ARRAY: N; SEQ: bound, 0 when unbounded */
  size_t str_bound; /* string<=N / wstring<=N: N, else 0 */
  size_t elem_mem;  /* memory size of one element (C layout; C++ primitives and messages) */
  size_t wire_size; /* primitives: CDR size of one element */
  size_t wire_align;
  size_t min_wire; /* smallest CDR size of one element (at least 1) */
  const rgaps_ts *nested;
  accessors fn;
} field;

struct rgaps_ts {
  struct rgaps_ts *next; /* cache list */
  const void *members;   /* the introspection MessageMembers */
  int cpp;
  const char *ns;
  const char *name;
  size_t size_of;
  uint32_t nfields;
  field *fields;
  void (*init_fn)(void *, int);
  void (*fini_fn)(void *);
  size_t min_wire;
  int plain;
  size_t plain_size;
};

/* the {data, size, capacity} of every C sequence */
typedef struct cseq {
  void *data;
  size_t size;
  size_t capacity;
} cseq;

/* Sets this thread's last_error; returns code. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int rgaps_ts__fail(int code, const char *fmt, ...);
#define fail rgaps_ts__fail

/* Resizes the sequence f at p (C or C++ memory) to n elements, as the
 * reader does before filling it. */
int rgaps_ts__seq_resize(const field *f, int cpp, void *p, size_t n);

/* rgaps_ts_serialize with top-level member `detach` written as an empty
 * sequence (NO_MEMBER: none). buf NULL stores nothing: with cap SIZE_MAX
 * it computes the size. */
int rgaps_ts__serialize(const rgaps_ts *t, const void *msg, uint8_t *buf, size_t cap, size_t *used,
                        uint32_t detach);

/* rgaps_ts_deserialize; with detach != NO_MEMBER that top-level byte
 * sequence is resized to 0 and where its bytes lie in buf is returned in
 * *data_off and *data_len instead. */
int rgaps_ts__deserialize(const rgaps_ts *t, const uint8_t *buf, size_t len, void *msg, uint32_t detach,
                          size_t *data_off, size_t *data_len);

#endif /* RGAPS_TS_INTERNAL_H_ */

/*
 * ts_cdr.c — see rgaps_ts.h. Resolution of introspection type supports into a
 * compact per-type description (cached), and the CDR writer and reader that
 * walk C or C++ message memory with it.
 *
 * C messages are walked by their known layout (rosidl_runtime_c strings and
 * {data, size, capacity} sequences at the member offsets); only sequence
 * resizing goes through the member's resize_function when there is one.
 * C++ messages are walked through the members' size/get/fetch/assign/resize
 * functions, and std::string / std::u16string through ts_cxx.cpp.
 */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts_internal.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "rmw_rgaps type support assumes a little-endian host"
#endif

/* ts_cxx.cpp */
size_t rgaps_ts_cxx_string_sizeof(void);
size_t rgaps_ts_cxx_u16string_sizeof(void);
void rgaps_ts_cxx_string_get(const void *s, const char **data, size_t *len);
char *rgaps_ts_cxx_string_resize(void *s, size_t n);
void rgaps_ts_cxx_u16string_get(const void *s, const uint16_t **data, size_t *len);
uint16_t *rgaps_ts_cxx_u16string_resize(void *s, size_t n);
int rgaps_ts_cxx_resize(void (*fn)(void *, size_t), void *member, size_t n);
int rgaps_ts_cxx_init(void (*fn)(void *, int), void *msg, int how);
void rgaps_ts_cxx_fini(void (*fn)(void *), void *msg);

#define MAX_DEPTH 32      /* nesting of message types */
#define PLAIN_PROBE 17    /* array elements checked for plain layout (see plain_at) */
#define LD_X87 (__LDBL_MANT_DIG__ == 64)

/* ------------------------------------------------------------------ errors */

static _Thread_local char last_error[512];

const char *rgaps_ts_last_error(void) { return last_error; }

int rgaps_ts__fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  return code;
}

/* ------------------------------------------------------------ description */

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static rgaps_ts *cache; /* guarded by cache_mu; entries are never freed */

static size_t sat_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }
static size_t sat_mul(size_t a, size_t b) { return (b && a > SIZE_MAX / b) ? SIZE_MAX : a * b; }

static size_t prim_size(uint8_t type) {
  switch (type) {
    case RGAPS_TYPE_BOOLEAN:
    case RGAPS_TYPE_OCTET:
    case RGAPS_TYPE_UINT8:
    case RGAPS_TYPE_INT8:
    case RGAPS_TYPE_CHAR:
      return 1;
    case RGAPS_TYPE_UINT16:
    case RGAPS_TYPE_INT16:
    case RGAPS_TYPE_WCHAR:
      return 2;
    case RGAPS_TYPE_UINT32:
    case RGAPS_TYPE_INT32:
    case RGAPS_TYPE_FLOAT:
      return 4;
    case RGAPS_TYPE_UINT64:
    case RGAPS_TYPE_INT64:
    case RGAPS_TYPE_DOUBLE:
      return 8;
    case RGAPS_TYPE_LONG_DOUBLE:
      return 16;
  }
  return 0;
}

static int is_prim(uint8_t type) { return type >= RGAPS_TYPE_FLOAT && type <= RGAPS_TYPE_INT64; }

/* A view of one member of either language's table. */
typedef struct member_view {
  const char *name;
  uint8_t type;
  size_t str_bound;
  const rosidl_message_type_support_t *members;
  bool is_array;
  size_t array_size;
  bool is_upper_bound;
  uint32_t offset;
  accessors fn;
} member_view;

static member_view view_c(const rosidl_typesupport_introspection_c__MessageMember *m) {
  member_view v = {m->name_, m->type_id_, m->string_upper_bound_, m->members_, m->is_array_,
                   m->array_size_, m->is_upper_bound_, m->offset_,
                   {m->size_function, m->get_const_function, m->get_function, m->fetch_function,
                    m->assign_function, m->resize_function, NULL}};
  return v;
}

static member_view view_cpp(const rgaps_introspection_cpp_MessageMember *m) {
  member_view v = {m->name_, m->type_id_, m->string_upper_bound_, m->members_, m->is_array_,
                   m->array_size_, m->is_upper_bound_, m->offset_,
                   {m->size_function, m->get_const_function, m->get_function, m->fetch_function,
                    m->assign_function, NULL, m->resize_function}};
  return v;
}

/* Finds the introspection MessageMembers behind a handle: directly, or
 * through its func. prefer_cpp chooses which identifier func is asked for
 * first; want (-1: any, 0: C, 1: C++) restricts the result. */
static int members_of(const rosidl_message_type_support_t *h, int prefer_cpp, int want,
                      const void **members, int *cpp) {
  static const char *const ids[2] = {RGAPS_TS_ID_INTROSPECTION_C, RGAPS_TS_ID_INTROSPECTION_CPP};
  if (h == NULL) return fail(RGAPS_TS_INVALID_ARG, "type support: NULL handle");
  /* rosidl's handle functions strcmp the identifier: never hand them NULL */
  if (h->typesupport_identifier == NULL) return fail(RGAPS_TS_ERROR, "type support without identifier");
  for (int lang = 0; lang < 2; lang++) {
    if ((want < 0 || want == lang) && h->typesupport_identifier &&
        strcmp(h->typesupport_identifier, ids[lang]) == 0) {
      *members = h->data;
      *cpp = lang;
      return *members ? 0 : fail(RGAPS_TS_ERROR, "type support %s: NULL data", ids[lang]);
    }
  }
  if (h->func) {
    for (int k = 0; k < 2; k++) {
      int lang = prefer_cpp ? 1 - k : k;
      if (want >= 0 && want != lang) continue;
      const rosidl_message_type_support_t *r = h->func(h, ids[lang]);
      if (r && r->data && r->typesupport_identifier && strcmp(r->typesupport_identifier, ids[lang]) == 0) {
        *members = r->data;
        *cpp = lang;
        return 0;
      }
    }
  }
  return fail(RGAPS_TS_ERROR, "type support \"%s\" yields neither %s nor %s",
              h->typesupport_identifier ? h->typesupport_identifier : "(null)", ids[0], ids[1]);
}

static const rgaps_ts *cache_find(const void *members, int cpp) {
  for (const rgaps_ts *t = cache; t; t = t->next)
    if (t->members == members && t->cpp == cpp) return t;
  return NULL;
}

/* The build stack, to refuse types that contain themselves. */
typedef struct build_stack {
  const void *members[MAX_DEPTH];
  int depth;
} build_stack;

static const rgaps_ts *build(const void *members, int cpp, build_stack *bs);

static int plain_at(const rgaps_ts *t, size_t mem, size_t cur, size_t *end, int depth);

static int setup_field(field *f, const member_view *m, int cpp, size_t size_of, build_stack *bs,
                       const char *tname) {
  f->name = m->name ? m->name : "(unnamed)";
  f->type = m->type;
  f->offset = m->offset;
  f->str_bound = m->str_bound;
  f->fn = m->fn;
  if (m->type < RGAPS_TYPE_FLOAT || m->type > RGAPS_TYPE_MESSAGE)
    return fail(RGAPS_TS_ERROR, "%s.%s: invalid type id %u", tname, f->name, m->type);
  if (!m->is_array) {
    f->form = FORM_SCALAR;
  } else if (m->array_size > 0 && !m->is_upper_bound) {
    f->form = FORM_ARRAY;
    f->count = m->array_size;
  } else {
    if (m->is_upper_bound && m->array_size == 0)
      return fail(RGAPS_TS_ERROR, "%s.%s: bounded sequence with bound 0", tname, f->name);
    f->form = FORM_SEQ;
    f->count = m->array_size;
  }
  if (m->type == RGAPS_TYPE_MESSAGE) {
    const void *nm;
    int ncpp;
    int rc = members_of(m->members, cpp, cpp, &nm, &ncpp);
    if (rc) {
      char why[sizeof last_error];
      memcpy(why, last_error, sizeof why);
      return fail(rc, "%s.%s: nested type: %s", tname, f->name, why);
    }
    f->nested = build(nm, cpp, bs);
    if (!f->nested) return RGAPS_TS_ERROR; /* build set the error */
    f->elem_mem = f->nested->size_of;
    f->min_wire = f->nested->min_wire;
  } else if (m->type == RGAPS_TYPE_STRING || m->type == RGAPS_TYPE_WSTRING) {
    f->elem_mem = cpp ? (m->type == RGAPS_TYPE_STRING ? rgaps_ts_cxx_string_sizeof() : rgaps_ts_cxx_u16string_sizeof())
                      : sizeof(rosidl_runtime_c__String);
    f->wire_align = 4;
    f->min_wire = 4;
  } else {
    if (m->type == RGAPS_TYPE_LONG_DOUBLE && sizeof(long double) != 16)
      return fail(RGAPS_TS_ERROR, "%s.%s: long double is %zu bytes on this platform, CDR needs 16", tname,
                  f->name, sizeof(long double));
    f->wire_size = prim_size(m->type);
    f->elem_mem = f->wire_size;
    f->wire_align = f->wire_size < 8 ? f->wire_size : 8;
    f->min_wire = f->wire_size;
  }
  if (f->min_wire == 0) f->min_wire = 1;
  if (m->str_bound && m->type != RGAPS_TYPE_STRING && m->type != RGAPS_TYPE_WSTRING)
    return fail(RGAPS_TS_ERROR, "%s.%s: string bound on a non-string field", tname, f->name);

  /* Where the field lies in memory must fit in the message. */
  size_t extent;
  if (f->form == FORM_SCALAR || (!cpp && f->form == FORM_ARRAY))
    extent = sat_mul(f->elem_mem, f->form == FORM_ARRAY ? f->count : 1);
  else
    extent = cpp ? 1 : sizeof(cseq); /* a std::vector / std::array behind accessor functions */
  if (sat_add(f->offset, extent) > size_of)
    return fail(RGAPS_TS_ERROR, "%s.%s: offset %u + %zu bytes beyond the message size %zu", tname, f->name,
                f->offset, extent, size_of);

  if (cpp && f->form != FORM_SCALAR) {
    f->cpp_vbool = f->form == FORM_SEQ && f->type == RGAPS_TYPE_BOOLEAN;
    if (!f->fn.size_fn) return fail(RGAPS_TS_ERROR, "%s.%s: C++ array without size_function", tname, f->name);
    if (f->cpp_vbool ? (!f->fn.fetch_fn || !f->fn.assign_fn) : (!f->fn.get_fn || !f->fn.get_const_fn))
      return fail(RGAPS_TS_ERROR, "%s.%s: C++ array without accessor functions", tname, f->name);
    if (f->form == FORM_SEQ && !f->fn.resize_cpp)
      return fail(RGAPS_TS_ERROR, "%s.%s: C++ sequence without resize_function", tname, f->name);
  }
  return 0;
}

/* Builds (or finds) the description of a type. Must hold cache_mu. */
static const rgaps_ts *build(const void *members, int cpp, build_stack *bs) {
  const rgaps_ts *found = cache_find(members, cpp);
  if (found) return found;
  for (int i = 0; i < bs->depth; i++)
    if (bs->members[i] == members) {
      fail(RGAPS_TS_ERROR, "type support: a message type contains itself");
      return NULL;
    }
  if (bs->depth == MAX_DEPTH) {
    fail(RGAPS_TS_ERROR, "type support: messages nested more than %d deep", MAX_DEPTH);
    return NULL;
  }

  rgaps_ts *t = calloc(1, sizeof *t);
  if (!t) {
    fail(RGAPS_TS_BAD_ALLOC, "type support: out of memory");
    return NULL;
  }
  t->members = members;
  t->cpp = cpp;
  uint32_t n;
  if (cpp) {
    const rgaps_introspection_cpp_MessageMembers *mm = members;
    t->ns = mm->message_namespace_;
    t->name = mm->message_name_;
    t->size_of = mm->size_of_;
    n = mm->member_count_;
    t->init_fn = mm->init_function;
    t->fini_fn = mm->fini_function;
  } else {
    const rosidl_typesupport_introspection_c__MessageMembers *mm = members;
    t->ns = mm->message_namespace_;
    t->name = mm->message_name_;
    t->size_of = mm->size_of_;
    n = mm->member_count_;
    t->init_fn = (void (*)(void *, int))mm->init_function;
    t->fini_fn = mm->fini_function;
  }
  const char *tname = t->name ? t->name : "(unnamed)";
  if (!t->ns || !t->name) {
    fail(RGAPS_TS_ERROR, "type support: message without namespace or name");
    goto bad;
  }
  if (n > 0x10000) {
    fail(RGAPS_TS_ERROR, "%s: %u members", tname, n);
    goto bad;
  }
  const void *marr = cpp ? (const void *)((const rgaps_introspection_cpp_MessageMembers *)members)->members_
                         : (const void *)((const rosidl_typesupport_introspection_c__MessageMembers *)members)->members_;
  if (n && !marr) {
    fail(RGAPS_TS_ERROR, "%s: %u members but no member table", tname, n);
    goto bad;
  }
  t->nfields = n;
  t->fields = calloc(n ? n : 1, sizeof(field));
  if (!t->fields) {
    fail(RGAPS_TS_BAD_ALLOC, "type support: out of memory");
    goto bad;
  }
  bs->members[bs->depth++] = members;
  for (uint32_t i = 0; i < n; i++) {
    member_view v = cpp ? view_cpp(&((const rgaps_introspection_cpp_MessageMember *)marr)[i])
                        : view_c(&((const rosidl_typesupport_introspection_c__MessageMember *)marr)[i]);
    if (setup_field(&t->fields[i], &v, cpp, t->size_of, bs, tname)) {
      bs->depth--;
      goto bad;
    }
    field *f = &t->fields[i];
    size_t elem = f->min_wire;
    t->min_wire = sat_add(t->min_wire, f->form == FORM_SEQ ? 4 : f->form == FORM_ARRAY ? sat_mul(elem, f->count) : elem);
  }
  bs->depth--;
  if (t->min_wire == 0) t->min_wire = 1;
  size_t end;
  if (plain_at(t, 0, 0, &end, 0) && end <= t->size_of) {
    t->plain = 1;
    t->plain_size = end;
  }
  t->next = cache;
  cache = t;
  return t;
bad:
  free(t->fields);
  free(t);
  return NULL;
}

/* Whether the fields of t, lying at memory offset mem of the message, have
 * CDR payload offsets equal to their memory offsets when the CDR cursor
 * before t is cur; *end is then the cursor after t. For an array of nested
 * messages the relation between an element's memory offset and the cursor
 * after the previous element is the same for every element after the first,
 * and alignment only depends on offsets modulo 8, so checking the first
 * PLAIN_PROBE elements decides for all. */
static int plain_at(const rgaps_ts *t, size_t mem, size_t cur, size_t *end, int depth) {
  if (depth > MAX_DEPTH) return 0;
  for (uint32_t i = 0; i < t->nfields; i++) {
    const field *f = &t->fields[i];
    if (f->form == FORM_SEQ || f->type == RGAPS_TYPE_STRING || f->type == RGAPS_TYPE_WSTRING ||
        f->type == RGAPS_TYPE_LONG_DOUBLE)
      return 0;
    size_t n = f->form == FORM_ARRAY ? f->count : 1;
    size_t at = mem + f->offset;
    if (f->type == RGAPS_TYPE_MESSAGE) {
      size_t probe = n < PLAIN_PROBE ? n : PLAIN_PROBE;
      for (size_t k = 0; k < probe; k++)
        if (!plain_at(f->nested, at + k * f->nested->size_of, cur, &cur, depth + 1)) return 0;
      if (n > probe) {
        /* the remaining elements follow with the same stride */
        size_t last_start = at + (probe - 1) * f->nested->size_of;
        if (cur < last_start) return 0;
        size_t tail = cur - last_start; /* bytes of one element's payload */
        cur = at + (n - 1) * f->nested->size_of + tail;
      }
    } else {
      size_t a = (cur + f->wire_align - 1) / f->wire_align * f->wire_align;
      if (a != at) return 0;
      cur = a + n * f->wire_size;
    }
  }
  *end = cur;
  return 1;
}

const rgaps_ts *rgaps_ts_resolve(const rosidl_message_type_support_t *ts) {
  const void *members;
  int cpp;
  if (!ts) {
    fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_resolve: NULL type support");
    return NULL;
  }
  int prefer_cpp = ts->typesupport_identifier && strstr(ts->typesupport_identifier, "cpp") != NULL;
  if (members_of(ts, prefer_cpp, -1, &members, &cpp)) return NULL;
  pthread_mutex_lock(&cache_mu);
  build_stack bs = {{0}, 0};
  const rgaps_ts *t = build(members, cpp, &bs);
  pthread_mutex_unlock(&cache_mu);
  return t;
}

const rgaps_ts *rgaps_ts_resolve_service(const rosidl_service_type_support_t *ts, const rgaps_ts **request,
                                         const rgaps_ts **response) {
  static const char *const ids[2] = {RGAPS_TS_ID_INTROSPECTION_C, RGAPS_TS_ID_INTROSPECTION_CPP};
  if (!ts) {
    fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_resolve_service: NULL type support");
    return NULL;
  }
  const void *sm = NULL;
  int cpp = 0;
  for (int lang = 0; lang < 2 && !sm; lang++)
    if (ts->typesupport_identifier && strcmp(ts->typesupport_identifier, ids[lang]) == 0) {
      sm = ts->data;
      cpp = lang;
    }
  if (!sm && ts->func) {
    int prefer_cpp = ts->typesupport_identifier && strstr(ts->typesupport_identifier, "cpp") != NULL;
    for (int k = 0; k < 2 && !sm; k++) {
      int lang = prefer_cpp ? 1 - k : k;
      const rosidl_service_type_support_t *r = ts->func(ts, ids[lang]);
      if (r && r->data && r->typesupport_identifier && strcmp(r->typesupport_identifier, ids[lang]) == 0) {
        sm = r->data;
        cpp = lang;
      }
    }
  }
  const rgaps_ts *req = NULL, *resp = NULL;
  if (sm) {
    const void *rq, *rs;
    if (cpp) {
      rq = ((const rgaps_introspection_cpp_ServiceMembers *)sm)->request_members_;
      rs = ((const rgaps_introspection_cpp_ServiceMembers *)sm)->response_members_;
    } else {
      rq = ((const rosidl_typesupport_introspection_c__ServiceMembers *)sm)->request_members_;
      rs = ((const rosidl_typesupport_introspection_c__ServiceMembers *)sm)->response_members_;
    }
    if (!rq || !rs) {
      fail(RGAPS_TS_ERROR, "service type support: missing request or response members");
      return NULL;
    }
    pthread_mutex_lock(&cache_mu);
    build_stack bs = {{0}, 0};
    req = build(rq, cpp, &bs);
    bs.depth = 0;
    if (req) resp = build(rs, cpp, &bs);
    pthread_mutex_unlock(&cache_mu);
  } else if (ts->request_typesupport && ts->response_typesupport && ts->typesupport_identifier &&
             (strcmp(ts->typesupport_identifier, "rosidl_typesupport_c") == 0 ||
              strcmp(ts->typesupport_identifier, "rosidl_typesupport_cpp") == 0)) {
    /* a dispatcher without an introspection service handle: the message
     * type supports it names (a handle of another identifier is not ours
     * to interpret, as rmw_create_service's contract says) */
    req = rgaps_ts_resolve(ts->request_typesupport);
    if (req) resp = rgaps_ts_resolve(ts->response_typesupport);
  } else {
    fail(RGAPS_TS_ERROR, "service type support \"%s\" yields neither %s nor %s",
         ts->typesupport_identifier ? ts->typesupport_identifier : "(null)", ids[0], ids[1]);
    return NULL;
  }
  if (!req || !resp) return NULL;
  if (request) *request = req;
  if (response) *response = resp;
  return req;
}

const char *rgaps_ts_type_name(const rgaps_ts *t, char *buf, size_t n) {
  if (!t || !buf) {
    fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_type_name: NULL argument");
    return NULL;
  }
  size_t o = 0;
  for (const char *p = t->ns; *p;) {
    const char *sep = NULL;
    if ((p[0] == '_' && p[1] == '_') || (p[0] == ':' && p[1] == ':')) sep = p;
    if (o + 1 >= n) goto small;
    if (sep) {
      buf[o++] = '/';
      p += 2;
    } else {
      buf[o++] = *p++;
    }
  }
  if (o + 1 >= n) goto small;
  buf[o++] = '/';
  size_t ln = strlen(t->name);
  if (o + ln + 1 > n) goto small;
  memcpy(buf + o, t->name, ln + 1);
  return buf;
small:
  fail(RGAPS_TS_ERROR, "rgaps_ts_type_name: buffer of %zu bytes too small", n);
  return NULL;
}

int rgaps_ts_is_plain(const rgaps_ts *t) { return t ? t->plain : 0; }
size_t rgaps_ts_plain_size(const rgaps_ts *t) { return t && t->plain ? t->plain_size : 0; }
size_t rgaps_ts_size_of(const rgaps_ts *t) { return t ? t->size_of : 0; }
int rgaps_ts_is_cpp(const rgaps_ts *t) { return t ? t->cpp : 0; }

int rgaps_ts_init(const rgaps_ts *t, void *msg) {
  if (!t || !msg) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_init: NULL argument");
  if (!t->init_fn) return fail(RGAPS_TS_ERROR, "%s: no init function", t->name);
  memset(msg, 0, t->size_of); /* padding zero: plain messages go out as they lie */
  if (t->cpp) {
    if (rgaps_ts_cxx_init(t->init_fn, msg, RGAPS_MSG_INIT_ALL))
      return fail(RGAPS_TS_BAD_ALLOC, "%s: constructor failed", t->name);
    return 0;
  }
  t->init_fn(msg, RGAPS_MSG_INIT_ALL);
  return 0;
}

void rgaps_ts_fini(const rgaps_ts *t, void *msg) {
  if (!t || !msg || !t->fini_fn) return;
  if (t->cpp)
    rgaps_ts_cxx_fini(t->fini_fn, msg);
  else
    t->fini_fn(msg);
}

/* ------------------------------------------------------------------ writer */

/* The writer counts every byte; it stores only those that fit in cap, so
 * the same walk computes sizes (buf NULL, cap 0) and serialises. */
typedef struct wr {
  uint8_t *buf;
  size_t cap;
  size_t pos; /* header included; alignment is relative to pos - HEADER_SIZE */
} wr;

static void w_pad(wr *w, size_t align) {
  size_t off = w->pos - HEADER_SIZE;
  size_t pad = (align - off % align) % align;
  for (; pad; pad--, w->pos++)
    if (w->pos < w->cap) w->buf[w->pos] = 0;
}

static void w_bytes(wr *w, const void *p, size_t n) {
  if (n && w->pos <= w->cap && n <= w->cap - w->pos) memcpy(w->buf + w->pos, p, n);
  w->pos = sat_add(w->pos, n);
}

static void w_u32(wr *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  w_pad(w, 4);
  w_bytes(w, b, 4);
}

/* n primitives of f's type lying contiguously at p (memory and wire are
 * both little-endian; bools are written 0/1 and the padding of an x87 long
 * double as zero). */
static void w_prims(wr *w, const field *f, const void *p, size_t n) {
  if (n == 0) return;
  w_pad(w, f->wire_align);
  const uint8_t *s = p;
  if (f->type == RGAPS_TYPE_BOOLEAN) {
    for (size_t i = 0; i < n; i++) {
      uint8_t b = s[i] != 0;
      w_bytes(w, &b, 1);
    }
  } else if (f->type == RGAPS_TYPE_LONG_DOUBLE && LD_X87) {
    for (size_t i = 0; i < n; i++) {
      uint8_t b[16] = {0};
      memcpy(b, s + 16 * i, 10);
      w_bytes(w, b, 16);
    }
  } else {
    w_bytes(w, s, sat_mul(n, f->wire_size));
  }
}

static int w_string(wr *w, const field *f, const char *data, size_t len) {
  if (f->str_bound && len > f->str_bound)
    return fail(RGAPS_TS_ERROR, "field %s: string of %zu bytes exceeds its bound %zu", f->name, len, f->str_bound);
  if (len >= UINT32_MAX) return fail(RGAPS_TS_ERROR, "field %s: string too long for CDR", f->name);
  if (len && !data) return fail(RGAPS_TS_ERROR, "field %s: string of size %zu without data", f->name, len);
  uint8_t nul = 0;
  w_u32(w, (uint32_t)(len + 1));
  w_bytes(w, data, len);
  w_bytes(w, &nul, 1);
  return 0;
}

static int w_wstring(wr *w, const field *f, const uint16_t *data, size_t len) {
  if (f->str_bound && len > f->str_bound)
    return fail(RGAPS_TS_ERROR, "field %s: wstring of %zu units exceeds its bound %zu", f->name, len, f->str_bound);
  if (len > UINT32_MAX) return fail(RGAPS_TS_ERROR, "field %s: wstring too long for CDR", f->name);
  if (len && !data) return fail(RGAPS_TS_ERROR, "field %s: wstring of size %zu without data", f->name, len);
  w_u32(w, (uint32_t)len);
  for (size_t i = 0; i < len; i++) {
    uint8_t b[4] = {(uint8_t)data[i], (uint8_t)(data[i] >> 8), 0, 0};
    w_bytes(w, b, 4);
  }
  return 0;
}

static int w_struct(wr *w, const rgaps_ts *t, const uint8_t *msg, int depth, uint32_t detach);

/* One non-primitive element (string, wstring or message) at p. */
static int w_elem(wr *w, const field *f, int cpp, const void *p, int depth) {
  if (f->type == RGAPS_TYPE_MESSAGE) return w_struct(w, f->nested, p, depth + 1, NO_MEMBER);
  if (f->type == RGAPS_TYPE_STRING) {
    if (cpp) {
      const char *d;
      size_t n;
      rgaps_ts_cxx_string_get(p, &d, &n);
      return w_string(w, f, d, n);
    }
    const rosidl_runtime_c__String *s = p;
    return w_string(w, f, s->data, s->size);
  }
  if (cpp) {
    const uint16_t *d;
    size_t n = 0;
    rgaps_ts_cxx_u16string_get(p, &d, &n);
    return w_wstring(w, f, d, n);
  }
  const rosidl_runtime_c__U16String *s = p;
  return w_wstring(w, f, (const uint16_t *)s->data, s->size);
}

static int w_field(wr *w, const field *f, int cpp, const uint8_t *msg, int depth) {
  const void *p = msg + f->offset;
  if (f->form == FORM_SCALAR) {
    if (is_prim(f->type)) {
      w_prims(w, f, p, 1);
      return 0;
    }
    return w_elem(w, f, cpp, p, depth);
  }
  size_t n = 0;
  if (f->form == FORM_ARRAY)
    n = f->count;
  else
    n = cpp ? f->fn.size_fn(p) : ((const cseq *)p)->size;
  if (f->form == FORM_SEQ) {
    if (f->count && n > f->count)
      return fail(RGAPS_TS_ERROR, "field %s: sequence of %zu elements exceeds its bound %zu", f->name, n, f->count);
    if (n > UINT32_MAX) return fail(RGAPS_TS_ERROR, "field %s: sequence too long for CDR", f->name);
    w_u32(w, (uint32_t)n);
  }
  if (n == 0) return 0;
  if (!cpp) {
    const uint8_t *base = f->form == FORM_ARRAY ? (const uint8_t *)p : (const uint8_t *)((const cseq *)p)->data;
    if (!base) return fail(RGAPS_TS_ERROR, "field %s: sequence of size %zu without data", f->name, n);
    if (is_prim(f->type)) {
      w_prims(w, f, base, n);
      return 0;
    }
    for (size_t i = 0; i < n; i++) {
      int rc = w_elem(w, f, 0, base + i * f->elem_mem, depth);
      if (rc) return rc;
    }
    return 0;
  }
  if (f->cpp_vbool) {
    for (size_t i = 0; i < n; i++) {
      bool b = false;
      f->fn.fetch_fn(p, i, &b);
      uint8_t v = b;
      w_bytes(w, &v, 1);
    }
    return 0;
  }
  if (is_prim(f->type)) {
    w_prims(w, f, f->fn.get_const_fn(p, 0), n);
    return 0;
  }
  for (size_t i = 0; i < n; i++) {
    int rc = w_elem(w, f, 1, f->fn.get_const_fn(p, i), depth);
    if (rc) return rc;
  }
  return 0;
}

/* The fields of t; top-level member detach (NO_MEMBER: none) is written as
 * an empty sequence. */
static int w_struct(wr *w, const rgaps_ts *t, const uint8_t *msg, int depth, uint32_t detach) {
  if (depth > MAX_DEPTH) return fail(RGAPS_TS_ERROR, "%s: nested too deep", t->name);
  for (uint32_t i = 0; i < t->nfields; i++) {
    if (i == detach) {
      w_u32(w, 0);
      continue;
    }
    int rc = w_field(w, &t->fields[i], t->cpp, msg, depth);
    if (rc) return rc;
  }
  return 0;
}

int rgaps_ts__serialize(const rgaps_ts *t, const void *msg, uint8_t *buf, size_t cap, size_t *used,
                        uint32_t detach) {
  static const uint8_t header[HEADER_SIZE] = {0x00, 0x01, 0x00, 0x00};
  wr w = {buf, buf ? cap : 0, 0};
  w_bytes(&w, header, HEADER_SIZE);
  int rc = w_struct(&w, t, msg, 0, detach);
  if (rc) return rc;
  if (w.pos == SIZE_MAX) return fail(RGAPS_TS_ERROR, "%s: message too large", t->name);
  *used = w.pos;
  if (w.pos > cap)
    return fail(RGAPS_TS_ERROR, "%s: buffer of %zu bytes too small, %zu needed", t->name, cap, w.pos);
  return 0;
}

int rgaps_ts_serialized_size(const rgaps_ts *t, const void *ros_msg, size_t *out) {
  if (!t || !ros_msg || !out) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_serialized_size: NULL argument");
  return rgaps_ts__serialize(t, ros_msg, NULL, SIZE_MAX, out, NO_MEMBER);
}

int rgaps_ts_serialize(const rgaps_ts *t, const void *ros_msg, uint8_t *buf, size_t cap, size_t *used) {
  if (!t || !ros_msg || !used || (!buf && cap))
    return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_serialize: NULL argument");
  return rgaps_ts__serialize(t, ros_msg, buf, cap, used, NO_MEMBER);
}

/* ------------------------------------------------------------------ reader */

typedef struct rd {
  const uint8_t *p; /* the payload (after the header) */
  size_t len;
  size_t pos;
  int big; /* CDR_BE input */
} rd;

static int truncated(const rd *r, const field *f, const char *what, size_t need) {
  return fail(RGAPS_TS_ERROR, "field %s: input truncated reading %s at payload offset %zu (%zu bytes needed, %zu left)",
              f ? f->name : "?", what, r->pos, need, r->len - r->pos);
}

/* Aligns and returns the next n bytes, or NULL if the input ends first. */
static const uint8_t *r_take(rd *r, size_t align, size_t n) {
  size_t pad = (align - r->pos % align) % align;
  if (pad > r->len - r->pos || n > r->len - r->pos - pad) return NULL;
  const uint8_t *s = r->p + r->pos + pad;
  r->pos += pad + n;
  return s;
}

static int r_u32(rd *r, const field *f, const char *what, uint32_t *v) {
  const uint8_t *b = r_take(r, 4, 4);
  if (!b) return truncated(r, f, what, 4);
  *v = r->big ? ((uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3])
              : ((uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0]);
  return 0;
}

/* Reads a count and checks it against the limit and the bytes left (each
 * element needs at least min bytes), before anything is allocated. */
static int r_count(rd *r, const field *f, const char *what, size_t min, uint32_t *n) {
  size_t at = r->pos;
  int rc = r_u32(r, f, what, n);
  if (rc) return rc;
  if (*n > RGAPS_TS_MAX_LENGTH)
    return fail(RGAPS_TS_ERROR, "field %s: %s %u at payload offset %zu exceeds the limit %u", f->name, what, *n, at,
                RGAPS_TS_MAX_LENGTH);
  if (sat_mul(*n, min ? min : 1) > r->len - r->pos)
    return fail(RGAPS_TS_ERROR,
                "field %s: %s %u at payload offset %zu: input truncated (elements of at least %zu bytes, %zu bytes left)",
                f->name, what, *n, at, min, r->len - r->pos);
  return 0;
}

/* n primitives into contiguous memory at dst. */
static int r_prims(rd *r, const field *f, void *dst, size_t n) {
  if (n == 0) return 0;
  size_t bytes = sat_mul(n, f->wire_size);
  const uint8_t *s = r_take(r, f->wire_align, bytes);
  if (!s) return truncated(r, f, "primitive values", bytes);
  uint8_t *d = dst;
  if (f->type == RGAPS_TYPE_BOOLEAN) {
    for (size_t i = 0; i < n; i++) d[i] = s[i] != 0;
  } else if (!r->big || f->wire_size == 1) {
    memcpy(d, s, bytes);
  } else {
    size_t k = f->wire_size;
    for (size_t i = 0; i < n; i++)
      for (size_t j = 0; j < k; j++) d[i * k + j] = s[i * k + k - 1 - j];
  }
  return 0;
}

/* Reads a string's bytes (without the NUL); *s points into the input. */
static int r_string(rd *r, const field *f, const char **s, size_t *len) {
  size_t at = r->pos;
  uint32_t n;
  int rc = r_count(r, f, "string length", 1, &n);
  if (rc) return rc;
  if (n == 0) { /* accepted as "" */
    *s = "";
    *len = 0;
    return 0;
  }
  const uint8_t *b = r->p + r->pos;
  if (b[n - 1] != 0)
    return fail(RGAPS_TS_ERROR, "field %s: string at payload offset %zu not NUL-terminated", f->name, at);
  if (f->str_bound && n - 1 > f->str_bound)
    return fail(RGAPS_TS_ERROR, "field %s: string of %u bytes at payload offset %zu exceeds its bound %zu", f->name,
                n - 1, at, f->str_bound);
  r->pos += n;
  *s = (const char *)b;
  *len = n - 1;
  return 0;
}

/* Reads a wstring's unit count and checks the units; they are then read
 * with r_wunits. */
static int r_wstring(rd *r, const field *f, const uint8_t **units, size_t *len) {
  size_t at = r->pos;
  uint32_t n;
  int rc = r_count(r, f, "wstring length", 4, &n);
  if (rc) return rc;
  if (f->str_bound && n > f->str_bound)
    return fail(RGAPS_TS_ERROR, "field %s: wstring of %u units at payload offset %zu exceeds its bound %zu", f->name, n,
                at, f->str_bound);
  const uint8_t *b = r->p + r->pos; /* aligned: the count was */
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *u = b + 4 * (size_t)i;
    if (r->big ? (u[0] | u[1]) : (u[2] | u[3]))
      return fail(RGAPS_TS_ERROR, "field %s: wide character above 0xFFFF at payload offset %zu", f->name,
                  r->pos + 4 * (size_t)i);
  }
  r->pos += 4 * (size_t)n;
  *units = b;
  *len = n;
  return 0;
}

static void wunits(const rd *r, const uint8_t *src, uint16_t *dst, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const uint8_t *u = src + 4 * i;
    dst[i] = r->big ? (uint16_t)(u[2] << 8 | u[3]) : (uint16_t)(u[1] << 8 | u[0]);
  }
}

static int c_string_set(rosidl_runtime_c__String *s, const char *src, size_t n, const field *f) {
  if (!s->data || s->capacity < n + 1) {
    char *d = realloc(s->data, n + 1);
    if (!d) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory for a string of %zu bytes", f->name, n);
    s->data = d;
    s->capacity = n + 1;
  }
  memcpy(s->data, src, n);
  s->data[n] = 0;
  s->size = n;
  return 0;
}

static int c_wstring_set(const rd *r, rosidl_runtime_c__U16String *s, const uint8_t *units, size_t n,
                         const field *f) {
  if (!s->data || s->capacity < n + 1) {
    uint_least16_t *d = realloc(s->data, (n + 1) * sizeof *d);
    if (!d) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory for a wstring of %zu units", f->name, n);
    s->data = d;
    s->capacity = n + 1;
  }
  wunits(r, units, (uint16_t *)s->data, n);
  s->data[n] = 0;
  s->size = n;
  return 0;
}

typedef struct detached {
  uint32_t member; /* top-level member not copied (NO_MEMBER: none) */
  size_t off, len; /* where its bytes lie in the input, header included */
} detached;

static int r_struct(rd *r, const rgaps_ts *t, uint8_t *msg, int depth, detached *d);

/* One non-primitive element (string, wstring or message) into p. */
static int r_elem(rd *r, const field *f, int cpp, void *p, int depth) {
  if (f->type == RGAPS_TYPE_MESSAGE) return r_struct(r, f->nested, p, depth + 1, NULL);
  if (f->type == RGAPS_TYPE_STRING) {
    const char *s = NULL;
    size_t n = 0;
    int rc = r_string(r, f, &s, &n);
    if (rc) return rc;
    if (!cpp) return c_string_set(p, s, n, f);
    char *d = rgaps_ts_cxx_string_resize(p, n);
    if (!d) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory for a string of %zu bytes", f->name, n);
    memcpy(d, s, n);
    return 0;
  }
  const uint8_t *units = NULL;
  size_t n = 0;
  int rc = r_wstring(r, f, &units, &n);
  if (rc) return rc;
  if (!cpp) return c_wstring_set(r, p, units, n, f);
  uint16_t *d = rgaps_ts_cxx_u16string_resize(p, n);
  if (!d) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory for a wstring of %zu units", f->name, n);
  wunits(r, units, d, n);
  return 0;
}

/* Resizes the C sequence at p to n elements: through the member's
 * resize_function when it has one (rosidl's: fini then init), otherwise
 * with realloc, initialising new elements and finalising dropped ones the
 * way rosidl_runtime_c does. Elements kept are overwritten by the caller. */
static int c_seq_resize(const field *f, cseq *s, size_t n) {
  if (s->size == n && (n == 0 || s->data)) return 0;
  if (f->fn.resize_c) {
    if (!f->fn.resize_c(s, n)) return fail(RGAPS_TS_BAD_ALLOC, "field %s: resize to %zu elements failed", f->name, n);
    if (s->size != n || (n && !s->data))
      return fail(RGAPS_TS_ERROR, "field %s: resize function left %zu elements, want %zu", f->name, s->size, n);
    return 0;
  }
  uint8_t *data = s->data;
  if (!data) s->size = 0; /* nothing initialised without data */
  /* drop what is beyond n */
  for (size_t i = n; i < s->size; i++) {
    void *e = data + i * f->elem_mem;
    if (f->type == RGAPS_TYPE_STRING || f->type == RGAPS_TYPE_WSTRING) {
      free(((rosidl_runtime_c__String *)e)->data); /* same layout for U16String */
      memset(e, 0, f->elem_mem);
    } else if (f->type == RGAPS_TYPE_MESSAGE && f->nested->fini_fn) {
      f->nested->fini_fn(e);
    }
  }
  if (n < s->size) {
    s->size = n;
    return 0;
  }
  if (n > s->capacity || !data) {
    if (sat_mul(n, f->elem_mem) == SIZE_MAX)
      return fail(RGAPS_TS_BAD_ALLOC, "field %s: sequence of %zu elements too large", f->name, n);
    uint8_t *d = realloc(data, n * f->elem_mem);
    if (!d) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory for %zu elements", f->name, n);
    s->data = data = d;
    s->capacity = n;
  }
  /* initialise what is new, one element at a time so that size always
   * counts initialised elements */
  while (s->size < n) {
    void *e = data + s->size * f->elem_mem;
    memset(e, 0, f->elem_mem);
    if (f->type == RGAPS_TYPE_STRING || f->type == RGAPS_TYPE_WSTRING) {
      size_t unit = f->type == RGAPS_TYPE_STRING ? 1 : 2;
      rosidl_runtime_c__String *str = e;
      str->data = calloc(1, unit);
      if (!str->data) return fail(RGAPS_TS_BAD_ALLOC, "field %s: out of memory", f->name);
      str->capacity = 1;
    } else if (f->type == RGAPS_TYPE_MESSAGE && f->nested->init_fn) {
      f->nested->init_fn(e, RGAPS_MSG_INIT_ALL);
    }
    s->size++;
  }
  return 0;
}

int rgaps_ts__seq_resize(const field *f, int cpp, void *p, size_t n) {
  if (!cpp) return c_seq_resize(f, p, n);
  if (f->fn.size_fn(p) == n) return 0;
  if (rgaps_ts_cxx_resize(f->fn.resize_cpp, p, n))
    return fail(RGAPS_TS_BAD_ALLOC, "field %s: resize to %zu elements failed", f->name, n);
  if (f->fn.size_fn(p) != n)
    return fail(RGAPS_TS_ERROR, "field %s: resize function left %zu elements, want %zu", f->name, f->fn.size_fn(p), n);
  return 0;
}

/* A sequence's length, checked against the input and the bound. */
static int r_seq_count(rd *r, const field *f, size_t *n) {
  size_t at = r->pos;
  uint32_t c;
  int rc = r_count(r, f, "sequence length", f->min_wire, &c);
  if (rc) return rc;
  if (f->count && c > f->count)
    return fail(RGAPS_TS_ERROR, "field %s: sequence of %u elements at payload offset %zu exceeds its bound %zu",
                f->name, c, at, f->count);
  *n = c;
  return 0;
}

/* A detached byte sequence: left empty in memory, its bytes skipped. */
static int r_detached(rd *r, const field *f, int cpp, uint8_t *msg, detached *d) {
  int rc = r_seq_count(r, f, &d->len);
  if (rc) return rc;
  d->off = HEADER_SIZE + r->pos; /* r_seq_count checked that the bytes are there */
  r->pos += d->len;
  return rgaps_ts__seq_resize(f, cpp, msg + f->offset, 0);
}

static int r_field(rd *r, const field *f, int cpp, uint8_t *msg, int depth) {
  void *p = msg + f->offset;
  if (f->form == FORM_SCALAR) return is_prim(f->type) ? r_prims(r, f, p, 1) : r_elem(r, f, cpp, p, depth);
  size_t n = 0;
  if (f->form == FORM_ARRAY) {
    n = f->count;
    if (sat_mul(n, f->min_wire) > r->len - r->pos)
      return fail(RGAPS_TS_ERROR,
                  "field %s: input truncated at payload offset %zu (%zu elements of at least %zu bytes, %zu bytes left)",
                  f->name, r->pos, n, f->min_wire, r->len - r->pos);
  } else {
    int rc = r_seq_count(r, f, &n);
    if (rc) return rc;
    rc = rgaps_ts__seq_resize(f, cpp, p, n);
    if (rc) return rc;
  }
  if (n == 0) return 0;
  if (!cpp) {
    uint8_t *base = f->form == FORM_ARRAY ? (uint8_t *)p : (uint8_t *)((cseq *)p)->data;
    if (is_prim(f->type)) return r_prims(r, f, base, n);
    for (size_t i = 0; i < n; i++) {
      int rc = r_elem(r, f, 0, base + i * f->elem_mem, depth);
      if (rc) return rc;
    }
    return 0;
  }
  if (f->cpp_vbool) {
    const uint8_t *s = r_take(r, 1, n);
    if (!s) return truncated(r, f, "bool values", n);
    for (size_t i = 0; i < n; i++) {
      bool b = s[i] != 0;
      f->fn.assign_fn(p, i, &b);
    }
    return 0;
  }
  if (is_prim(f->type)) return r_prims(r, f, f->fn.get_fn(p, 0), n);
  for (size_t i = 0; i < n; i++) {
    int rc = r_elem(r, f, 1, f->fn.get_fn(p, i), depth);
    if (rc) return rc;
  }
  return 0;
}

/* The fields of t; d (top level only, may be NULL) names a member to
 * detach and receives where its bytes are. */
static int r_struct(rd *r, const rgaps_ts *t, uint8_t *msg, int depth, detached *d) {
  if (depth > MAX_DEPTH) return fail(RGAPS_TS_ERROR, "%s: nested too deep", t->name);
  for (uint32_t i = 0; i < t->nfields; i++) {
    int rc = d && i == d->member ? r_detached(r, &t->fields[i], t->cpp, msg, d)
                                 : r_field(r, &t->fields[i], t->cpp, msg, depth);
    if (rc) return rc;
  }
  return 0;
}

int rgaps_ts_deserialize(const rgaps_ts *t, const uint8_t *buf, size_t len, void *ros_msg) {
  if (!t || !ros_msg || !buf) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_deserialize: NULL argument");
  return rgaps_ts__deserialize(t, buf, len, ros_msg, NO_MEMBER, NULL, NULL);
}

int rgaps_ts__deserialize(const rgaps_ts *t, const uint8_t *buf, size_t len, void *ros_msg, uint32_t detach,
                          size_t *data_off, size_t *data_len) {
  if (len < HEADER_SIZE) return fail(RGAPS_TS_ERROR, "%s: %zu bytes, shorter than the CDR header", t->name, len);
  if (buf[0] != 0 || (buf[1] != 0x00 && buf[1] != 0x01))
    return fail(RGAPS_TS_ERROR, "%s: unsupported encapsulation %02x %02x (only CDR_LE and CDR_BE)", t->name, buf[0],
                buf[1]);
  rd r = {buf + HEADER_SIZE, len - HEADER_SIZE, 0, buf[1] == 0x00};
  detached d = {detach, 0, 0};
  int rc = r_struct(&r, t, ros_msg, 0, detach == NO_MEMBER ? NULL : &d);
  if (rc == RGAPS_TS_ERROR) {
    char tmp[sizeof last_error];
    memcpy(tmp, last_error, sizeof tmp);
    fail(rc, "%s: %s", t->name, tmp);
  }
  if (rc == 0 && detach != NO_MEMBER) {
    *data_off = d.off;
    *data_len = d.len;
  }
  return rc;
}

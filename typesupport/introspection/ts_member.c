/*
 * ts_member.c — see rgaps_ts.h: the byte-sequence members of a message (a
 * sensor_msgs/Image's data) found, read and written in C or C++ message
 * memory, and serialisation with such a member detached from the rest. The
 * walking itself is ts_cdr.c's (rgaps_ts__serialize, rgaps_ts__deserialize,
 * rgaps_ts__seq_resize).
 */
#include <stdio.h>
#include <string.h>

#include "ts_internal.h"

/* uint8, octet and char: the types of raw bytes; int8 (signed numbers) and
 * bool (0/1) are not. */
static int is_byte_seq(const field *f) {
  return f->form == FORM_SEQ &&
         (f->type == RGAPS_TYPE_UINT8 || f->type == RGAPS_TYPE_OCTET || f->type == RGAPS_TYPE_CHAR);
}

/* The byte-sequence member `member` of t, or NULL with last_error set. */
static const field *byte_field(const rgaps_ts *t, uint32_t member, const char *fn) {
  if (member >= t->nfields) {
    fail(RGAPS_TS_ERROR, "%s: %s has %u members, no member %u", fn, t->name, t->nfields, member);
    return NULL;
  }
  const field *f = &t->fields[member];
  if (!is_byte_seq(f)) {
    fail(RGAPS_TS_ERROR, "%s: %s.%s is not a sequence of uint8, octet or char", fn, t->name, f->name);
    return NULL;
  }
  return f;
}

size_t rgaps_ts_byte_member_count(const rgaps_ts *t) {
  size_t n = 0;
  for (uint32_t i = 0; t && i < t->nfields; i++) n += is_byte_seq(&t->fields[i]) != 0;
  return n;
}

int rgaps_ts_byte_member(const rgaps_ts *t, const char *name, uint32_t *index) {
  if (!t || !index) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_byte_member: NULL argument");
  const char *want = name ? name : "data";
  char cands[256] = "";
  size_t used = 0;
  uint32_t ncand = 0, only = 0;
  int named = 0; /* a member of that name exists */
  for (uint32_t i = 0; i < t->nfields; i++) {
    const field *f = &t->fields[i];
    int byte = is_byte_seq(f);
    if (strcmp(f->name, want) == 0) {
      if (byte) {
        *index = i;
        return 0;
      }
      named = 1;
    }
    if (!byte) continue;
    only = i;
    ncand++;
    if (used < sizeof cands)
      used += (size_t)snprintf(cands + used, sizeof cands - used, "%s%s", ncand > 1 ? ", " : "", f->name);
  }
  if (!name && ncand == 1) {
    *index = only;
    return 0;
  }
  char tn[256];
  if (!rgaps_ts_type_name(t, tn, sizeof tn)) snprintf(tn, sizeof tn, "%s", t->name);
  const char *why = !name ? "none named data and more than one"
                    : named ? "not a sequence of uint8, octet or char"
                            : "no such member";
  if (ncand == 0)
    return fail(RGAPS_TS_ERROR, "%s: byte member %s: %s; the type has no sequence of uint8, octet or char", tn,
                name ? name : "(default)", name ? why : "none");
  return fail(RGAPS_TS_ERROR, "%s: byte member %s: %s; its byte sequences are: %s", tn, name ? name : "(default)",
              why, cands);
}

int rgaps_ts_serialized_size_detached(const rgaps_ts *t, const void *ros_msg, uint32_t member, size_t *out) {
  if (!t || !ros_msg || !out)
    return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_serialized_size_detached: NULL argument");
  if (!byte_field(t, member, "rgaps_ts_serialized_size_detached")) return RGAPS_TS_ERROR;
  return rgaps_ts__serialize(t, ros_msg, NULL, SIZE_MAX, out, member);
}

int rgaps_ts_serialize_detached(const rgaps_ts *t, const void *ros_msg, uint32_t member, uint8_t *buf, size_t cap,
                                size_t *used) {
  if (!t || !ros_msg || !used || (!buf && cap))
    return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_serialize_detached: NULL argument");
  if (!byte_field(t, member, "rgaps_ts_serialize_detached")) return RGAPS_TS_ERROR;
  return rgaps_ts__serialize(t, ros_msg, buf, cap, used, member);
}

int rgaps_ts_deserialize_detached(const rgaps_ts *t, const uint8_t *buf, size_t len, void *ros_msg, uint32_t member,
                                  size_t *data_off, size_t *data_len) {
  if (!t || !buf || !ros_msg || !data_off || !data_len)
    return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_deserialize_detached: NULL argument");
  if (!byte_field(t, member, "rgaps_ts_deserialize_detached")) return RGAPS_TS_ERROR;
  return rgaps_ts__deserialize(t, buf, len, ros_msg, member, data_off, data_len);
}

int rgaps_ts_member_bytes(const rgaps_ts *t, const void *ros_msg, uint32_t member, const uint8_t **data,
                          size_t *len) {
  static const uint8_t none[1];
  if (!t || !ros_msg || !data || !len) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_member_bytes: NULL argument");
  const field *f = byte_field(t, member, "rgaps_ts_member_bytes");
  if (!f) return RGAPS_TS_ERROR;
  const void *p = (const uint8_t *)ros_msg + f->offset;
  size_t n = t->cpp ? f->fn.size_fn(p) : ((const cseq *)p)->size;
  const uint8_t *d = n == 0 ? none : t->cpp ? f->fn.get_const_fn(p, 0) : ((const cseq *)p)->data;
  if (!d) return fail(RGAPS_TS_ERROR, "rgaps_ts_member_bytes: %s.%s: %zu bytes without data", t->name, f->name, n);
  *data = d;
  *len = n;
  return 0;
}

int rgaps_ts_set_member_bytes(const rgaps_ts *t, void *ros_msg, uint32_t member, const uint8_t *data, size_t len) {
  if (!t || !ros_msg || (!data && len)) return fail(RGAPS_TS_INVALID_ARG, "rgaps_ts_set_member_bytes: NULL argument");
  const field *f = byte_field(t, member, "rgaps_ts_set_member_bytes");
  if (!f) return RGAPS_TS_ERROR;
  if (f->count && len > f->count)
    return fail(RGAPS_TS_ERROR, "rgaps_ts_set_member_bytes: %s.%s: %zu bytes exceed the bound %zu", t->name, f->name,
                len, f->count);
  void *p = (uint8_t *)ros_msg + f->offset;
  int rc = rgaps_ts__seq_resize(f, t->cpp, p, len);
  if (rc || len == 0) return rc;
  memcpy(t->cpp ? f->fn.get_fn(p, 0) : ((cseq *)p)->data, data, len);
  return 0;
}

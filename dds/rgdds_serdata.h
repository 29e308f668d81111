// The raw sertype: a keyless Cyclone DDS type whose samples are opaque
// serialized messages, the 4-byte encapsulation header included, so any
// ROS message type travels without generated code. Included by cdds.go
// only (after rgdds_load.h).
//
// A serdata owns one malloc'd copy of the message (size bytes, header
// included), allocated up to a multiple of 4 and zero-padded: DDSI may ask
// for the bytes up to that multiple. Writing sets the padding count in the
// low 2 bits of the encapsulation options (XTypes 7.6.3.1.2, what Cyclone's
// own serializer does); receiving drops that many trailing bytes and clears
// the bits, so a reader gets the message at its exact length whenever the
// writer said how much it padded. Application samples (dds_write, dds_take)
// are struct rgd_sample; this package itself takes serdatas (dds_takecdr).
#ifndef RGAPS_DDS_SERDATA_H
#define RGAPS_DDS_SERDATA_H
#include <string.h>
#include "dds/ddsi/q_radmin.h"
#include "dds/ddsi/q_protocol.h"

// An application sample: the message is data[0:len], followed, when
// written, by more[0:more_len] and last[0:last_len] (a message written in
// parts, rgd_write_parts; taken samples have data only).
struct rgd_sample {
	const unsigned char *data;
	uint32_t len;
	const unsigned char *more, *last;
	uint32_t more_len, last_len;
};

// rgd_sample_len is the sample's message length: its parts' total, or 0
// when that does not fit a uint32_t (no message has it).
static uint32_t rgd_sample_len(const struct rgd_sample *s) {
	uint64_t n = (uint64_t)s->len + s->more_len + s->last_len;
	return n > UINT32_MAX - 3u ? 0 : (uint32_t)n;
}

// rgd_sample_copy copies the sample's parts to dst, in order.
static void rgd_sample_copy(const struct rgd_sample *s, unsigned char *dst) {
	if (s->len)
		memcpy(dst, s->data, s->len);
	if (s->more_len)
		memcpy(dst + s->len, s->more, s->more_len);
	if (s->last_len)
		memcpy(dst + s->len + s->more_len, s->last, s->last_len);
}

struct rgd_serdata {
	struct ddsi_serdata c;
	uint32_t size; // bytes of the message, header included
	unsigned char *data;
	int64_t seq; // the writer's sequence number, when received (0: unknown)
};

static struct ddsi_serdata_ops rgd_serdata_ops;
static struct ddsi_sertype_ops rgd_sertype_ops;

static uint32_t rgd_align4(uint32_t n) { return (n + 3u) & ~3u; }

// rgd_sd_new makes a serdata with room for size bytes (0 for a key-only
// one: keyless, so it holds nothing).
static struct rgd_serdata *rgd_sd_new(const struct ddsi_sertype *t, enum ddsi_serdata_kind k, uint32_t size) {
	struct rgd_serdata *d = calloc(1, sizeof *d);
	if (!d)
		return NULL;
	if (size > 0) {
		uint32_t cap = rgd_align4(size);
		if (cap < size || !(d->data = malloc(cap))) {
			free(d);
			return NULL;
		}
		if (cap > size)
			memset(d->data + size, 0, cap - size);
	}
	rgd.ddsi_serdata_init(&d->c, t, k);
	d->c.hash = t->serdata_basehash; // one instance: every sample hashes alike
	d->size = size;
	return d;
}

// rgd_sd_trim applies a received header's padding count. Only a size
// that is a multiple of 4 holds padding: a DATA submessage carries the
// padded bytes, but a fragmented sample arrives at the size the writer's
// serdata reported (DATAFRAG's sample size), which for ours is the exact
// length, so its bits are cleared and nothing is cut.
static void rgd_sd_trim(struct rgd_serdata *d) {
	if (d->size < 4)
		return;
	uint32_t pad = d->data[3] & 3u;
	d->data[3] &= (unsigned char)~3u;
	if (pad && d->size % 4 == 0 && d->size - 4 >= pad) {
		d->size -= pad;
		memset(d->data + d->size, 0, pad);
	}
}

static uint32_t rgd_sd_get_size(const struct ddsi_serdata *dc) { return ((const struct rgd_serdata *)dc)->size; }

static void rgd_sd_free(struct ddsi_serdata *dc) {
	struct rgd_serdata *d = (struct rgd_serdata *)dc;
	free(d->data);
	free(d);
}

static bool rgd_sd_eqkey(const struct ddsi_serdata *a, const struct ddsi_serdata *b) { return true; }

// rgd_sd_for_ser makes the serdata a received sample of size bytes goes
// into (an empty one for a key); NULL for a size no message has.
static struct rgd_serdata *rgd_sd_for_ser(const struct ddsi_sertype *t, enum ddsi_serdata_kind k, size_t size) {
	if (k != SDK_DATA)
		return rgd_sd_new(t, k, 0);
	if (size < 4 || size > UINT32_MAX)
		return NULL;
	return rgd_sd_new(t, k, (uint32_t)size);
}

// rgd_frag_seq is the writer sequence number of the DATA or DATA_FRAG
// submessage a received fragment came in (0 when there is none). DDSI
// validated the submessage and put its fields in native byte order before
// handing the data over.
static int64_t rgd_frag_seq(const struct nn_rdata *frag) {
	if (!frag || !frag->rmsg || frag->submsg_zoff == 0)
		return 0;
	const Data_DataFrag_common_t *sm = (const void *)NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_SUBMSG_OFF(frag));
	if (sm->smhdr.submessageId != SMID_DATA && sm->smhdr.submessageId != SMID_DATA_FRAG)
		return 0;
	int64_t sn = ((int64_t)sm->writerSN.high << 32) | sm->writerSN.low;
	return sn > 0 ? sn : 0;
}

static struct ddsi_serdata *rgd_sd_from_ser(const struct ddsi_sertype *t, enum ddsi_serdata_kind k, const struct nn_rdata *frag, size_t size) {
	struct rgd_serdata *d = rgd_sd_for_ser(t, k, size);
	if (!d || k != SDK_DATA)
		return d ? &d->c : NULL;
	d->seq = rgd_frag_seq(frag);
	// Fragments arrive in order but may overlap: copy what each adds.
	uint32_t off = 0;
	for (; frag && off < size; frag = frag->nextfrag) {
		if (frag->maxp1 <= off)
			continue;
		if (frag->min > off) { // a hole: never handed over by DDSI
			rgd_sd_free(&d->c);
			return NULL;
		}
		const unsigned char *p = NN_RMSG_PAYLOADOFF(frag->rmsg, NN_RDATA_PAYLOAD_OFF(frag));
		uint32_t end = frag->maxp1 < size ? frag->maxp1 : (uint32_t)size;
		memcpy(d->data + off, p + (off - frag->min), end - off);
		off = end;
	}
	if (off < size) {
		rgd_sd_free(&d->c);
		return NULL;
	}
	rgd_sd_trim(d);
	return &d->c;
}

static struct ddsi_serdata *rgd_sd_from_ser_iov(const struct ddsi_sertype *t, enum ddsi_serdata_kind k, ddsrt_msg_iovlen_t niov, const ddsrt_iovec_t *iov, size_t size) {
	struct rgd_serdata *d = rgd_sd_for_ser(t, k, size);
	if (!d || k != SDK_DATA)
		return d ? &d->c : NULL;
	size_t off = 0;
	for (ddsrt_msg_iovlen_t i = 0; i < niov && off < size; i++) {
		size_t n = iov[i].iov_len < size - off ? iov[i].iov_len : size - off;
		memcpy(d->data + off, iov[i].iov_base, n);
		off += n;
	}
	if (off < size) {
		rgd_sd_free(&d->c);
		return NULL;
	}
	rgd_sd_trim(d);
	return &d->c;
}

static struct ddsi_serdata *rgd_sd_from_keyhash(const struct ddsi_sertype *t, const struct ddsi_keyhash *kh) {
	struct rgd_serdata *d = rgd_sd_new(t, SDK_KEY, 0);
	return d ? &d->c : NULL;
}

static struct ddsi_serdata *rgd_sd_from_sample(const struct ddsi_sertype *t, enum ddsi_serdata_kind k, const void *sample) {
	const struct rgd_sample *s = sample;
	if (k != SDK_DATA) {
		struct rgd_serdata *d = rgd_sd_new(t, k, 0);
		return d ? &d->c : NULL;
	}
	uint32_t n = rgd_sample_len(s);
	if (n < 4 || s->len < 4) // the encapsulation header is in the first part
		return NULL;
	struct rgd_serdata *d = rgd_sd_new(t, k, n);
	if (!d)
		return NULL;
	rgd_sample_copy(s, d->data);
	d->data[3] = (unsigned char)((d->data[3] & ~3u) | (rgd_align4(n) - n));
	return &d->c;
}

static void rgd_sd_to_ser(const struct ddsi_serdata *dc, size_t off, size_t sz, void *buf) {
	const struct rgd_serdata *d = (const struct rgd_serdata *)dc;
	memcpy(buf, d->data + off, sz);
}

static struct ddsi_serdata *rgd_sd_to_ser_ref(const struct ddsi_serdata *dc, size_t off, size_t sz, ddsrt_iovec_t *ref) {
	struct rgd_serdata *d = (struct rgd_serdata *)dc;
	ref->iov_base = d->data + off;
	ref->iov_len = (ddsrt_iov_len_t)sz;
	__atomic_fetch_add(&d->c.refc.v, 1, __ATOMIC_RELAXED);
	return &d->c;
}

static void rgd_sd_unref(struct ddsi_serdata *d) {
	if (__atomic_fetch_sub(&d->refc.v, 1, __ATOMIC_ACQ_REL) == 1)
		d->ops->free(d);
}

static void rgd_sd_to_ser_unref(struct ddsi_serdata *dc, const ddsrt_iovec_t *ref) { rgd_sd_unref(dc); }

// rgd_sd_to_sample gives the sample a malloc'd copy (freed by free_samples
// with DDS_FREE_CONTENTS); Cyclone's buffer arguments are not used.
static bool rgd_sd_to_sample(const struct ddsi_serdata *dc, void *sample, void **bufptr, void *buflim) {
	const struct rgd_serdata *d = (const struct rgd_serdata *)dc;
	struct rgd_sample *s = sample;
	unsigned char *p = NULL;
	if (d->size && !(p = malloc(d->size)))
		return false;
	if (d->size)
		memcpy(p, d->data, d->size);
	s->data = p;
	s->len = d->size;
	s->more = s->last = NULL;
	s->more_len = s->last_len = 0;
	return true;
}

static struct ddsi_serdata *rgd_sd_to_untyped(const struct ddsi_serdata *dc) {
	struct rgd_serdata *d = rgd_sd_new(dc->type, SDK_KEY, 0);
	return d ? &d->c : NULL;
}

static bool rgd_sd_untyped_to_sample(const struct ddsi_sertype *t, const struct ddsi_serdata *d, void *sample, void **bufptr, void *buflim) {
	if (sample)
		memset(sample, 0, sizeof(struct rgd_sample));
	return true;
}

static size_t rgd_sd_print(const struct ddsi_sertype *t, const struct ddsi_serdata *dc, char *buf, size_t bufsize) {
	return (size_t)snprintf(buf, bufsize, "(raw %u bytes)", ((const struct rgd_serdata *)dc)->size);
}

static void rgd_sd_get_keyhash(const struct ddsi_serdata *d, struct ddsi_keyhash *buf, bool force_md5) {
	memset(buf, 0, sizeof *buf);
}

// The sertype: a ddsi_sertype and nothing else; two are equal when their
// type names are (the generic part Cyclone compares itself).
static void rgd_st_free(struct ddsi_sertype *t) {
	rgd.ddsi_sertype_fini(t);
	free(t);
}

static void rgd_st_zero_samples(const struct ddsi_sertype *t, void *samples, size_t count) {
	memset(samples, 0, count * sizeof(struct rgd_sample));
}

static void rgd_st_realloc_samples(void **ptrs, const struct ddsi_sertype *t, void *old, size_t oldcount, size_t count) {
	struct rgd_sample *s = realloc(old, count * sizeof *s);
	if (s && count > oldcount)
		memset(s + oldcount, 0, (count - oldcount) * sizeof *s);
	for (size_t i = 0; ptrs && i < count; i++)
		ptrs[i] = s ? &s[i] : NULL;
}

static void rgd_st_free_samples(const struct ddsi_sertype *t, void **ptrs, size_t count, dds_free_op_t op) {
	if (op & DDS_FREE_CONTENTS_BIT)
		for (size_t i = 0; i < count; i++) {
			struct rgd_sample *s = ptrs[i];
			free((void *)s->data);
			s->data = NULL;
			s->len = 0;
		}
	if ((op & DDS_FREE_ALL_BIT) && count > 0)
		free(ptrs[0]);
}

static bool rgd_st_equal(const struct ddsi_sertype *a, const struct ddsi_sertype *b) { return true; }
static uint32_t rgd_st_hash(const struct ddsi_sertype *t) { return 0; }

static size_t rgd_st_serialized_size(const struct ddsi_sertype *t, const void *sample) {
	return rgd_sample_len(sample);
}

static bool rgd_st_serialize_into(const struct ddsi_sertype *t, const void *sample, void *dst, size_t dst_size) {
	const struct rgd_sample *s = sample;
	uint32_t n = rgd_sample_len(s);
	if (n == 0 || dst_size < n)
		return false;
	rgd_sample_copy(s, dst);
	return true;
}

static void rgd_load_ops(void) {
	rgd_serdata_ops = (struct ddsi_serdata_ops){
		.eqkey = rgd_sd_eqkey,
		.get_size = rgd_sd_get_size,
		.from_ser = rgd_sd_from_ser,
		.from_ser_iov = rgd_sd_from_ser_iov,
		.from_keyhash = rgd_sd_from_keyhash,
		.from_sample = rgd_sd_from_sample,
		.to_ser = rgd_sd_to_ser,
		.to_ser_ref = rgd_sd_to_ser_ref,
		.to_ser_unref = rgd_sd_to_ser_unref,
		.to_sample = rgd_sd_to_sample,
		.to_untyped = rgd_sd_to_untyped,
		.untyped_to_sample = rgd_sd_untyped_to_sample,
		.free = rgd_sd_free,
		.print = rgd_sd_print,
		.get_keyhash = rgd_sd_get_keyhash,
		// get_sample_size, from_iox_buffer (Iceoryx in Cyclone): unused, NULL
	};
	rgd_sertype_ops = (struct ddsi_sertype_ops){
		.version = rgd.ddsi_sertype_v0,
		.free = rgd_st_free,
		.zero_samples = rgd_st_zero_samples,
		.realloc_samples = rgd_st_realloc_samples,
		.free_samples = rgd_st_free_samples,
		.equal = rgd_st_equal,
		.hash = rgd_st_hash,
		// type_id, type_map, type_info, derive_sertype: no XTypes type
		// information, so matching is by type name, as with ROS's rmw
		.get_serialized_size = rgd_st_serialized_size,
		.serialize_into = rgd_st_serialize_into,
	};
}

// rgd_create_raw_topic creates topic (a DDS name, "rt/chatter") of the raw
// type named type ("std_msgs::msg::dds_::String_").
int32_t rgd_create_raw_topic(int32_t pp, const char *topic, const char *type) {
	struct ddsi_sertype *st = calloc(1, sizeof *st);
	if (!st)
		return DDS_RETCODE_OUT_OF_RESOURCES;
	rgd.ddsi_sertype_init_flags(st, type, &rgd_sertype_ops, &rgd_serdata_ops, DDSI_SERTYPE_FLAG_TOPICKIND_NO_KEY);
	st->allowed_data_representation = DDS_DATA_REPRESENTATION_FLAG_XCDR1;
	struct ddsi_sertype *arg = st;
	int32_t t = rgd.dds_create_topic_sertype(pp, topic, &arg, NULL, NULL, NULL);
	if (t < 0)
		rgd_st_free(st);
	return t;
}

// rgd_write writes len bytes (ts: source timestamp in ns since the epoch).
int32_t rgd_write(int32_t w, const void *buf, uint32_t len, int64_t ts) {
	struct rgd_sample s = {.data = buf, .len = len};
	return rgd.dds_write_ts(w, &s, ts);
}

// rgd_write_parts writes the message a[0:alen] b[0:blen] c[0:clen] (a
// holding at least the encapsulation header), copied once, into the
// serdata: a message split around a large field is never joined first.
int32_t rgd_write_parts(int32_t w, const void *a, uint32_t alen, const void *b, uint32_t blen, const void *c,
			uint32_t clen, int64_t ts) {
	struct rgd_sample s = {.data = a, .len = alen, .more = b, .more_len = blen, .last = c, .last_len = clen};
	if (alen < 4 || rgd_sample_len(&s) == 0)
		return DDS_RETCODE_BAD_PARAMETER;
	return rgd.dds_write_ts(w, &s, ts);
}

// rgd_take takes the next valid sample as a serdata reference (skipping
// invalid ones: instance state changes carry no data), with its source
// timestamp, publication handle and writer sequence number (0 when not
// known: a sample of this process's own writers). Returns 1, 0 when none
// is left, or a negative return code.
int32_t rgd_take(int32_t r, void **sd, uint32_t *size, int64_t *ts, uint64_t *pubh, int64_t *seq) {
	for (;;) {
		struct ddsi_serdata *d = NULL;
		dds_sample_info_t si;
		int32_t n = rgd.dds_takecdr(r, &d, 1, &si, DDS_ANY_STATE);
		if (n <= 0)
			return n;
		if (!si.valid_data) {
			rgd_sd_unref(d);
			continue;
		}
		*sd = d;
		*size = d->ops->get_size(d);
		*ts = si.source_timestamp;
		*pubh = si.publication_handle;
		*seq = d->ops == &rgd_serdata_ops ? ((struct rgd_serdata *)d)->seq : 0;
		return 1;
	}
}

// rgd_copy_unref copies a taken serdata's size bytes into buf (through
// its ops, so a serdata of another sertype works too) and drops the
// reference. Ours have their exact size already; their padding bits are
// cleared here too for a sample written in this process, which Cyclone
// hands over as the writer made it (with its bits set).
void rgd_copy_unref(void *sdv, void *buf, uint32_t size) {
	struct ddsi_serdata *d = sdv;
	if (size)
		d->ops->to_ser(d, 0, size, buf);
	if (size >= 4 && d->ops == &rgd_serdata_ops)
		((unsigned char *)buf)[3] &= (unsigned char)~3u;
	rgd_sd_unref(d);
}
#endif

// Declarations shared by every cgo file of package dds: the rgd_* helpers
// (defined once, in the files cdds.go includes) and the Cyclone DDS types
// they use. Go code calls only rgd_* functions: libddsc is loaded with
// dlopen, so no dds_* symbol is linked into a binary.
#ifndef RGAPS_DDS_H
#define RGAPS_DDS_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "dds/dds.h"

// rgd_qos_spec is the part of a dds_qos_t this package sets and reads back,
// as plain numbers (Cyclone's enums, durations in ns, DDS_INFINITY for none).
struct rgd_qos_spec {
	int32_t history;     // dds_history_kind_t
	int32_t depth;       // KEEP_LAST depth
	int32_t reliability; // dds_reliability_kind_t
	int32_t durability;  // dds_durability_kind_t
	int32_t liveliness;  // dds_liveliness_kind_t
	int64_t lease;       // liveliness lease duration
	int64_t deadline;
	int64_t lifespan;
	int64_t max_blocking; // reliability max blocking time (writers)
	int32_t writer;       // 1: writer QoS (no auto-dispose, durability service)
	int32_t tl_depth;     // writers, TRANSIENT_LOCAL KEEP_ALL: samples kept for late joiners (0: all)
	int32_t ignore_local; // 1: match no endpoint of the same participant
};

// rgd_ep is one discovered endpoint, pointing into a loaned built-in sample
// (valid until rgd_batch_free) except ud, which the caller frees with
// rgd_free.
struct rgd_ep {
	int32_t valid;
	uint8_t guid[16], ppguid[16];
	const char *topic, *type;
	struct rgd_qos_spec qos;
	void *ud;
	size_t udlen;
};

struct rgd_batch; // loaned samples of a built-in reader

int rgd_load(const char *path, char *err, size_t errlen);
const char *rgd_strretcode(int32_t rc);
void rgd_free(void *p);

int32_t rgd_create_domain(uint32_t domain, const char *xml);
int32_t rgd_create_participant(uint32_t domain, const void *ud, size_t udlen);
int32_t rgd_delete(int32_t e);
int32_t rgd_get_guid(int32_t e, uint8_t *out);

dds_qos_t *rgd_qos_new(const struct rgd_qos_spec *s, const void *ud, size_t udlen);
void rgd_qos_free(dds_qos_t *q);
int32_t rgd_qos_get(int32_t e, struct rgd_qos_spec *s, void **ud, size_t *udlen);

int32_t rgd_create_raw_topic(int32_t pp, const char *topic, const char *type);
int32_t rgd_create_writer(int32_t pp, int32_t topic, const dds_qos_t *q);
int32_t rgd_create_reader(int32_t pp, int32_t topic, const dds_qos_t *q);
int32_t rgd_matched(int32_t e, int32_t writer, uint32_t *count);
int32_t rgd_incompatible(int32_t e, int32_t writer, uint32_t *total, int32_t *policy);
int32_t rgd_wait_for_acks(int32_t w, int64_t timeout_ns);

int32_t rgd_write(int32_t w, const void *buf, uint32_t len, int64_t ts);
int32_t rgd_write_parts(int32_t w, const void *a, uint32_t alen, const void *b, uint32_t blen, const void *c,
			uint32_t clen, int64_t ts);
int32_t rgd_take(int32_t r, void **sd, uint32_t *size, int64_t *ts, uint64_t *pubh, int64_t *seq);
void rgd_copy_unref(void *sd, void *buf, uint32_t size);
int32_t rgd_publication_guid(int32_t r, uint64_t ih, uint8_t *out);

int32_t rgd_waitset_new(int32_t pp, int32_t reader);
int32_t rgd_waitset_wait(int32_t ws, int64_t timeout_ns);
int32_t rgd_waitset_trigger(int32_t ws);

int32_t rgd_builtin_reader(int32_t pp, int32_t publications);
struct rgd_batch *rgd_batch_read(int32_t r, int32_t *n);
void rgd_batch_at(struct rgd_batch *b, int32_t i, struct rgd_ep *out);
void rgd_batch_free(struct rgd_batch *b);
#endif

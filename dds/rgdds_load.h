// The Cyclone DDS entry points package dds uses, resolved with dlsym. Their
// types come from the headers (__typeof__), so a signature that differs
// from the installed headers is a compile error. Included by cdds.go only.
#ifndef RGAPS_DDS_LOAD_H
#define RGAPS_DDS_LOAD_H
#include <dlfcn.h>
#include <stdio.h>
#include "rgdds.h"
#include "dds/ddsi/ddsi_sertype.h"
#include "dds/ddsi/ddsi_serdata.h"

#define RGD_FNS(X)                                                             \
	X(dds_create_domain) X(dds_create_participant) X(dds_delete)           \
	X(dds_get_guid) X(dds_strretcode) X(dds_free)                          \
	X(dds_create_qos) X(dds_delete_qos) X(dds_get_qos)                     \
	X(dds_qset_history) X(dds_qset_reliability) X(dds_qset_durability)     \
	X(dds_qset_durability_service) X(dds_qset_liveliness)                  \
	X(dds_qset_deadline) X(dds_qset_lifespan) X(dds_qset_userdata)         \
	X(dds_qset_writer_data_lifecycle) X(dds_qset_data_representation)      \
	X(dds_qset_ignorelocal)                                                \
	X(dds_qget_history) X(dds_qget_reliability) X(dds_qget_durability)     \
	X(dds_qget_liveliness) X(dds_qget_deadline) X(dds_qget_lifespan)       \
	X(dds_qget_userdata)                                                   \
	X(dds_create_topic_sertype) X(dds_create_writer) X(dds_create_reader)  \
	X(dds_write_ts) X(dds_takecdr) X(dds_read_mask) X(dds_return_loan)     \
	X(dds_get_matched_publication_data) X(dds_builtintopic_free_endpoint)  \
	X(dds_get_publication_matched_status)                                  \
	X(dds_get_subscription_matched_status)                                 \
	X(dds_create_readcondition) X(dds_create_waitset) X(dds_waitset_attach) \
	X(dds_waitset_wait) X(dds_waitset_set_trigger)                         \
	X(dds_wait_for_acks) X(dds_get_requested_incompatible_qos_status)      \
	X(dds_get_offered_incompatible_qos_status)                             \
	X(ddsi_sertype_init_flags) X(ddsi_sertype_fini) X(ddsi_serdata_init)   \
	X(ddsi_sertype_v0)

#define RGD_FIELD(f) __typeof__(&f) f;
static struct { RGD_FNS(RGD_FIELD) } rgd;

// rgd_load_ops fills what of the sertype ops only the library knows.
static void rgd_load_ops(void);

// rgd_load dlopens path (RTLD_NOW | RTLD_LOCAL) and resolves every entry
// point. nn_rmsg_new is required too, though not called: receive buffers
// (struct nn_rmsg/nn_rdata, which from_ser walks) carry these names and
// this layout in the 0.10 series only, so a library without the symbol is
// another ABI. Returns 0, or -1 with the reason in err.
int rgd_load(const char *path, char *err, size_t errlen) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	if (!dlsym(h, "nn_rmsg_new")) {
		snprintf(err, errlen, "%s: no nn_rmsg_new, not the Cyclone DDS 0.10 ABI", path);
		dlclose(h);
		return -1;
	}
#define RGD_SYM(f)                                                             \
	if (!(rgd.f = (__typeof__(&f))dlsym(h, #f))) {                         \
		snprintf(err, errlen, "%s: missing %s", path, #f);             \
		dlclose(h);                                                    \
		return -1;                                                     \
	}
	RGD_FNS(RGD_SYM)
#undef RGD_SYM
	rgd_load_ops();
	return 0; // the handle stays open for the life of the process
}

const char *rgd_strretcode(int32_t rc) { return rgd.dds_strretcode(rc); }
void rgd_free(void *p) { rgd.dds_free(p); }
#endif

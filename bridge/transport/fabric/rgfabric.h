// C helpers for package fabric: function-like macros (FI_VERSION,
// fi_allocinfo) and struct handling that Go cannot reach through cgo, and
// a few calls batched so one cgo call does the work of several.
#ifndef RGAPS_FABRIC_H
#define RGAPS_FABRIC_H
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_errno.h>

static inline fi_addr_t rg_addr_unspec(void) { return FI_ADDR_UNSPEC; }
static inline fi_addr_t rg_addr_notavail(void) { return FI_ADDR_NOTAVAIL; }
static inline uint64_t rg_key_notavail(void) { return FI_KEY_NOTAVAIL; }

// rg_hints is what every endpoint asks for: RMA writes with remote CQ data
// and messages (control messages, and the receives FI_RX_CQ_DATA consumes);
// the modes and MR modes verbs may demand are offered, never required.
static inline struct fi_info *rg_hints(const char *prov, int ep_type) {
	struct fi_info *h = fi_allocinfo();
	if (!h)
		return NULL;
	h->ep_attr->type = (enum fi_ep_type)ep_type;
	h->caps = FI_RMA | FI_WRITE | FI_REMOTE_WRITE | FI_MSG | FI_SEND | FI_RECV;
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->fabric_attr->prov_name = strdup(prov);
	return h;
}

static inline int rg_getinfo(struct fi_info *hints, const char *node, const char *service,
		uint64_t flags, struct fi_info **out) {
	return fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, service, flags, hints, out);
}

typedef struct {
	uint64_t mode, caps, tx_order, tx_op_flags;
	uint64_t mr_mode;
	uint64_t tx_size, rx_size, cq_data_size, max_msg_size, tx_iov_limit;
	uint32_t addr_format;
	char domain[64], fabric[64];
} rg_attrs;

static inline void rg_info_attrs(struct fi_info *i, rg_attrs *a) {
	memset(a, 0, sizeof *a);
	a->mode = i->mode;
	a->caps = i->caps;
	a->tx_order = i->tx_attr->msg_order;
	a->tx_op_flags = i->tx_attr->op_flags;
	a->mr_mode = (uint64_t)i->domain_attr->mr_mode;
	a->tx_size = i->tx_attr->size;
	a->tx_iov_limit = i->tx_attr->iov_limit;
	a->rx_size = i->rx_attr->size;
	a->cq_data_size = i->domain_attr->cq_data_size;
	a->max_msg_size = i->ep_attr->max_msg_size;
	a->addr_format = i->addr_format;
	snprintf(a->domain, sizeof a->domain, "%s", i->domain_attr->name ? i->domain_attr->name : "");
	snprintf(a->fabric, sizeof a->fabric, "%s", i->fabric_attr->name ? i->fabric_attr->name : "");
}

// rg_info_addrs replaces an info's addresses (NULL clears one); the new
// ones are malloc'd copies, freed by fi_freeinfo.
static inline int rg_info_addrs(struct fi_info *i, uint32_t fmt, const void *src, size_t srclen,
		const void *dst, size_t dstlen) {
	free(i->src_addr);
	free(i->dest_addr);
	i->src_addr = NULL;
	i->src_addrlen = 0;
	i->dest_addr = NULL;
	i->dest_addrlen = 0;
	i->addr_format = fmt;
	if (src) {
		if (!(i->src_addr = malloc(srclen)))
			return -FI_ENOMEM;
		memcpy(i->src_addr, src, srclen);
		i->src_addrlen = srclen;
	}
	if (dst) {
		if (!(i->dest_addr = malloc(dstlen)))
			return -FI_ENOMEM;
		memcpy(i->dest_addr, dst, dstlen);
		i->dest_addrlen = dstlen;
	}
	return 0;
}

static inline int rg_fabric(struct fi_info *i, struct fid_fabric **f) {
	return fi_fabric(i->fabric_attr, f, NULL);
}

// rg_cq_open opens a completion queue; with wait_fd its wait object is a
// file descriptor (FI_WAIT_FD) an idle owner can sleep on.
static inline int rg_cq_open(struct fid_domain *d, size_t size, int wait_fd, struct fid_cq **cq) {
	struct fi_cq_attr a;
	memset(&a, 0, sizeof a);
	a.size = size;
	a.format = FI_CQ_FORMAT_DATA;
	a.wait_obj = wait_fd ? FI_WAIT_FD : FI_WAIT_NONE;
	return fi_cq_open(d, &a, cq, NULL);
}

// rg_cq_wait_fd returns the file descriptor of a completion queue opened
// with FI_WAIT_FD (fi_control FI_GETWAIT).
static inline int rg_cq_wait_fd(struct fid_cq *cq, int *fd) { return fi_control(&cq->fid, FI_GETWAIT, fd); }

// rg_trywait says whether the owner of cq may sleep on its file
// descriptor now (0) or must read it first (-FI_EAGAIN).
static inline int rg_trywait(struct fid_fabric *f, struct fid_cq *cq) {
	struct fid *fids[1] = { &cq->fid };
	return fi_trywait(f, fids, 1);
}

static inline int rg_eq_open(struct fid_fabric *f, struct fid_eq **eq) {
	struct fi_eq_attr a;
	memset(&a, 0, sizeof a);
	a.size = 16;
	a.wait_obj = FI_WAIT_NONE;
	return fi_eq_open(f, &a, eq, NULL);
}

static inline int rg_av_open(struct fid_domain *d, struct fid_av **av) {
	struct fi_av_attr a;
	memset(&a, 0, sizeof a);
	a.type = FI_AV_TABLE;
	a.count = 8;
	return fi_av_open(d, &a, av, NULL);
}

static inline int rg_close(struct fid *f) { return f ? fi_close(f) : 0; }
static inline struct fid *rg_ep_fid(struct fid_ep *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_pep_fid(struct fid_pep *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_cq_fid(struct fid_cq *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_eq_fid(struct fid_eq *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_av_fid(struct fid_av *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_mr_fid(struct fid_mr *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_domain_fid(struct fid_domain *e) { return e ? &e->fid : NULL; }
static inline struct fid *rg_fabric_fid(struct fid_fabric *e) { return e ? &e->fid : NULL; }

// rg_ep_setup binds an endpoint to its queues and enables it.
static inline int rg_ep_setup(struct fid_ep *ep, struct fid_cq *cq, struct fid_eq *eq, struct fid_av *av) {
	int r;
	if (eq && (r = fi_ep_bind(ep, &eq->fid, 0)))
		return r;
	if (av && (r = fi_ep_bind(ep, &av->fid, 0)))
		return r;
	if ((r = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)))
		return r;
	return fi_enable(ep);
}

static inline int rg_pep_listen(struct fid_pep *pep, struct fid_eq *eq) {
	int r = fi_pep_bind(pep, &eq->fid, 0);
	return r ? r : fi_listen(pep);
}

static inline int rg_getname(struct fid *f, void *buf, size_t *len) { return fi_getname(f, buf, len); }

static inline int rg_mr_reg(struct fid_domain *d, void *buf, size_t len, uint64_t access, uint64_t key,
		struct fid_mr **mr, void **desc, uint64_t *outkey) {
	int r = fi_mr_reg(d, buf, len, access, 0, key, 0, mr, NULL);
	if (r)
		return r;
	*desc = fi_mr_desc(*mr);
	*outkey = fi_mr_key(*mr);
	return 0;
}

// rg_write posts one RMA write; flags (FI_DELIVERY_COMPLETE) select
// fi_writemsg, otherwise fi_writedata or fi_write.
static inline ssize_t rg_write(struct fid_ep *ep, void *buf, size_t len, void *desc, uint64_t data,
		int with_data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx, uint64_t flags) {
	if (flags) {
		struct iovec iov = { buf, len };
		struct fi_rma_iov rma = { addr, len, key };
		struct fi_msg_rma m;
		memset(&m, 0, sizeof m);
		m.msg_iov = &iov;
		m.desc = &desc;
		m.iov_count = 1;
		m.addr = dest;
		m.rma_iov = &rma;
		m.rma_iov_count = 1;
		m.context = ctx;
		m.data = data;
		return fi_writemsg(ep, &m, flags | FI_COMPLETION | (with_data ? FI_REMOTE_CQ_DATA : 0));
	}
	if (with_data)
		return fi_writedata(ep, buf, len, desc, data, dest, addr, key, ctx);
	return fi_write(ep, buf, len, desc, dest, addr, key, ctx);
}

// rg_writev posts one RMA write with remote CQ data gathering count local
// parts (base[k], lens[k]) into one contiguous remote range. iov and desc
// are the caller's arrays, kept until the write completes; iov is filled
// here, so Go writes only integers into C memory.
static inline ssize_t rg_writev(struct fid_ep *ep, struct iovec *iov, const uintptr_t *base, const size_t *lens,
		void **desc, size_t count, uint64_t data, fi_addr_t dest, uint64_t addr, uint64_t key, void *ctx) {
	size_t len = 0;
	for (size_t k = 0; k < count; k++) {
		iov[k].iov_base = (void *)base[k];
		iov[k].iov_len = lens[k];
		len += lens[k];
	}
	struct fi_rma_iov rma = { addr, len, key };
	struct fi_msg_rma m;
	memset(&m, 0, sizeof m);
	m.msg_iov = iov;
	m.desc = desc;
	m.iov_count = count;
	m.addr = dest;
	m.rma_iov = &rma;
	m.rma_iov_count = 1;
	m.context = ctx;
	m.data = data;
	return fi_writemsg(ep, &m, FI_COMPLETION | FI_REMOTE_CQ_DATA);
}

static inline ssize_t rg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, void *ctx) {
	return fi_recv(ep, buf, len, desc, FI_ADDR_UNSPEC, ctx);
}

static inline ssize_t rg_send(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t dest, void *ctx) {
	return fi_send(ep, buf, len, desc, dest, ctx);
}

// rg_cq_readerr reads one error entry: its error code (positive), the
// failed operation's context and flags, and the text of fi_strerror and
// the provider's fi_cq_strerror.
static inline int rg_cq_readerr(struct fid_cq *cq, void **ctx, uint64_t *flags, char *msg, size_t msglen) {
	struct fi_cq_err_entry e;
	memset(&e, 0, sizeof e);
	ssize_t r = fi_cq_readerr(cq, &e, 0);
	if (r < 0) {
		snprintf(msg, msglen, "fi_cq_readerr: %s", fi_strerror((int)-r));
		*ctx = NULL;
		*flags = 0;
		return (int)-r;
	}
	*ctx = e.op_context;
	*flags = e.flags;
	const char *pm = e.prov_errno ? fi_cq_strerror(cq, e.prov_errno, e.err_data, NULL, 0) : NULL;
	snprintf(msg, msglen, "%s%s%s", fi_strerror(e.err), pm && *pm ? ": " : "", pm ? pm : "");
	return e.err ? e.err : FI_EOTHER;
}

// rg_eq_read reads one event without waiting. It returns the event
// (>= 0) with the connection request's info and the fid it concerns,
// -FI_EAGAIN when there is none, or another negative code with *iserr set
// and the error's text in msg (an error entry, or a failed read).
static inline int rg_eq_read(struct fid_eq *eq, struct fi_info **info, fid_t *fid, int *iserr, char *msg, size_t msglen) {
	struct {
		struct fi_eq_cm_entry e;
		uint8_t data[256];
	} ent;
	uint32_t event = 0;
	*info = NULL;
	*iserr = 0;
	ssize_t r = fi_eq_read(eq, &event, &ent, sizeof ent, 0);
	if (r >= 0) {
		if (event == FI_CONNREQ || event == FI_CONNECTED || event == FI_SHUTDOWN) {
			*fid = ent.e.fid;
			if (event == FI_CONNREQ)
				*info = ent.e.info;
		}
		return (int)event;
	}
	if (r == -FI_EAGAIN)
		return -FI_EAGAIN;
	*iserr = 1;
	if (r == -FI_EAVAIL) {
		struct fi_eq_err_entry ee;
		memset(&ee, 0, sizeof ee);
		if (fi_eq_readerr(eq, &ee, 0) < 0) {
			snprintf(msg, msglen, "fi_eq_readerr failed");
			return -FI_EOTHER;
		}
		*fid = ee.fid;
		const char *pm = ee.prov_errno ? fi_eq_strerror(eq, ee.prov_errno, ee.err_data, NULL, 0) : NULL;
		snprintf(msg, msglen, "%s%s%s", fi_strerror(ee.err), pm && *pm ? ": " : "", pm ? pm : "");
		return ee.err ? -ee.err : -FI_EOTHER;
	}
	snprintf(msg, msglen, "fi_eq_read: %s", fi_strerror((int)-r));
	return (int)r;
}

static inline int rg_av_insert1(struct fid_av *av, const void *addr, fi_addr_t *out) {
	return fi_av_insert(av, addr, 1, out, 0, NULL);
}

static inline int rg_av_remove1(struct fid_av *av, fi_addr_t a) { return fi_av_remove(av, &a, 1, 0); }

#endif

//go:build cgo && !nofabric

package fabric

/*
#cgo LDFLAGS: -lpthread
#include "rgfabric.h"
#include <pthread.h>
#include <time.h>

// rg_bare is a bare fi_writedata loop: the sender posts iters writes of
// len bytes back to back (retrying -FI_EAGAIN while reading its CQ), a
// receiver thread reads the target's CQ until it has seen every
// immediate. No Go, no bookkeeping: the baseline the transport's own
// WriteImm loop is measured against.
typedef struct {
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	fi_addr_t dest;
	void *src, *desc, *ctx;
	size_t len, nctx;
	uint64_t addr, key;
	long iters;
	long received;
	int stop, rxerr;
	long long timeout_ns;
} rg_bare;

static long long rg_now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *rg_bare_rx(void *arg) {
	rg_bare *b = arg;
	struct fi_cq_data_entry e[64];
	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE) &&
	       __atomic_load_n(&b->received, __ATOMIC_RELAXED) < b->iters) {
		ssize_t n = fi_cq_read(b->rxcq, e, 64);
		if (n > 0) {
			long k = 0;
			for (ssize_t i = 0; i < n; i++)
				if (e[i].flags & FI_REMOTE_CQ_DATA)
					k++;
			__atomic_add_fetch(&b->received, k, __ATOMIC_RELEASE);
		} else if (n != -FI_EAGAIN) {
			b->rxerr = (int)-n;
			break;
		}
	}
	return NULL;
}

// rg_bare_run returns the elapsed nanoseconds, or a negative libfabric
// error code (-FI_ETIMEDOUT when the timeout passed).
static long long rg_bare_run(rg_bare *b) {
	struct fi_cq_data_entry e[64];
	pthread_t th;
	long long t0 = rg_now(), deadline = t0 + b->timeout_ns;
	long long err = 0;
	if (pthread_create(&th, NULL, rg_bare_rx, b))
		return -FI_EOTHER;
	for (long posted = 0; posted < b->iters && !err;) {
		void *ctx = (char *)b->ctx + (posted % b->nctx) * sizeof(struct fi_context2);
		ssize_t r = fi_writedata(b->ep, b->src, b->len, b->desc, (uint64_t)posted, b->dest, b->addr, b->key, ctx);
		if (r == 0) {
			posted++;
			continue;
		}
		if (r != -FI_EAGAIN) {
			err = r;
			break;
		}
		ssize_t n = fi_cq_read(b->txcq, e, 64);
		if (n < 0 && n != -FI_EAGAIN)
			err = n;
		if (rg_now() > deadline)
			err = -FI_ETIMEDOUT;
	}
	while (!err && __atomic_load_n(&b->received, __ATOMIC_ACQUIRE) < b->iters) {
		ssize_t n = fi_cq_read(b->txcq, e, 64);
		if (n < 0 && n != -FI_EAGAIN)
			err = n;
		if (b->rxerr)
			err = -b->rxerr;
		if (rg_now() > deadline)
			err = -FI_ETIMEDOUT;
	}
	long long t1 = rg_now();
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	// Reap the sender's remaining completions so no context is in use.
	for (int i = 0; i < 1000; i++)
		if (fi_cq_read(b->txcq, e, 64) == -FI_EAGAIN)
			break;
	return err ? err : t1 - t0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// BareResult is what MeasureBare measured.
type BareResult struct {
	Size, Iters int
	Elapsed     time.Duration
}

// BytesPerSecond is the bare loop's throughput.
func (r BareResult) BytesPerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Size) * float64(r.Iters) / r.Elapsed.Seconds()
}

// MeasureBare times a bare fi_writedata loop of iters writes of size bytes
// between two endpoints of libfabric provider in this process (tcp over
// 127.0.0.1, or shm), set up by this package but run entirely in C: the
// baseline for `rgaps bench bridge`, against which the transport's
// WriteImm loop shows its overhead.
func MeasureBare(provider string, size, iters int) (BareResult, error) {
	return MeasureBareWith(provider, size, iters, Options{})
}

// MeasureBareWith is MeasureBare with provider options.
func MeasureBareWith(provider string, size, iters int, opts Options) (res BareResult, err error) {
	if size <= 0 || size > transport.MaxMessage || iters <= 0 {
		return res, fmt.Errorf("bare loop of %d writes of %d bytes: bad size or count", iters, size)
	}
	p, err := Open(provider, opts)
	if err != nil {
		return res, err
	}
	var ctx unsafe.Pointer // contexts of the bare writes: freed after the endpoints
	defer func() {
		err = errors.Join(err, p.Close())
		C.free(ctx)
	}()
	listenAt := ""
	if p.epType == epMsg {
		listenAt = p.opts.Node + ":0"
	}
	ln, err := p.Listen(listenAt)
	if err != nil {
		return res, err
	}
	type accepted struct {
		e   transport.Endpoint
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		e, err := ln.Accept()
		ch <- accepted{e, err}
	}()
	tx, derr := p.Dial(ln.Addr())
	if derr != nil {
		ln.Close()
		<-ch
		return res, derr
	}
	a := <-ch
	ln.Close()
	if a.err != nil {
		return res, a.err
	}
	src, err := p.Alloc(size)
	if err != nil {
		return res, err
	}
	dst, err := p.Alloc(size)
	if err != nil {
		return res, err
	}
	te, re := tx.(*Endpoint), a.e.(*Endpoint)
	sr, dr := src.(*Region), dst.(*Region)
	// Close both ends at once, so each progresses the other's goodbye.
	defer func() {
		closed := make(chan error, 1)
		go func() { closed <- re.Close() }()
		err = errors.Join(err, te.Close(), <-closed)
	}()
	te.mu.Lock()
	defer te.mu.Unlock()
	re.mu.Lock()
	defer re.mu.Unlock()
	// The loop reads both completion queues and keeps nothing: retire
	// every operation still out (shm's welcome) before it starts.
	deadline := time.Now().Add(p.opts.Timeout)
	for te.c.inUse() > 0 || re.c.inUse() > 0 {
		te.c.progress()
		re.c.progress()
		if time.Now().After(deadline) {
			return res, fmt.Errorf("libfabric %s: set-up operations did not complete: %w", p.name, transport.ErrTimeout)
		}
	}
	nctx := te.c.txSlots
	if ctx = C.calloc(C.size_t(nctx), ctxSize); ctx == nil {
		return res, errors.New("libfabric: out of C memory")
	}
	b := (*C.rg_bare)(C.calloc(1, C.sizeof_rg_bare))
	if b == nil {
		return res, errors.New("libfabric: out of C memory")
	}
	defer C.free(unsafe.Pointer(b))
	desc := sr.descFor()
	d := dr.Desc()
	*b = C.rg_bare{
		ep: te.c.ep, txcq: te.c.cq, rxcq: re.c.cq, dest: te.c.peer,
		src: unsafe.Pointer(unsafe.SliceData(sr.b)), desc: desc, ctx: ctx,
		len: C.size_t(size), nctx: C.size_t(nctx),
		addr: C.uint64_t(d.Addr), key: C.uint64_t(d.Key),
		iters:      C.long(iters),
		timeout_ns: C.longlong(time.Duration(iters) * p.opts.Timeout / 8),
	}
	if b.timeout_ns < C.longlong(p.opts.Timeout) {
		b.timeout_ns = C.longlong(p.opts.Timeout)
	}
	ns := C.rg_bare_run(b)
	if ns < 0 {
		return res, fiError("bare fi_writedata loop", int(-ns), "")
	}
	return BareResult{Size: size, Iters: iters, Elapsed: time.Duration(ns)}, nil
}

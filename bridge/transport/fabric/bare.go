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
	size_t stride;            // bytes between slots (the length rounded up to 64)
	size_t src_slots, dst_slots; // message i goes from slot i % src_slots, to slot i % dst_slots
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
		size_t from = (size_t)(posted % (long)b->src_slots) * b->stride;
		size_t to = (size_t)(posted % (long)b->dst_slots) * b->stride;
		ssize_t r = fi_writedata(b->ep, (char *)b->src + from, b->len, b->desc, (uint64_t)posted, b->dest, b->addr + to, b->key, ctx);
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
	"sync"
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
	return MeasureBareRails(provider, size, iters, 1, opts)
}

// MeasureBareRails is the bare loop over k endpoint pairs at once: every
// message of size bytes is cut into k pieces (the last may be shorter),
// each pair's C loop writes its piece of every message back to back, with
// a sender and a receiver thread of its own, and the run ends when every
// pair's receiver has seen all its immediates: the baseline of a bridge
// ring striped over k rails.
func MeasureBareRails(provider string, size, iters, k int, opts Options) (res BareResult, err error) {
	return measureBare(provider, size, iters, k, [2]int{}, opts)
}

// MeasureBareStream is the bare loop with messages from fresh memory or
// into fresh memory: the source region is srcSpan bytes and the target
// dstSpan, each cut into slots of size bytes (rounded up to 64), and
// message i goes from source slot i mod (srcSpan / slot) to target slot
// i mod (dstSpan / slot), as a stream of messages through a pool and a
// ring does. A span of at most size is one slot, MeasureBare's single
// region, which stays in the processor's caches when it is small enough;
// spans larger than the caches do not.
func MeasureBareStream(provider string, size, iters, srcSpan, dstSpan int, opts Options) (BareResult, error) {
	return measureBare(provider, size, iters, 1, [2]int{srcSpan, dstSpan}, opts)
}

// measureBare is the loop over k endpoint pairs, each message's piece
// from and to slots of regions of spans[0] and spans[1] bytes (at most
// the piece: one slot).
func measureBare(provider string, size, iters, k int, spans [2]int, opts Options) (res BareResult, err error) {
	if size <= 0 || iters <= 0 || k <= 0 || k > 64 || (size+k-1)/k > transport.MaxMessage {
		return res, fmt.Errorf("bare loop of %d writes of %d bytes over %d endpoints: bad size or count", iters, size, k)
	}
	p, err := Open(provider, opts)
	if err != nil {
		return res, err
	}
	var ctxs []unsafe.Pointer // contexts of the bare writes: freed after the endpoints
	defer func() {
		err = errors.Join(err, p.Close())
		for _, c := range ctxs {
			C.free(c)
		}
	}()
	listenAt := ""
	if p.epType == epMsg {
		listenAt = p.opts.Node + ":0"
	}
	piece := (size + k - 1) / k
	bs := make([]*C.rg_bare, 0, k)
	defer func() {
		for _, b := range bs {
			C.free(unsafe.Pointer(b))
		}
	}()
	for i := range k {
		var b *C.rg_bare
		var ctx unsafe.Pointer
		var closeFn func() error
		b, ctx, closeFn, err = p.barePair(listenAt, min(piece, size-i*piece), iters, spans)
		if closeFn != nil {
			defer func() { err = errors.Join(err, closeFn()) }()
		}
		if ctx != nil {
			ctxs = append(ctxs, ctx)
		}
		if err != nil {
			return res, err
		}
		bs = append(bs, b)
	}
	ns := make([]C.longlong, k)
	var wg sync.WaitGroup
	start := time.Now()
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns[i] = C.rg_bare_run(b)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, n := range ns {
		if n < 0 {
			return res, fiError("bare fi_writedata loop", int(-n), "")
		}
	}
	if k == 1 {
		elapsed = time.Duration(ns[0]) // the C loop's own clock, without the thread's start
	}
	return BareResult{Size: size, Iters: iters, Elapsed: elapsed}, nil
}

// barePair connects two endpoints of p, registers a src and a dst region
// of n bytes (of spans[0] and spans[1] bytes cut into slots of n rounded
// up to 64, where a span holds more than one) and prepares the C loop of iters writes between them. Its
// endpoints' mutexes stay held until closeFn, which closes both ends at
// once (each progresses the other's goodbye).
func (p *Provider) barePair(listenAt string, n, iters int, spans [2]int) (b *C.rg_bare, ctx unsafe.Pointer, closeFn func() error, err error) {
	ln, err := p.Listen(listenAt)
	if err != nil {
		return nil, nil, nil, err
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
		return nil, nil, nil, derr
	}
	a := <-ch
	ln.Close()
	if a.err != nil {
		tx.Close()
		return nil, nil, nil, a.err
	}
	te, re := tx.(*Endpoint), a.e.(*Endpoint)
	closeFn = func() error {
		closed := make(chan error, 1)
		go func() { closed <- re.Close() }()
		return errors.Join(te.Close(), <-closed)
	}
	stride := (n + 63) &^ 63
	srcSlots, dstSlots := max(1, spans[0]/stride), max(1, spans[1]/stride)
	region := func(slots int) int {
		if slots == 1 {
			return n
		}
		return slots * stride
	}
	src, err := p.Alloc(region(srcSlots))
	if err != nil {
		return nil, nil, closeFn, err
	}
	dst, err := p.Alloc(region(dstSlots))
	if err != nil {
		return nil, nil, closeFn, err
	}
	sr, dr := src.(*Region), dst.(*Region)
	// Fault every page in before the clock starts, the source with data:
	// untouched anonymous pages all read as the one zero page, which
	// stays in the cache.
	for i := range sr.b {
		sr.b[i] = byte(i>>6) | 1
	}
	clear(dr.b)
	te.mu.Lock()
	re.mu.Lock()
	unlocked := closeFn
	closeFn = func() error {
		re.mu.Unlock()
		te.mu.Unlock()
		return unlocked()
	}
	// The loop reads both completion queues and keeps nothing: retire
	// every operation still out (shm's welcome) before it starts.
	deadline := time.Now().Add(p.opts.Timeout)
	for te.c.inUse() > 0 || re.c.inUse() > 0 {
		te.c.progress()
		re.c.progress()
		if time.Now().After(deadline) {
			return nil, nil, closeFn, fmt.Errorf("libfabric %s: set-up operations did not complete: %w", p.name, transport.ErrTimeout)
		}
	}
	nctx := te.c.txSlots
	if ctx = C.calloc(C.size_t(nctx), ctxSize); ctx == nil {
		return nil, nil, closeFn, errors.New("libfabric: out of C memory")
	}
	if b = (*C.rg_bare)(C.calloc(1, C.sizeof_rg_bare)); b == nil {
		return nil, ctx, closeFn, errors.New("libfabric: out of C memory")
	}
	d := dr.Desc()
	*b = C.rg_bare{
		ep: te.c.ep, txcq: te.c.cq, rxcq: re.c.cq, dest: te.c.peer,
		src: unsafe.Pointer(unsafe.SliceData(sr.b)), desc: sr.descFor(), ctx: ctx,
		len: C.size_t(n), nctx: C.size_t(nctx),
		stride: C.size_t(stride), src_slots: C.size_t(srcSlots), dst_slots: C.size_t(dstSlots),
		addr: C.uint64_t(d.Addr), key: C.uint64_t(d.Key),
		iters:      C.long(iters),
		timeout_ns: C.longlong(time.Duration(iters) * p.opts.Timeout / 8),
	}
	if b.timeout_ns < C.longlong(p.opts.Timeout) {
		b.timeout_ns = C.longlong(p.opts.Timeout)
	}
	return b, ctx, closeFn, nil
}

//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Reader takes serialized messages from a raw topic.
type Reader struct {
	t      *Topic
	handle C.int32_t
	ws     C.int32_t // wait set on a read condition of the reader
	guid   GUID

	// mu is held shared by Take and Wait (which blocks in Cyclone),
	// exclusively by close, which first wakes waiters through the wait
	// set's trigger.
	mu       sync.RWMutex
	closed   bool
	closing  atomic.Bool
	writerMu sync.Mutex
	writers  map[C.uint64_t]GUID // publication handle → writer GUID
}

// NewReader creates a reader on t with o's QoS and user data.
func (t *Topic) NewReader(o EndpointOptions) (*Reader, error) {
	q, err := newQos(o, false)
	if err != nil {
		return nil, err
	}
	h := C.rgd_create_reader(t.p.handle, t.handle, q)
	C.rgd_qos_free(q)
	if err := check("create reader on "+t.name, h); err != nil {
		return nil, err
	}
	r := &Reader{t: t, handle: h, writers: map[C.uint64_t]GUID{}}
	r.ws = C.rgd_waitset_new(t.p.handle, h)
	err = check("create wait set for "+t.name, r.ws)
	if err == nil {
		r.guid, err = guidOf(h)
	}
	if err == nil && !t.p.adopt(r) {
		err = ErrClosed
	}
	if err != nil {
		if r.ws > 0 {
			C.rgd_delete(r.ws)
		}
		C.rgd_delete(h)
		return nil, err
	}
	return r, nil
}

// GUID is the reader's GUID.
func (r *Reader) GUID() GUID { return r.guid }

// Topic is the reader's topic.
func (r *Reader) Topic() *Topic { return r.t }

// Take takes the oldest message; false when there is none.
func (r *Reader) Take() (Sample, bool, error) {
	return r.TakeTo(func(n int) []byte { return make([]byte, n) })
}

// TakeTo takes the oldest message like Take, copying it into memory the
// caller gives: buf(n) returns at least n bytes (a buffer reused from one
// message to the next, memory outside the Go heap), and Sample.Data is
// their first n. A buffer shorter than n drops the message with an error.
func (r *Reader) TakeTo(buf func(n int) []byte) (Sample, bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return Sample{}, false, ErrClosed
	}
	var sd unsafe.Pointer
	var size C.uint32_t
	var ts C.int64_t
	var pubh C.uint64_t
	var seq C.int64_t
	n := C.rgd_take(r.handle, &sd, &size, &ts, &pubh, &seq)
	if err := check("take from "+r.t.name, n); err != nil || n == 0 {
		return Sample{}, false, err
	}
	data := buf(int(size))
	if len(data) < int(size) {
		C.rgd_copy_unref(sd, nil, 0)
		return Sample{}, false, fmt.Errorf("dds: take from %s: a %d-byte message for a %d-byte buffer: dropped", r.t.name, size, len(data))
	}
	s := Sample{Data: data[:size:size], SourceTime: time.Unix(0, int64(ts)), Writer: r.writerGUID(pubh), Seq: int64(seq)}
	var dst unsafe.Pointer
	if size > 0 {
		dst = unsafe.Pointer(&s.Data[0])
	}
	C.rgd_copy_unref(sd, dst, size)
	return s, true, nil
}

// writerGUID is the GUID of the writer with publication handle h, looked
// up once per writer (zero when the writer is gone already).
func (r *Reader) writerGUID(h C.uint64_t) GUID {
	r.writerMu.Lock()
	defer r.writerMu.Unlock()
	if g, ok := r.writers[h]; ok {
		return g
	}
	var g GUID
	if C.rgd_publication_guid(r.handle, h, (*C.uint8_t)(unsafe.Pointer(&g[0]))) == 0 {
		r.writers[h] = g
	}
	return g
}

// Wait blocks until a message may be there to take, or timeout passed
// (false), or the reader is closed (ErrClosed). A negative timeout waits
// without limit.
func (r *Reader) Wait(timeout time.Duration) (bool, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed || r.closing.Load() {
		return false, ErrClosed
	}
	ns := C.int64_t(timeout)
	if timeout < 0 {
		ns = C.DDS_INFINITY
	}
	n := C.rgd_waitset_wait(r.ws, ns)
	if r.closing.Load() {
		return false, ErrClosed
	}
	if err := check("wait on "+r.t.name, n); err != nil {
		return false, err
	}
	return n > 0, nil
}

// Matched is the number of writers matched now.
func (r *Reader) Matched() (int, error) { return matched(&r.mu, &r.closed, r.handle, false) }

// Incompatible is the reader's requested-incompatible-QoS status: the
// writers it did not match for their QoS.
func (r *Reader) Incompatible() (Incompatible, error) {
	return incompatible(&r.mu, &r.closed, r.handle, false)
}

// QoS is the reader's actual QoS and user data.
func (r *Reader) QoS() (qos.Profile, []byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return qos.Profile{}, nil, ErrClosed
	}
	return actualQoS(r.handle)
}

// Close deletes the reader, waking a Wait in progress.
func (r *Reader) Close() error { return r.close(false) }

func (r *Reader) close(fromParticipant bool) error {
	if r.closing.Swap(true) {
		return ErrClosed
	}
	C.rgd_waitset_trigger(r.ws)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if !fromParticipant {
		r.t.p.disown(r)
	}
	err := check("delete reader on "+r.t.name, C.rgd_delete(r.handle))
	C.rgd_delete(r.ws)
	return err
}

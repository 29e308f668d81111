//go:build cgo && !nodds

package dds

/*
#include "rgdds.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Writer writes serialized messages to a raw topic.
type Writer struct {
	t      *Topic
	handle C.int32_t
	guid   GUID

	mu     sync.RWMutex // held shared by writes, exclusively by close
	closed bool
}

// NewWriter creates a writer on t with o's QoS and user data.
func (t *Topic) NewWriter(o EndpointOptions) (*Writer, error) {
	q, err := newQos(o, true)
	if err != nil {
		return nil, err
	}
	h := C.rgd_create_writer(t.p.handle, t.handle, q)
	C.rgd_qos_free(q)
	if err := check("create writer on "+t.name, h); err != nil {
		return nil, err
	}
	w := &Writer{t: t, handle: h}
	if w.guid, err = guidOf(h); err != nil || !t.p.adopt(w) {
		C.rgd_delete(h)
		if err == nil {
			err = ErrClosed
		}
		return nil, err
	}
	return w, nil
}

// GUID is the writer's GUID.
func (w *Writer) GUID() GUID { return w.guid }

// Topic is the writer's topic.
func (w *Writer) Topic() *Topic { return w.t }

// Write writes msg, a serialized message with its 4-byte encapsulation
// header, stamped now. msg is copied before Write returns.
func (w *Writer) Write(msg []byte) error { return w.WriteAt(msg, time.Now()) }

// WriteAt writes msg with source timestamp at.
func (w *Writer) WriteAt(msg []byte, at time.Time) error {
	if len(msg) < 4 || len(msg) > math.MaxUint32-3 {
		return fmt.Errorf("dds: write to %s: %d bytes is no serialized message", w.t.name, len(msg))
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	rc := C.rgd_write(w.handle, unsafe.Pointer(&msg[0]), C.uint32_t(len(msg)), C.int64_t(at.UnixNano()))
	return check("write to "+w.t.name, rc)
}

// WriteParts writes the message head, body, tail (head holding at least
// the 4-byte encapsulation header), stamped now, copying the parts once,
// straight into the sample: a message cut around a large field (a split
// message's head and tail around its field's bytes) is not joined first.
// The parts are copied before WriteParts returns.
func (w *Writer) WriteParts(head, body, tail []byte) error {
	n := uint64(len(head)) + uint64(len(body)) + uint64(len(tail))
	if len(head) < 4 || n > math.MaxUint32-3 {
		return fmt.Errorf("dds: write to %s: parts of %d, %d and %d bytes are no serialized message", w.t.name, len(head), len(body), len(tail))
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return ErrClosed
	}
	rc := C.rgd_write_parts(w.handle, unsafe.Pointer(&head[0]), C.uint32_t(len(head)), first(body), C.uint32_t(len(body)),
		first(tail), C.uint32_t(len(tail)), C.int64_t(time.Now().UnixNano()))
	return check("write to "+w.t.name, rc)
}

// first is the address of b's first byte, nil for an empty b.
func first(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// Matched is the number of readers matched now.
func (w *Writer) Matched() (int, error) { return matched(&w.mu, &w.closed, w.handle, true) }

// Incompatible is the writer's offered-incompatible-QoS status: the
// readers it did not match for their QoS.
func (w *Writer) Incompatible() (Incompatible, error) {
	return incompatible(&w.mu, &w.closed, w.handle, true)
}

// WaitForAcks waits up to timeout (0: only looks) until every matched
// reliable reader acknowledged every message written so far: true when
// they did, false when the time ran out first.
func (w *Writer) WaitForAcks(timeout time.Duration) (bool, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return false, ErrClosed
	}
	err := check("wait for acknowledgements on "+w.t.name, C.rgd_wait_for_acks(w.handle, C.int64_t(max(timeout, 0))))
	if errors.Is(err, ErrTimeout) {
		return false, nil
	}
	return err == nil, err
}

// QoS is the writer's actual QoS and user data.
func (w *Writer) QoS() (qos.Profile, []byte, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return qos.Profile{}, nil, ErrClosed
	}
	return actualQoS(w.handle)
}

// Close deletes the writer.
func (w *Writer) Close() error { return w.close(false) }

func (w *Writer) close(fromParticipant bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	w.closed = true
	if !fromParticipant {
		w.t.p.disown(w)
	}
	return check("delete writer on "+w.t.name, C.rgd_delete(w.handle))
}

// incompatible reads an endpoint's incompatible-QoS status under its lock.
func incompatible(mu *sync.RWMutex, closed *bool, h C.int32_t, writer bool) (Incompatible, error) {
	mu.RLock()
	defer mu.RUnlock()
	if *closed {
		return Incompatible{}, ErrClosed
	}
	var n C.uint32_t
	var pol C.int32_t
	w := C.int32_t(0)
	if writer {
		w = 1
	}
	if err := check("get incompatible QoS status", C.rgd_incompatible(h, w, &n, &pol)); err != nil {
		return Incompatible{}, err
	}
	return Incompatible{Total: int(n), LastPolicy: policyOf(int32(pol))}, nil
}

// matched reads an endpoint's matched count under its lock.
func matched(mu *sync.RWMutex, closed *bool, h C.int32_t, writer bool) (int, error) {
	mu.RLock()
	defer mu.RUnlock()
	if *closed {
		return 0, ErrClosed
	}
	var n C.uint32_t
	w := C.int32_t(0)
	if writer {
		w = 1
	}
	if err := check("get matched status", C.rgd_matched(h, w, &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

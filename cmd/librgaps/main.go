// Command librgaps is the C API of rmw_rgaps: the publisher and subscriber
// primitives of the RGAPS thesis (§3.7), built as a shared library:
//
//	go build -buildmode=c-shared -o build/librgaps.so ./cmd/librgaps
//
// The library is never unloaded: for -buildmode=c-shared Go's linker links
// it with -z nodelete itself (cmd/go would reject the flag in #cgo
// LDFLAGS), so dlclose leaves it mapped while the runtime's threads run.
//
// The public interface is include/rgaps.h, written by hand; its functions
// are defined in capi.c, which calls the Go functions exported here
// (rgapsgo_*, private). The split keeps what only C can do in C (const
// qualifiers, thread-local error state, allocating the handle structs) and
// everything else in Go.
//
// Rules this package keeps:
//   - C never holds a Go pointer: a handle is a C-allocated struct; Go
//     keeps the live handles' states by the structs' addresses (a
//     cabi.Handles) and finds a handle's state there, so NULL, foreign and
//     destroyed handles are reported, not dereferenced.
//   - Go keeps no Go pointer in C memory, and returns to C only integers and
//     addresses of memory Go does not manage (shared-memory mappings, device
//     memory).
//   - Every exported function recovers from panics and returns a code.
//   - Failures are classed by package cabi (the table shared with
//     librmw_rgaps) and each class has its RGAPS_E* code (codeOfClass).
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall
#include "capi.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/cabi"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func main() {}

// msgType is the ROS type of every topic of the C API: opaque bytes, the
// type the rgaps CLI publishes and echoes as raw payloads.
const msgType = "rgaps/msg/Bytes"

// Result codes (include/rgaps.h).
const (
	codeOK        = C.RGAPS_OK
	codeError     = C.RGAPS_ERROR
	codeInval     = C.RGAPS_EINVAL
	codeBadHandle = C.RGAPS_EBADHANDLE
	codeNotSup    = C.RGAPS_ENOTSUP
	codeTimedOut  = C.RGAPS_ETIMEDOUT
	codeClosed    = C.RGAPS_ECLOSED
	codePool      = C.RGAPS_EPOOL
	codeTooLarge  = C.RGAPS_ETOOLARGE
	codeQueueFull = C.RGAPS_EQUEUEFULL
	codeType      = C.RGAPS_ETYPE
	codeLimit     = C.RGAPS_ELIMIT
	codeCorrupt   = C.RGAPS_ECORRUPT
	codeDevice    = C.RGAPS_EDEVICE
	codeFault     = C.RGAPS_EFAULT
	codeNoMsg     = C.RGAPS_ENOMSG
	codeNoMem     = C.RGAPS_ENOMEM
	codeInternal  = C.RGAPS_EINTERNAL
	codeNoDaemon  = C.RGAPS_ENODAEMON
)

// Memory kinds (include/rgaps.h).
const (
	memAuto = C.RGAPS_MEMORY_AUTO
	memHost = C.RGAPS_MEMORY_HOST
	memGPU  = C.RGAPS_MEMORY_GPU
)

// codeOfClass is the C code of each class of failure (cabi's table
// decides the class of an engine error).
var codeOfClass = map[cabi.Code]C.int{
	cabi.OK:            codeOK,
	cabi.Generic:       codeError,
	cabi.Invalid:       codeInval,
	cabi.BadHandle:     codeBadHandle,
	cabi.TypeMismatch:  codeType,
	cabi.NotSupported:  codeNotSup,
	cabi.Timeout:       codeTimedOut,
	cabi.NoData:        codeTimedOut, // a pull with timeout 0 found nothing
	cabi.NoMessage:     codeNoMsg,
	cabi.Closed:        codeClosed,
	cabi.PoolExhausted: codePool,
	cabi.TooLarge:      codeTooLarge,
	cabi.QueueFull:     codeQueueFull,
	cabi.Limit:         codeLimit,
	cabi.Corrupt:       codeCorrupt,
	cabi.NoSpace:       codeNoMem, // /dev/shm full: host memory
	cabi.Untrusted:     codeError, // the message names the segment's owner
	cabi.NoDaemon:      codeNoDaemon,
	cabi.Device:        codeDevice,
	cabi.Fault:         codeFault,
	cabi.Internal:      codeInternal,
}

// errorf is a failure of this library with its class decided here.
func errorf(code cabi.Code, format string, args ...any) error {
	return cabi.Errorf(code, "rgaps: "+format, args...)
}

// codeOf maps an error of the engine (or of this package) to its C code.
func codeOf(err error) C.int {
	if rc, ok := codeOfClass[cabi.CodeOf(err)]; ok {
		return rc
	}
	return codeError
}

// report turns err into the code returned to C, attaching its text to the
// calling thread's error state.
func report(err error) C.int {
	if err == nil {
		return codeOK
	}
	setMessage(err.Error())
	return codeOf(err)
}

// setMessage stores msg as the calling C thread's error message. Go runs a
// call from C on the calling thread, so the thread-local state in capi.c is
// the caller's.
func setMessage(msg string) {
	cs := C.CString(msg)
	C.rgaps__set_message(cs)
	C.free(unsafe.Pointer(cs))
}

// recoverTo is deferred by every exported function: a panic becomes
// RGAPS_EINTERNAL, or RGAPS_EFAULT for a memory fault at an address the
// caller gave (see cabi.Guarded).
func recoverTo(rc *C.int) {
	if r := recover(); r != nil {
		e := cabi.PanicError("librgaps", r)
		e.Msg = "rgaps: " + e.Msg
		*rc = report(e)
	}
}

// goString reads a C string the caller gave.
func goString(what string, s *C.char) (out string) {
	cabi.Guarded(what, func() { out = C.GoString(s) })
	return out
}

// ---- the process's context ----------------------------------------------

// lib is the process's membership of the ROS domain: opened with the first
// handle, closed with the last.
var lib struct {
	mu   sync.Mutex
	ctx  *rgaps.Context
	node *rgaps.Node
	refs int
}

// acquire opens (or shares) the context and node of the C API.
func acquire() (*rgaps.Context, *rgaps.Node, error) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.ctx == nil {
		ctx, err := rgaps.NewContext(rgaps.Options{})
		if err != nil {
			return nil, nil, err
		}
		node, err := ctx.NewNode("rgaps_capi_"+strconv.Itoa(os.Getpid()), "/")
		if err != nil {
			ctx.Close()
			return nil, nil, err
		}
		lib.ctx, lib.node = ctx, node
	}
	lib.refs++
	return lib.ctx, lib.node, nil
}

// release drops a reference taken by acquire.
func release() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs--; lib.refs > 0 {
		return nil
	}
	ctx := lib.ctx
	lib.ctx, lib.node, lib.refs = nil, nil, 0
	return ctx.Close()
}

// capiQoS is the QoS of new endpoints: RELIABLE, KEEP_ALL, VOLATILE, or the
// named profile of RGAPS_QOS.
func capiQoS() (qos.Profile, error) {
	name := os.Getenv("RGAPS_QOS")
	if name == "" || name == "keep_all" {
		q := qos.Default()
		q.History, q.Depth = qos.HistoryKeepAll, 0
		return q, nil
	}
	q, err := qos.ByName(name)
	if err != nil {
		return q, errorf(cabi.Invalid, "RGAPS_QOS=%q: %v", name, err)
	}
	return q, nil
}

// endpointSpec is what endpointSetup decides for a new publisher or
// subscriber.
type endpointSpec struct {
	node  *rgaps.Node
	topic string // resolved
	qos   qos.Profile
	gpu   bool
}

// opts are the endpoint options of the spec.
func (e endpointSpec) opts() []rgaps.EndpointOption {
	if e.gpu {
		return []rgaps.EndpointOption{rgaps.OnGPU()}
	}
	return nil
}

// endpointSetup is what creating a publisher or subscriber shares: the
// topic name read and resolved, the memory kind chosen, the context held.
// On success the caller owns one reference of the context.
func endpointSetup(topic *C.char, memory C.int) (e endpointSpec, err error) {
	name := goString("topic_name", topic)
	if memory != memAuto && memory != memHost && memory != memGPU {
		return e, errorf(cabi.Invalid, "memory kind %d is not RGAPS_MEMORY_AUTO, _HOST or _GPU", int(memory))
	}
	if e.qos, err = capiQoS(); err != nil {
		return e, err
	}
	ctx, node, err := acquire()
	if err != nil {
		return e, err
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if e.topic, err = node.ResolveTopic(name); err != nil {
		return e, err
	}
	switch memory {
	case memGPU:
		if _, err = ctx.Engine().GPU(); err != nil {
			return e, fmt.Errorf("GPU memory asked for topic %s: %w", e.topic, err)
		}
		e.gpu = true
	case memAuto:
		_, gerr := ctx.Engine().GPU()
		switch {
		case gerr == nil:
			e.gpu = true
		case !errors.Is(gerr, zerocopy.ErrNotSupported):
			// A GPU is there but does not work: say so rather than
			// silently taking the host path.
			err = fmt.Errorf("opening the GPU for topic %s: %w", e.topic, gerr)
			return e, err
		}
	}
	if e.gpu {
		// Keep the primary context retained for the life of the process:
		// the context's own hold ends with the last handle, and creating
		// the primary context again costs hundreds of milliseconds.
		helperDevice()
	}
	e.node = node
	return e, nil
}

// lifetime keeps an endpoint open while calls on it are in flight: calls
// run between enter and exit, destroy closes the endpoint under close, so
// it waits for them (the engine's Close must not race with a loan being
// filled, or the block could be handed out again while still written).
type lifetime struct {
	mu      sync.RWMutex
	closing atomic.Bool // close has begun: a call that waits gives up (see pull)
	closed  bool
}

func (l *lifetime) enter() error {
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return errorf(cabi.Closed, "handle destroyed during the call")
	}
	return nil
}

func (l *lifetime) exit() { l.mu.RUnlock() }

// close waits for the calls in flight, runs fn, and fails later calls.
func (l *lifetime) close(fn func() error) error {
	l.closing.Store(true)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	return fn()
}

// ---- handles -----------------------------------------------------------------

// endpoint is what the Go states of publisher and subscriber handles
// (pubState, subState) share.
type endpoint struct {
	life lifetime
	gpu  bool
}

func (e *endpoint) base() *endpoint { return e }

// memory is the kind of memory the endpoint's messages are in.
func (e *endpoint) memory() C.int {
	if e.gpu {
		return memGPU
	}
	return memHost
}

// endpointState is the Go state of one kind of handle.
type endpointState interface{ base() *endpoint }

// registry is the set of live handle structs of one kind, by address: a
// cabi.Handles keyed by the address of the C struct, holding the handle's
// Go state. Go only ever compares these addresses and never reads the
// struct to find the state, so a stale handle (or one of the other kind)
// is reported and never read; the C half frees a struct only after destroy
// removed it.
type registry[S endpointState] struct {
	kind string // in messages: "publisher", "subscriber"
	live cabi.Handles
}

var (
	pubs = registry[*pubState]{kind: "publisher"}
	subs = registry[*subState]{kind: "subscriber"}
)

func handleKey(h *C.struct_rgaps_handle) uintptr { return uintptr(unsafe.Pointer(h)) }

// badHandle is the failure for key, which is not live.
func (r *registry[S]) badHandle(key uintptr) error {
	if key == 0 {
		return errorf(cabi.BadHandle, "%s handle is NULL", r.kind)
	}
	return errorf(cabi.BadHandle, "%s handle is not a live %s (destroyed, or not from init)", r.kind, r.kind)
}

// open is the body of publisher_init and subscriber_init: create makes
// the endpoint endpointSetup specified, and h becomes the live handle of
// its state.
func (r *registry[S]) open(h *C.struct_rgaps_handle, topic *C.char, memory C.int, create func(e endpointSpec) (S, error)) C.int {
	e, err := endpointSetup(topic, memory)
	if err != nil {
		return report(err)
	}
	st, err := create(e)
	if err != nil {
		release()
		return report(err)
	}
	st.base().gpu = e.gpu
	h.memory = C.int32_t(st.base().memory())
	if !r.live.PutAt(handleKey(h), st) {
		// capi.c allocated h just now: no live handle has its address.
		panic(fmt.Sprintf("new %s handle %#x is live already", r.kind, handleKey(h)))
	}
	return codeOK
}

// lookup returns the state of h when h is live.
func (r *registry[S]) lookup(h *C.struct_rgaps_handle) (S, error) {
	key := handleKey(h)
	st, ok := cabi.Get[S](&r.live, key)
	if !ok {
		return st, r.badHandle(key)
	}
	return st, nil
}

// remove forgets h, returning its state, when it is live.
func (r *registry[S]) remove(h *C.struct_rgaps_handle) (S, error) {
	key := handleKey(h)
	st, ok := cabi.Take[S](&r.live, key)
	if !ok {
		return st, r.badHandle(key)
	}
	return st, nil
}

// call runs fn on the state of h, when h is live, as a call in flight on
// its endpoint (see lifetime). It returns fn's result, or the code of the
// failure.
func (r *registry[S]) call(h *C.struct_rgaps_handle, fn func(st S) C.int) C.int {
	st, err := r.lookup(h)
	if err != nil {
		return report(err)
	}
	life := &st.base().life
	if err := life.enter(); err != nil {
		return report(err)
	}
	defer life.exit()
	return fn(st)
}

// matched is the number of endpoints matched with h's, which count reads
// from its state (as a call in flight), or a code.
func (r *registry[S]) matched(h *C.struct_rgaps_handle, count func(st S) int) C.int {
	return r.call(h, func(st S) C.int { return C.int(min(count(st), math.MaxInt32)) })
}

// memory is the memory kind of h, or a code.
func (r *registry[S]) memory(h *C.struct_rgaps_handle) C.int {
	st, err := r.lookup(h)
	if err != nil {
		return report(err)
	}
	return st.base().memory()
}

// destroy forgets h, when it is live, and closes its endpoint with
// closeFn once the calls in flight are over. It sets *removed (C frees
// the struct) whatever closing reports.
func (r *registry[S]) destroy(h *C.struct_rgaps_handle, removed *C.int, closeFn func(st S) error) C.int {
	st, err := r.remove(h)
	if err != nil {
		return report(err)
	}
	*removed = 1
	err = st.base().life.close(func() error { return closeFn(st) })
	if rerr := release(); err == nil {
		err = rerr
	}
	return report(err)
}

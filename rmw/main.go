// Command rmw is librmw_rgaps.so: the ROS 2 rmw interface (Jazzy) over the
// rmw_rgaps engine, built as a C shared library:
//
//	go build -buildmode=c-shared -o build/librmw_rgaps.so ./rmw
//
// rmw_implementation dlopens it when RMW_IMPLEMENTATION=rmw_rgaps. The
// library is never unloaded: for -buildmode=c-shared Go's linker marks it
// -z nodelete itself.
//
// The split between the halves:
//   - The C files (rmw_*.c, by area; rmw_c.h lists them) define every
//     rmw_* function with the exact prototype of the rmw headers
//     (include/rgaps_rmw_abi.h, or the real headers with
//     -DRGAPS_USE_ROS_HEADERS). They check arguments and implementation
//     identifiers, allocates the handles rcl sees with the context's
//     allocator, serialises and deserialises messages with the type
//     support's introspection walkers (typesupport/introspection,
//     rgaps_ts.h) directly into and out of the engine's shared pool, and
//     keeps the thread-local error state.
//   - The Go files (this package) own the engine objects: contexts, nodes,
//     publishers, subscriptions, loans and taken samples, wait sets, graph
//     queries, events and new-data callbacks. They are exported as
//     rgapsgo_* functions, private to the library.
//
// Rules this package keeps: C never holds a Go pointer (handles are
// integers of the cabi.Handles below); every exported function recovers from
// panics and returns a code; errors are reported on the calling thread
// (Go runs a call from C on the caller's thread); C enters Go only with the
// asynchronous signals blocked, and never sleeps in Go (sig.h).
package main

/*
#cgo CFLAGS: -O2 -Wall -std=gnu11 -I${SRCDIR}/../typesupport/introspection -I${SRCDIR}/../include
#cgo CXXFLAGS: -O2 -Wall -std=c++17
#include <stdlib.h>
#include "rmw_impl.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/cabi"
	// The introspection walkers (rgaps_ts_*, which the C files call): cgo
	// compiles their C and C++ files in that package, and importing it
	// links them into the library.
	_ "github.com/rmw-rgaps/rmw_rgaps/typesupport/introspection"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func main() {}

// rmw return codes.
const (
	retOK           = C.int(C.RMW_RET_OK)
	retError        = C.int(C.RMW_RET_ERROR)
	retTimeout      = C.int(C.RMW_RET_TIMEOUT)
	retUnsupported  = C.int(C.RMW_RET_UNSUPPORTED)
	retBadAlloc     = C.int(C.RMW_RET_BAD_ALLOC)
	retInvalid      = C.int(C.RMW_RET_INVALID_ARGUMENT)
	retNodeNotExist = C.int(C.RMW_RET_NODE_NAME_NON_EXISTENT)
)

// ---- handles ----------------------------------------------------------------

// handles maps the integers C holds to Go objects (cabi.Handles: a stale or
// foreign integer is reported as nil, not a panic).
var handles cabi.Handles

func put(v any) C.uintptr_t { return C.uintptr_t(handles.Put(v)) }

func get[T any](h C.uintptr_t) T {
	v, _ := cabi.Get[T](&handles, uintptr(h))
	return v
}

func drop(h C.uintptr_t) { handles.Drop(uintptr(h)) }

// ---- errors -----------------------------------------------------------------

// setError stores msg as the calling thread's rmw error (the C half: the
// thread-local copy and, where rcutils is loaded, rcutils' error state).
func setError(msg string) {
	cs := C.CString("rmw_rgaps: " + msg)
	C.rgaps_set_error(cs)
	C.free(unsafe.Pointer(cs))
}

func fail(rc C.int, format string, args ...any) C.int {
	setError(fmt.Sprintf(format, args...))
	return rc
}

// retOf is the rmw code of a class of failure (cabi's table decides the
// class of an engine error). rmw has few codes: most classes are
// RMW_RET_ERROR, with the message saying which.
func retOf(c cabi.Code) C.int {
	switch c {
	case cabi.OK:
		return retOK
	case cabi.Invalid, cabi.TypeMismatch:
		return retInvalid
	case cabi.Timeout:
		return retTimeout
	case cabi.NotSupported:
		return retUnsupported
	case cabi.NoSpace, cabi.PoolExhausted:
		return retBadAlloc
	}
	return retError
}

// report maps an engine error to an rmw code and reports it.
func report(what string, err error) C.int {
	if err == nil {
		return retOK
	}
	return fail(retOf(cabi.CodeOf(err)), "%s: %v", what, err)
}

// recoverTo is deferred by every exported function: a panic is a bug,
// reported as RMW_RET_ERROR with its stack on stderr, never a crash of the
// ROS process.
func recoverTo(rc *C.int) {
	if r := recover(); r != nil {
		e := cabi.PanicError("rmw_rgaps", r)
		*rc = fail(retOf(e.Code), "%s", e.Msg)
	}
}

// ---- context ----------------------------------------------------------------

type context struct {
	c *rgaps.Context // nodes and their endpoints (closed with it)

	mu    sync.Mutex
	gids  map[zerocopy.GID]bool // this context's publishers (ignore_local_publications)
	small *zerocopy.Domain      // the domain again, with small pools (smallTopic); opened on first use
}

// smallPoolSize caps the pool of the topics ROS creates for itself in every
// node (services, parameters, /rosout). Pools commit only what they carry
// (docs/ARCHITECTURE.md §3.2), so this is a bound on what one of these topics
// may take from /dev/shm, not a reservation: a node has about sixteen of
// them, and their messages are small. RGAPS_RMW_SMALL_POOL_SIZE overrides it.
const smallPoolSize = 4 << 20

// smallTopic says whether a topic gets a small pool: service request and
// response topics, and the topics and types of ROS's own infrastructure.
// The first process to create a topic fixes its pool; others join it.
func smallTopic(topic, typ string) bool {
	switch {
	case isServiceTopic(topic), topic == "/rosout", topic == "/parameter_events", topic == "/clock":
		return true
	}
	for _, p := range []string{"rcl_interfaces/", "type_description_interfaces/", "rosgraph_msgs/", "lifecycle_msgs/"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

// smallDomain is the context's domain with small pools.
func (c *context) smallDomain() (*zerocopy.Domain, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.small != nil {
		return c.small, nil
	}
	cfg := c.c.Engine().Config()
	cfg.PoolSize = smallPoolSize
	if v := os.Getenv("RGAPS_RMW_SMALL_POOL_SIZE"); v != "" {
		n, err := zerocopy.ParseSize(v)
		if err != nil {
			return nil, fmt.Errorf("%w: RGAPS_RMW_SMALL_POOL_SIZE: %v", zerocopy.ErrInvalid, err)
		}
		cfg.PoolSize = n
	}
	cfg.StagingSize = cfg.PoolSize
	cfg.SkipStaleClean = true // done by the context's own domain
	d, err := zerocopy.Open(cfg)
	if err != nil {
		return nil, err
	}
	c.small = d
	return d, nil
}

func (c *context) local(g zerocopy.GID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gids[g]
}

//export rgapsgo_init
func rgapsgo_init(domain C.size_t, enclave *C.char, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	var d uint32
	if uint64(domain) != ^uint64(0) { // RMW_DEFAULT_DOMAIN_ID: rcl read no ROS_DOMAIN_ID
		if uint64(domain) > 232 {
			return fail(retInvalid, "domain id %d out of range (0-232)", uint64(domain))
		}
		d = uint32(domain)
	}
	c, err := rgaps.NewContext(rgaps.Options{Domain: &d, Enclave: C.GoString(enclave)})
	if err != nil {
		return report("joining the domain", err)
	}
	*out = put(&context{c: c, gids: map[zerocopy.GID]bool{}})
	return retOK
}

//export rgapsgo_context_close
func rgapsgo_context_close(h C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	c := get[*context](h)
	if c == nil {
		return fail(retError, "context already finalised")
	}
	drop(h)
	errs := []error{c.c.Close()} // with the nodes rcl did not destroy
	if c.small != nil {
		errs = append(errs, c.small.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return report("closing the context", err)
	}
	return retOK
}

// ---- nodes ------------------------------------------------------------------

type node struct {
	ctx   *context
	n     *rgaps.Node // registration, and the publishers and subscriptions not destroyed yet
	graph *zerocopy.GraphCondition
}

//export rgapsgo_node_create
func rgapsgo_node_create(ctxh C.uintptr_t, name, ns *C.char, out, graph *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	c := get[*context](ctxh)
	if c == nil {
		return fail(retError, "context is shut down")
	}
	n, err := c.c.NewNode(C.GoString(name), C.GoString(ns))
	if err != nil {
		return report("creating the node", err)
	}
	nd := &node{ctx: c, n: n, graph: c.c.Engine().NewGraphCondition()}
	*out = put(nd)
	*graph = put(nd.graph)
	return retOK
}

//export rgapsgo_node_destroy
func rgapsgo_node_destroy(h, graph C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	nd := get[*node](h)
	if nd == nil {
		return fail(retError, "node already destroyed")
	}
	drop(h)
	drop(graph)
	err := nd.n.Close() // with what rcl left of it
	if errors.Is(err, zerocopy.ErrClosed) {
		err = nil // its context was shut down first
	}
	return report("destroying the node", err)
}

//go:build cgo

package iceoryx

/*
#cgo CFLAGS: -I/usr/include/iceoryx/v2.0.3
#cgo LDFLAGS: -ldl

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if __has_include("iceoryx_binding_c/runtime.h")
#define RGI_HAVE 1
#include "iceoryx_binding_c/runtime.h"
#include "iceoryx_binding_c/publisher.h"
#include "iceoryx_binding_c/subscriber.h"
#include "iceoryx_binding_c/wait_set.h"
#include "iceoryx_binding_c/notification_info.h"

// The entry points, resolved with dlsym; their types come from the
// headers, so a signature mismatch is a compile error.
static struct {
	__typeof__(&iox_runtime_init) runtime_init;
	__typeof__(&iox_runtime_shutdown) runtime_shutdown;
	__typeof__(&iox_pub_options_init) pub_options_init;
	__typeof__(&iox_pub_init) pub_init;
	__typeof__(&iox_pub_deinit) pub_deinit;
	__typeof__(&iox_pub_loan_aligned_chunk) pub_loan_aligned_chunk;
	__typeof__(&iox_pub_publish_chunk) pub_publish_chunk;
	__typeof__(&iox_pub_release_chunk) pub_release_chunk;
	__typeof__(&iox_pub_has_subscribers) pub_has_subscribers;
	__typeof__(&iox_sub_options_init) sub_options_init;
	__typeof__(&iox_sub_init) sub_init;
	__typeof__(&iox_sub_deinit) sub_deinit;
	__typeof__(&iox_sub_get_subscription_state) sub_get_subscription_state;
	__typeof__(&iox_sub_take_chunk) sub_take_chunk;
	__typeof__(&iox_sub_release_chunk) sub_release_chunk;
	__typeof__(&iox_ws_init) ws_init;
	__typeof__(&iox_ws_deinit) ws_deinit;
	__typeof__(&iox_ws_attach_subscriber_state) ws_attach_subscriber_state;
	__typeof__(&iox_ws_detach_subscriber_state) ws_detach_subscriber_state;
	__typeof__(&iox_ws_timed_wait) ws_timed_wait;
} rgi;

// rgi_load loads the binding. With dir set, the libraries it needs are
// loaded first from dir by absolute path (RTLD_GLOBAL), so the loader
// finds them by soname; without, the loader searches as usual. It returns
// 0, or -1 with the reason in err. Everything runs in this one C call, so
// dlerror is read on the thread that failed.
static int rgi_load(const char *dir, char *err, size_t errlen) {
	// libacl (of hoofs) is optional in dir: the system usually has it.
	static const char *libs[] = {
		"libacl.so.1", "libiceoryx_platform.so.2", "libiceoryx_hoofs.so.2",
		"libiceoryx_posh.so.2", "libiceoryx_binding_c.so.2",
	};
	void *h = NULL;
	char path[4096];
	for (int i = 0; i < 5; i++) {
		if (dir && *dir) {
			snprintf(path, sizeof path, "%s/%s", dir, libs[i]);
			if (i == 0 && access(path, R_OK) != 0)
				continue;
		} else if (i < 4) {
			continue;
		} else {
			snprintf(path, sizeof path, "%s", libs[i]);
		}
		h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			const char *e = dlerror();
			snprintf(err, errlen, "%s", e ? e : path);
			return -1;
		}
	}
#define RGI_SYM(f)                                                         \
	if (!(rgi.f = (__typeof__(rgi.f))dlsym(h, "iox_" #f))) {           \
		snprintf(err, errlen, "symbol iox_%s not in the library", #f); \
		return -1;                                                 \
	}
	RGI_SYM(runtime_init) RGI_SYM(runtime_shutdown)
	RGI_SYM(pub_options_init) RGI_SYM(pub_init) RGI_SYM(pub_deinit)
	RGI_SYM(pub_loan_aligned_chunk) RGI_SYM(pub_publish_chunk)
	RGI_SYM(pub_release_chunk) RGI_SYM(pub_has_subscribers)
	RGI_SYM(sub_options_init) RGI_SYM(sub_init) RGI_SYM(sub_deinit)
	RGI_SYM(sub_get_subscription_state) RGI_SYM(sub_take_chunk)
	RGI_SYM(sub_release_chunk)
	RGI_SYM(ws_init) RGI_SYM(ws_deinit) RGI_SYM(ws_attach_subscriber_state)
	RGI_SYM(ws_detach_subscriber_state) RGI_SYM(ws_timed_wait)
#undef RGI_SYM
	return 0;
}

static void rgi_runtime_init(const char *name) { rgi.runtime_init(name); }
static void rgi_runtime_shutdown(void) { rgi.runtime_shutdown(); }

// rgi_pub is a publisher with its storage, in C memory (iceoryx
// constructs its object there: it must not move).
typedef struct {
	iox_pub_storage_t storage;
	iox_pub_t pub;
} rgi_pub;

static rgi_pub *rgi_pub_new(const char *svc, const char *inst, const char *ev, uint64_t history) {
	rgi_pub *p = calloc(1, sizeof *p);
	if (!p)
		return NULL;
	iox_pub_options_t o;
	rgi.pub_options_init(&o);
	o.historyCapacity = history;
	o.offerOnCreate = true;
	p->pub = rgi.pub_init(&p->storage, svc, inst, ev, &o);
	if (!p->pub) {
		free(p);
		return NULL;
	}
	return p;
}

static void rgi_pub_free(rgi_pub *p) {
	rgi.pub_deinit(p->pub);
	free(p);
}

static int rgi_pub_loan(rgi_pub *p, uint32_t size, uint32_t align, void **payload) {
	return (int)rgi.pub_loan_aligned_chunk(p->pub, payload, size, align);
}

static void rgi_pub_publish(rgi_pub *p, void *payload) { rgi.pub_publish_chunk(p->pub, payload); }
static void rgi_pub_release(rgi_pub *p, void *payload) { rgi.pub_release_chunk(p->pub, payload); }
static bool rgi_pub_has_subscribers(rgi_pub *p) { return rgi.pub_has_subscribers(p->pub); }

// rgi_sub is a subscriber and the wait set that blocks on its data, with
// their storage, in C memory.
typedef struct {
	iox_sub_storage_t storage;
	iox_sub_t sub;
	iox_ws_storage_t ws_storage;
	iox_ws_t ws;
} rgi_sub;

static rgi_sub *rgi_sub_new(const char *svc, const char *inst, const char *ev, uint64_t queue) {
	rgi_sub *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	iox_sub_options_t o;
	rgi.sub_options_init(&o);
	o.queueCapacity = queue;
	o.historyRequest = 0;
	o.subscribeOnCreate = true;
	s->sub = rgi.sub_init(&s->storage, svc, inst, ev, &o);
	if (!s->sub) {
		free(s);
		return NULL;
	}
	s->ws = rgi.ws_init(&s->ws_storage);
	if (!s->ws || rgi.ws_attach_subscriber_state(s->ws, s->sub, SubscriberState_HAS_DATA, 0, NULL) != WaitSetResult_SUCCESS) {
		if (s->ws)
			rgi.ws_deinit(s->ws);
		rgi.sub_deinit(s->sub);
		free(s);
		return NULL;
	}
	return s;
}

static void rgi_sub_free(rgi_sub *s) {
	rgi.ws_detach_subscriber_state(s->ws, s->sub, SubscriberState_HAS_DATA);
	rgi.ws_deinit(s->ws);
	rgi.sub_deinit(s->sub);
	free(s);
}

static int rgi_sub_state(rgi_sub *s) { return (int)rgi.sub_get_subscription_state(s->sub); }

// rgi_sub_wait blocks until the subscriber has data or ns passed; it
// returns the number of notifications (0: timeout).
static uint64_t rgi_sub_wait(rgi_sub *s, int64_t ns) {
	struct timespec t = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
	iox_notification_info_t infos[4];
	uint64_t missed = 0;
	return rgi.ws_timed_wait(s->ws, t, infos, 4, &missed);
}

static int rgi_sub_take(rgi_sub *s, const void **payload) { return (int)rgi.sub_take_chunk(s->sub, payload); }
static void rgi_sub_release(rgi_sub *s, const void *payload) { rgi.sub_release_chunk(s->sub, payload); }

enum {
	RGI_ALLOC_SUCCESS = AllocationResult_SUCCESS,
	RGI_TAKE_SUCCESS = ChunkReceiveResult_SUCCESS,
	RGI_TAKE_NONE = ChunkReceiveResult_NO_CHUNK_AVAILABLE,
	RGI_SUBSCRIBED = SubscribeState_SUBSCRIBED,
};
#else
#define RGI_HAVE 0
typedef struct rgi_pub rgi_pub;
typedef struct rgi_sub rgi_sub;
static int rgi_load(const char *dir, char *err, size_t errlen) { snprintf(err, errlen, "built without the iceoryx headers"); return -1; }
static void rgi_runtime_init(const char *name) {}
static void rgi_runtime_shutdown(void) {}
static rgi_pub *rgi_pub_new(const char *svc, const char *inst, const char *ev, uint64_t history) { return NULL; }
static void rgi_pub_free(rgi_pub *p) {}
static int rgi_pub_loan(rgi_pub *p, uint32_t size, uint32_t align, void **payload) { return -1; }
static void rgi_pub_publish(rgi_pub *p, void *payload) {}
static void rgi_pub_release(rgi_pub *p, void *payload) {}
static bool rgi_pub_has_subscribers(rgi_pub *p) { return false; }
static rgi_sub *rgi_sub_new(const char *svc, const char *inst, const char *ev, uint64_t queue) { return NULL; }
static void rgi_sub_free(rgi_sub *s) {}
static int rgi_sub_state(rgi_sub *s) { return -1; }
static uint64_t rgi_sub_wait(rgi_sub *s, int64_t ns) { return 0; }
static int rgi_sub_take(rgi_sub *s, const void **payload) { return -1; }
static void rgi_sub_release(rgi_sub *s, const void *payload) {}
enum { RGI_ALLOC_SUCCESS = 1000, RGI_TAKE_SUCCESS = 1000, RGI_TAKE_NONE = 1001, RGI_SUBSCRIBED = 1000 };
#endif
static int rgi_have(void) { return RGI_HAVE; }
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

var load struct {
	once sync.Once
	dir  string // where the library came from ("" : the loader's search)
	err  error
}

// Load loads the C binding (see the package doc for where it is looked
// for); later calls return the first call's result. Every other function
// calls it.
func Load() error {
	load.once.Do(func() {
		if C.rgi_have() == 0 {
			load.err = fmt.Errorf("%w: rgaps was built without the iceoryx headers (install libiceoryx-binding-c-dev and rebuild)", ErrNotSupported)
			return
		}
		var tried []string
		for _, dir := range append(LibDirs(), "") {
			cdir := C.CString(dir)
			var buf [512]C.char
			rc := C.rgi_load(cdir, &buf[0], C.size_t(len(buf)))
			C.free(unsafe.Pointer(cdir))
			if rc == 0 {
				load.dir = dir
				return
			}
			where := dir
			if where == "" {
				where = "the loader's search path"
			}
			tried = append(tried, where+": "+C.GoString(&buf[0]))
		}
		load.err = fmt.Errorf("%w: libiceoryx_binding_c.so.2 not loadable (%v)", ErrNotSupported, tried)
	})
	return load.err
}

// LoadedFrom is the directory the binding was loaded from ("" when the
// loader found it, or it is not loaded).
func LoadedFrom() string {
	if Load() != nil {
		return ""
	}
	return load.dir
}

var runtime struct {
	mu   sync.Mutex
	name string
}

// InitRuntime registers this process with RouDi under name (unique on the
// machine; letters, digits, '_' and '-'). RouDi must be running: iceoryx
// 2.0 waits for it and ends the process when it does not come. A process
// registers once; a second call with another name is an error.
func InitRuntime(name string) error {
	if err := Load(); err != nil {
		return err
	}
	if name == "" || len(name) > 100 {
		return fmt.Errorf("iceoryx runtime name %q: 1 to 100 bytes", name)
	}
	runtime.mu.Lock()
	defer runtime.mu.Unlock()
	if runtime.name != "" {
		if runtime.name == name {
			return nil
		}
		return fmt.Errorf("iceoryx runtime already registered as %q", runtime.name)
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.rgi_runtime_init(cs)
	runtime.name = name
	return nil
}

// ShutdownRuntime unregisters the process from RouDi; publishers and
// subscribers must be closed first. It also removes the runtime's socket
// and lock files (/tmp/NAME, /tmp/NAME.lock): iceoryx removes them in
// C++ destructors that a Go program's exit never runs.
func ShutdownRuntime() {
	runtime.mu.Lock()
	defer runtime.mu.Unlock()
	if runtime.name != "" {
		C.rgi_runtime_shutdown()
		removeRuntimeFiles(runtime.name)
		runtime.name = ""
	}
}

// ServiceName is iceoryx's three-part service description.
type ServiceName struct{ Service, Instance, Event string }

func (s ServiceName) cstrings() (a, b, c *C.char, free func()) {
	a, b, c = C.CString(s.Service), C.CString(s.Instance), C.CString(s.Event)
	return a, b, c, func() {
		C.free(unsafe.Pointer(a))
		C.free(unsafe.Pointer(b))
		C.free(unsafe.Pointer(c))
	}
}

// Publisher is an iceoryx publisher. Its methods must not be called
// concurrently; all return ErrClosed after Close.
type Publisher struct {
	p *C.rgi_pub
}

// NewPublisher creates an offered publisher of name with a history of
// history chunks (0: none). InitRuntime first.
func NewPublisher(name ServiceName, history int) (*Publisher, error) {
	if err := checkRuntime(); err != nil {
		return nil, err
	}
	a, b, c, free := name.cstrings()
	defer free()
	p := C.rgi_pub_new(a, b, c, C.uint64_t(history))
	if p == nil {
		return nil, fmt.Errorf("creating iceoryx publisher %v failed", name)
	}
	return &Publisher{p: p}, nil
}

// Loan takes a chunk of size payload bytes (aligned to 64) from RouDi's
// mempools; the slice is shared memory, valid until Publish or Release.
// iceoryx 2.0 aborts the process (an assertion) when no mempool has
// chunks that large: configure RouDi for the sizes used (Mempool,
// ChunkOverhead). All chunks of a fitting pool in use is ErrLoan.
func (p *Publisher) Loan(size int) ([]byte, error) {
	if p.p == nil {
		return nil, ErrClosed
	}
	if size <= 0 || size > 1<<32-1 {
		return nil, fmt.Errorf("iceoryx loan of %d bytes: size out of range", size)
	}
	var payload unsafe.Pointer
	if r := C.rgi_pub_loan(p.p, C.uint32_t(size), 64, &payload); r != C.RGI_ALLOC_SUCCESS {
		return nil, fmt.Errorf("iceoryx loan of %d bytes: %w (allocation result %d)", size, ErrLoan, int(r))
	}
	return unsafe.Slice((*byte)(payload), size), nil
}

// Publish delivers a loaned chunk to every subscriber (zero-copy: they
// map the same chunk).
func (p *Publisher) Publish(chunk []byte) error {
	if p.p == nil {
		return ErrClosed
	}
	C.rgi_pub_publish(p.p, unsafe.Pointer(unsafe.SliceData(chunk)))
	return nil
}

// Release returns a loaned chunk unpublished.
func (p *Publisher) Release(chunk []byte) error {
	if p.p == nil {
		return ErrClosed
	}
	C.rgi_pub_release(p.p, unsafe.Pointer(unsafe.SliceData(chunk)))
	return nil
}

// HasSubscribers reports whether any subscriber is connected.
func (p *Publisher) HasSubscribers() bool {
	return p.p != nil && bool(C.rgi_pub_has_subscribers(p.p))
}

// Close removes the publisher.
func (p *Publisher) Close() error {
	if p.p == nil {
		return ErrClosed
	}
	C.rgi_pub_free(p.p)
	p.p = nil
	return nil
}

// Subscriber is an iceoryx subscriber with a wait set for its data. Its
// methods must not be called concurrently; all return ErrClosed after
// Close.
type Subscriber struct {
	s *C.rgi_sub
}

// NewSubscriber creates a subscriber of name that subscribes at once, with
// a queue of queue chunks. InitRuntime first.
func NewSubscriber(name ServiceName, queue int) (*Subscriber, error) {
	if err := checkRuntime(); err != nil {
		return nil, err
	}
	if queue <= 0 {
		queue = 16
	}
	a, b, c, free := name.cstrings()
	defer free()
	s := C.rgi_sub_new(a, b, c, C.uint64_t(queue))
	if s == nil {
		return nil, fmt.Errorf("creating iceoryx subscriber %v failed", name)
	}
	return &Subscriber{s: s}, nil
}

// Subscribed reports whether the subscriber is connected to a publisher
// (RouDi connects them in its discovery loop, some 100 ms after both
// exist).
func (s *Subscriber) Subscribed() bool {
	return s.s != nil && C.rgi_sub_state(s.s) == C.RGI_SUBSCRIBED
}

// WaitSubscribed polls Subscribed until it holds or timeout passes.
func (s *Subscriber) WaitSubscribed(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for !s.Subscribed() {
		if s.s == nil {
			return ErrClosed
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("iceoryx subscriber not subscribed after %v (state %d)", timeout, int(C.rgi_sub_state(s.s)))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Wait blocks in the wait set until a chunk is queued or timeout passes
// (false).
func (s *Subscriber) Wait(timeout time.Duration) (bool, error) {
	if s.s == nil {
		return false, ErrClosed
	}
	return C.rgi_sub_wait(s.s, C.int64_t(timeout)) > 0, nil
}

// Take takes the oldest queued chunk: ok is false when none is queued.
// The C binding does not tell a chunk's payload size, so the caller says
// how many bytes it knows the chunk holds (its publisher's convention:
// the baseline sends a fixed-size header that names the size, and the
// size of a round is known in advance). The slice is shared memory, not
// to be written, until Release.
func (s *Subscriber) Take(size int) (chunk []byte, ok bool, err error) {
	if s.s == nil {
		return nil, false, ErrClosed
	}
	var payload unsafe.Pointer
	switch r := C.rgi_sub_take(s.s, &payload); r {
	case C.RGI_TAKE_SUCCESS:
		return unsafe.Slice((*byte)(payload), size), true, nil
	case C.RGI_TAKE_NONE:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("iceoryx take: receive result %d", int(r))
	}
}

// Release gives a taken chunk back.
func (s *Subscriber) Release(chunk []byte) error {
	if s.s == nil {
		return ErrClosed
	}
	C.rgi_sub_release(s.s, unsafe.Pointer(unsafe.SliceData(chunk)))
	return nil
}

// Close removes the subscriber.
func (s *Subscriber) Close() error {
	if s.s == nil {
		return ErrClosed
	}
	C.rgi_sub_free(s.s)
	s.s = nil
	return nil
}

func checkRuntime() error {
	if err := Load(); err != nil {
		return err
	}
	runtime.mu.Lock()
	defer runtime.mu.Unlock()
	if runtime.name == "" {
		return errors.New("iceoryx: InitRuntime first")
	}
	return nil
}

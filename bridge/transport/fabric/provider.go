//go:build cgo && !nofabric

package fabric

// #include "rgfabric.h"
import "C"

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// Available reports whether this build has libfabric.
const Available = true

// Provider is a libfabric fabric and domain opened for one provider (and,
// for tcp or verbs, one local interface). It implements transport.Provider.
//
// Lock order: an endpoint's or listener's mutex, shmPeers, landMu, then
// Provider.mu; never the other way round.
type Provider struct {
	// interrupted: Interrupt was called; dials waiting for their
	// connection give up.
	interrupted atomic.Bool

	name   string // libfabric provider name: tcp, shm, verbs
	epType C.enum_fi_ep_type
	opts   Options
	log    *slog.Logger

	info   *C.struct_fi_info // the fi_getinfo result the domain was opened from
	fabric *C.struct_fid_fabric
	domain *C.struct_fid_domain

	// What the provider demands, from info (and Options.Force*).
	virtAddr  bool   // remote addresses are virtual addresses (else offsets)
	descs     bool   // pass MR descriptors for local buffers (FI_MR_LOCAL)
	rxCQData  bool   // remote CQ data consumes posted receives (FI_RX_CQ_DATA)
	fence     bool   // no write-after-write order: fence Writes before a WriteImm
	txSize    int    // the provider's transmit queue size
	iovLimit  int    // local parts one write may gather (tx_attr.iov_limit)
	rxSize    int    // the provider's receive queue size
	addrFmt   uint32 // the domain's address format
	domainNm  string
	mrModeRaw uint64

	// landMu is read-held while endpoints progress (software providers
	// copy incoming bytes into registered memory then) and write-held by
	// Region.Close, so a region is never unmapped under a copy.
	landMu sync.RWMutex

	mu sync.Mutex // guards the fields below
	// nextKey is the next requested MR key: without FI_MR_PROV_KEY keys
	// must be unique per domain.
	nextKey   uint64
	closed    bool
	regions   map[*Region]struct{}
	endpoints map[*Endpoint]struct{}
	listeners map[transport.Listener]struct{}
	// zombies counts closed shm endpoints whose memory waits for their
	// in-process peer to close (inproc.go).
	zombies atomic.Int64
}

// Counts are libfabric objects of this process not closed yet.
type Counts struct {
	Providers     int64 // fabric and domain pairs (Open)
	Endpoints     int64 // endpoints, passive endpoints and RDM listeners
	Registrations int64 // memory registrations (regions and control buffers)
}

var live struct{ providers, endpoints, registrations atomic.Int64 }

// Outstanding counts what is open now; tests check it returns to zero
// (a leak check for fabric registrations).
func Outstanding() Counts {
	return Counts{live.providers.Load(), live.endpoints.Load(), live.registrations.Load()}
}

// Options configure Open.
type Options struct {
	// Node is the local address the tcp (or verbs) domain is opened for;
	// "127.0.0.1" when empty. shm ignores it.
	Node string
	// NamePrefix starts the names of shm endpoints (and so their files in
	// /dev/shm); "rgaps" when empty.
	NamePrefix string
	// Timeout bounds connection set-up, waits for a full transmit queue or
	// a fence, and control messages; transport.DefaultTimeout when zero.
	Timeout time.Duration
	// Logger receives connection-level events; nil is silent.
	Logger *slog.Logger

	// The Force options take the code paths verbs needs on providers that
	// do not need them (FABRIC_NOTES pitfall 9), so tests exercise them:
	// ForceRxCQData keeps a full receive queue posted as if remote CQ data
	// consumed receives; ForceMRLocal passes MR descriptors for every
	// local buffer; ForceFence fences as if RMA writes were unordered.
	ForceRxCQData bool
	ForceMRLocal  bool
	ForceFence    bool
}

// Open opens libfabric provider name: "tcp" (connected FI_EP_MSG
// endpoints), "shm" (FI_EP_RDM, same host) or "verbs" (FI_EP_MSG). An
// unknown or unavailable provider is an error wrapping
// transport.ErrNotSupported.
func Open(name string, opts Options) (*Provider, error) {
	var epType C.enum_fi_ep_type
	switch name {
	case "tcp", "verbs":
		epType = epMsg
	case "shm":
		epType = epRdm
	default:
		return nil, fmt.Errorf("libfabric provider %q: %w (known: tcp, shm, verbs)", name, transport.ErrNotSupported)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = transport.DefaultTimeout
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = "rgaps"
	}
	var node *C.char
	var flags C.uint64_t
	if epType == epMsg {
		if opts.Node == "" {
			opts.Node = "127.0.0.1"
		}
		node = cstr(opts.Node)
		defer cfree(unsafe.Pointer(node))
		flags = C.FI_SOURCE
	}
	cname := cstr(name)
	defer cfree(unsafe.Pointer(cname))
	hints := C.rg_hints(cname, C.int(epType))
	if hints == nil {
		return nil, errors.New("libfabric: fi_allocinfo failed")
	}
	defer C.fi_freeinfo(hints)
	var info *C.struct_fi_info
	if r := C.rg_getinfo(hints, node, nil, flags, &info); r != 0 {
		err := fiError("fi_getinfo", int(-r), "")
		if -r == C.FI_ENODATA || -r == C.FI_ENOSYS {
			return nil, fmt.Errorf("libfabric provider %q (node %q): %w: %v", name, opts.Node, transport.ErrNotSupported, err)
		}
		return nil, fmt.Errorf("libfabric provider %q: %w", name, err)
	}
	// Keep the first match only.
	if info.next != nil {
		next := info.next
		info.next = nil
		C.fi_freeinfo(next)
	}
	var a C.rg_attrs
	C.rg_info_attrs(info, &a)
	if a.cq_data_size < 8 {
		C.fi_freeinfo(info)
		return nil, fmt.Errorf("libfabric provider %q: %w: remote CQ data of %d bytes, need 8", name, transport.ErrNotSupported, a.cq_data_size)
	}
	p := &Provider{
		name:      name,
		epType:    epType,
		opts:      opts,
		log:       opts.Logger,
		info:      info,
		virtAddr:  uint64(a.mr_mode)&mrVirtAddr != 0,
		descs:     uint64(a.mr_mode)&mrLocal != 0 || opts.ForceMRLocal,
		rxCQData:  uint64(a.mode)&modeRxCQData != 0 || opts.ForceRxCQData,
		fence:     uint64(a.tx_order)&orderWAW == 0 || opts.ForceFence,
		txSize:    int(a.tx_size),
		iovLimit:  int(a.tx_iov_limit),
		rxSize:    int(a.rx_size),
		addrFmt:   uint32(a.addr_format),
		domainNm:  C.GoString(&a.domain[0]),
		mrModeRaw: uint64(a.mr_mode),
		nextKey:   1,
		regions:   map[*Region]struct{}{},
		endpoints: map[*Endpoint]struct{}{},
		listeners: map[transport.Listener]struct{}{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.txSize <= 0 {
		p.txSize = 64
	}
	if p.rxSize <= 0 {
		p.rxSize = 64
	}
	if r := C.rg_fabric(info, &p.fabric); r != 0 {
		C.fi_freeinfo(info)
		return nil, fmt.Errorf("libfabric provider %q: %w", name, fiError("fi_fabric", int(-r), ""))
	}
	if r := C.fi_domain(p.fabric, info, &p.domain, nil); r != 0 {
		C.rg_close(C.rg_fabric_fid(p.fabric))
		C.fi_freeinfo(info)
		return nil, fmt.Errorf("libfabric provider %q: %w", name, fiError("fi_domain", int(-r), ""))
	}
	live.providers.Add(1)
	p.log.Debug("libfabric provider open", "provider", name, "domain", p.domainNm,
		"mr_mode", fmt.Sprintf("%#x", p.mrModeRaw), "virt_addr", p.virtAddr, "descs", p.descs,
		"rx_cq_data", p.rxCQData, "fence", p.fence, "tx_size", p.txSize, "rx_size", p.rxSize)
	return p, nil
}

// gather is how many local parts one write with an immediate gathers
// (Endpoint.WriteImmGather): up to maxGather where the provider takes
// several and a record's parts written one by one would need a fence
// between them (no write-after-write order: the immediate may not vouch
// for an earlier write until it was delivered, a round trip through the
// peer's progress); 0 otherwise.
func (p *Provider) gather() int {
	if !p.fence || p.iovLimit < 2 {
		return 0
	}
	return min(p.iovLimit, maxGather)
}

// Name implements transport.Provider: "fabric:" and the libfabric provider.
func (p *Provider) Name() string { return "fabric:" + p.name }

// Describe says what the provider demanded, for logs and reports.
func (p *Provider) Describe() string {
	return fmt.Sprintf("libfabric %s on %s: mr_mode %#x, virtual addresses %v, descriptors %v, receives for CQ data %v, fenced writes %v, tx queue %d",
		p.name, p.domainNm, p.mrModeRaw, p.virtAddr, p.descs, p.rxCQData, p.fence, p.txSize)
}

// Register implements transport.Provider. b must stay mapped, outside the
// Go heap, until the region is closed.
func (p *Provider) Register(b []byte) (transport.Region, error) {
	if len(b) == 0 {
		return nil, errors.New("libfabric: registering an empty region")
	}
	return p.register(b, false)
}

// Alloc implements transport.Provider.
func (p *Provider) Alloc(n int) (transport.Region, error) {
	b, err := transport.MapAnon(n)
	if err != nil {
		return nil, fmt.Errorf("libfabric: %w", err)
	}
	r, err := p.register(b, true)
	if err != nil {
		transport.Unmap(b)
		return nil, err
	}
	return r, nil
}

func (p *Provider) register(b []byte, mapped bool) (*Region, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, transport.ErrClosed
	}
	base := unsafe.Pointer(unsafe.SliceData(b))
	mr, desc, key, err := p.regLocked(base, len(b), accessData)
	if err != nil {
		return nil, fmt.Errorf("registering %d bytes: %w", len(b), err)
	}
	r := &Region{p: p, b: b, mr: mr, desc: desc, key: key, mapped: mapped}
	if p.virtAddr {
		r.addr = uint64(uintptr(base))
	}
	p.regions[r] = struct{}{}
	return r, nil
}

// regLocked registers memory with the next requested key. Must hold p.mu.
func (p *Provider) regLocked(base unsafe.Pointer, n int, access uint64) (*C.struct_fid_mr, unsafe.Pointer, uint64, error) {
	var mr *C.struct_fid_mr
	var desc unsafe.Pointer
	var key C.uint64_t
	r := C.rg_mr_reg(p.domain, base, C.size_t(n), C.uint64_t(access), C.uint64_t(p.nextKey), &mr, &desc, &key)
	if r != 0 {
		return nil, nil, 0, fiError("fi_mr_reg", int(-r), "")
	}
	p.nextKey++
	if uint64(key) == keyNotAvail {
		C.rg_close(C.rg_mr_fid(mr))
		return nil, nil, 0, errors.New("libfabric: fi_mr_key: key not available (FI_MR_RAW is not supported)")
	}
	live.registrations.Add(1)
	return mr, desc, uint64(key), nil
}

// Close implements transport.Provider: it closes the listeners, endpoints
// and regions still open, then the domain and fabric.
// Interrupt makes every Dial waiting for its connection, and every later
// one, fail at once with transport.ErrClosed (transport.Interrupter). A dial
// to a peer that went away would otherwise hold its socket until the
// provider's timeout.
func (p *Provider) Interrupt() { p.interrupted.Store(true) }

func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return transport.ErrClosed
	}
	p.closed = true
	var lns []transport.Listener
	for l := range p.listeners {
		lns = append(lns, l)
	}
	var eps []*Endpoint
	for e := range p.endpoints {
		eps = append(eps, e)
	}
	var rs []*Region
	for r := range p.regions {
		rs = append(rs, r)
	}
	p.mu.Unlock()
	var errs []error
	keep := func(err error) {
		if err != nil && !errors.Is(err, transport.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for _, l := range lns {
		keep(l.Close())
	}
	for _, e := range eps {
		keep(e.Close())
	}
	for _, r := range rs {
		keep(r.Close())
	}
	// Zombies hold objects of the domain until their peers in this
	// process close; wait for that, or leave the domain open.
	for deadline := time.Now().Add(p.opts.Timeout); p.zombies.Load() > 0; {
		if time.Now().After(deadline) {
			keep(fmt.Errorf("libfabric %s: %d closed endpoints still wait for their peers in this process to close; the domain stays open", p.name, p.zombies.Load()))
			return errors.Join(errs...)
		}
		time.Sleep(time.Millisecond)
	}
	if r := C.rg_close(C.rg_domain_fid(p.domain)); r != 0 {
		keep(fiError("closing the domain", int(-r), ""))
	}
	if r := C.rg_close(C.rg_fabric_fid(p.fabric)); r != 0 {
		keep(fiError("closing the fabric", int(-r), ""))
	}
	C.fi_freeinfo(p.info)
	p.info, p.domain, p.fabric = nil, nil, nil
	live.providers.Add(-1)
	return errors.Join(errs...)
}

// nameSeq numbers shm endpoint names in this process. Names are never
// reused, not even by another Provider: shm keeps the endpoints of one
// process in a list by name and maps a peer found there by pointer.
var nameSeq atomic.Uint64

// nameTag tells this process's names from those of an earlier process
// that had the same pid and died without removing its files.
var nameTag = rand.Uint32()

// newName is a unique shm endpoint name.
func (p *Provider) newName(kind string) string {
	return fmt.Sprintf("%s_f%d.%08x_%s%d", p.opts.NamePrefix, os.Getpid(), nameTag, kind, nameSeq.Add(1))
}

// Region is registered memory; it implements transport.Region.
type Region struct {
	p      *Provider
	b      []byte
	mr     *C.struct_fid_mr
	desc   unsafe.Pointer
	key    uint64
	addr   uint64 // target address of b[0] for peers: its VA, or 0 (offsets)
	mapped bool
}

// Bytes implements transport.Region.
func (r *Region) Bytes() []byte { return r.b }

// Desc implements transport.Region.
func (r *Region) Desc() transport.RemoteRegion {
	return transport.RemoteRegion{Addr: r.addr, Key: r.key, Len: uint64(len(r.b))}
}

// Close implements transport.Region.
func (r *Region) Close() error {
	r.p.landMu.Lock()
	defer r.p.landMu.Unlock()
	r.p.mu.Lock()
	if _, ok := r.p.regions[r]; !ok {
		r.p.mu.Unlock()
		return transport.ErrClosed
	}
	delete(r.p.regions, r)
	rc := C.rg_close(C.rg_mr_fid(r.mr))
	r.p.mu.Unlock()
	live.registrations.Add(-1)
	var err error
	if rc != 0 {
		err = fiError("closing a memory registration", int(-rc), "")
	}
	if r.mapped {
		err = errors.Join(err, transport.Unmap(r.b))
	}
	return err
}

// span returns the address of src, which must lie inside r, and its
// descriptor (nil unless the provider wants descriptors).
func (r *Region) span(src []byte) (unsafe.Pointer, unsafe.Pointer, error) {
	base := unsafe.Pointer(unsafe.SliceData(r.b))
	if len(src) == 0 {
		return base, r.descFor(), nil
	}
	p := unsafe.Pointer(unsafe.SliceData(src))
	off := uintptr(p) - uintptr(base)
	if uintptr(p) < uintptr(base) || off > uintptr(len(r.b)) || uintptr(len(src)) > uintptr(len(r.b))-off {
		return nil, nil, fmt.Errorf("libfabric: source of %d bytes is not inside the local region: %w", len(src), transport.ErrOutOfBounds)
	}
	return p, r.descFor(), nil
}

func (r *Region) descFor() unsafe.Pointer {
	if r.p.descs {
		return r.desc
	}
	return nil
}

// Error is a libfabric failure: the operation, the error code (positive,
// an errno or FI_E* value) and libfabric's text for it (fi_strerror, and
// the provider's fi_cq_strerror where there is one).
type Error struct {
	Op   string
	Code int
	Text string
}

func (e *Error) Error() string { return "libfabric " + e.Op + ": " + e.Text }

// Is lets errors.Is see a lost connection as transport.ErrPeerClosed and a
// timeout as transport.ErrTimeout.
func (e *Error) Is(target error) bool {
	switch target {
	case transport.ErrPeerClosed:
		switch e.Code {
		case int(C.FI_ECONNRESET), int(C.FI_ECONNABORTED), int(C.FI_ENOTCONN), int(C.FI_ESHUTDOWN), int(C.EPIPE):
			return true
		}
	case transport.ErrTimeout:
		return e.Code == int(C.FI_ETIMEDOUT)
	}
	return false
}

func fiError(op string, code int, text string) error {
	if text == "" {
		text = fiStrerror(code)
	}
	return &Error{Op: op, Code: code, Text: text}
}

package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// MaxMessage is the largest src one WriteImm or Write accepts. Larger
// messages are chunked by the ring protocol.
const MaxMessage = 64 << 20

// DefaultTimeout bounds connection set-up, waits for a full transmit queue
// and Flush when a provider is opened without a timeout.
const DefaultTimeout = 10 * time.Second

var (
	// ErrNotSupported reports a transport this machine cannot provide:
	// libfabric missing from the build, or the provider not available.
	// It is wrapped with what is missing; tests skip only on it.
	ErrNotSupported = errors.New("transport not supported")
	// ErrClosed is returned by every method of an endpoint, listener,
	// region or provider after its Close.
	ErrClosed = errors.New("transport closed")
	// ErrPeerClosed reports that the peer closed the connection (or its
	// process is gone); the endpoint is unusable afterwards.
	ErrPeerClosed = errors.New("peer closed the connection")
	// ErrOutOfBounds reports a write that does not fit the remote region
	// (or a src outside the local region); nothing was sent.
	ErrOutOfBounds = errors.New("write outside the region")
	// ErrTooLarge reports a src longer than MaxMessage; nothing was sent.
	ErrTooLarge = errors.New("message larger than MaxMessage")
	// ErrTimeout reports an operation that could not make progress within
	// the provider's timeout (a full transmit queue the peer does not
	// drain, a peer that does not answer).
	ErrTimeout = errors.New("transport timed out")
)

// RemoteRegion is what a peer needs to write into a Region: the target
// address of its first byte (the virtual address when the provider wants
// virtual addresses, otherwise 0: offsets), the remote key, and the length.
// It is plain data, exchanged out of band; MarshalBinary gives its 24-byte
// little-endian encoding.
type RemoteRegion struct {
	Addr, Key, Len uint64
}

// RemoteRegionSize is the length of a marshalled RemoteRegion.
const RemoteRegionSize = 24

// MarshalBinary encodes r as Addr, Key, Len, little-endian u64 each.
func (r RemoteRegion) MarshalBinary() ([]byte, error) {
	b := make([]byte, RemoteRegionSize)
	binary.LittleEndian.PutUint64(b[0:], r.Addr)
	binary.LittleEndian.PutUint64(b[8:], r.Key)
	binary.LittleEndian.PutUint64(b[16:], r.Len)
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary produced.
func (r *RemoteRegion) UnmarshalBinary(b []byte) error {
	if len(b) != RemoteRegionSize {
		return fmt.Errorf("remote region: %d bytes, want %d", len(b), RemoteRegionSize)
	}
	r.Addr = binary.LittleEndian.Uint64(b[0:])
	r.Key = binary.LittleEndian.Uint64(b[8:])
	r.Len = binary.LittleEndian.Uint64(b[16:])
	return nil
}

// CheckWrite validates a write of n bytes at offset off into r; every
// implementation calls it before sending anything.
func (r RemoteRegion) CheckWrite(off uint64, n int) error {
	if n > MaxMessage {
		return fmt.Errorf("%d bytes: %w", n, ErrTooLarge)
	}
	if n < 0 || off > r.Len || uint64(n) > r.Len-off {
		return fmt.Errorf("%d bytes at offset %d into a region of %d: %w", n, off, r.Len, ErrOutOfBounds)
	}
	return nil
}

// Region is memory registered for remote writes: allocated by the provider
// (Alloc: an anonymous mapping outside the Go heap) or given by the caller
// (Register: memory that must stay mapped and outside the Go heap until
// Close, for example a pinned shared-memory pool).
type Region interface {
	// Bytes is the registered memory.
	Bytes() []byte
	// Desc is what a peer needs to write into the region.
	Desc() RemoteRegion
	// Close deregisters the region (and unmaps it when Alloc made it).
	// Endpoints must not be using it any more.
	Close() error
}

// Endpoint is one connection to a peer.
//
// Writes are posted, not waited for: src must stay unchanged until the
// write completed locally (Stats().Completions counts completions, Flush
// waits for all) and, because a local completion does not mean the bytes
// are in remote memory, the ring protocol frees publish-side data only once
// the remote head has passed it.
//
// Ordering: the bytes of every Write and WriteImm posted before a WriteImm
// are visible in the peer's region when that WriteImm's immediate is
// reported, and immediates are reported in the order they were posted.
// Implementations on providers that do not order RMA writes fence (wait
// for earlier Writes to be delivered before posting a WriteImm).
type Endpoint interface {
	// WriteImm writes src (a slice of local) into the peer's region at
	// offset off and delivers imm to the peer's Poll after the bytes are
	// visible there. A full transmit queue is retried while progressing,
	// up to the provider's timeout (then ErrTimeout).
	WriteImm(src []byte, local Region, remote RemoteRegion, off uint64, imm uint64) error
	// Write writes src into the peer's region at off without an immediate
	// (head write-back, write-twice tail update).
	Write(src []byte, local Region, remote RemoteRegion, off uint64) error
	// Poll makes progress (lands incoming bytes, retires send completions)
	// and copies received immediates, oldest first, into imms. It never
	// blocks. Once imms received before an error are returned, the error
	// (ErrPeerClosed, a completion error) is returned by every call.
	Poll(imms []uint64) (n int, err error)
	// Wait is Poll that waits up to timeout for at least one immediate;
	// it returns 0, nil when none came.
	Wait(imms []uint64, timeout time.Duration) (n int, err error)
	// Flush progresses until every write posted so far completed locally,
	// or timeout (ErrTimeout).
	Flush(timeout time.Duration) error
	// Sleep blocks in the kernel until the endpoint may have progress to
	// make (the peer's bytes or immediates arrived, the peer closed), Wake
	// is called, or timeout passes (negative: no limit; then it returns
	// ErrTimeout); it may also return nil for nothing, and the caller
	// then polls and decides again.
	// It makes no progress itself: the caller polls after it, and must
	// have polled since it last posted. It is meant for an idle endpoint:
	// transmits still in flight need polling, and may not end it. It
	// returns ErrNotSupported at once where the provider has no wait
	// object (then the caller keeps polling), ErrClosed after Close.
	Sleep(timeout time.Duration) error
	// Wake ends a Sleep under way or makes the next one return at once;
	// safe from any goroutine, also after Close. It makes a system call
	// only when a Sleep may be under way.
	Wake()
	// Stats are the endpoint's counters; safe to call concurrently.
	Stats() Stats
	// Close tells the peer (best effort) and releases the endpoint; writes
	// not yet completed are dropped. libfabric endpoints wait (at most
	// 2 s, progressing) for the peer to acknowledge, so closing both ends
	// at once, or while the peer polls, is quick.
	Close() error
}

// GatherWriter is an Endpoint that can write several local parts as one
// write with one immediate. Where the provider does not order writes, a
// record's parts written one by one cost a fence between them (the last
// part's immediate may vouch for the earlier ones only once they were
// delivered: a round trip through the peer's progress); gathered, they
// cost none.
type GatherWriter interface {
	Endpoint
	// MaxGather is the most parts WriteImmGather takes; below 2 it takes
	// none (write the parts one by one).
	MaxGather() int
	// WriteImmGather writes the concatenation of srcs (srcs[k] a slice of
	// locals[k]) into the peer's region at off and delivers imm, as
	// WriteImm does, once all of it is visible there.
	WriteImmGather(srcs [][]byte, locals []Region, remote RemoteRegion, off uint64, imm uint64) error
}

// Stats are an endpoint's counters since it was created.
type Stats struct {
	Writes      uint64 // WriteImm and Write calls posted
	Completions uint64 // of those, completed locally
	Imms        uint64 // immediates received
	// Retries counts posts that met a full transmit queue and were
	// retried after progressing: -FI_EAGAIN from the provider, all
	// operation contexts in use (libfabric), or the plain TCP transport's
	// bounded queue.
	Retries uint64
	// Fences counts WriteImm calls that first waited for earlier Writes to
	// be delivered (providers without write-after-write ordering).
	Fences uint64
}

// Listener accepts connections from Dial.
type Listener interface {
	// Accept waits for the next connection; after Close it returns
	// ErrClosed.
	Accept() (Endpoint, error)
	// Addr is what Dial needs to reach this listener.
	Addr() string
	Close() error
}

// Interrupter is implemented by providers whose Dial may wait for a peer
// that went away (libfabric's connection manager): Interrupt makes every
// Dial in progress, and every later one, fail at once with ErrClosed. Call
// it when shutting down, before waiting for whatever dials.
type Interrupter interface{ Interrupt() }

// Provider is one transport implementation, opened once per process and
// network interface: it owns the registrations (keys are unique per
// provider) and the endpoints.
type Provider interface {
	// Name names the implementation ("fabric:tcp", "fabric:shm",
	// "plaintcp").
	Name() string
	// Listen starts accepting connections at addr (host:port for TCP-based
	// providers, with port 0 choosing one; a name, or "" for a generated
	// one, for shm).
	Listen(addr string) (Listener, error)
	// Dial connects to a listener's Addr within the provider's timeout.
	Dial(addr string) (Endpoint, error)
	// Register registers caller memory (outside the Go heap, mapped until
	// the region is closed) for local and remote writes.
	Register(b []byte) (Region, error)
	// Alloc maps and registers n bytes (rounded up to pages).
	Alloc(n int) (Region, error)
	// Close closes every listener, endpoint and region still open, then
	// the provider.
	Close() error
}

// Package transport moves bytes one-sidedly into a peer's registered memory:
// the inter-host bridge's data path. A sender writes a message into the
// remote daemon's ring memory and attaches an 8-byte immediate that the
// peer reads from its completion queue once the bytes are visible there
// (RDMA write-with-immediate semantics).
//
// The package owns the interface (Provider, Region, Endpoint, Listener),
// the wire description of a remote region (RemoteRegion), the errors every
// implementation returns, and one implementation over plain TCP sockets
// (PlainTCP) that emulates the same semantics: frames of [offset, length,
// immediate, bytes] that the receiver copies into its registered region
// before it reports the immediate. The libfabric implementations (tcp,
// shm, and verbs where present) live in the subpackage fabric, the only
// place that imports "C".
//
// It must not know the ring protocol (offsets, slot layout, the meaning of
// immediates: bridge/ring computes them) nor exchange addresses and
// RemoteRegions (the daemon's control plane does, out of band).
//
// # Progress
//
// Every implementation makes progress only inside its methods, as
// libfabric's manual-progress providers do: bytes written by the peer land
// in a Region while the owner calls Poll, Wait, Flush, WriteImm or Write.
// Both sides must keep polling, the sender too (a head write-back lands in
// the sender's memory only while it polls), and no goroutines are started
// behind the caller's back.
//
// An idle owner need not spin for that: Endpoint.Sleep blocks until the
// peer's bytes (or its close) arrive, or Wake is called, on the
// endpoint's wait object (libfabric's completion-queue descriptor,
// FI_WAIT_FD, whose set holds the tcp provider's sockets; the plain TCP
// socket), parked in the Go runtime's network poller (Sleeper). Providers
// without a wait object (libfabric shm in 1.17) return ErrNotSupported,
// and their owners keep polling or arrange a wake of their own.
//
// # Concurrency
//
// Endpoint methods may be called from several goroutines; each endpoint
// serialises them with one mutex. Stats may be read at any time. Regions
// and endpoints belong to one Provider and must be closed before it (its
// Close closes what is left).
package transport

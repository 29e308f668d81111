package bridge

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

var (
	// ErrBadOffer reports ring parameters from a peer that cannot be used:
	// a ring or slot outside the registered region, an invalid ring
	// configuration, another provider. Nothing is written then.
	ErrBadOffer = errors.New("bad ring offer")
	// ErrConfig reports bridge options that cannot work.
	ErrConfig = errors.New("bridge configuration")
)

// linkTimeout bounds the set-up of a data link (the writer's connect, the
// reader's accept and the writer's answer), and how long a reader waits
// for a topic map. A variable only for tests, which set it before their
// bridges start.
var linkTimeout = 10 * time.Second

// Defaults.
const (
	DefaultRingSize = 64 << 20
	// maxInFlight bounds the records a writer has committed and not yet
	// seen acknowledged: each needs a header slot in registered memory.
	maxInFlight = 4096
	// DaemonJanitorPeriod is how often rgapsd's engine janitor runs
	// (zerocopy.Config.JanitorPeriod, set by DaemonFlags.Options; other
	// processes keep 100 ms): a pass over a thousand open topics costs
	// about a millisecond, 1% of a core at 100 ms. The topics the bridge
	// has open are open in the processes it serves too, whose janitors
	// reclaim their dead peers as before, and a publisher waiting for
	// room reclaims by itself.
	DaemonJanitorPeriod = time.Second
)

// Options configure a Bridge.
type Options struct {
	// Engine is the local engine's configuration (prefix, domain). The
	// bridge opens its own Domain with it.
	Engine zerocopy.Config
	// Control: where to listen, the peers to connect to, the cluster
	// secret, the host id, heartbeat timing.
	Control control.Config
	// Provider is the data transport: "fabric:tcp" (default where libfabric
	// is built in), "fabric:shm" (daemons on one host), "fabric:verbs",
	// or "tcp" (plain TCP: the thesis' data-path-2 baseline and the
	// fallback without libfabric).
	Provider string
	// DataHost is the local address data links listen on; the host of
	// Control.Listen when empty (127.0.0.1 if that is unspecified).
	DataHost string
	// RingSize is the size of each ring this daemon offers (64 MiB).
	RingSize uint64
	// MaxChunk limits the payload of one ring record (0: DefaultMaxChunk,
	// or the largest the ring allows if that is less, see
	// ring.Config.MaxRecord; with NoChunking the largest the ring allows).
	// Larger messages are chunked.
	MaxChunk uint64
	// NoChunking refuses messages larger than one record instead.
	NoChunking bool
	// Mode is the signalling mode: ring.WriteImm (thesis) or
	// ring.WriteTwice (RB2: data write, then tail write).
	Mode ring.Mode
	// Watermark is the reader's head write-back watermark.
	Watermark ring.Watermark
	// Rails is how many connections each ring this daemon offers is
	// written over at once (§3.7 "Rails"; the writer dials as many): 0
	// chooses (AutoRails), 1 … ring.MaxRails. More than one needs
	// write-imm mode.
	Rails int
	// BusyPoll is how long an idle link keeps polling its transport (and
	// a writer its subscriptions) before it starts to sleep: lower latency
	// for a core's worth of CPU per ring side. 0: a few yields, then
	// sleeps growing to 200 µs; after 10 ms without traffic a rail sleeps
	// until its peer's bytes come (railidle.go).
	BusyPoll time.Duration
	// PeerExpiry is how long a disconnected peer's subscriptions are kept
	// (messages for it keep queueing, so a peer that comes back loses
	// nothing); 60 s when zero.
	PeerExpiry time.Duration
	// PerTopic gives every topic its own ring and transfer goroutines
	// instead of one ring per host pair.
	PerTopic bool
	// MaxPeers bounds the peer daemons known at once (DefaultMaxPeers when
	// zero); a connection from one more host id is refused.
	MaxPeers int
	// MaxRingsPerPeer bounds the rings one peer may ask this daemon to
	// write into (DefaultMaxRingsPerPeer when zero); further offers are
	// refused.
	MaxRingsPerPeer int
	// Log receives the daemon's events; nil is silent.
	Log *slog.Logger
}

// Bridge is the inter-host half of rgapsd: it connects to peer daemons,
// tells them which topics this host subscribes to, and runs a publish
// manager (writerLink) per ring it writes into and a subscribe manager
// (readerLink) per ring it owns.
type Bridge struct {
	opts   Options
	log    *slog.Logger
	dom    *zerocopy.Domain
	prov   transport.Provider
	hostID string
	secret []byte
	// instance names this bridge's life in its Hellos (Hello.Instance).
	instance uint64

	listener *control.Listener
	statusLn net.Listener
	refusals *control.LogLimiter // refused peer messages and connections
	sessions []*control.Session
	wg       sync.WaitGroup
	quit     chan struct{}

	// sendMu serialises the sends of the local interest and graph (taken
	// before mu, never while holding it).
	sendMu sync.Mutex

	// mu guards the fields below and every peer's state; it is never held
	// across a send, a transport call or an engine call that can block.
	mu     sync.Mutex
	closed bool
	peers  map[string]*peer
	local  localState

	// interest is local.interest as an immutable snapshot, swapped under
	// mu when it changes: links read it without taking mu.
	interest atomic.Pointer[map[string]topicInterest]
	// scans counts the graph watcher's reads of the local graph.
	scans atomic.Uint64
	// burst wakes the trimmer (memtrim.go); trims counts its returns of
	// free heap to the system.
	burst chan struct{}
	trims atomic.Uint64
}

// peer is one remote daemon, by host id.
type peer struct {
	host string
	// conns are the live control connections, each with the order it
	// came up in; instance is the peer daemon's (Hello.Instance) they
	// belong to (0: not announced).
	conns    map[*control.Conn]uint64
	connSeq  uint64
	instance uint64
	interest map[string]topicInterest
	graph    graphMsg
	readers  map[uint32]*readerLink // rings this host owns and the peer writes (our ids)
	writers  map[uint32]*writerLink // rings the peer owns and we write (its ids)
	// live is one of conns (nil: none, or the bridge is closing), set under
	// Bridge.mu whenever conns changes: links read it without taking mu.
	live     atomic.Pointer[control.Conn]
	nextRing uint32
	// doorbell: the peer's daemon answers msgDoze (its hello announced
	// featureDoorbell); read by reader links' rails.
	doorbell  atomic.Bool
	upSince   time.Time
	downSince time.Time // zero while connected
	refused   uint64    // control messages refused
	// superseded are earlier instances of the peer's daemon that a newer
	// one displaced while their connections were up (the newest last, at
	// most maxSuperseded): one that connects again while the peer is
	// connected is a second live daemon with the peer's host id, and is
	// refused (admitPeer).
	superseded []uint64
	duplicates uint64   // connections refused as a superseded instance's
	dupLogged  []uint64 // superseded instances whose refusal was logged at Error (dupLevelLocked)
}

// maxSuperseded bounds peer.superseded.
const maxSuperseded = 8

// setLive publishes one of the peer's connections to its links. Must
// hold b.mu.
func (p *peer) setLive() { p.live.Store(p.conn()) }

// newInstance makes a daemon's instance (Hello.Instance); tests make
// daemons that announce none, as daemons before 2026-11-28.
var newInstance = randomEpoch

func randomEpoch() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1
}

// OpenProvider opens a data transport by name (see Options.Provider);
// node is the local address for TCP-based providers.
func OpenProvider(name, node string, log *slog.Logger) (transport.Provider, error) {
	switch name {
	case "tcp", "plaintcp":
		return transport.NewPlainTCP(transport.PlainTCPOptions{Logger: log}), nil
	case "", "fabric:tcp", "fabric:shm", "fabric:verbs":
		if name == "" {
			name = "fabric:tcp"
		}
		return fabric.Open(name[len("fabric:"):], fabric.Options{Node: node, Logger: log, NamePrefix: "rgaps-bridge"})
	}
	return nil, fmt.Errorf("%w: unknown provider %q (fabric:tcp, fabric:shm, fabric:verbs, tcp)", ErrConfig, name)
}

// New opens the bridge's domain and transport and starts listening for
// and connecting to peers.
func New(opts Options) (*Bridge, error) {
	if opts.RingSize == 0 {
		opts.RingSize = DefaultRingSize
	}
	if opts.PeerExpiry <= 0 {
		opts.PeerExpiry = time.Minute
	}
	if opts.MaxPeers <= 0 {
		opts.MaxPeers = DefaultMaxPeers
	}
	if opts.MaxRingsPerPeer <= 0 {
		opts.MaxRingsPerPeer = DefaultMaxRingsPerPeer
	}
	if opts.Rails == 0 {
		opts.Rails = AutoRails(opts.Provider, opts.Mode, runtime.NumCPU())
	}
	if _, err := (&Bridge{opts: opts}).ringConfig().Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	secret := opts.Control.Secret
	if len(secret) == 0 {
		return nil, fmt.Errorf("%w: no cluster secret (secret or secret-file in the config, or RGAPS_CLUSTER_SECRET): daemons authenticate each other with it", ErrConfig)
	}
	hostID := opts.Control.HostID
	if hostID == "" {
		return nil, fmt.Errorf("%w: no host id", ErrConfig)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.DataHost == "" {
		if h, _, err := net.SplitHostPort(opts.Control.Listen); err == nil && h != "" && h != "0.0.0.0" && h != "::" {
			opts.DataHost = h
		} else {
			opts.DataHost = "127.0.0.1"
		}
	}
	ecfg := opts.Engine
	if ecfg.BlockTimeout == 0 {
		// The bridge republishes for local RELIABLE KEEP_ALL readers: it
		// waits for them like any reliable writer, but a message it gives
		// up on is lost for good (it was consumed from the ring), so it
		// waits long.
		ecfg.BlockTimeout = 10 * time.Minute
	}
	dom, err := zerocopy.Open(ecfg)
	if err != nil {
		return nil, err
	}
	prov, err := OpenProvider(opts.Provider, opts.DataHost, log)
	if err != nil {
		dom.Close()
		return nil, err
	}
	if opts.Mode == ring.WriteTwice && prov.Name() == "fabric:shm" {
		prov.Close()
		dom.Close()
		return nil, fmt.Errorf("%w: write-twice needs a provider that orders RMA writes (tcp); shm does not", ErrConfig)
	}
	b := &Bridge{opts: opts, log: log, dom: dom, prov: prov, hostID: hostID, secret: secret, instance: newInstance(),
		quit: make(chan struct{}), burst: make(chan struct{}, 1), peers: map[string]*peer{},
		refusals: control.NewLogLimiter(log, 32, 200*time.Millisecond)}
	b.local = localState{interest: map[string]topicInterest{}, pubs: map[string]pubSummary{}}
	if err := b.startControl(); err != nil {
		b.Close()
		return nil, err
	}
	if err := b.serveStatus(); err != nil {
		b.Close()
		return nil, err
	}
	b.wg.Add(2)
	go b.watchGraph()
	go b.trimLoop()
	log.Info("bridge started", "host", hostID, "listen", b.ControlAddr(), "provider", prov.Name(),
		"ring", opts.RingSize, "mode", opts.Mode.String(), "watermark", opts.Watermark.String(), "rails", opts.Rails, "per_topic", opts.PerTopic)
	return b, nil
}

// Domain is the bridge's engine domain.
func (b *Bridge) Domain() *zerocopy.Domain { return b.dom }

// ProviderName names the data transport in use ("fabric:tcp", "plaintcp", …).
func (b *Bridge) ProviderName() string { return b.prov.Name() }

// Close stops every link and connection and waits for the goroutines.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	sessions := append([]*control.Session(nil), b.sessions...)
	var links []interface{ stop() }
	for _, p := range b.peers {
		p.live.Store(nil) // links offer nothing more
		for _, l := range p.writers {
			links = append(links, l)
		}
		for _, l := range p.readers {
			links = append(links, l)
		}
	}
	b.mu.Unlock()
	close(b.quit)
	if i, ok := b.prov.(transport.Interrupter); ok {
		i.Interrupt() // a link dialing a peer that is gone stops now
	}
	if b.statusLn != nil {
		b.statusLn.Close()
	}
	if b.listener != nil {
		b.listener.Close()
	}
	for _, s := range sessions {
		s.Close()
	}
	for _, l := range links {
		l.stop()
	}
	b.wg.Wait()
	b.prov.Close()
	b.refusals.Flush("peer messages refused (not logged one by one)")
	return b.dom.Close()
}

// send sends a control message, logging a failure (the session notices
// a dead connection by itself).
func (b *Bridge) send(c *control.Conn, t control.MsgType, v any) bool {
	if err := c.Send(t, v); err != nil {
		b.log.Debug("control send failed", "type", t, "err", err)
		return false
	}
	return true
}

// conn returns a live control connection to the peer (the newest), or nil.
func (p *peer) conn() *control.Conn {
	var newest *control.Conn
	var seq uint64
	for c, n := range p.conns {
		if newest == nil || n > seq {
			newest, seq = c, n
		}
	}
	return newest
}

// wantedTopic is what a writer link should carry for one topic: the QoS
// of its bridge subscription and of the publisher the reader creates.
type wantedTopic struct {
	typ    string
	subQoS qos.Profile // the bridge subscription on this host
	pubQoS qos.Profile // what this host's publishers offer (for the remote bridge publisher)
}

// wantedLocked computes the topics a writer link to p should carry: those
// the peer subscribes to and this host publishes. Must hold b.mu.
func (b *Bridge) wantedLocked(p *peer, only string) map[string]wantedTopic {
	out := map[string]wantedTopic{}
	for name, in := range p.interest {
		if only != "" && name != only {
			continue
		}
		ps, ok := b.local.pubs[name]
		if !ok || ps.typ != in.Type {
			continue
		}
		sq := qos.Profile{History: qos.HistoryKeepLast, Depth: max(in.Depth, 1), Reliability: qos.ReliabilityBestEffort, Durability: qos.DurabilityVolatile}
		// Match every local publisher (ROS rules): reliable and transient-
		// local only when all of them offer it.
		if in.Reliable && ps.allRel {
			sq.Reliability = qos.ReliabilityReliable
			if in.KeepAll {
				sq.History, sq.Depth = qos.HistoryKeepAll, 0
			}
		}
		if in.TransientLocal && ps.allTL {
			sq.Durability = qos.DurabilityTransientLocal
		}
		if sq.History == qos.HistoryKeepLast && sq.Depth > 1024 {
			sq.Depth = 1024
		}
		pq := ps.q
		pq.Reliability = qos.ReliabilityBestEffort
		if ps.allRel {
			pq.Reliability = qos.ReliabilityReliable
		}
		pq.Durability = qos.DurabilityVolatile
		if ps.allTL {
			pq.Durability = qos.DurabilityTransientLocal
		}
		if pq.History == qos.HistoryKeepAll || pq.Depth == 0 {
			pq.History, pq.Depth = qos.HistoryKeepLast, max(pq.Depth, 1)
		}
		pq.Depth = min(pq.Depth, 1024)
		pq.Lifespan, pq.LivelinessLease = 0, 0
		out[name] = wantedTopic{typ: in.Type, subQoS: sq, pubQoS: pq}
	}
	return out
}

// adjustWritersLocked hands every writer link its wanted topics. Must
// hold b.mu.
func (b *Bridge) adjustWritersLocked() {
	for _, p := range b.peers {
		for _, l := range p.writers {
			l.setWanted(b.wantedLocked(p, l.only))
		}
	}
}

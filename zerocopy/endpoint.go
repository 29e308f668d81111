package zerocopy

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// GID identifies an endpoint on every host (rmw_gid_t's 16 bytes).
type GID [16]byte

func (g GID) String() string { return hex.EncodeToString(g[:]) }

var gidCounter atomic.Uint64

func newGID() GID {
	var g GID
	me := shm.Self()
	binary.LittleEndian.PutUint32(g[0:], me.Pid)
	binary.LittleEndian.PutUint32(g[4:], uint32(me.Start))
	binary.LittleEndian.PutUint64(g[8:], gidCounter.Add(1)|uint64(time.Now().UnixNano())<<24)
	return g
}

// NewGID returns a fresh identifier unique on this host (nodes use it too).
func NewGID() GID { return newGID() }

// EndpointSpec describes a publisher or subscription to create.
type EndpointSpec struct {
	Topic string // fully qualified ROS topic name, e.g. "/camera/image"
	Type  string // message type, e.g. "sensor_msgs/msg/Image"
	// TypeHash is the type's definition hash as ROS 2 reports it (zero:
	// unknown); graph queries show it.
	TypeHash TypeHash
	Node     string // fully qualified name of the owning node, for the graph
	QoS      qos.Profile
	// Memory is the form the endpoint uses; a topic created by a MemoryGPU
	// endpoint gets a GPU pool.
	Memory Memory
	// GPUPool: a topic this endpoint creates gets a GPU pool (pool kind 2)
	// whatever its Memory, so that GPU readers and writers that come later
	// find device memory. Creating it touches no CUDA: host endpoints use
	// its host (staging) pool, and nobody needs a GPU until a GPU reader
	// is matched (GPUPresent tells whether one can be). An existing
	// topic keeps its kind.
	GPUPool bool
	// Republish marks a republishing endpoint: one that carries messages
	// in from somewhere else or out to somewhere else (the inter-host
	// bridge today; a gateway to another middleware alike). A republishing
	// publisher never delivers to a republishing subscription, so what one
	// relay brings in is never carried back out (no loops); graph queries
	// flag them (EndpointInfo.Republish, TopicInfo.Republishing) so tools
	// can show the remote endpoints they stand for instead, and
	// MatchedLocal leaves them out. A republishing publisher may publish a
	// sample on behalf of its origin (Loan.PublishAs).
	Republish bool
}

// TypeHash identifies a message type's definition: a version byte (0 means
// unknown) and 32 bytes, as ROS 2's RIHS01 type hashes are.
type TypeHash [33]byte

// String is the ROS 2 text form ("RIHS01_" and 64 hex digits), or "" when
// unknown.
func (h TypeHash) String() string {
	if h[0] == 0 {
		return ""
	}
	return fmt.Sprintf("RIHS%02d_%x", h[0], h[1:])
}

// ParseTypeHash reads the text form String writes ("" gives the zero hash).
func ParseTypeHash(s string) (TypeHash, error) {
	var h TypeHash
	if s == "" {
		return h, nil
	}
	var v uint8
	var hexv string
	if n, err := fmt.Sscanf(s, "RIHS%02d_%64s", &v, &hexv); n != 2 || err != nil || v == 0 || len(hexv) != 64 {
		return h, fmt.Errorf("%w: type hash %q is not RIHSnn_ and 64 hex digits", ErrInvalid, s)
	}
	if _, err := hex.Decode(h[1:], []byte(hexv)); err != nil {
		return h, fmt.Errorf("%w: type hash %q: %v", ErrInvalid, s, err)
	}
	h[0] = v
	return h, nil
}

// endpoint is what publishers and subscriptions share.
type endpoint struct {
	t         *Topic
	slot      uint32
	kind      Kind
	gid       GID
	qos       qos.Profile
	republish bool         // EndpointSpec.Republish
	mem       atomic.Int64 // Memory: EndpointSpec.Memory, or Subscription.SetMemory's
	closed    atomic.Bool
	event     *atomic.Uint32 // local word bumped when a status changes
	// life is read-held by every call that touches the topic's mappings
	// (enter/exit) and write-held by close: the mapping is never released
	// under a call in flight, and a blocked Wait is woken by close.
	life sync.RWMutex

	// takeMu (subscriptions): one take at a time, the ring's single
	// consumer in this process (take.go).
	takeMu sync.Mutex

	// seenGen is matchGen, readable without mu: the janitor's tick skips
	// an endpoint whose topic did not change and that has no deadline.
	seenGen atomic.Uint32

	// mu guards the match cache and the status counters.
	mu       sync.Mutex
	matchGen uint32
	peers    map[GID]peerInfo // matched endpoints of the other kind
	incompat map[GID]bool     // endpoints of the other kind that do not match
	// otherTypes: endpoints of the other kind on this topic with another
	// type (typeClash).
	otherTypes map[GID]bool
	deadSeen   uint32 // topic's dead-peer counter when last read
	st         Status
	lastData   time.Time // deadline reference: last publish / take
}

type peerInfo struct {
	slot     uint32
	blocking bool // a reliable KEEP_ALL subscription of a reliable publisher
	flags    endpointFlags
}

// Status is an endpoint's view of QoS events, as rmw reports them. Counts are
// totals since creation; the *Change fields count what happened since the
// previous TakeStatus.
type Status struct {
	Matched, MatchedChange         int // current matched peers
	MatchedTotal, MatchedTotalChg  int
	DeadlineMissed, DeadlineChange int
	IncompatibleQoS, IncompatChg   int
	LastIncompatiblePolicy         qos.Policy
	// IncompatibleType counts endpoints of the other kind that use the
	// topic with another message type (they never match).
	IncompatibleType, IncompatTypeChg int
	AliveCount, AliveChange           int // subscriptions: matched publishers alive
	NotAliveCount, NotAliveChange     int // subscriptions: publishers lost to process death
	Lost, LostChange                  int // subscriptions: samples lost; publishers: samples dropped
}

func (k Kind) other() Kind {
	if k == KindPublisher {
		return KindSubscription
	}
	return KindPublisher
}

// errTopicRemoved: the segment was removed while we were about to join it.
var errTopicRemoved = errors.New("topic segment removed while joining")

// createEndpoint claims a slot in the topic for the calling process.
func (d *Domain) createEndpoint(spec EndpointSpec, kind Kind) (*endpoint, error) {
	for attempt := 0; ; attempt++ {
		e, err := d.createEndpointOnce(spec, kind)
		if !errors.Is(err, errTopicRemoved) || attempt == 100 {
			return e, err
		}
	}
}

func (d *Domain) createEndpointOnce(spec EndpointSpec, kind Kind) (_ *endpoint, err error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	var held *Topic // the topic acquired, released again if the join fails
	defer func() {
		if r := recover(); r != nil {
			// A fault or failed index check on a topic the domain has open
			// (released below); anything else goes on.
			err = d.recovered(held, r)
		}
		if err != nil && held != nil {
			d.releaseTopic(held)
		}
	}()
	defer debug.SetPanicOnFault(guard())
	q := spec.QoS.Resolve()
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := checkMemory(spec.Memory, kind); err != nil {
		return nil, err
	}
	if len(spec.Node) >= nameMax {
		return nil, fmt.Errorf("%w: node name %q too long", ErrInvalid, spec.Node)
	}
	pk := PoolHost
	if spec.Memory == MemoryGPU || spec.GPUPool {
		pk = PoolGPU
	}
	t, err := d.acquireTopic(spec.Topic, spec.Type, pk)
	if err != nil {
		return nil, err
	}
	held = t
	capacity := t.lay.queueCap
	if q.History == qos.HistoryKeepLast {
		if q.Depth > t.lay.queueCap {
			return nil, fmt.Errorf("%w: history depth %d exceeds the queue capacity %d of topic %s", ErrInvalid, q.Depth, t.lay.queueCap, t.name)
		}
		capacity = q.Depth
	}
	if kind == KindPublisher && q.Durability != qos.DurabilityTransientLocal {
		capacity = 0 // a volatile publisher keeps no history
	}
	if _, err := t.reclaimDead(); err != nil {
		return nil, err
	}
	if spec.Memory == MemoryHost && kind == KindSubscription && q.Durability == qos.DurabilityTransientLocal && t.historyOnDevice() {
		// A host reader of a GPU topic's history that holds samples only
		// on the device needs host copies made under the lock: set CUDA up
		// now, outside it. Without a GPU those samples are counted as lost.
		// A history all in host memory needs no CUDA.
		t.prepareGPU()
	}
	if spec.Memory == MemoryGPU {
		// Map the pools now, not on the first message (CUDA start-up and the
		// daemon round trip take hundreds of milliseconds), and never under
		// the topic lock. A GPU subscription needs a GPU; a GPU publisher
		// without one can still publish host data (host readers need no GPU).
		if err := t.prepareGPU(); err != nil && (kind == KindSubscription || !errors.Is(err, ErrNotSupported)) {
			return nil, fmt.Errorf("topic %s: %w", t.name, err)
		}
	}
	e := &endpoint{t: t, kind: kind, gid: newGID(), qos: q, event: d.word(), lastData: time.Now()}
	if err := t.lock(); err != nil {
		return nil, err
	}
	if topicState(t.state.Load()) == topicRemoved {
		// Its last user removed it after we mapped it: joining would leave
		// us alone in an unlinked segment. Open the name again.
		t.unlock()
		return nil, errTopicRemoved
	}
	slot, slots := uint32(0), t.slotCount()
	for ; slot < slots; slot++ {
		if slotState(t.u32(t.slotOff(slot)+eState).Load()) == slotFree {
			break
		}
	}
	if slot == t.lay.maxEndpoints {
		t.unlock()
		return nil, fmt.Errorf("topic %s: %w: all %d endpoint slots of its segment are taken (publishers and subscriptions of every process on this host; the process that created the topic set the number, Config.MaxEndpoints)",
			t.name, ErrTooManyEndpoints, t.lay.maxEndpoints)
	}
	if slot == slots {
		// Every committed slot is taken: commit one more (fresh pages are
		// zero, which is a free slot with empty rings).
		if err := t.seg.Commit(t.slotOff(slot), t.lay.endpointStride); err != nil {
			t.unlock()
			return nil, fmt.Errorf("topic %s: adding an endpoint slot: %w", t.name, err)
		}
		t.u32(hSlots).Store(slot + 1)
	}
	e.slot = slot
	so := t.slotOff(slot)
	me := shm.Self()
	clear(t.seg.Bytes(so, eRing)) // fixed fields; the ring and held entries are zero already
	t.u32(so + eKind).Store(uint32(kind))
	t.u32(so + ePid).Store(me.Pid)
	t.u64(so + eStart).Store(me.Start)
	copy(t.seg.Bytes(so+eGID, 16), e.gid[:])
	q.Encode(t.seg.Bytes(so+eQoS, qos.EncodedSize))
	copy(t.seg.Bytes(so+eNode, nameMax-1), spec.Node)
	copy(t.seg.Bytes(so+eHash, uint64(len(spec.TypeHash))), spec.TypeHash[:])
	t.u32(so + eCap).Store(capacity)
	flags := memFlags(spec.Memory)
	if spec.Republish {
		flags |= flagRepublish
	}
	e.republish = spec.Republish
	e.mem.Store(int64(spec.Memory))
	t.u32(so + eFlags).Store(uint32(flags))
	if kind == KindSubscription && q.Durability == qos.DurabilityTransientLocal {
		if err := t.deliverHistory(slot, q, flags); err != nil {
			t.clearSlot(slot)
			t.unlock()
			return nil, err
		}
	}
	// Publish the slot last: readers that scan without the lock see only
	// complete slots.
	t.u32(so + eState).Store(uint32(slotActive))
	gen := t.generation.Add(1)
	e.matchGen = gen - 1 // refresh on first use
	e.seenGen.Store(e.matchGen)
	t.unlock()
	t.notifyChange()
	t.mu.Lock()
	t.endpoints[slot] = e
	if e.qos.Deadline > 0 {
		t.deadlines++
	}
	t.mu.Unlock()
	held = nil // the endpoint keeps the reference
	return e, nil
}

// deliverHistory gives a late-joining transient-local subscription the
// history of every matching transient-local publisher: at most its depth
// samples per publisher, oldest first, skipping expired ones.
// Must hold the topic lock. A damaged publisher ring marks the topic corrupt.
func (t *Topic) deliverHistory(slot uint32, sub qos.Profile, flags endpointFlags) error {
	now := time.Now().UnixNano()
	for ps := uint32(0); ps < t.slotCount(); ps++ {
		so := t.slotOff(ps)
		if slotState(t.u32(so+eState).Load()) != slotActive || Kind(t.u32(so+eKind).Load()) != KindPublisher {
			continue
		}
		if flags&flagRepublish != 0 && endpointFlags(t.u32(so+eFlags).Load())&flagRepublish != 0 {
			continue // the bridge never sends back what it brought in
		}
		pq, err := qos.Decode(t.seg.Bytes(so+eQoS, qos.EncodedSize))
		if err != nil || pq.Durability != qos.DurabilityTransientLocal {
			continue
		}
		if c, _ := qos.CheckCompatible(pq, sub); c == qos.Error {
			continue
		}
		if err := t.ringOK(ps); err != nil {
			return err
		}
		head, tail := t.u64(so+eHead).Load(), t.u64(so+eTail).Load()
		if capacity := uint64(t.u32(t.slotOff(slot) + eCap).Load()); tail-head > capacity {
			head = tail - capacity
		}
		for p := head; p < tail; p++ {
			n := t.ringWord(ps, p).Load()
			if !t.validSample(n) {
				continue
			}
			if err := t.deliverable(ps, n); err != nil {
				return err
			}
			if exp := int64(t.u64(t.sampleOff(n) + sExpires).Load()); exp != 0 && exp <= now {
				continue
			}
			if dev, missing := t.missingForm(n, map[GID]peerInfo{{}: {flags: flags}}); missing {
				// A rare late joiner that reads the other form: copy under
				// the lock (the sample is shared, and other subscriptions
				// take it without the lock: addForm names the block only
				// once it is filled). A failure skips the sample.
				if t.addForm(n, dev) != nil {
					t.u64(t.slotOff(slot) + eLost).Add(1)
					continue
				}
			}
			t.pushRing(slot, n, true)
		}
	}
	return nil
}

// refreshMatches recomputes the matched peers when the topic's endpoints
// changed, and updates the match, incompatibility and liveliness counters.
// Must hold e.mu; takes no topic lock (slots are read as published).
func (e *endpoint) refreshMatches() {
	t := e.t
	gen := t.generation.Load()
	if gen == e.matchGen {
		return
	}
	e.matchGen = gen
	e.seenGen.Store(gen)
	peers := make(map[GID]peerInfo, len(e.peers))
	other := e.kind.other()
	changed := false
	for s := uint32(0); s < t.slotCount(); s++ {
		so := t.slotOff(s)
		if slotState(t.u32(so+eState).Load()) != slotActive || Kind(t.u32(so+eKind).Load()) != other {
			continue
		}
		pflags := endpointFlags(t.u32(so + eFlags).Load())
		if e.republish && pflags&flagRepublish != 0 {
			continue // bridge endpoints never match each other
		}
		var g GID
		copy(g[:], t.seg.Bytes(so+eGID, 16))
		pq, err := qos.Decode(t.seg.Bytes(so+eQoS, qos.EncodedSize))
		if err != nil {
			continue
		}
		pub, sub := e.qos, pq
		if e.kind == KindSubscription {
			pub, sub = pq, e.qos
		}
		if pol := qos.FirstIncompatiblePolicy(pub, sub); pol != 0 {
			if !e.incompat[g] {
				if e.incompat == nil {
					e.incompat = map[GID]bool{}
				}
				e.incompat[g] = true
				if lg := t.d.cfg.Logger; lg != nil {
					_, reason := qos.CheckCompatible(pub, sub)
					lg.Warn("incompatible QoS: endpoints do not match", "topic", t.name, "self", e.kind.String(), "peer", g.String(), "policy", pol.String(), "reason", reason)
				}
				e.st.IncompatibleQoS++
				e.st.IncompatChg++
				e.st.LastIncompatiblePolicy = pol
				changed = true
			}
			continue
		}
		blocking := pub.Reliability == qos.ReliabilityReliable && sub.Reliability == qos.ReliabilityReliable && sub.History == qos.HistoryKeepAll
		peers[g] = peerInfo{slot: s, blocking: blocking, flags: pflags}
		if _, ok := e.peers[g]; !ok {
			e.st.MatchedTotal++
			e.st.MatchedTotalChg++
			changed = true
		}
	}
	if len(peers) != len(e.peers) || changed {
		changed = true
		e.st.MatchedChange += len(peers) - e.st.Matched
		e.st.Matched = len(peers)
	}
	if e.kind == KindSubscription {
		dead := t.u32(hDeadPubs).Load()
		if lostNow := int(dead - e.deadSeen); lostNow > 0 && len(peers) < len(e.peers) {
			// Publishers that vanished while the topic's death counter moved
			// died rather than closed: their liveliness was lost.
			gone := min(lostNow, len(e.peers)-len(peers))
			e.st.NotAliveCount += gone
			e.st.NotAliveChange += gone
			changed = true
		}
		e.deadSeen = dead
		if len(peers) != e.st.AliveCount {
			e.st.AliveChange += len(peers) - e.st.AliveCount
			e.st.AliveCount = len(peers)
		}
	}
	e.peers = peers
	if changed {
		e.bumpEvent()
	}
}

func (e *endpoint) bumpEvent() {
	e.event.Add(1)
	shm.WakeAll(e.event)
}

// tick runs from the janitor: deadline accounting and match refresh
// (nothing to do, and nothing done, for an endpoint without a deadline
// whose topic's endpoints did not change).
func (e *endpoint) tick() {
	if e.qos.Deadline <= 0 && e.t.generation.Load() == e.seenGen.Load() {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshMatches()
	e.checkDeadline(time.Now())
}

// checkDeadline counts one missed deadline per whole period without data.
// Must hold e.mu.
func (e *endpoint) checkDeadline(now time.Time) {
	dl := e.qos.Deadline
	if dl <= 0 {
		return
	}
	if late := now.Sub(e.lastData); late >= dl {
		n := int(late / dl)
		e.st.DeadlineMissed += n
		e.st.DeadlineChange += n
		e.lastData = e.lastData.Add(time.Duration(n) * dl)
		e.bumpEvent()
	}
}

// enter marks a call in flight; it fails after Close. Calls made while a
// Close waits are refused once it is done (never re-enter while holding).
func (e *endpoint) enter() bool {
	if e.closed.Load() {
		return false
	}
	e.life.RLock()
	if e.closed.Load() {
		e.life.RUnlock()
		return false
	}
	return true
}

func (e *endpoint) exit() { e.life.RUnlock() }

// TakeStatus returns the endpoint's status and resets its change counters
// (a zero Status after Close).
func (e *endpoint) TakeStatus() Status {
	if !e.enter() {
		return Status{}
	}
	defer e.exit()
	defer e.t.unguard(guard(), nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshMatches()
	e.checkDeadline(time.Now())
	lost := int(e.t.u64(e.t.slotOff(e.slot) + eLost).Load())
	e.st.LostChange += lost - e.st.Lost
	e.st.Lost = lost
	s := e.st
	e.st.MatchedChange, e.st.MatchedTotalChg, e.st.DeadlineChange, e.st.IncompatChg, e.st.IncompatTypeChg = 0, 0, 0, 0, 0
	e.st.AliveChange, e.st.NotAliveChange, e.st.LostChange = 0, 0, 0
	return s
}

// Matched is the number of endpoints of the other kind that match (0 after
// Close).
func (e *endpoint) Matched() int {
	if !e.enter() {
		return 0
	}
	defer e.exit()
	defer e.t.unguard(guard(), nil)
	return e.matched()
}

func (e *endpoint) matched() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshMatches()
	return len(e.peers)
}

// MatchedLocal is Matched without republishing endpoints
// (EndpointSpec.Republish), which stand for endpoints elsewhere: a front end that counts those from the
// remote graph instead adds them itself (0 after Close).
func (e *endpoint) MatchedLocal() int {
	if !e.enter() {
		return 0
	}
	defer e.exit()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refreshMatches()
	n := 0
	for _, p := range e.peers {
		if p.flags&flagRepublish == 0 {
			n++
		}
	}
	return n
}

// Closed reports whether Close was called.
func (e *endpoint) Closed() bool { return e.closed.Load() }

// GID is the endpoint's identifier.
func (e *endpoint) GID() GID { return e.gid }

// Memory is the form the endpoint uses: EndpointSpec.Memory, or what
// Subscription.SetMemory set since.
func (e *endpoint) Memory() Memory { return Memory(e.mem.Load()) }

// QoS is the QoS the endpoint actually uses.
func (e *endpoint) QoS() qos.Profile { return e.qos }

// Topic is the topic the endpoint is on.
func (e *endpoint) Topic() *Topic { return e.t }

// EventWord is a futex word that changes whenever the endpoint's status
// changes (for wait sets).
func (e *endpoint) eventWord() *atomic.Uint32 { return e.event }

// peersNow refreshes the match cache and returns it with its generation.
func (e *endpoint) peersNow() (map[GID]peerInfo, uint32) {
	e.mu.Lock()
	defer e.mu.Unlock() // refreshMatches may fault (unguard recovers)
	e.refreshMatches()
	return e.peers, e.matchGen
}

// close releases the slot, every sample it holds, and the topic.
func (e *endpoint) close() (err error) {
	if !e.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	t := e.t
	// Wake this process's blocked calls (they see closed and leave), then
	// wait for every call in flight before the slot and mapping go.
	t.wakeSubscribers()
	t.wakeSpace()
	e.life.Lock()
	defer e.life.Unlock()
	t.mu.Lock()
	delete(t.endpoints, e.slot)
	if e.qos.Deadline > 0 {
		t.deadlines--
	}
	t.mu.Unlock()
	func() {
		defer t.unguard(guard(), &err)
		if err = t.lock(); err == nil {
			err = t.clearSlot(e.slot)
			t.generation.Add(1)
			t.unlock()
			t.notifyChange()
		}
	}()
	t.d.putWord(e.event)
	t.d.releaseTopic(t)
	return err
}

package bridge

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/pause"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Data links.
//
// A link is one ring seen from one daemon. The reader role (readerLink)
// owns the ring, its registered memory and its offers, and delivers what
// lands in it; the writer role (writerLink) fills it from bridge
// subscriptions. Both run on one core (link): one goroutine that alone
// owns the link's state, one mailbox through which every other goroutine
// talks to it, and one wake primitive, the mailbox's guard condition, which
// every post raises (the writer waits on it together with its
// subscriptions). The states and the transitions, all made by link.step
// and link.fail through link.enter:
//
//	                 ┌─── timeout, accept failed, note ───┐
//	                 ▼                                     │
//	   new ──────► down ─── reader: ring offered ───► offered
//	               ▲  │     (msgRingOffer)                 │ the writer connected
//	               │  │                                    ▼ to the listener
//	               │  └─── writer: offer answered ───► connected
//	               │       (endpoint dialed)               │ reader: the writer's msgRingAccept came
//	               │                                       │ writer: its msgRingAccept is sent
//	               │                                       ▼
//	               └─────────────── failure ────────────── up
//
//	   failure (connected or up → down): a note, an endpoint error, a timeout
//	   (connected), a newer offer (writer) or a re-offer (reader)
//	   stop: every state → closed (final; later posts are dropped)
//
// down: no data link. The writer waits for an offer; the reader offers
// its ring when asked (peerUp, or by itself after a failure while the
// peer is reachable). offered (reader): listening, the offer sent.
// connected: the endpoint exists; the reader waits for the writer's
// accept, the writer sends it. up: records move; the writer polls the
// DelayedHead word and its completions, the reader its completions or tail
// slot. A timeout (linkTimeout after the offer) applies to offered and
// connected. From connected and up, going down counts a failure, is
// logged and (unless a note or a newer offer caused it) reported to the
// peer with msgRingDown; writers keep their unacknowledged records, readers their
// position. Every link of a peer gets a note when its last control
// connection goes.
//
// The offer number names a link: the reader numbers its offers, the
// writer answers one. The mailbox keeps the number of the current link
// (none while down) and drops an accept, a listener connection or a
// link-down note that names another: the one place stale messages about
// earlier links are filtered.

// linkState is a link's state; see above.
type linkState uint8

const (
	linkDown linkState = iota
	linkOffered
	linkConnected
	linkUp
	linkClosed
)

func (s linkState) String() string {
	switch s {
	case linkDown:
		return "down"
	case linkOffered:
		return "offered"
	case linkConnected:
		return "connected"
	case linkUp:
		return "up"
	case linkClosed:
		return "closed"
	}
	return "invalid"
}

// linkMoves are the transitions the diagram allows.
var linkMoves = [...][]linkState{
	linkDown:      {linkOffered, linkConnected, linkClosed},
	linkOffered:   {linkConnected, linkDown, linkClosed},
	linkConnected: {linkUp, linkDown, linkClosed},
	linkUp:        {linkDown, linkClosed},
	linkClosed:    nil,
}

// linkRole is what a writer or a reader adds to the core. Its methods run
// on the link's goroutine.
type linkRole interface {
	// kind is "writer" or "reader" (logs, status).
	kind() string
	// apply takes the role's requests that hold in any state (the
	// writer's wanted topics) and tidies up between passes.
	apply(in *inbox)
	// open starts a link from down: the writer answers in.answer (down →
	// connected, then up once its accept is sent), the reader offers its
	// ring (down → offered). It leaves the state where it got to.
	open(in *inbox) error
	// start takes the writer's accept (reader: connected → up).
	start(a *ringAccept) error
	// pump moves records while up and says how to go on.
	pump() (pace, time.Duration, error)
	// waitables adds what the link waits for besides its wake (the
	// writer's subscriptions) to items.
	waitables(items []zerocopy.Waitable) []zerocopy.Waitable
	// down is told that the link left state from for down, before the
	// endpoint closes: it finishes or forgets what was in flight on it
	// (no write may go out: the state is down already) and closes what it
	// holds for that state (the reader's listener).
	down(from linkState)
	// control is the connection msgRingDown goes on (nil: none).
	control() *control.Conn
	// close releases everything, the link being in state from (the
	// endpoint is closed already); what was in flight is given up.
	close(from linkState)
}

// pace is how a link goes on after a pass in state up.
type pace uint8

const (
	paceNow  pace = iota // something moved: another pass at once
	pacePoll             // keep polling: spin, then sleep briefly (backoff)
	paceWait             // wait for the wake (or a subscription) up to the given time
)

// linkSpin is how long a link that moved something keeps making passes
// (yielding between them) before it waits for its wake: a wake costs the
// next message of a stream tens of microseconds.
const linkSpin = 200 * time.Microsecond

// pollPolicy is how a link polls when pump says pacePoll: yields for the
// first yields passes (and for Options.BusyPoll if busy), then sleeps
// growing by step up to most.
type pollPolicy struct {
	yields     int
	step, most time.Duration
	busy       bool
}

// link is the core both roles run on.
type link struct {
	b     *Bridge
	p     *peer
	host  string
	id    uint32
	only  string // per-topic ring: its topic
	role  linkRole
	poll  pollPolicy
	mb    mailbox
	stats LinkStats

	// The goroutine's own: run, step and the role's methods.
	state    linkState
	offerNo  uint64               // the offer the current (or last) link stems from
	deadline time.Time            // offered, connected: give up then
	eps      []transport.Endpoint // the rails' endpoints, by rail: held in connected and up
	rails    *railSet             // up: the rails' pumps (rails.go), which own eps meanwhile
	spins    int                  // pacePoll passes in a row
	idleFrom time.Time            // when the spins began
	progress time.Time            // when a pass last moved something
	items    []zerocopy.Waitable
	ready    []bool

	// railsNow is rails, for tests that break a rail from outside; passes
	// counts the goroutine's passes (tests: an idle link makes none).
	railsNow atomic.Pointer[railSet]
	passes   atomic.Uint64
}

func (l *link) init(b *Bridge, p *peer, id uint32, only string, role linkRole, poll pollPolicy) {
	l.b, l.p, l.host, l.id, l.only, l.role, l.poll = b, p, p.host, id, only, role, poll
	l.mb.wake = b.dom.NewGuardCondition()
}

// LinkStats are a link's counters.
type LinkStats struct {
	Messages  atomic.Uint64 // messages written (writer) or delivered (reader)
	Bytes     atomic.Uint64 // payload bytes
	Records   atomic.Uint64
	Resent    atomic.Uint64 // records written again after a link failure
	Dropped   atomic.Uint64 // BEST_EFFORT messages dropped at a full ring; refused messages
	Dups      atomic.Uint64 // duplicates suppressed (reader)
	Failures  atomic.Uint64 // data-link failures
	WriteBack atomic.Uint64 // head write-backs (reader)
}

// mailbox is a link's one inbox: the control sessions, the graph watcher,
// peerUp/peerDown, Close and the reader's listener post into it; the link's
// goroutine takes everything pending at once (take). Requests are
// statements of state, so a newer one of a kind replaces an older one.
// After close, posts are dropped (an endpoint in one is closed).
type mailbox struct {
	// wake is raised by every post: the link's one wake primitive. close
	// gives it back under mu, so a late post never touches it.
	wake *zerocopy.GuardCondition

	// mu guards the fields below. It may be taken while holding
	// Bridge.mu, never the other way round; nothing blocks while holding
	// it.
	mu     sync.Mutex
	closed bool
	in     inbox
	// offer is the offer number of the current link (0: none).
	offer uint64
	// maps is the reader's topic table (id → topic) for its epoch:
	// control writes it (onTopicMap), the link reads it.
	maps map[uint32]topicMap
}

// inbox is what a link takes from its mailbox in one pass.
type inbox struct {
	stop    bool
	note    string               // take the current link down (why)
	answer  *pendingOffer        // writer: a reader's offer to answer
	reoffer bool                 // reader: offer the ring (again)
	conns   []transport.Endpoint // reader: the writer's rails, connected to the current offer's listener
	connErr error                // reader: the listener of the current offer failed
	accept  *ringAccept          // reader: the writer's answer to the current offer
	want    map[string]wantedTopic
	wantSet bool // writer: want is new
	// A control connection to the peer died while another keeps it up:
	// what went on it may be lost. reannounce (writer): send the topic
	// maps again; retryOffer (reader): offer again, unless the link is up
	// or down (the offer, or the writer's accept, may be lost).
	reannounce, retryOffer bool
	// dozes (writer): the reader's newest doze of each rail that sent one
	// (railidle.go), for the current link.
	dozes []dozeMsg
}

// addDoze keeps d unless a newer doze of its rail is pending.
func (in *inbox) addDoze(d dozeMsg) {
	for i := range in.dozes {
		if in.dozes[i].Rail == d.Rail {
			if d.Seq > in.dozes[i].Seq {
				in.dozes[i] = d
			}
			return
		}
	}
	in.dozes = append(in.dozes, d)
}

// pendingOffer is an offer a writer link is to answer.
type pendingOffer struct {
	o   ringOffer
	cfg ring.Config
	ctl *control.Conn
}

// post applies f to the inbox and wakes the link; false: the link is closed.
func (m *mailbox) post(f func(in *inbox)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	f(&m.in)
	m.wake.Trigger()
	return true
}

// take returns what is pending. The writer's accept stays until the
// link is connected (it may come before the connection).
func (m *mailbox) take(s linkState) inbox {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.wake.Reset() // under mu: a post after this raises it again
	in := m.in
	m.in = inbox{}
	if s != linkConnected {
		m.in.accept, in.accept = in.accept, nil
	}
	return in
}

// poke wakes the link's goroutine (a rail got something it waits for),
// unless the link is closed.
func (m *mailbox) poke() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.wake.Trigger()
	}
}

// stopping reports whether a stop or a note is pending: a link that waits
// for its peer in a step gives up then.
func (m *mailbox) stopping() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed || m.in.stop || m.in.note != ""
}

// current reports whether an offer number names the current link; a
// note naming no offer (0) is about whichever link there is. Must hold mu.
func (m *mailbox) current(offer uint64, note bool) bool {
	if note && offer == 0 {
		return true
	}
	return offer != 0 && offer == m.offer
}

// setOffer makes offer (0: none) the current link's number: what is
// pending about another link is dropped, and connections for it returned
// to be closed.
func (m *mailbox) setOffer(offer uint64) []transport.Endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offer = offer
	m.in.note, m.in.accept, m.in.dozes = "", nil, nil
	eps := m.in.conns
	m.in.conns, m.in.connErr = nil, nil
	return eps
}

// close drops later posts and gives the wake back; it returns connections
// that were still pending, to be closed.
func (m *mailbox) close() []transport.Endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.wake.Close()
	eps := m.in.conns
	m.in = inbox{}
	return eps
}

// postAbout is post for what is about one link, named by its offer
// number: dropped (false) unless that link is the current one.
func (m *mailbox) postAbout(offer uint64, note bool, f func(in *inbox)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || !m.current(offer, note) {
		return false
	}
	f(&m.in)
	m.wake.Trigger()
	return true
}

// linkDown takes the data link down; offer, when not 0, names the link
// (its offer number): a note about another link is dropped.
func (l *link) linkDown(reason string, offer uint64) {
	l.mb.postAbout(offer, true, func(in *inbox) { in.note = reason })
}

func (l *link) stop() { l.mb.post(func(in *inbox) { in.stop = true }) }

// run is the link's goroutine.
func (l *link) run() {
	defer l.b.wg.Done()
	defer l.shutdown()
	for {
		l.passes.Add(1)
		in := l.mb.take(l.state)
		if in.stop {
			return
		}
		before := l.state
		l.step(&in)
		if l.state != linkUp {
			l.spins = 0
			if l.state == before { // else another pass at once: what waited for the new state (an accept) is taken now
				l.wait(l.waitTime())
			}
			continue
		}
		p, d, err := l.role.pump()
		if err != nil {
			l.fail(err, true, true)
			continue
		}
		switch p {
		case paceNow:
			l.spins = 0
			l.progress = time.Now()
		case pacePoll:
			l.backoff()
		case paceWait:
			l.spins = 0
			if time.Since(l.progress) < linkSpin {
				// A stream's next message comes soon: another pass
				// instead of a sleep and a wake.
				pause.Yield()
				continue
			}
			l.wait(d)
		}
	}
}

// step applies one pass's mailbox contents: the transitions.
func (l *link) step(in *inbox) {
	// A note is about the link before anything taken with it: an offer in
	// the same pass is for the next link.
	if in.note != "" {
		l.fail(errors.New(in.note), false, true)
	}
	if in.conns != nil || in.connErr != nil {
		switch {
		case l.state != linkOffered: // cannot happen: the offer is current only while offered
			closeAll(in.conns)
		case in.connErr != nil:
			l.b.log.Warn("data link accept failed", "peer", l.host, "ring", l.id, "err", in.connErr)
			l.fail(in.connErr, false, true)
		default:
			l.eps = in.conns
			l.enter(linkConnected)
		}
	}
	if in.retryOffer && (l.state == linkOffered || l.state == linkConnected) {
		in.reoffer = true
	}
	if in.answer != nil || in.reoffer {
		if l.state != linkDown {
			l.fail(errors.New("replaced by a newer offer"), false, false)
		}
		in.dozes = nil // taken with the answer: about the link it replaces
		if err := l.role.open(in); err != nil {
			l.b.log.Warn("data link not established", "peer", l.host, "ring", l.id, "role", l.role.kind(), "err", err)
			l.fail(err, true, false)
		}
	}
	if in.accept != nil && l.state == linkConnected {
		if err := l.role.start(in.accept); err != nil {
			l.fail(err, true, true)
		} else {
			l.enter(linkUp)
		}
	}
	if (l.state == linkOffered || l.state == linkConnected) && time.Now().After(l.deadline) {
		if l.state == linkOffered {
			l.b.log.Warn("no writer connected to the offered ring", "peer", l.host, "ring", l.id)
			l.fail(errors.New("no writer connected"), false, true)
		} else {
			l.fail(errors.New("the writer connected but never accepted the ring"), true, true)
		}
	}
	l.role.apply(in)
}

// enter moves the link to state s: the one place the state changes.
func (l *link) enter(s linkState) {
	ok := false
	for _, t := range linkMoves[l.state] {
		ok = ok || t == s
	}
	if !ok {
		panic("bridge: link " + l.state.String() + " → " + s.String() + " is not a transition")
	}
	l.state = s
	if s == linkDown {
		closeAll(l.mb.setOffer(0))
	}
}

// setOffer names the link being set up (before anything about it can
// come back) and gives it linkTimeout to come up.
func (l *link) setOffer(offer uint64) {
	l.offerNo = offer
	l.deadline = time.Now().Add(linkTimeout)
	closeAll(l.mb.setOffer(offer))
}

// startRails hands the endpoints to pumps of their own (rails.go); word
// is what rail 0's pump watches, bell the doorbell's hooks (railidle.go).
func (l *link) startRails(reader bool, word []byte, bell railBell) {
	l.rails = newRails(l.eps, reader, l.poll, word, l.mb.poke, bell)
	l.railsNow.Store(l.rails)
}

// closeRails stops the pumps, if any, and closes the endpoints.
func (l *link) closeRails() {
	if l.rails != nil {
		l.rails.close() // and the endpoints
		l.rails = nil
		l.railsNow.Store(nil)
	} else {
		closeAll(l.eps)
	}
	l.eps = nil
}

// fail takes the link down. From connected or up this is a failure:
// counted, logged and, with tell, reported to the peer. With retry a
// reader offers its ring again when the peer is reachable (else peerUp
// will ask).
func (l *link) fail(err error, tell, retry bool) {
	from := l.state
	if from != linkOffered && from != linkConnected && from != linkUp {
		return
	}
	l.enter(linkDown)
	// The rails stop first: nothing lands in the ring or goes out while
	// the role finishes what was in flight.
	l.closeRails()
	l.role.down(from)
	if from != linkOffered {
		l.stats.Failures.Add(1)
		l.b.log.Warn("data link down ("+l.role.kind()+")", "peer", l.host, "ring", l.id, "err", err)
		if c := l.role.control(); tell && c != nil {
			l.b.send(c, msgRingDown, ringDown{Ring: l.id, FromReader: l.role.kind() == "reader", Reason: err.Error(), Offer: l.offerNo})
		}
	}
	if retry && l.role.kind() == "reader" && l.p.live.Load() != nil {
		l.mb.post(func(in *inbox) { in.reoffer = true })
	}
}

// waitTime is how long a link that is not up waits for its mailbox.
func (l *link) waitTime() time.Duration {
	if l.state == linkOffered || l.state == linkConnected {
		return max(time.Until(l.deadline), 0)
	}
	return linkIdle
}

// linkIdle is how long an idle link waits for its wake: without limit.
// Everything it waits for wakes it (every post to its mailbox, a rail
// that got something, a copy worker that finished, a bridge subscription
// that got a sample), so an idle link makes no passes of its own (§3.9
// "Idle links").
const linkIdle time.Duration = -1

// wait waits for the wake (and the role's waitables) up to d.
func (l *link) wait(d time.Duration) {
	l.items = append(l.items[:0], l.mb.wake)
	l.items = l.role.waitables(l.items)
	if cap(l.ready) < len(l.items) {
		l.ready = make([]bool, len(l.items))
	}
	var busy time.Duration
	if l.state == linkUp {
		busy = l.b.opts.BusyPoll
	}
	if r := l.rails; r != nil {
		if !r.sleep() {
			return // a rail got something during the pass
		}
		defer r.awake()
	}
	zerocopy.Wait(l.items, l.ready[:len(l.items)], d, busy)
}

// backoff is one pacePoll pass: software providers move bytes only while
// polled, so a link with work in flight polls hot for a while (a message
// usually follows another), then sleeps in growing steps, so an idle link
// costs little CPU (a core spinning on a 2-core host starves the
// processes the data is for). The yields let other threads run too, and
// the sleeps are timer sleeps (pause.Sleep: a Go timer alone ends them a
// millisecond late in an idle daemon), not waits for the wake: they are a
// few microseconds, and a futex wait that short holds its thread's P
// while the other goroutines of the daemon (the transports', the other
// links') need it; a post is seen on the next pass.
func (l *link) backoff() {
	l.spins++
	if l.spins == 1 {
		l.idleFrom = time.Now()
	}
	pp := l.poll
	if l.spins < pp.yields || (pp.busy && l.b.opts.BusyPoll > 0 && time.Since(l.idleFrom) < l.b.opts.BusyPoll) {
		pause.Yield()
		return
	}
	pause.Sleep(min(time.Duration(l.spins-pp.yields+1)*pp.step, pp.most))
}

// shutdown ends the link: the mailbox closes, then the endpoint and
// whatever the role holds (what was in flight is given up, not finished).
func (l *link) shutdown() {
	from := l.state
	l.closeRails()
	closeAll(l.mb.close())
	l.enter(linkClosed)
	l.role.close(from)
}

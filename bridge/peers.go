package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// startControl listens for peers and dials the configured ones.
func (b *Bridge) startControl() error {
	hs := control.HandshakeConfig{Secret: b.secret, HostID: b.hostID, Name: "rgapsd", Domain: int(b.opts.Engine.Domain),
		Features: []string{featureDoorbell}, Instance: b.instance, Admit: b.admitPeer}
	if b.opts.Control.Listen != "" {
		ln, err := control.Listen(b.opts.Control.Listen, hs, b.log)
		if err != nil {
			return fmt.Errorf("control listener: %w", err)
		}
		b.listener = ln
		b.wg.Add(1)
		go b.acceptLoop(hs)
	}
	for _, p := range b.opts.Control.Peers {
		s, err := control.NewSession(b.sessionConfig(control.SessionConfig{Peer: p, Handshake: hs}))
		if err != nil {
			return err
		}
		b.mu.Lock()
		b.sessions = append(b.sessions, s)
		b.mu.Unlock()
	}
	return nil
}

// ControlAddr is the address the control listener is bound to ("" if none).
func (b *Bridge) ControlAddr() string {
	if b.listener == nil {
		return ""
	}
	return b.listener.Addr().String()
}

func (b *Bridge) acceptLoop(hs control.HandshakeConfig) {
	defer b.wg.Done()
	for {
		c, hello, err := b.listener.Accept()
		if err != nil {
			select {
			case <-b.quit:
				return
			default:
			}
			if errors.Is(err, control.ErrClosed) {
				return
			}
			continue // a failed handshake: logged by the listener
		}
		s, err := control.NewSession(b.sessionConfig(control.SessionConfig{Established: c, EstablishedPeer: hello, Handshake: hs}))
		if err != nil {
			c.Close()
			continue
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			s.Close()
			return
		}
		b.sessions = append(b.sessions, s)
		b.mu.Unlock()
		// Accepted sessions end with their connection; forget them then.
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			select {
			case <-s.Done():
			case <-b.quit:
				return
			}
			b.mu.Lock()
			for i, x := range b.sessions {
				if x == s {
					b.sessions = append(b.sessions[:i], b.sessions[i+1:]...)
					break
				}
			}
			b.mu.Unlock()
		}()
	}
}

// sessionConfig fills in the callbacks: each session tracks its current
// connection and peer host in the closure (callbacks of one session are
// never concurrent).
func (b *Bridge) sessionConfig(sc control.SessionConfig) control.SessionConfig {
	sc.Log = b.log
	sc.Heartbeat = b.opts.Control.Heartbeat
	sc.DeadAfter = b.opts.Control.DeadAfter
	var cur *control.Conn
	var host string
	var parts partial // statements of cur arriving in parts
	sc.OnUp = func(c *control.Conn, h control.Hello) {
		cur, host, parts = c, h.HostID, partial{}
		if !b.peerUp(host, c, h) {
			cur = nil // refused: closed, its messages are dropped
			c.Close()
		}
	}
	sc.OnMessage = func(t control.MsgType, payload []byte) {
		if cur == nil || !b.registered(host, cur) {
			return // refused, or closed as an older instance's (peerUp)
		}
		if err := b.handle(host, cur, &parts, t, payload); err != nil {
			b.mu.Lock()
			if p := b.peers[host]; p != nil {
				p.refused++
			}
			b.mu.Unlock()
			b.refusals.Log(slog.LevelWarn, "control message refused", "peer", host, "type", int(t), "err", err)
		}
	}
	sc.OnDown = func(err error) {
		b.peerDown(host, cur, err)
		cur = nil
	}
	return sc
}

// registered reports whether c is one of the peer's connections: frames
// read before peerUp closed it as an older instance's are not handled.
func (b *Bridge) registered(host string, c *control.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[host]
	if p == nil {
		return false
	}
	_, ok := p.conns[c]
	return ok
}

// peerUp registers a control connection; the first one brings the peer
// up: it gets our interest and graph, and (one ring per host pair) a ring
// to write into. A connection of another instance of the peer's daemon
// (it restarted, and came back before its old connections were found
// dead) closes the old ones and takes the links down first, so the
// restarted daemon is brought up as a new one. It refuses (false) a new
// host id beyond MaxPeers and a connection beyond MaxConnsPerPeer; the
// caller closes it.
func (b *Bridge) peerUp(host string, c *control.Conn, h control.Hello) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	p := b.peers[host]
	if p.supersededLocked(h.Instance) {
		// Admitted before a newer instance displaced it (admitPeer).
		p.duplicates++
		lvl := p.dupLevelLocked(h.Instance)
		b.mu.Unlock()
		b.refusals.Log(lvl, "peer refused: another live daemon holds its host id", "peer", host,
			"instance", fmt.Sprintf("%016x", h.Instance), "addr", c.RemoteAddr().String())
		return false
	}
	var stale []*control.Conn
	var restarted []interface{ linkDown(string, uint64) }
	// Another instance of the peer's daemon while connections of the one
	// known are up: it restarted (and came back before they were found
	// dead). A daemon that announces no instance (older than 2026-11-28)
	// after one that did, or the other way round, is another process too;
	// between two that announce none (equal) nothing can be told.
	if p != nil && len(p.conns) > 0 && h.Instance != p.instance {
		for old := range p.conns {
			stale = append(stale, old)
		}
		clear(p.conns)
		p.live.Store(nil)
		restarted = p.linksLocked()
		if p.instance != 0 {
			p.superseded = append(p.superseded, p.instance)
			if len(p.superseded) > maxSuperseded {
				p.superseded = slices.Delete(p.superseded, 0, len(p.superseded)-maxSuperseded)
			}
		}
		b.log.Warn("peer restarted: its older control connections are closed", "peer", host, "closed", len(stale),
			"old_instance", fmt.Sprintf("%016x", p.instance), "instance", fmt.Sprintf("%016x", h.Instance))
	}
	if p == nil && len(b.peers) >= b.opts.MaxPeers {
		b.mu.Unlock()
		b.refusals.Log(slog.LevelWarn, "peer refused: too many peers", "peer", host, "addr", c.RemoteAddr().String(), "max_peers", b.opts.MaxPeers)
		return false
	}
	if p != nil && len(p.conns) >= MaxConnsPerPeer {
		b.mu.Unlock()
		b.refusals.Log(slog.LevelWarn, "control connection refused: too many from one peer", "peer", host, "addr", c.RemoteAddr().String(), "max", MaxConnsPerPeer)
		return false
	}
	if p == nil {
		p = &peer{host: host, conns: map[*control.Conn]uint64{}, interest: map[string]topicInterest{},
			readers: map[uint32]*readerLink{}, writers: map[uint32]*writerLink{}}
		b.peers[host] = p
	}
	first := len(p.conns) == 0
	p.connSeq++
	p.conns[c] = p.connSeq
	p.instance = h.Instance
	p.superseded = slices.DeleteFunc(p.superseded, func(i uint64) bool { return i == h.Instance })
	p.dupLogged = slices.DeleteFunc(p.dupLogged, func(i uint64) bool { return i == h.Instance }) // displaced again later: said again
	// The newest connection's daemon speaks for the peer.
	p.doorbell.Store(slices.Contains(h.Features, featureDoorbell))
	p.setLive()
	p.downSince = time.Time{}
	var offers []func()
	if first {
		p.upSince = time.Now()
		b.log.Info("peer up", "peer", host, "addr", c.RemoteAddr().String())
		offers = b.offerRingsLocked(p)
	}
	b.mu.Unlock()
	for _, old := range stale {
		old.Close() // its OnDown finds it no longer registered
	}
	for _, l := range restarted {
		l.linkDown("the peer's daemon restarted", 0)
	}
	b.sendLocal([]*control.Conn{c}, true, true)
	for _, f := range offers {
		f()
	}
	return true
}

// admitPeer is the handshake's Admit: it refuses a daemon whose instance
// a newer one with the same host id displaced (peerUp), so that two live
// daemons given one host id do not displace each other on every
// reconnect: the newer keeps the id, the older is told why at each
// redial, and both log it at Error.
func (b *Bridge) admitPeer(h control.Hello, remote string) *control.Reject {
	b.mu.Lock()
	p := b.peers[h.HostID]
	if !p.supersededLocked(h.Instance) {
		b.mu.Unlock()
		return nil
	}
	p.duplicates++
	holder, holderAddr := p.instance, ""
	if c := p.live.Load(); c != nil {
		holderAddr = c.RemoteAddr().String()
	}
	lvl := p.dupLevelLocked(h.Instance)
	b.mu.Unlock()
	b.refusals.Log(lvl, "peer refused: another live daemon holds its host id", "peer", h.HostID,
		"instance", fmt.Sprintf("%016x", h.Instance), "addr", remote,
		"holder_instance", fmt.Sprintf("%016x", holder), "holder_addr", holderAddr)
	return &control.Reject{Code: control.RejectDuplicate, Reason: fmt.Sprintf(
		"host id %q is held by another live daemon (instance %016x, at %s) that connected after this one (instance %016x): give each daemon a host id of its own",
		h.HostID, holder, holderAddr, h.Instance)}
}

// dupLevelLocked is the level of a refusal of superseded instance: Error
// the first time for each instance (however many of them take turns
// redialing), Debug at its later redials. Must hold b.mu.
func (p *peer) dupLevelLocked(instance uint64) slog.Level {
	if slices.Contains(p.dupLogged, instance) {
		return slog.LevelDebug
	}
	// Only instances still superseded are kept: at most maxSuperseded.
	p.dupLogged = append(slices.DeleteFunc(p.dupLogged, func(i uint64) bool { return !slices.Contains(p.superseded, i) }), instance)
	return slog.LevelError
}

// supersededLocked reports whether instance is one a newer instance of
// the peer's daemon displaced while that newer one is connected (p may be
// nil; 0 is never). Once the holder is gone, a displaced daemon that is
// alive after all is let in: it becomes the peer again. Must hold b.mu.
func (p *peer) supersededLocked(instance uint64) bool {
	return p != nil && instance != 0 && len(p.conns) > 0 && slices.Contains(p.superseded, instance)
}

// peerDown forgets a control connection. When the last one goes, the
// peer's data links are torn down (writers keep their unacknowledged
// records, readers their position) until it comes back.
func (b *Bridge) peerDown(host string, c *control.Conn, err error) {
	b.mu.Lock()
	p := b.peers[host]
	if p == nil || c == nil {
		b.mu.Unlock()
		return
	}
	if _, ok := p.conns[c]; !ok {
		b.mu.Unlock()
		return
	}
	delete(p.conns, c)
	if !b.closed {
		p.setLive()
	}
	if len(p.conns) != 0 || b.closed {
		// Another connection keeps the peer up. What went on c since it
		// died unnoticed may be lost: the writers' topic maps, the
		// readers' pending offers (or the accepts that answer them) and
		// our statements (whole states) go again on the live one.
		var ws []*writerLink
		var rs []*readerLink
		var live *control.Conn
		if !b.closed {
			live = p.live.Load()
			for _, l := range p.writers {
				ws = append(ws, l)
			}
			for _, l := range p.readers {
				rs = append(rs, l)
			}
		}
		b.mu.Unlock()
		for _, l := range ws {
			l.reannounce()
		}
		for _, l := range rs {
			l.retryOffer()
		}
		if live != nil {
			b.sendLocal([]*control.Conn{live}, true, true)
		}
		return
	}
	b.log.Warn("peer down", "peer", host, "err", err)
	links := p.linksLocked()
	// Its interest stays for PeerExpiry: the bridge subscriptions keep
	// queueing (RELIABLE KEEP_ALL ones hold the publishers back), so a
	// peer that comes back loses nothing (expirePeers forgets it after).
	p.downSince = time.Now()
	b.mu.Unlock()
	for _, l := range links {
		l.linkDown("control connection lost", 0)
	}
}

// linksLocked lists the peer's data links. Must hold b.mu.
func (p *peer) linksLocked() []interface{ linkDown(string, uint64) } {
	var links []interface{ linkDown(string, uint64) }
	for _, l := range p.writers {
		links = append(links, l)
	}
	for _, l := range p.readers {
		links = append(links, l)
	}
	return links
}

// offerRingsLocked creates the reader links a peer should write into: one
// per host pair, or one per locally subscribed topic. It returns the
// sends to make after unlocking. Must hold b.mu.
func (b *Bridge) offerRingsLocked(p *peer) []func() {
	if b.opts.PerTopic {
		return b.offerTopicRingsLocked(p)
	}
	var out []func()
	if len(p.readers) == 0 {
		out = append(out, b.newReaderLocked(p, ""))
	} else {
		for _, l := range p.readers {
			out = append(out, l.reoffer)
		}
	}
	return out
}

// offerTopicRingsLocked offers a ring for every locally subscribed topic
// that has none from this peer, and re-offers the existing ones. Must
// hold b.mu.
func (b *Bridge) offerTopicRingsLocked(p *peer) []func() {
	if len(p.conns) == 0 {
		return nil
	}
	var out []func()
	have := map[string]bool{}
	for _, l := range p.readers {
		have[l.only] = true
	}
	for name := range b.local.interest {
		if !have[name] {
			out = append(out, b.newReaderLocked(p, name))
		}
	}
	return out
}

// handle processes one control message from a peer; parts holds the
// connection's statements in assembly (msgPart).
func (b *Bridge) handle(host string, c *control.Conn, parts *partial, t control.MsgType, payload []byte) error {
	switch t {
	case msgInterest:
		var m interestMsg
		if err := control.Decode(payload, &m); err != nil {
			return err
		}
		return b.applyInterest(host, m)
	case msgGraph:
		var g graphMsg
		if err := control.Decode(payload, &g); err != nil {
			return err
		}
		return b.applyGraph(host, g)
	case msgPart:
		var p statementPart
		if err := control.Decode(payload, &p); err != nil {
			return err
		}
		switch of, whole, err := parts.addPart(&p); {
		case err != nil:
			return err
		case of == msgInterest:
			return b.applyInterest(host, whole.(interestMsg))
		case of == msgGraph:
			return b.applyGraph(host, whole.(graphMsg))
		}
	case msgRingOffer:
		var o ringOffer
		if err := control.Decode(payload, &o); err != nil {
			return err
		}
		return b.onOffer(host, c, &o)
	case msgRingAccept:
		var a ringAccept
		if err := control.Decode(payload, &a); err != nil {
			return err
		}
		l, err := b.readerOf(host, a.Ring, "accept for unknown ring")
		if err != nil {
			return err
		}
		return l.onAccept(&a)
	case msgTopicMap:
		var m topicMap
		if err := control.Decode(payload, &m); err != nil {
			return err
		}
		l, err := b.readerOf(host, m.Ring, "topic map for unknown ring")
		if err != nil {
			return err
		}
		return l.onTopicMap(&m)
	case msgDoze:
		var m dozeMsg
		if err := control.Decode(payload, &m); err != nil {
			return err
		}
		if err := checkRail("doze", m.Rail); err != nil {
			return err
		}
		l, err := b.writerOf(host, m.Ring, "doze of unknown ring")
		if err != nil {
			return err
		}
		l.onDoze(&m)
	case msgWake:
		var m wakeMsg
		if err := control.Decode(payload, &m); err != nil {
			return err
		}
		if err := checkRail("wake", m.Rail); err != nil {
			return err
		}
		l, err := b.readerOf(host, m.Ring, "wake of unknown ring")
		if err != nil {
			return err
		}
		l.onWake(&m)
	case msgRingDown:
		var m ringDown
		if err := control.Decode(payload, &m); err != nil {
			return err
		}
		b.mu.Lock()
		var l interface{ linkDown(string, uint64) }
		if p := b.peers[host]; p != nil {
			if m.FromReader {
				if w := p.writers[m.Ring]; w != nil {
					l = w
				}
			} else if r := p.readers[m.Ring]; r != nil {
				l = r
			}
		}
		b.mu.Unlock()
		if len(m.Reason) > maxReason {
			m.Reason = m.Reason[:maxReason] + "…"
		}
		if l != nil {
			l.linkDown("peer reports: "+m.Reason, m.Offer)
		}
	default:
		return fmt.Errorf("%w: unknown message type %d", control.ErrProtocol, t)
	}
	return nil
}

// applyInterest takes a peer's interest statement (whole, or assembled
// from its parts).
func (b *Bridge) applyInterest(host string, m interestMsg) error {
	b.noteBurst()
	if err := m.validate(); err != nil {
		return err
	}
	in := make(map[string]topicInterest, len(m.Topics))
	for _, ti := range m.Topics {
		in[ti.Topic] = ti
	}
	b.mu.Lock()
	if p := b.peers[host]; p != nil {
		p.interest = in
		b.adjustWritersLocked()
	}
	b.mu.Unlock()
	return nil
}

// applyGraph takes a peer's graph statement (whole, or assembled from its
// parts).
func (b *Bridge) applyGraph(host string, g graphMsg) error {
	b.noteBurst()
	if err := g.validate(); err != nil {
		return err
	}
	for _, ep := range g.Endpoints {
		if _, err := qos.Decode(ep.QoS); err != nil {
			return fmt.Errorf("%w: endpoint %s of %s: %v", control.ErrProtocol, ep.GID, ep.Topic, err)
		}
	}
	var in interner
	for i := range g.Endpoints {
		g.Endpoints[i] = in.endpoint(g.Endpoints[i])
	}
	b.mu.Lock()
	changed := false
	if p := b.peers[host]; p != nil {
		changed = !reflect.DeepEqual(p.graph, g)
		p.graph = g
	}
	b.mu.Unlock()
	if changed {
		// Local graph guard conditions wake up and re-read the graph
		// (wait_for_service, wait_for_matched across hosts).
		b.dom.NotifyGraphChanged()
	}
	return nil
}

// onOffer takes a ring offer: validated against the region it names, then
// handed to the writer link for that ring (created on first offer).
func (b *Bridge) onOffer(host string, c *control.Conn, o *ringOffer) error {
	cfg, err := o.validate()
	if err != nil {
		return err
	}
	cfg.NoChunking = b.opts.NoChunking // the writer's policy
	if o.Provider != b.prov.Name() {
		return fmt.Errorf("%w: ring %d uses provider %s, this daemon %s", ErrBadOffer, o.Ring, o.Provider, b.prov.Name())
	}
	b.mu.Lock()
	p := b.peers[host]
	if p == nil || b.closed {
		b.mu.Unlock()
		return nil
	}
	l := p.writers[o.Ring]
	if l == nil && len(p.writers) >= b.opts.MaxRingsPerPeer {
		b.mu.Unlock()
		return fmt.Errorf("%w: ring %d: the peer has %d rings for this daemon to write into already, at most %d (-max-rings-per-peer)",
			ErrLimit, o.Ring, b.opts.MaxRingsPerPeer, b.opts.MaxRingsPerPeer)
	}
	if l != nil && l.only != o.Topic {
		b.mu.Unlock()
		return fmt.Errorf("%w: ring %d carries topic %q, the offer says %q", ErrBadOffer, o.Ring, l.only, o.Topic)
	}
	if l == nil {
		l = b.newWriterLocked(p, o.Ring, o.Topic)
		l.setWanted(b.wantedLocked(p, o.Topic))
	}
	b.mu.Unlock()
	l.answer(o, cfg, c)
	return nil
}

// expirePeers forgets peers down for longer than PeerExpiry: their
// bridge subscriptions close, their links stop (rings and registrations
// are freed) and they no longer count against MaxPeers. A peer that comes
// back later starts afresh, like a restarted one.
func (b *Bridge) expirePeers() {
	b.mu.Lock()
	var links []interface{ stop() }
	removed := false
	for host, p := range b.peers {
		if len(p.conns) != 0 || p.downSince.IsZero() || time.Since(p.downSince) <= b.opts.PeerExpiry {
			continue
		}
		b.log.Warn("peer gone: its subscriptions and rings are forgotten", "peer", p.host, "down_for", time.Since(p.downSince).Round(time.Second))
		delete(b.peers, host)
		removed = true
		for _, l := range p.writers {
			links = append(links, l)
		}
		for _, l := range p.readers {
			links = append(links, l)
		}
	}
	b.mu.Unlock()
	for _, l := range links {
		l.stop()
	}
	if removed {
		b.dom.NotifyGraphChanged() // their nodes and endpoints left the graph
	}
}

// readerOf is the reader link of ring id of the peer host, for a control
// message about it (what it is, in the error when there is none).
func (b *Bridge) readerOf(host string, id uint32, what string) (*readerLink, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[host]; p != nil && p.readers[id] != nil {
		return p.readers[id], nil
	}
	return nil, fmt.Errorf("%w: %s %d", control.ErrProtocol, what, id)
}

// writerOf is readerOf for a writer link.
func (b *Bridge) writerOf(host string, id uint32, what string) (*writerLink, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[host]; p != nil && p.writers[id] != nil {
		return p.writers[id], nil
	}
	return nil, fmt.Errorf("%w: %s %d", control.ErrProtocol, what, id)
}

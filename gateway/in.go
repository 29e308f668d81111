package gateway

import (
	"errors"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// inMirror carries one topic from DDS to rgaps: a DDS reader and a
// republishing rgaps publisher.
type inMirror struct {
	mirror
	rd  *dds.Reader
	pub *zerocopy.Publisher
	own [12]byte // the gateway participant's GUID prefix

	failShown bool // a failure was logged (owned by the run goroutine)
}

func (g *Gateway) startIn(name string, w want) (running, error) {
	t, err := g.part.Topic(name, w.typ)
	if err != nil {
		return nil, err
	}
	pub, err := g.dom.NewPublisher(zerocopy.EndpointSpec{Topic: name, Type: w.typ, TypeHash: w.hash, Node: Node, QoS: w.q,
		Memory: zerocopy.MemoryHost, Republish: true})
	if err != nil {
		return nil, err
	}
	rd, err := t.NewReader(dds.EndpointOptions{QoS: w.q, UserData: userData(w.hash)})
	if err != nil {
		pub.Close()
		return nil, err
	}
	m := &inMirror{mirror: newMirror(name, w, g.prefixOf("from DDS", name, w.typ)), rd: rd, pub: pub, own: g.part.GUID().Prefix()}
	go m.run(g)
	return m, nil
}

// run forwards the reader's samples to the publisher until stopped, then
// forwards what the reader still holds (a graceful stop loses nothing
// the gateway received).
func (m *inMirror) run(g *Gateway) {
	defer close(m.done)
	for !m.stopping() {
		if _, err := m.rd.Wait(waitPeriod); err != nil {
			return // closed
		}
		m.forwardAll(g, time.Time{})
	}
	m.forwardAll(g, time.Now().Add(drainFor))
}

// forwardAll publishes every sample the reader holds (until end, when
// set); the samples of the gateway's own writers are dropped (no loop),
// and those the ledger says were delivered before are skipped.
func (m *inMirror) forwardAll(g *Gateway, end time.Time) {
	for end.IsZero() || time.Now().Before(end) {
		s, ok, err := m.rd.Take()
		if err != nil || !ok {
			return
		}
		if s.Writer.Prefix() == m.own {
			continue
		}
		seq := uint64(s.Seq)
		if s.Writer == (dds.GUID{}) {
			seq = 0 // the writer is unknown: nothing to record it under
		}
		if g.led.delivered(srcDDS, s.Writer, seq) {
			m.replayed.Add(1)
			continue
		}
		if err := m.publishHeld(s.Data); err != nil {
			m.skipped.Add(1)
			if !m.failShown && !errors.Is(err, zerocopy.ErrClosed) {
				g.log.Warn("publishing to rgaps failed", "topic", m.name, "err", err)
				m.failShown = true
			}
			continue
		}
		m.carried.Add(1)
		g.led.record(srcDDS, s.Writer, seq)
	}
}

// publishHeld publishes msg; a KEEP_ALL mirror whose subscriptions hold
// it back (a full queue, or a full pool) tries again, each try waiting
// the engine's BlockTimeout, while it runs and for drainFor once it was
// told to stop.
func (m *inMirror) publishHeld(msg []byte) error {
	var until time.Time
	for {
		err := m.publish(msg)
		if err == nil || m.w.q.History != qos.HistoryKeepAll || !errors.Is(err, zerocopy.ErrQueueFull) && !errors.Is(err, zerocopy.ErrPoolExhausted) {
			return err
		}
		if m.stopping() {
			if until.IsZero() {
				until = time.Now().Add(drainFor)
			} else if time.Now().After(until) {
				return err
			}
		}
	}
}

// publish publishes one DDS message, with the reserved bytes of the plain
// layout in front for plain types.
func (m *inMirror) publish(msg []byte) error {
	if m.prefix == 0 {
		return m.pub.Publish(msg)
	}
	l, err := m.pub.Loan(m.prefix + len(msg))
	if err != nil {
		return err
	}
	b := l.Bytes()
	clear(b[:m.prefix])
	copy(b[m.prefix:], msg)
	return l.Publish()
}

func (m *inMirror) ddsName() string { return m.rd.Topic().Name() }

// stop ends the goroutine (which drains) and closes the endpoints.
func (m *inMirror) stop() {
	m.stopLoop()
	m.rd.Close()
	m.pub.Close()
}

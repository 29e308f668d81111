package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// waitPeriod bounds how long a mirror's goroutine waits before it looks
// for its stop signal.
const waitPeriod = 100 * time.Millisecond

// How an out mirror learns what DDS readers have: when idle, it looks
// every ackPoll whether they acknowledged everything written; when busy,
// every ackEvery it waits up to ackWait for that. What they acknowledged
// goes into the ledger.
const (
	ackPoll  = 5 * time.Millisecond
	ackEvery = 50 * time.Millisecond
	ackWait  = time.Millisecond
)

// drainFor bounds a stopping mirror's drain: forwarding what it holds
// and (out) waiting for the DDS readers' acknowledgements.
const drainFor = 2 * time.Second

// outMirror carries one topic from rgaps to DDS: a republishing rgaps
// subscription and a DDS writer. A volatile mirror has its subscription
// only while a DDS reader is matched (outsub.go).
type outMirror struct {
	mirror
	wr    *dds.Writer
	def   *schema.Message // the type's definition (split messages); nil: unknown
	sinks sinks           // what the DDS readers keep (set by Refresh)

	// Owned by the run goroutine (sub until it ends):
	sub     *zerocopy.Subscription  // nil while none
	buf     hostBuf                 // device payloads staged out
	written map[zerocopy.GID]uint64 // per publisher, the last sequence written, not known acknowledged
	acked   time.Time               // when the acknowledgements were last looked at
}

func (g *Gateway) startOut(name string, w want) (running, error) {
	t, err := g.part.Topic(name, w.typ)
	if err != nil {
		return nil, err
	}
	// A transient-local KEEP_ALL writer keeps for late joiners what an
	// rgaps one keeps, a queue's worth, not all it ever wrote.
	wr, err := t.NewWriter(dds.EndpointOptions{QoS: w.q, UserData: userData(w.hash), LateJoinerLimit: int(g.dom.Config().QueueCap)})
	if err != nil {
		return nil, err
	}
	m := &outMirror{mirror: newMirror(name, w, g.prefixOf("to DDS", name, w.typ)), wr: wr,
		def: g.types.message(w.typ), buf: hostBuf{dom: g.dom}, written: map[zerocopy.GID]uint64{}}
	if w.q.Durability == qos.DurabilityTransientLocal {
		// Its history is for DDS readers yet to come: subscribed from the
		// start, at the sources' depth.
		if m.sub, err = m.subscribe(g, w.q.Depth); err != nil {
			wr.Close()
			return nil, err
		}
	}
	go m.run(g)
	return m, nil
}

// run forwards the subscription's samples to the writer until stopped,
// then drains.
func (m *outMirror) run(g *Gateway) {
	defer close(m.done)
	defer m.buf.close()
	for !m.stopping() {
		if !m.subscribed(g) {
			continue
		}
		wait := waitPeriod
		if len(m.written) > 0 {
			wait = ackPoll
		}
		s, err := m.sub.TakeWait(wait)
		if errors.Is(err, zerocopy.ErrTimeout) || errors.Is(err, zerocopy.ErrNoData) {
			m.checkpoint(g, 0)
			m.unsubscribeIdle()
			continue
		}
		if err != nil {
			m.warnOnce(g.log, "take", "taking from rgaps failed", "err", err)
			time.Sleep(waitPeriod)
			continue
		}
		m.carry(g, s)
		if time.Since(m.acked) >= ackEvery {
			m.checkpoint(g, ackWait)
			m.unsubscribeIdle()
		}
	}
	// A graceful stop: forward what is queued, wait for the DDS readers
	// to have it, and record it.
	end := time.Now().Add(drainFor)
	for m.sub != nil && time.Now().Before(end) {
		s, err := m.sub.Take()
		if err != nil {
			break
		}
		m.carry(g, s)
	}
	m.checkpoint(g, time.Until(end))
}

// carry writes one sample to DDS (unless delivered before, per the
// ledger, or nobody on DDS reads it) and returns it.
func (m *outMirror) carry(g *Gateway, s *zerocopy.Sample) {
	defer s.Return()
	info := s.Info()
	if g.led.delivered(srcRgaps, info.Publisher, info.Sequence) {
		m.replayed.Add(1)
		return
	}
	// Nobody on DDS reads it (the writer stays, so DDS nodes see the
	// topic): a volatile message is not written, nor copied, at all.
	if !m.anyReader() {
		return
	}
	if err := m.forwardHeld(s); err != nil {
		m.skipped.Add(1)
		m.warnOnce(g.log, errKey(err), "a message was not carried to DDS", "err", err)
		return
	}
	m.carried.Add(1)
	m.written[info.Publisher] = info.Sequence
}

// forwardHeld forwards s; a KEEP_ALL mirror whose DDS readers hold it back
// (the write timed out: the writer's history is full of what they have
// not acknowledged) tries again while it runs and for drainFor once it
// was told to stop, holding its own subscription, and so the rgaps
// publishers, back meanwhile.
func (m *outMirror) forwardHeld(s *zerocopy.Sample) error {
	var until time.Time
	for {
		err := m.forward(s)
		if err == nil || m.w.q.History != qos.HistoryKeepAll || !errors.Is(err, dds.ErrTimeout) {
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

// forward writes one sample to DDS: its payload (without a plain type's
// reserved bytes), or a split message joined (writeSplit).
func (m *outMirror) forward(s *zerocopy.Sample) error {
	if meta := s.Meta(); meta != nil {
		return m.writeSplit(s, meta)
	}
	b, err := m.hostBytes(s)
	if err != nil {
		return err
	}
	if len(b) < m.prefix+4 {
		return fmt.Errorf("%w: a %d-byte message", errMalformed, len(b))
	}
	return m.wr.Write(b[m.prefix:])
}

// checkpoint records in the ledger what was written, once every matched
// DDS reader acknowledged it (waiting up to wait for that).
func (m *outMirror) checkpoint(g *Gateway, wait time.Duration) {
	if len(m.written) == 0 {
		return
	}
	m.acked = time.Now()
	if ok, err := m.wr.WaitForAcks(wait); err != nil || !ok {
		return
	}
	for gid, seq := range m.written {
		g.led.record(srcRgaps, gid, seq)
	}
	clear(m.written)
}

// anyReader reports whether a DDS reader is matched to the writer, or the
// writer keeps history for late joiners (transient local): what makes a
// write worth its copy. An error says yes (the write reports it).
func (m *outMirror) anyReader() bool {
	if m.w.q.Durability == qos.DurabilityTransientLocal {
		return true
	}
	n, err := m.wr.Matched()
	return err != nil || n > 0
}

func (m *outMirror) ddsName() string { return m.wr.Topic().Name() }

// stop ends the goroutine (which drains) and closes the endpoints.
func (m *outMirror) stop() {
	m.stopLoop()
	if m.sub != nil {
		m.sub.Close()
	}
	m.wr.Close()
}

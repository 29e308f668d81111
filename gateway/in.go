package gateway

import (
	"errors"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// inMirror carries one topic from DDS to rgaps: a DDS reader and a
// republishing rgaps publisher.
type inMirror struct {
	mirror
	dom *zerocopy.Domain
	rd  *dds.Reader
	pub *zerocopy.Publisher
	own [12]byte // the gateway participant's GUID prefix

	// Split messages (split.go): the type's definition and byte field
	// (-1: none, never split), the buffer messages of such a type are
	// taken into, and the forms the topic's readers read (the goroutine's).
	def   *schema.Message
	field int
	buf   hostBuf
	forms readerForms
}

func (g *Gateway) startIn(name string, w want) (running, error) {
	t, err := g.part.Topic(name, w.typ)
	if err != nil {
		return nil, err
	}
	def, field := g.types.byteField(w.typ)
	// A type with a device field gets a GPU pool on a GPU host, as the
	// rmw's endpoints do (docs/ARCHITECTURE.md §3.12), if this is first.
	pub, err := g.dom.NewPublisher(zerocopy.EndpointSpec{Topic: name, Type: w.typ, TypeHash: w.hash, Node: Node, QoS: w.q,
		Memory: zerocopy.MemoryHost, GPUPool: field >= 0 && zerocopy.GPUPresent(), Republish: true})
	if err != nil {
		return nil, err
	}
	rd, err := t.NewReader(dds.EndpointOptions{QoS: w.q, UserData: userData(w.hash)})
	if err != nil {
		pub.Close()
		return nil, err
	}
	if field < 0 && pub.Topic().PoolKind() == zerocopy.PoolGPU {
		g.log.Info("a topic with a GPU pool, of a type without a device field (or whose definition is unknown): its messages are published unsplit",
			"topic", name, "type", w.typ)
	}
	m := &inMirror{mirror: newMirror(name, w, g.prefixOf("from DDS", name, w.typ)), dom: g.dom, rd: rd, pub: pub,
		own: g.part.GUID().Prefix(), def: def, field: field, buf: hostBuf{dom: g.dom}}
	go m.run(g)
	return m, nil
}

// run forwards the reader's samples to the publisher until stopped, then
// forwards what the reader still holds (a graceful stop loses nothing
// the gateway received).
func (m *inMirror) run(g *Gateway) {
	defer close(m.done)
	defer m.buf.close()
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
		s, ok, err := m.take()
		if err != nil && !errors.Is(err, dds.ErrClosed) {
			m.skipped.Add(1)
			m.warnOnce(g.log, "take", "taking from DDS failed", "err", err)
		}
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
		if err := m.publishHeld(g, s.Data); err != nil {
			m.skipped.Add(1)
			if !errors.Is(err, zerocopy.ErrClosed) {
				m.warnOnce(g.log, "publish", "publishing to rgaps failed", "err", err)
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
func (m *inMirror) publishHeld(g *Gateway, msg []byte) error {
	var until time.Time
	for {
		err := m.publish(g, msg)
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

// take takes the next DDS message; one of a type with a byte field into
// the mirror's buffer, which a split message's field is copied from.
func (m *inMirror) take() (dds.Sample, bool, error) {
	if m.field < 0 {
		return m.rd.Take()
	}
	var bufErr error
	s, ok, err := m.rd.TakeTo(func(n int) []byte {
		b, err := m.buf.get(n)
		bufErr = err
		return b
	})
	if bufErr != nil {
		err = bufErr
	}
	return s, ok, err
}

// publish publishes one DDS message: split when the topic's readers are
// served best so (publishSplit), else whole, with the reserved bytes of
// the plain layout in front for plain types.
func (m *inMirror) publish(g *Gateway, msg []byte) error {
	if m.field >= 0 && m.splits() {
		err := m.publishSplit(msg)
		if !errors.Is(err, errNoSplit) {
			return err
		}
		if !errors.Is(err, errEmptyField) {
			m.warnOnce(g.log, "nosplit", "a message of a type with a device field was published whole", "why", err)
		}
	}
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

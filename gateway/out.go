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

// outMirror carries one topic from rgaps to DDS: a republishing rgaps
// subscription and a DDS writer.
type outMirror struct {
	mirror
	sub *zerocopy.Subscription
	wr  *dds.Writer
	def *schema.Message // the type's definition (split messages); nil: unknown
	buf hostBuf         // device payloads staged out (the goroutine's)
}

func (g *Gateway) startOut(name string, w want) (running, error) {
	t, err := g.part.Topic(name, w.typ)
	if err != nil {
		return nil, err
	}
	wr, err := t.NewWriter(dds.EndpointOptions{QoS: w.q, UserData: userData(w.hash)})
	if err != nil {
		return nil, err
	}
	// MemoryAny: publishers make no copy for the gateway; it copies a
	// device-only payload out itself, and only when it writes it.
	sub, err := g.dom.NewSubscription(zerocopy.EndpointSpec{Topic: name, Type: w.typ, TypeHash: w.hash, Node: Node, QoS: w.q,
		Memory: zerocopy.MemoryAny, Republish: true})
	if err != nil {
		wr.Close()
		return nil, err
	}
	m := &outMirror{mirror: newMirror(name, w, g.prefixOf("to DDS", name, w.typ)), sub: sub, wr: wr,
		def: g.types.message(w.typ), buf: hostBuf{dom: g.dom}}
	go m.run(g)
	return m, nil
}

// run forwards the subscription's samples to the writer until stopped.
func (m *outMirror) run(g *Gateway) {
	defer close(m.done)
	defer m.buf.close()
	for !m.stopping() {
		s, err := m.sub.TakeWait(waitPeriod)
		if errors.Is(err, zerocopy.ErrTimeout) || errors.Is(err, zerocopy.ErrNoData) {
			continue
		}
		if err != nil {
			m.warnOnce(g.log, "take", "taking from rgaps failed", "err", err)
			time.Sleep(waitPeriod)
			continue
		}
		// Nobody on DDS reads it (the writer stays, so DDS nodes see the
		// topic): a volatile message is not written, nor copied, at all.
		if m.anyReader() {
			if err := m.forward(s); err != nil {
				m.skipped.Add(1)
				m.warnOnce(g.log, errKey(err), "a message was not carried to DDS", "err", err)
			} else {
				m.carried.Add(1)
			}
		}
		s.Return()
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

// stop ends the goroutine and closes the endpoints.
func (m *outMirror) stop() {
	m.stopLoop()
	m.sub.Close()
	m.wr.Close()
}

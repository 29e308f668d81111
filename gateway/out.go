package gateway

import (
	"errors"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
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
	sub, err := g.dom.NewSubscription(zerocopy.EndpointSpec{Topic: name, Type: w.typ, TypeHash: w.hash, Node: Node, QoS: w.q, Republish: true})
	if err != nil {
		wr.Close()
		return nil, err
	}
	m := &outMirror{mirror: newMirror(name, w, g.prefixOf("to DDS", name, w.typ)), sub: sub, wr: wr}
	go m.run(g)
	return m, nil
}

// run forwards the subscription's samples to the writer until stopped.
func (m *outMirror) run(g *Gateway) {
	defer close(m.done)
	var splitLogged, failLogged bool
	for !m.stopping() {
		s, err := m.sub.TakeWait(waitPeriod)
		if errors.Is(err, zerocopy.ErrTimeout) || errors.Is(err, zerocopy.ErrNoData) {
			continue
		}
		if err != nil {
			if !failLogged {
				g.log.Warn("taking from rgaps failed", "topic", m.name, "err", err)
				failLogged = true
			}
			time.Sleep(waitPeriod)
			continue
		}
		switch b := s.Bytes(); {
		case s.Meta() != nil:
			m.skipped.Add(1)
			if !splitLogged {
				g.log.Warn("split messages (GPU loans) are not carried to DDS: skipped", "topic", m.name)
				splitLogged = true
			}
		case len(b) < m.prefix+4:
			m.skipped.Add(1)
		case !m.anyReader():
			// Nobody on DDS reads it (the writer stays, so DDS nodes see
			// the topic): a volatile message is not written at all.
		default:
			if err := m.wr.Write(b[m.prefix:]); err != nil {
				m.skipped.Add(1)
				if !failLogged {
					g.log.Warn("writing to DDS failed", "topic", m.name, "err", err)
					failLogged = true
				}
			} else {
				m.carried.Add(1)
			}
		}
		s.Return()
	}
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

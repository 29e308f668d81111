package gateway

import (
	"log/slog"
	"sync"
	"sync/atomic"
)

// mirror is what both directions' mirrors share: the want they were made
// for, their goroutine's stop signal, and their counters.
type mirror struct {
	name    string
	w       want
	prefix  int // plainPrefix for plain types, else 0
	quit    chan struct{}
	done    chan struct{}
	carried atomic.Uint64   // messages forwarded
	skipped atomic.Uint64   // messages not carried (malformed, failed)
	warned  map[string]bool // what warnOnce logged (the mirror's goroutine's)
	// replayed counts messages not carried because the ledger says they
	// were delivered before (a transient-local source sent them again)
	replayed atomic.Uint64
}

// warnOnce logs a warning about the topic once per key (a kind of
// failure), so a failure that repeats with every message is logged once.
func (m *mirror) warnOnce(log *slog.Logger, key, msg string, args ...any) {
	if m.warned[key] {
		return
	}
	if m.warned == nil {
		m.warned = map[string]bool{}
	}
	m.warned[key] = true
	log.Warn(msg, append([]any{"topic", m.name}, args...)...)
}

func newMirror(name string, w want, prefix int) mirror {
	return mirror{name: name, w: w, prefix: prefix, quit: make(chan struct{}), done: make(chan struct{})}
}

// stopLoop ends the goroutine and waits for it (at most its wait period).
func (m *mirror) stopLoop() {
	close(m.quit)
	<-m.done
}

// stopping reports whether stopLoop was called.
func (m *mirror) stopping() bool {
	select {
	case <-m.quit:
		return true
	default:
		return false
	}
}

// running is a mirror of either direction.
type running interface {
	base() *mirror
	ddsName() string // the DDS topic
	stop()           // ends the goroutine, closes the endpoints
}

func (m *mirror) base() *mirror { return m }

// apply makes and tears down the mirrors of one direction (have) for
// want; start makes one.
func (g *Gateway) apply(dir string, have map[string]running, want map[string]want, start func(string, want) (running, error)) {
	// Mirrors stop side by side: each drains for up to its drain time, so
	// a gateway stopping many with stuck readers takes that once, not once
	// per mirror.
	var stopping sync.WaitGroup
	for name, m := range have {
		b := m.base()
		if w, ok := want[name]; !ok || changed(b.w, w) {
			delete(have, name)
			stopping.Go(func() {
				m.stop()
				g.log.Info("stopped carrying topic", "direction", dir, "topic", name, "messages", b.carried.Load(), "skipped", b.skipped.Load(), "delivered before", b.replayed.Load())
			})
		}
	}
	stopping.Wait()
	for name, w := range want {
		if have[name] != nil {
			continue
		}
		m, err := start(name, w)
		if err != nil {
			g.refuse(dir, name, err)
			continue
		}
		g.accepted(dir, name)
		have[name] = m
		g.log.Info("carrying topic", "direction", dir, "topic", name, "type", w.typ, "dds", m.ddsName(),
			"reliability", w.q.Reliability.String(), "durability", w.q.Durability.String(), "plain", m.base().prefix != 0)
	}
}

// changed reports whether a mirror made for have must be remade for w.
func changed(have, w want) bool { return have.typ != w.typ || have.resp != w.resp || have.q != w.q }

// prefixOf is the payload prefix of typ, logging once when its definition
// is unknown (the type is carried as CDR then).
func (g *Gateway) prefixOf(dir, topic, typ string) int {
	n, found := g.types.prefix(typ)
	if !found {
		g.log.Info("no definition of the type: carried as CDR (a plain type's 4 reserved bytes are not handled)", "direction", dir, "topic", topic, "type", typ)
	}
	return n
}

package gateway

import (
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
	carried atomic.Uint64 // messages forwarded
	skipped atomic.Uint64 // messages not carried (split, malformed, failed)
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

// changed reports whether a mirror made for have must be remade for w.
func changed(have, w want) bool { return have.typ != w.typ || have.q != w.q }

// prefixOf is the payload prefix of typ, logging once when its definition
// is unknown (the type is carried as CDR then).
func (g *Gateway) prefixOf(dir, topic, typ string) int {
	n, found := g.types.prefix(typ)
	if !found {
		g.log.Info("no definition of the type: carried as CDR (a plain type's 4 reserved bytes are not handled)", "direction", dir, "topic", topic, "type", typ)
	}
	return n
}

package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
)

// A statement (interest or graph) whose JSON does not fit one control
// frame (control.MaxFrame, 1 MiB) is sent as parts (msgPart): a host with
// a thousand topics and eight subscriber processes states about 9,000
// endpoints, some 2 MiB of JSON. The parts of one statement go out one
// after the other on one connection (sendMu is held), so the receiver
// assembles them per connection; the statement takes effect once its last
// part arrived, as a whole, so it is still a full statement. Statements
// that fit one frame go out as before (types 16 and 17), which daemons of
// the previous release read.
const (
	// msgPart: one part of an interest or graph statement too large for
	// a frame.
	msgPart control.MsgType = 22
	// statementLimit is the largest statement sent whole; partLimit the
	// JSON of a part's items (a single item is far smaller: names are
	// bounded, limits.go).
	statementLimit = control.MaxFrame - 64<<10
	partLimit      = 512 << 10
	// maxParts bounds the parts of one statement: the table limits
	// (MaxGraphEndpoints endpoints of at most a few hundred bytes each)
	// need far fewer.
	maxParts = 64
)

// statementPart is one part of an interest (Of 16: Topics) or graph (Of
// 17: Host, Nodes, Endpoints) statement. Serial numbers the sender's
// statements; Part counts from 0 to Parts-1.
type statementPart struct {
	Of        control.MsgType `json:"of"`
	Serial    uint64          `json:"serial"`
	Part      int             `json:"part"`
	Parts     int             `json:"parts"`
	Host      string          `json:"host,omitempty"`
	Topics    []topicInterest `json:"topics,omitempty"`
	Nodes     []graphNode     `json:"nodes,omitempty"`
	Endpoints []graphEndpoint `json:"endpoints,omitempty"`
}

// statementSerial numbers the statements this process sends in parts.
var statementSerial atomic.Uint64

// sendStatement sends an interest or graph statement: whole when it fits
// a frame, else in parts.
func (b *Bridge) sendStatement(c *control.Conn, t control.MsgType, v any) bool {
	raw, err := json.Marshal(v)
	if err != nil {
		b.log.Error("encoding a statement", "type", int(t), "err", err)
		return false
	}
	if len(raw) <= statementLimit {
		return b.send(c, t, json.RawMessage(raw))
	}
	parts, err := splitStatement(t, v, statementSerial.Add(1))
	if err != nil {
		b.log.Error("splitting a statement", "type", int(t), "bytes", len(raw), "err", err)
		return false
	}
	for i := range parts {
		if !b.send(c, msgPart, &parts[i]) {
			return false
		}
	}
	return true
}

// splitStatement cuts an interest or graph statement into parts of at
// most about partLimit bytes of items each.
func splitStatement(t control.MsgType, v any, serial uint64) ([]statementPart, error) {
	var parts []statementPart
	var host string
	cur := statementPart{Of: t, Serial: serial}
	size := 0
	add := func(item any, put func(p *statementPart)) error {
		n, err := encodedSize(item)
		if err != nil {
			return err
		}
		if size > 0 && size+n > partLimit {
			parts = append(parts, cur)
			cur = statementPart{Of: t, Serial: serial}
			size = 0
		}
		put(&cur)
		size += n
		return nil
	}
	switch m := v.(type) {
	case interestMsg:
		for _, ti := range m.Topics {
			if err := add(ti, func(p *statementPart) { p.Topics = append(p.Topics, ti) }); err != nil {
				return nil, err
			}
		}
	case graphMsg:
		host = m.Host
		for _, n := range m.Nodes {
			if err := add(n, func(p *statementPart) { p.Nodes = append(p.Nodes, n) }); err != nil {
				return nil, err
			}
		}
		for _, ep := range m.Endpoints {
			if err := add(ep, func(p *statementPart) { p.Endpoints = append(p.Endpoints, ep) }); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("%w: no parts for %T", control.ErrProtocol, v)
	}
	parts = append(parts, cur)
	if len(parts) > maxParts {
		return nil, fmt.Errorf("%w: statement of %d parts, at most %d", ErrLimit, len(parts), maxParts)
	}
	for i := range parts {
		parts[i].Part, parts[i].Parts = i, len(parts)
		parts[i].Host = host
	}
	return parts, nil
}

func encodedSize(v any) (int, error) {
	b, err := json.Marshal(v)
	return len(b) + 1, err // and a comma
}

// assembly collects the parts of one statement from one connection.
type assembly struct {
	of     control.MsgType
	serial uint64
	next   int // the part expected next
	parts  int
	in     interestMsg
	g      graphMsg
}

// partial is a connection's statements in assembly, one per kind; it
// belongs to the connection's session (whose callbacks never run at
// once).
type partial struct {
	in, g *assembly
}

// errBadPart reports a part that does not continue its statement.
var errBadPart = errors.New("statement part out of order")

// addPart takes one part. It returns the statement's type and the whole
// statement once its last part arrived (0 and nil before). A part that
// breaks the order or a limit drops the statement in assembly.
func (ps *partial) addPart(p *statementPart) (control.MsgType, any, error) {
	var slot **assembly
	switch p.Of {
	case msgInterest:
		slot = &ps.in
		if p.Host != "" || len(p.Nodes) != 0 || len(p.Endpoints) != 0 {
			return 0, nil, fmt.Errorf("%w: an interest part with graph items", control.ErrProtocol)
		}
	case msgGraph:
		slot = &ps.g
		if len(p.Topics) != 0 {
			return 0, nil, fmt.Errorf("%w: a graph part with interest items", control.ErrProtocol)
		}
	default:
		return 0, nil, fmt.Errorf("%w: a part of message type %d", control.ErrProtocol, p.Of)
	}
	if p.Parts < 1 || p.Parts > maxParts || p.Part < 0 || p.Part >= p.Parts {
		*slot = nil
		return 0, nil, fmt.Errorf("%w: part %d of %d (at most %d parts)", ErrLimit, p.Part, p.Parts, maxParts)
	}
	a := *slot
	if p.Part == 0 {
		a = &assembly{of: p.Of, serial: p.Serial, parts: p.Parts}
		a.g.Host = p.Host
		*slot = a
	} else if a == nil || a.serial != p.Serial || a.next != p.Part || a.parts != p.Parts || a.g.Host != p.Host {
		*slot = nil
		return 0, nil, fmt.Errorf("%w: part %d of %d of statement %d", errBadPart, p.Part, p.Parts, p.Serial)
	}
	a.in.Topics = append(a.in.Topics, p.Topics...)
	a.g.Nodes = append(a.g.Nodes, p.Nodes...)
	a.g.Endpoints = append(a.g.Endpoints, p.Endpoints...)
	if len(a.in.Topics) > MaxTopicsPerPeer || len(a.g.Nodes) > MaxGraphNodes || len(a.g.Endpoints) > MaxGraphEndpoints {
		*slot = nil
		return 0, nil, fmt.Errorf("%w: statement %d: more than %d topics, %d nodes or %d endpoints after part %d",
			ErrLimit, p.Serial, MaxTopicsPerPeer, MaxGraphNodes, MaxGraphEndpoints, p.Part)
	}
	a.next++
	if a.next < a.parts {
		return 0, nil, nil
	}
	*slot = nil
	if a.of == msgInterest {
		return msgInterest, a.in, nil
	}
	return msgGraph, a.g, nil
}

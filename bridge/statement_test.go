package bridge

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// A host whose graph does not fit one control frame (1 MiB of JSON: here
// 2,400 subscriptions with long node names, about 1.4 MiB) states it in
// parts; the other host's daemon lists every endpoint. (Before, the send
// failed and the peer kept the last graph that had fitted.)
func TestLargeGraphInParts(t *testing.T) {
	a, b := pair(t, "tcp", nil)
	const topics, per = 30, 80
	want := map[string]bool{}
	for i := range topics {
		topic := fmt.Sprintf("/large_graph/%s/t%d", strings.Repeat("x", 150), i)
		for j := range per {
			node := fmt.Sprintf("/%s/n%d", strings.Repeat("n", 200), j)
			s, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: "test_msgs/msg/Large", Node: node, QoS: reliable()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			want[s.GID().String()] = true
		}
	}
	testutil.Eventually(t, 30*time.Second, "host b's daemon lists its subscriptions", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.local.graph.Endpoints) == len(want)
	})
	if n := graphBytes(t, b); n <= control.MaxFrame {
		t.Fatalf("host b's graph is %d bytes: the test needs one larger than a frame (%d)", n, control.MaxFrame)
	}
	testutil.Eventually(t, 60*time.Second, "host a lists every subscription of host b", func() bool {
		st, err := QueryStatus(a.Domain().Config())
		if err != nil || len(st.Peers) != 1 {
			return false
		}
		seen := 0
		for _, e := range st.Peers[0].Endpoints {
			if want[e.GID] && e.Kind == "subscription" {
				seen++
			}
		}
		return seen == len(want)
	})
}

// graphBytes is the size of the graph statement b sends now.
func graphBytes(t *testing.T, b *Bridge) int {
	t.Helper()
	b.mu.Lock()
	g := b.local.graph
	b.mu.Unlock()
	n, err := encodedSize(g)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Parts of a statement put back together give the statement; parts out of
// order, of two statements mixed, of the wrong kind or beyond the limits
// are refused and drop what was assembled.
func TestStatementParts(t *testing.T) {
	long := strings.Repeat("y", 200)
	var in interestMsg
	for i := range 3000 {
		in.Topics = append(in.Topics, topicInterest{Topic: fmt.Sprintf("/%s/t%d", long, i), Type: "pkg/msg/" + long, Reliable: i%2 == 0, Depth: uint32(i), Count: 1})
	}
	g := graphMsg{Host: "host-x", Nodes: []graphNode{{Name: "n", Namespace: "/", Enclave: "/"}}}
	for i := range 4000 {
		g.Endpoints = append(g.Endpoints, graphEndpoint{Topic: fmt.Sprintf("/%s/t%d", long, i%40), Type: "pkg/msg/T", Kind: "publisher",
			Node: "/" + long, GID: fmt.Sprintf("%032x", i), QoS: make([]byte, 48), Path: "host-shm"})
	}
	for _, c := range []struct {
		t control.MsgType
		v any
	}{{msgInterest, in}, {msgGraph, g}} {
		parts, err := splitStatement(c.t, c.v, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(parts) < 2 {
			t.Fatalf("type %d: %d parts", c.t, len(parts))
		}
		var ps partial
		for i := range parts {
			if n, err := encodedSize(parts[i]); err != nil || n > control.MaxFrame {
				t.Fatalf("part %d of type %d: %d bytes (%v)", i, c.t, n, err)
			}
			of, whole, err := ps.addPart(&parts[i])
			if err != nil {
				t.Fatal(err)
			}
			if i < len(parts)-1 {
				if whole != nil {
					t.Fatalf("a statement after part %d of %d", i, len(parts))
				}
				continue
			}
			if of != c.t || !reflect.DeepEqual(whole, c.v) {
				t.Fatalf("type %d: assembled statement differs", c.t)
			}
		}
		// Out of order: the second part first, a part skipped, another
		// statement's part in the middle.
		for _, seq := range [][]int{{1}, {0, 2}} {
			var ps partial
			var err error
			for _, k := range seq {
				_, _, err = ps.addPart(&parts[k])
			}
			if !errors.Is(err, errBadPart) {
				t.Errorf("type %d, parts %v: %v, want errBadPart", c.t, seq, err)
			}
		}
		other := parts[1]
		other.Serial = 8
		var mixed partial
		mixed.addPart(&parts[0])
		if _, _, err := mixed.addPart(&other); !errors.Is(err, errBadPart) {
			t.Errorf("type %d: a part of another statement: %v", c.t, err)
		}
		if _, _, err := mixed.addPart(&parts[2]); !errors.Is(err, errBadPart) {
			t.Errorf("type %d: the statement went on after a bad part: %v", c.t, err)
		}
	}
	var ps partial
	for _, p := range []statementPart{
		{Of: msgInterest, Parts: maxParts + 1},
		{Of: msgInterest, Part: 2, Parts: 2},
		{Of: msgRingOffer, Parts: 1},
		{Of: msgGraph, Parts: 1, Topics: in.Topics[:1]},
		{Of: msgInterest, Parts: 1, Endpoints: g.Endpoints[:1]},
	} {
		if _, _, err := ps.addPart(&p); err == nil || !(errors.Is(err, ErrLimit) || errors.Is(err, control.ErrProtocol)) {
			t.Errorf("part %+v: %v", p, err)
		}
	}
	// A statement whose parts together exceed a table limit.
	big := statementPart{Of: msgGraph, Parts: 3, Endpoints: make([]graphEndpoint, MaxGraphEndpoints/2+1)}
	ps = partial{}
	ps.addPart(&big)
	big.Part = 1
	if _, _, err := ps.addPart(&big); !errors.Is(err, ErrLimit) {
		t.Errorf("%d endpoints in two parts: %v", 2*len(big.Endpoints), err)
	}
}

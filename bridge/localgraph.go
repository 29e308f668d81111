package bridge

import (
	"sort"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/control"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The graph watcher: what this host's endpoints need from other hosts
// (interest) and what they are (graph), stated to every peer when it
// changes.

// localInterest is what this host's subscriptions of a topic need (the
// zero value when there are none).
func (b *Bridge) localInterest(topic string) topicInterest {
	if m := b.interest.Load(); m != nil {
		return (*m)[topic]
	}
	return topicInterest{}
}

// localState is what the graph watcher last saw on this host.
type localState struct {
	interest map[string]topicInterest // topics with local (non-bridge) subscriptions
	pubs     map[string]pubSummary    // topics with local (non-bridge) publishers
	graph    graphMsg
}

// pubSummary merges the QoS of a topic's local publishers.
type pubSummary struct {
	typ       string
	q         qos.Profile
	allRel    bool
	allTL     bool
	count     int
	hasDevice bool
}

// watchGraph recomputes the local interest and graph whenever the
// domain's graph changes, and tells the peers. Between changes it reads
// nothing of the topics: every endpoint change moves the graph
// generation, and so does the reclamation of a dead process's endpoints
// by the janitor of a process that has its topic open. What nobody
// reclaims (the endpoints of a process that died on topics no live
// process has open) is found by checking, every watchPeriod, whether the
// processes that owned endpoints at the last scan still run: a cost per
// process, not per topic, so an idle daemon of a thousand topics stays
// idle. The graph generation is waited for by a goroutine of its own
// (awaitGraph) in one kernel wait that lasts while the graph stands
// still; the periodic check runs on a timer, so an idle watcher enters
// no blocking system call (each would keep the Go runtime's monitor
// thread polling for up to 10 ms).
func (b *Bridge) watchGraph() {
	defer b.wg.Done()
	changed := make(chan struct{}, 1)
	gc := b.dom.NewGraphCondition() // before the first scan: no move is missed
	stop := b.dom.NewGuardCondition()
	defer stop.Close()
	waiter := make(chan struct{})
	go func() {
		defer close(waiter)
		b.awaitGraph(gc, stop, changed)
	}()
	defer func() {
		stop.Trigger()
		<-waiter
	}()
	tick := time.NewTicker(watchPeriod)
	defer tick.Stop()
	for {
		owners, ok := b.refreshLocal()
	wait:
		for {
			select {
			case <-b.quit:
				return
			case <-changed:
				break wait
			case <-tick.C:
				b.expirePeers()
				if !ok || !owners.alive() {
					break wait
				}
			}
		}
	}
}

// awaitGraph signals changed (coalescing) whenever the domain's graph
// generation moves, until stop is triggered. It acknowledges each move
// before it signals, so a move during the watcher's scan is signalled
// again.
func (b *Bridge) awaitGraph(gc *zerocopy.GraphCondition, stop *zerocopy.GuardCondition, changed chan<- struct{}) {
	items := []zerocopy.Waitable{gc, stop}
	ready := make([]bool, len(items))
	for {
		if err := zerocopy.Wait(items, ready, -1, 0); err != nil || stop.Ready() {
			return
		}
		gc.Reset()
		select {
		case changed <- struct{}{}:
		default:
		}
	}
}

// watchPeriod is how often the graph watcher checks the owners of the
// endpoints it stated, and expires peers.
const watchPeriod = 500 * time.Millisecond

// owners are the processes (pid, start time) that owned the endpoints of
// a scan.
type owners map[[2]uint64]struct{}

// alive reports whether every owner still runs.
func (o owners) alive() bool {
	for k := range o {
		if !zerocopy.ProcessAlive(uint32(k[0]), k[1]) {
			return false
		}
	}
	return true
}

// refreshLocal scans the local graph; on a change it sends the new
// interest or graph to every peer and lets the links adjust. It returns
// the owners of the endpoints it saw, and false when it could not read
// the graph (the watcher tries again).
func (b *Bridge) refreshLocal() (owners, bool) {
	b.scans.Add(1)
	b.noteBurst()
	eps, err := b.dom.AllEndpoints()
	if err != nil {
		b.log.Warn("reading the local graph", "err", err)
		return nil, false
	}
	interest := map[string]topicInterest{}
	pubs := map[string]pubSummary{}
	g := graphMsg{Host: b.hostID}
	nodes, err := b.dom.Nodes()
	if err != nil {
		b.log.Warn("reading the local graph", "err", err)
		return nil, false
	}
	for _, n := range nodes {
		g.Nodes = append(g.Nodes, graphNode{Name: n.Name, Namespace: n.Namespace, Enclave: n.Enclave})
	}
	seen := owners{}
	var in interner
	for _, ep := range eps {
		seen[[2]uint64{uint64(ep.Pid), ep.Start}] = struct{}{}
		if ep.Republish {
			continue
		}
		dev := ep.Memory == zerocopy.MemoryGPU // reads device memory, from either pool
		g.Endpoints = append(g.Endpoints, in.endpoint(graphEndpoint{Topic: ep.Topic, Type: ep.Type, TypeHash: ep.TypeHash.String(), Kind: ep.Kind.String(),
			Node: ep.Node, GID: ep.GID.String(), QoS: encodeQoS(ep.QoS), Path: ep.Path}))
		if ep.Kind == zerocopy.KindSubscription {
			in, ok := interest[ep.Topic]
			if !ok {
				in = topicInterest{Topic: ep.Topic, Type: ep.Type}
			}
			in.Count++
			in.Reliable = in.Reliable || ep.QoS.Reliability == qos.ReliabilityReliable
			in.TransientLocal = in.TransientLocal || ep.QoS.Durability == qos.DurabilityTransientLocal
			in.KeepAll = in.KeepAll || ep.QoS.History == qos.HistoryKeepAll
			in.Depth = max(in.Depth, ep.QoS.Depth)
			in.GPU = in.GPU || dev
			interest[ep.Topic] = in
		} else {
			ps, ok := pubs[ep.Topic]
			if !ok {
				ps = pubSummary{typ: ep.Type, q: ep.QoS, allRel: true, allTL: true}
			}
			ps.count++
			ps.allRel = ps.allRel && ep.QoS.Reliability == qos.ReliabilityReliable
			ps.allTL = ps.allTL && ep.QoS.Durability == qos.DurabilityTransientLocal
			ps.q.Depth = max(ps.q.Depth, ep.QoS.Depth)
			if ep.QoS.History == qos.HistoryKeepAll {
				ps.q.History = qos.HistoryKeepAll
			}
			if ps.q.Deadline == 0 || (ep.QoS.Deadline != 0 && ep.QoS.Deadline < ps.q.Deadline) {
				ps.q.Deadline = ep.QoS.Deadline
			}
			ps.hasDevice = ps.hasDevice || dev
			pubs[ep.Topic] = ps
		}
	}
	sort.Slice(g.Endpoints, func(i, j int) bool {
		a, c := g.Endpoints[i], g.Endpoints[j]
		if a.Topic != c.Topic {
			return a.Topic < c.Topic
		}
		return a.GID < c.GID
	})
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return seen, true
	}
	interestChanged := !sameMap(b.local.interest, interest)
	graphChanged := !sameGraph(b.local.graph, g)
	pubsChanged := !sameMap(b.local.pubs, pubs)
	b.local.interest, b.local.pubs, b.local.graph = interest, pubs, g
	if interestChanged {
		b.interest.Store(&interest)
	}
	var conns []*control.Conn
	var offers []func()
	for _, p := range b.peers {
		if c := p.conn(); c != nil {
			conns = append(conns, c)
		}
		if interestChanged && b.opts.PerTopic {
			offers = append(offers, b.offerTopicRingsLocked(p)...)
		}
	}
	if pubsChanged || interestChanged {
		b.adjustWritersLocked()
	}
	b.mu.Unlock()
	if interestChanged || graphChanged {
		b.sendLocal(conns, interestChanged, graphChanged)
	}
	for _, f := range offers {
		f()
	}
	return seen, true
}

func sortedInterest(m map[string]topicInterest) []topicInterest {
	out := make([]topicInterest, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

// sameMap reports whether two maps hold the same entries.
func sameMap[K, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sameGraph(a, b graphMsg) bool {
	if a.Host != b.Host || len(a.Nodes) != len(b.Nodes) || len(a.Endpoints) != len(b.Endpoints) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i] != b.Nodes[i] {
			return false
		}
	}
	for i := range a.Endpoints {
		x, y := a.Endpoints[i], b.Endpoints[i]
		if x.Topic != y.Topic || x.GID != y.GID || x.Path != y.Path || string(x.QoS) != string(y.QoS) || x.Node != y.Node || x.Kind != y.Kind || x.Type != y.Type {
			return false
		}
	}
	return true
}

// sendLocal sends this host's interest and/or graph to conns. The state is
// read and sent under sendMu, so the newest state is always the last one a
// connection gets (peerUp and the graph watcher both send).
func (b *Bridge) sendLocal(conns []*control.Conn, interest, graph bool) {
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	b.mu.Lock()
	in, g := sortedInterest(b.local.interest), b.local.graph
	b.mu.Unlock()
	for _, c := range conns {
		if interest {
			b.sendStatement(c, msgInterest, interestMsg{Topics: in})
		}
		if graph {
			b.sendStatement(c, msgGraph, g)
		}
	}
}

// interner shares the strings and QoS encodings that many endpoints of a
// graph have in common (topic, type, type hash, node, path: a thousand
// topics read by eight processes repeat each eight times), so a graph of
// thousands of endpoints holds each distinct value once.
type interner struct {
	strs map[string]string
	qos  map[string][]byte
}

func (in *interner) str(s string) string {
	if v, ok := in.strs[s]; ok {
		return v
	}
	if in.strs == nil {
		in.strs, in.qos = map[string]string{}, map[string][]byte{}
	}
	in.strs[s] = s
	return s
}

// endpoint interns e's repeated fields (graph QoS bytes are never written
// after they are made, so endpoints may share them).
func (in *interner) endpoint(e graphEndpoint) graphEndpoint {
	e.Topic, e.Type, e.TypeHash, e.Kind = in.str(e.Topic), in.str(e.Type), in.str(e.TypeHash), in.str(e.Kind)
	e.Node, e.Path = in.str(e.Node), in.str(e.Path)
	if q, ok := in.qos[string(e.QoS)]; ok {
		e.QoS = q
	} else {
		in.qos[string(e.QoS)] = e.QoS
	}
	return e
}

package benchscale

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Child roles (benche2e.RegisterChild): each runs in its host's network
// namespace with its host's RGAPS_SHM_PREFIX and answers one request at a
// time over its control socket.
const (
	rolePub   = "scale-pub"
	roleSub   = "scale-sub"
	roleWatch = "scale-watch"
)

func init() {
	benche2e.RegisterChild(rolePub, pubMain)
	benche2e.RegisterChild(roleSub, subMain)
	benche2e.RegisterChild(roleWatch, watchMain)
}

// msgType is the type of every topic of the benchmark.
const msgType = "rgaps_bench/msg/Scale"

// msgSize is the size of every message: the topic index and a magic.
const msgSize = 64

// magic marks the benchmark's messages.
const magic = 0x5343414c45524741 // "AGRELACS"

// topicName is topic i of a run.
func topicName(i int) string { return fmt.Sprintf("/scale/t%05d", i) }

type (
	// req is every request of the harness; a role reads the fields it
	// needs.
	req struct {
		Op string `json:"op"`
		// From and To are the topics [From, To) of a publisher or
		// subscriber process.
		From int `json:"from"`
		To   int `json:"to"`
		// Kind and Count: the watcher waits until its daemon's status shows
		// Count remote endpoints of Kind ("publisher", "subscription"), or
		// (Kind "peer") a peer that is up.
		Kind    string        `json:"kind"`
		Count   int           `json:"count"`
		Timeout time.Duration `json:"timeout_ns"`
	}
	// reply carries times as Unix nanoseconds (one machine, one clock).
	reply struct {
		benche2e.Status
		At   int64 `json:"at"`   // when the step was done
		Seen int   `json:"seen"` // what the watcher saw last
	}
)

// openDomain opens the engine with the environment's prefix and pool
// size (the harness sets them per host).
func openDomain() (*zerocopy.Domain, error) {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return nil, err
	}
	return zerocopy.Open(cfg)
}

var scaleQoS = qos.Profile{History: qos.HistoryKeepLast, Depth: 4, Reliability: qos.ReliabilityReliable}

// serveEndpoints runs a publisher or subscriber process: "open" opens
// the domain and one endpoint per topic [From, To) with open; every other
// request goes to handle with them.
func serveEndpoints[E interface{ Close() error }](open func(d *zerocopy.Domain, topic int) (E, error), handle func(r req, eps []E, from int) reply) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	var d *zerocopy.Domain
	var eps []E
	var from int
	defer func() {
		for _, e := range eps {
			e.Close()
		}
		if d != nil {
			d.Close()
		}
	}()
	return benche2e.Serve(ctl, func(r req) any {
		if r.Op != "open" {
			return handle(r, eps, from)
		}
		var err error
		if d, err = openDomain(); err != nil {
			return reply{Status: benche2e.Fail(err)}
		}
		from = r.From
		for i := r.From; i < r.To; i++ {
			e, err := open(d, i)
			if err != nil {
				return reply{Status: benche2e.Fail(fmt.Errorf("topic %s: %w", topicName(i), err))}
			}
			eps = append(eps, e)
		}
		return reply{At: time.Now().UnixNano()}
	})
}

func unknownOp(r req) reply { return reply{Status: benche2e.Fail(fmt.Errorf("unknown op %q", r.Op))} }

// pubMain is a publisher process on host a: "open" creates a publisher
// per topic, "publish" publishes one message on each topic as soon as
// its publisher is matched (by host a's bridge subscription, once host
// b's interest arrived).
func pubMain([]string) error {
	return serveEndpoints(func(d *zerocopy.Domain, i int) (*zerocopy.Publisher, error) {
		return d.NewPublisher(zerocopy.EndpointSpec{Topic: topicName(i), Type: msgType, Node: "/scale_pub", QoS: scaleQoS})
	}, func(r req, pubs []*zerocopy.Publisher, from int) reply {
		if r.Op != "publish" {
			return unknownOp(r)
		}
		err := publishMatched(pubs, from, r.Timeout)
		return reply{Status: benche2e.Fail(err), At: time.Now().UnixNano()}
	})
}

// publishMatched publishes one message on every publisher once it is
// matched, polling the others.
func publishMatched(pubs []*zerocopy.Publisher, from int, timeout time.Duration) error {
	done := make([]bool, len(pubs))
	left := len(pubs)
	deadline := time.Now().Add(timeout)
	for left > 0 {
		for i, p := range pubs {
			if done[i] || p.Matched() == 0 {
				continue
			}
			var b [msgSize]byte
			binary.LittleEndian.PutUint64(b[0:], magic)
			binary.LittleEndian.PutUint64(b[8:], uint64(from+i))
			if err := p.Publish(b[:]); err != nil {
				return fmt.Errorf("topic %s: %w", topicName(from+i), err)
			}
			done[i] = true
			left--
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d publishers were not matched by the bridge within %v", left, len(pubs), timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// subMain is a subscriber process on host b: "open" subscribes to its
// topics, "first" waits until every subscription has taken a message
// (checked: the magic and its own topic) and answers when the last one
// came.
func subMain([]string) error {
	return serveEndpoints(func(d *zerocopy.Domain, i int) (*zerocopy.Subscription, error) {
		return d.NewSubscription(zerocopy.EndpointSpec{Topic: topicName(i), Type: msgType, Node: "/scale_sub", QoS: scaleQoS})
	}, func(r req, subs []*zerocopy.Subscription, from int) reply {
		if r.Op != "first" {
			return unknownOp(r)
		}
		at, err := firstMessages(subs, from, r.Timeout)
		return reply{Status: benche2e.Fail(err), At: at}
	})
}

// firstMessages waits until every subscription took a message and
// returns when the last one was taken.
func firstMessages(subs []*zerocopy.Subscription, from int, timeout time.Duration) (int64, error) {
	waiting := make([]int, len(subs))
	for i := range waiting {
		waiting[i] = i
	}
	var last int64
	deadline := time.Now().Add(timeout)
	items := make([]zerocopy.Waitable, 0, len(subs))
	ready := make([]bool, len(subs))
	for len(waiting) > 0 {
		items = items[:0]
		for _, i := range waiting {
			items = append(items, subs[i])
		}
		left := time.Until(deadline)
		if left <= 0 {
			return last, fmt.Errorf("%d of %d subscriptions got no message within %v (the first waiting: %s)", len(waiting), len(subs), timeout, topicName(from+waiting[0]))
		}
		err := zerocopy.Wait(items, ready[:len(items)], min(left, time.Second), 0)
		if err != nil && !errors.Is(err, zerocopy.ErrTimeout) {
			return last, err
		}
		still := waiting[:0]
		for k, i := range waiting {
			if !ready[k] {
				still = append(still, i)
				continue
			}
			smp, err := subs[i].Take()
			if errors.Is(err, zerocopy.ErrNoData) {
				still = append(still, i)
				continue
			}
			if err != nil {
				return last, fmt.Errorf("topic %s: %w", topicName(from+i), err)
			}
			b := smp.Bytes()
			ok := len(b) == msgSize && binary.LittleEndian.Uint64(b) == magic && binary.LittleEndian.Uint64(b[8:]) == uint64(from+i)
			smp.Return()
			if !ok {
				return last, fmt.Errorf("topic %s: a message that is not the benchmark's for this topic (%d bytes)", topicName(from+i), len(b))
			}
			last = time.Now().UnixNano()
		}
		waiting = still
	}
	return last, nil
}

// watchMain asks its host's daemon (status socket, which lives in the
// host's network namespace) what it sees of the other host.
func watchMain(args []string) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return err
	}
	return benche2e.Serve(ctl, func(r req) any {
		if r.Op != "wait" {
			return unknownOp(r)
		}
		seen, err := waitStatus(cfg, r.Kind, r.Count, r.Timeout)
		return reply{Status: benche2e.Fail(err), At: time.Now().UnixNano(), Seen: seen}
	})
}

// watchPoll is how often the watcher asks the daemon: each answer is the
// whole remote graph, so asking costs the daemon a little.
const watchPoll = 25 * time.Millisecond

// waitStatus polls the daemon's status until it shows count remote
// endpoints of kind (or, kind "peer", a peer up).
func waitStatus(cfg zerocopy.Config, kind string, count int, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	seen := 0
	var lastErr error
	for {
		st, err := status.Query(cfg)
		if err == nil {
			seen = 0
			for _, p := range st.Peers {
				if kind == "peer" {
					if p.Up {
						seen++
					}
					continue
				}
				for _, ep := range p.Endpoints {
					if ep.Kind == kind {
						seen++
					}
				}
			}
			if seen >= count {
				return seen, nil
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			if lastErr != nil {
				return seen, fmt.Errorf("the daemon's status: %w", lastErr)
			}
			return seen, fmt.Errorf("the daemon saw %d %ss of the other host within %v, want %d", seen, kind, timeout, count)
		}
		time.Sleep(watchPoll)
	}
}

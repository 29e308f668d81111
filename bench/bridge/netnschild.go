package benchbridge

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The child processes of -netns (benche2e.RegisterChild roles), each in
// its host's network namespace with its host's shared-memory prefix: the
// publisher on host a, the subscriber on host b, and the two halves of
// the bare loop. The publisher and the subscriber share a socket pair
// (fd 4 in each) on which the subscriber returns credits, two bytes per
// batch (topic, messages taken): the window of the in-process harness,
// across processes.
const (
	rolePub      = "bridge-netns-pub"
	roleSub      = "bridge-netns-sub"
	roleBareRecv = "bridge-netns-bare-recv"
	roleBareSend = "bridge-netns-bare-send"
	creditFD     = 4
)

func init() {
	benche2e.RegisterChild(rolePub, pubMain)
	benche2e.RegisterChild(roleSub, subMain)
	benche2e.RegisterChild(roleBareRecv, bareRecvMain)
	benche2e.RegisterChild(roleBareSend, bareSendMain)
}

type (
	// nreq is every request of the -netns harness; a role reads the
	// fields it needs.
	nreq struct {
		Op      string        `json:"op"`
		Topics  int           `json:"topics"`
		Size    int           `json:"size"`
		Verify  bool          `json:"verify"`
		N       int           `json:"n"`      // messages per topic, rounds, writes
		Window  int           `json:"window"` // run: per topic
		Every   int           `json:"every"`  // take: credit batch
		Timeout time.Duration `json:"timeout_ns"`
		Gap     time.Duration `json:"gap_ns,omitempty"` // latency: the pause before each publish
		// The bare loop: the provider's libfabric name, the local node,
		// the receiver's address and region.
		Provider string                 `json:"provider,omitempty"`
		Node     string                 `json:"node,omitempty"`
		Addr     string                 `json:"addr,omitempty"`
		Region   transport.RemoteRegion `json:"region"`
	}
	nrep struct {
		benche2e.Status
		At       int64    `json:"at"` // Unix ns (bare loop: CLOCK_MONOTONIC ns)
		Done     int      `json:"done"`
		Lat      []int64  `json:"lat,omitempty"`
		Counters counters `json:"counters"`
		Addr     string   `json:"addr,omitempty"`
		Region   transport.RemoteRegion
	}
)

func nfail(err error) nrep { return nrep{Status: benche2e.Fail(err)} }

// openChildDomain opens the engine with the environment's prefix and pool.
func openChildDomain() (*zerocopy.Domain, error) {
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return nil, err
	}
	return zerocopy.Open(cfg)
}

func topicName(t int) string { return fmt.Sprintf("/bench_bridge/t%d", t) }

// linkCounters sums this host's daemon's link counters of role.
func linkCounters(role string) (counters, error) {
	var c counters
	cfg, err := zerocopy.Config{}.FromEnv()
	if err != nil {
		return c, err
	}
	st, err := status.Query(cfg)
	if err != nil {
		return c, err
	}
	for _, p := range st.Peers {
		for _, l := range p.Links {
			if l.Role != role {
				continue
			}
			c.Records += l.Records
			c.Resent += l.Resent
			c.Dropped += l.Dropped
			c.Failures += l.Failures
			c.WriteBacks += l.WriteBacks
			c.Dups += l.Dups
			if role == "writer" {
				c.Acked += l.Messages
			}
		}
	}
	return c, nil
}

// streamChild is what the publisher and the subscriber process share:
// their domain, their streams (one per topic), and the credit socket.
type streamChild struct {
	credits *os.File
	d       *zerocopy.Domain
	ss      []*stream
}

// serveStreams runs a publisher (pub) or subscriber process: "open" opens
// the domain and a stream per topic with open, "counters" answers the
// daemon's link counters of the role and the messages handled; every
// other request goes to handle.
func serveStreams(pub bool, open func(c *streamChild, r nreq) error, handle func(c *streamChild, r nreq) nrep) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	c := &streamChild{credits: os.NewFile(creditFD, "credits")}
	defer func() {
		for _, s := range c.ss {
			if pub {
				s.pub.Close()
			} else {
				s.sub.Close()
			}
		}
		if c.d != nil {
			c.d.Close()
		}
	}()
	done := func() int {
		n := 0
		for _, s := range c.ss {
			n += s.sent + s.received
		}
		return n
	}
	role := map[bool]string{true: "writer", false: "reader"}[pub]
	return benche2e.Serve(ctl, func(r nreq) any {
		switch r.Op {
		case "open":
			var err error
			if c.d, err = openChildDomain(); err != nil {
				return nfail(err)
			}
			return nrep{Status: benche2e.Fail(open(c, r))}
		case "counters":
			lc, err := linkCounters(role)
			return nrep{Status: benche2e.Fail(err), Counters: lc, Done: done()}
		}
		rep := handle(c, r)
		rep.Done = done()
		return rep
	})
}

// pubMain is the publisher on host a.
func pubMain([]string) error {
	var got []chan int // credits per topic
	return serveStreams(true, func(c *streamChild, r nreq) error {
		pat := newPattern(r.Size)
		for t := range r.Topics {
			pub, err := c.d.NewPublisher(zerocopy.EndpointSpec{Topic: topicName(t), Type: benchType, Node: "/bench_pub", QoS: benchQoS})
			if err != nil {
				return err
			}
			c.ss = append(c.ss, &stream{topic: t, pub: pub, pat: pat})
			got = append(got, make(chan int, 1<<16))
		}
		go readCredits(c.credits, got)
		deadline := time.Now().Add(r.Timeout)
		for _, s := range c.ss {
			for s.pub.Matched() == 0 {
				if time.Now().After(deadline) {
					return fmt.Errorf("topic %s: the bridge on host a did not subscribe within %v", topicName(s.topic), r.Timeout)
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}, func(c *streamChild, r nreq) nrep {
		switch r.Op {
		case "warm", "latency":
			// One message at a time on every topic (warm) or on the first
			// (latency), each waiting for its credit.
			which := c.ss
			if r.Op == "latency" {
				which = c.ss[:1]
			}
			for _, s := range which {
				for range r.N {
					if r.Op == "latency" && r.Gap > 0 {
						time.Sleep(r.Gap)
					}
					if err := s.publish(); err != nil {
						return nfail(err)
					}
					if err := waitCredit(got[s.topic], r.Timeout); err != nil {
						return nfail(err)
					}
				}
			}
			return nrep{}
		case "run":
			at := time.Now().UnixNano()
			err := pubRun(c.ss, got, r.N, r.Window, r.Timeout)
			return nrep{Status: benche2e.Fail(err), At: at}
		}
		return nfail(fmt.Errorf("unknown op %q", r.Op))
	})
}

// readCredits hands the subscriber's credits to the topics' channels
// until the socket closes.
func readCredits(r io.Reader, got []chan int) {
	var b [2]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return
		}
		if int(b[0]) < len(got) {
			got[b[0]] <- int(b[1])
		}
	}
}

func waitCredit(ch chan int, timeout time.Duration) error {
	select {
	case <-ch:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("the subscriber took nothing for %v", timeout)
	}
}

// pubRun publishes per messages on every topic at once, each with at most
// window published and not yet credited, and returns once every credit
// came (none is left over for the next run, whose window it would widen).
func pubRun(ss []*stream, got []chan int, per, window int, timeout time.Duration) error {
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := 0
			credit := func() bool {
				select {
				case n := <-got[s.topic]:
					out -= n
					return true
				case <-time.After(timeout):
					errs[i] = fmt.Errorf("topic %d: the subscriber took nothing for %v", s.topic, timeout)
					return false
				}
			}
			for range per {
				for out >= window {
					if !credit() {
						return
					}
				}
				if err := s.publish(); err != nil {
					errs[i] = fmt.Errorf("publish: %w", err)
					return
				}
				out++
			}
			for out > 0 {
				if !credit() {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// subMain is the subscriber on host b.
func subMain([]string) error {
	var creditMu sync.Mutex
	return serveStreams(false, func(c *streamChild, r nreq) error {
		pat := newPattern(r.Size)
		for t := range r.Topics {
			sub, err := c.d.NewSubscription(zerocopy.EndpointSpec{Topic: topicName(t), Type: benchType, Node: "/bench_sub", QoS: benchQoS})
			if err != nil {
				return err
			}
			c.ss = append(c.ss, &stream{topic: t, sub: sub, pat: pat, verify: r.Verify})
		}
		return nil
	}, func(c *streamChild, r nreq) nrep {
		credit := func(topic, n int) error {
			creditMu.Lock()
			defer creditMu.Unlock()
			_, err := c.credits.Write([]byte{byte(topic), byte(n)})
			return err
		}
		switch r.Op {
		case "take":
			at, err := subTake(c.ss, r.N, min(max(r.Every, 1), 255), credit)
			return nrep{Status: benche2e.Fail(err), At: at}
		case "latency":
			s := c.ss[0]
			lat := make([]int64, 0, r.N)
			for range r.N {
				smp, err := s.sub.TakeWait(takeTimeout)
				t1 := time.Now().UnixNano()
				if err != nil {
					return nfail(fmt.Errorf("message %d: %w", s.expect, err))
				}
				src := smp.Info().SourceTimestamp.UnixNano()
				if err := s.check(smp); err != nil {
					return nfail(err)
				}
				lat = append(lat, t1-src)
				if err := credit(s.topic, 1); err != nil {
					return nfail(err)
				}
			}
			return nrep{Lat: lat}
		}
		return nfail(fmt.Errorf("unknown op %q", r.Op))
	})
}

// subTake takes per messages on every topic at once, checking each and
// crediting the publisher every batch; it returns when the last came.
func subTake(ss []*stream, per, every int, credit func(topic, n int) error) (int64, error) {
	errs := make([]error, len(ss))
	ends := make([]int64, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owed := 0
			for range per {
				if err := s.take(nil); err != nil {
					errs[i] = err
					return
				}
				if owed++; owed == every {
					if errs[i] = credit(s.topic, owed); errs[i] != nil {
						return
					}
					owed = 0
				}
			}
			ends[i] = time.Now().UnixNano()
			if owed > 0 {
				errs[i] = credit(s.topic, owed)
			}
		}()
	}
	wg.Wait()
	var end int64
	for _, e := range ends {
		end = max(end, e)
	}
	return end, errors.Join(errs...)
}

// bareRecvMain is the bare loop's receiver on host b: "listen" answers
// its address and region, "recv" the time the last immediate arrived,
// and the harness closes it once the sender stopped.
func bareRecvMain([]string) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	var r *fabric.BareReceiver
	defer func() {
		if r != nil {
			r.Close()
		}
	}()
	return benche2e.Serve(ctl, func(q nreq) any {
		switch q.Op {
		case "listen":
			var err error
			if r, err = fabric.ListenBare(q.Provider, q.Size, fabric.Options{Node: q.Node, Timeout: q.Timeout}); err != nil {
				return nfail(err)
			}
			return nrep{Addr: r.Addr(), Region: r.Region()}
		case "recv":
			at, err := r.Receive(q.N)
			return nrep{Status: benche2e.Fail(err), At: at}
		}
		return nfail(fmt.Errorf("unknown op %q", q.Op))
	})
}

// bareSendMain is the bare loop's sender on host a: one "send" request,
// then the transfer is kept going until a second frame (any) arrives;
// the reply carries the time of the first post.
func bareSendMain([]string) error {
	ctl, err := benche2e.ChildControl()
	if err != nil {
		return err
	}
	var q nreq
	if err := benchutil.ReadFrame(ctl, &q, 1<<20); err != nil {
		return err
	}
	s, err := fabric.DialBare(q.Provider, q.Addr, q.Size, fabric.Options{Node: q.Node, Timeout: q.Timeout})
	if err != nil {
		return benchutil.WriteFrame(ctl, nfail(err))
	}
	defer s.Close()
	stop := make(chan struct{})
	go func() {
		var any nreq
		benchutil.ReadFrame(ctl, &any, 1<<20)
		close(stop)
	}()
	at, err := s.Send(q.N, q.Region, stop)
	return benchutil.WriteFrame(ctl, nrep{Status: benche2e.Fail(err), At: at})
}

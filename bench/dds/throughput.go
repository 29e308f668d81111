package benchdds

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/gateway"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// ddsSink is the DDS subscriber of a throughput cell: a reader in this
// process or a child process.
type ddsSink interface {
	ready() bool // matched the gateway's writer
	// finish returns once the subscriber has want messages, or (all
	// false: a KEEP_LAST one, which may miss some) got none for ddsIdle,
	// or at deadline: how many it got and when the last came.
	finish(want int64, all bool, deadline time.Time) (got int64, last time.Time, err error)
	close() error
}

// localSink is a DDS reader of this process counting in a goroutine.
type localSink struct {
	r     *dds.Reader
	count atomic.Int64
	last  atomic.Int64 // Unix ns
	size  int
	stop  chan struct{}
	done  chan error
}

func (h *harness) localSink(topic string, kind string, size int) (ddsSink, error) {
	q, err := childQoS(kind)
	if err != nil {
		return nil, err
	}
	r, err := h.reader(topic, q)
	if err != nil {
		return nil, err
	}
	s := &localSink{r: r, size: size, stop: make(chan struct{}), done: make(chan error, 1)}
	go func() { s.done <- s.run() }()
	return s, nil
}

func (s *localSink) run() error {
	for {
		select {
		case <-s.stop:
			return nil
		default:
		}
		m, ok, err := s.r.Take()
		if err != nil {
			return err
		}
		if !ok {
			s.r.Wait(20 * time.Millisecond)
			continue
		}
		if len(m.Data) < s.size {
			return fmt.Errorf("DDS sample of %d bytes, want %d", len(m.Data), s.size)
		}
		s.count.Add(1)
		s.last.Store(time.Now().UnixNano())
	}
}

func (s *localSink) ready() bool { return matched(s.r.Matched, 1) }

func (s *localSink) finish(want int64, all bool, deadline time.Time) (int64, time.Time, error) {
	err := awaitSink(want, all, deadline, func() (int64, time.Time, error) {
		return s.count.Load(), time.Unix(0, s.last.Load()), nil
	})
	close(s.stop)
	if rerr := <-s.done; err == nil {
		err = rerr
	}
	return s.count.Load(), time.Unix(0, s.last.Load()), err
}

func (s *localSink) close() error { return s.r.Close() }

// kidSink is a DDS reader in a child process (ChildCommand recv).
type kidSink struct{ k *kid }

func (h *harness) kidSink(topic string, kind string, size int) (ddsSink, error) {
	k, err := h.startKid("recv", topic, size, kind)
	if err != nil {
		return nil, err
	}
	return kidSink{k}, nil
}

func (s kidSink) ready() bool { return s.k.matched() }

func (s kidSink) report() (int64, time.Time, error) {
	if err := s.k.send("report"); err != nil {
		return 0, time.Time{}, err
	}
	l, err := s.k.expect("count ", 10*time.Second)
	if err != nil {
		return 0, time.Time{}, err
	}
	var n, last int64
	if _, err := fmt.Sscanf(l, "count %d %d", &n, &last); err != nil {
		return 0, time.Time{}, fmt.Errorf("%s: %q: %w", s.k.name, l, err)
	}
	return n, time.Unix(0, last), nil
}

func (s kidSink) finish(want int64, all bool, deadline time.Time) (int64, time.Time, error) {
	err := awaitSink(want, all, deadline, s.report)
	if err != nil {
		return 0, time.Time{}, err
	}
	return s.report()
}

func (s kidSink) close() error { return s.k.close() }

// awaitSink polls report until the sink has want messages, or (not all)
// got none for ddsIdle, or deadline passed (an error when all).
func awaitSink(want int64, all bool, deadline time.Time, report func() (int64, time.Time, error)) error {
	var seen int64
	idle := time.Now()
	for {
		n, _, err := report()
		if err != nil || n >= want {
			return err
		}
		if time.Now().After(deadline) {
			if all {
				return fmt.Errorf("the KEEP_ALL subscriber got %d of %d messages", n, want)
			}
			return nil
		}
		if n != seen {
			seen, idle = n, time.Now()
		} else if !all && time.Since(idle) > ddsIdle {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// gatewayKeepsAll reports whether the gateway's subscription of topic is
// KEEP_ALL: it saw the KEEP_ALL DDS subscriber (before, it may be a
// KEEP_LAST one, to be remade).
func (h *harness) gatewayKeepsAll(topic string) bool {
	eps, err := h.dom.Endpoints(topic)
	if err != nil {
		return false
	}
	for _, ep := range eps {
		if ep.Republish && ep.Kind == zerocopy.KindSubscription && ep.Node == gateway.Node && ep.QoS.History == qos.HistoryKeepAll {
			return true
		}
	}
	return false
}

// throughput measures one (layout, case, size) cell on a topic of its
// own: the publisher publishes for Duration, then the cell ends when every
// reader has every message (a KEEP_LAST DDS subscriber: what it got).
func (h *harness) throughput(ctx context.Context, layout, kase string, size int) (ThroughputCell, error) {
	c := ThroughputCell{Layout: layout, Case: kase, Size: size, Subs: h.o.Subs}
	topic := fmt.Sprintf("%s_%s_tp_%d", h.topic, h.tag(layout, false), size) // not carried
	if kase != CaseRgaps {
		topic = fmt.Sprintf("%s_%s_tp_%d_%d", h.topic, h.tag(layout, true), size, slices.Index(Cases, kase))
	}
	var subs []*zerocopy.Subscription
	defer func() {
		for _, s := range subs {
			s.Close()
		}
	}()
	for range h.o.Subs {
		s, err := h.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: tpQoS})
		if err != nil {
			return c, err
		}
		subs = append(subs, s)
	}
	var sink ddsSink
	if kind := sinkQoS[kase]; kind != "" {
		var err error
		if layout == LayoutProcs {
			sink, err = h.kidSink(topic, kind, size)
		} else {
			sink, err = h.localSink(topic, kind, size)
		}
		if err != nil {
			return c, err
		}
		defer sink.close()
	}
	p, err := h.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: tpQoS})
	if err != nil {
		return c, err
	}
	defer p.Close()
	want := h.o.Subs
	if sink != nil {
		want++ // the gateway subscribes while a DDS reader is matched
	}
	if err := waitFor(ctx, "the subscriptions to match", func() bool {
		return p.Matched() >= want && (sink == nil || sink.ready()) && (kase != CaseGatewayR || h.gatewayKeepsAll(topic))
	}); err != nil {
		return c, err
	}

	var published atomic.Int64
	done := make(chan struct{}) // closed when the publisher has stopped; published is final
	got := make([]atomic.Int64, h.o.Subs)
	lastAt := make([]atomic.Int64, h.o.Subs) // ns since start of the subscription's last message
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(h.o.Duration + 30*time.Second)
	finished := func(k int) bool {
		select {
		case <-done:
			return got[k].Load() >= published.Load()
		default:
			return false
		}
	}
	errc := make(chan error, h.o.Subs+1)
	for k, s := range subs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !finished(k) {
				if time.Now().After(deadline) {
					errc <- fmt.Errorf("subscription %d got %d of %d messages", k, got[k].Load(), published.Load())
					return
				}
				smp, err := s.TakeWait(50 * time.Millisecond)
				if errors.Is(err, zerocopy.ErrTimeout) || errors.Is(err, zerocopy.ErrNoData) {
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				smp.Return()
				got[k].Add(1)
				lastAt[k].Store(int64(time.Since(start)))
			}
		}()
	}
	msg := StringCDR(size)
	var perr error
	for end := start.Add(h.o.Duration); time.Now().Before(end) && ctx.Err() == nil; {
		if err := p.Publish(msg); err != nil {
			if errors.Is(err, zerocopy.ErrQueueFull) || errors.Is(err, zerocopy.ErrPoolExhausted) {
				continue // a reader is behind: the stream's pace
			}
			perr = err
			break
		}
		published.Add(1)
	}
	close(done)
	wg.Wait()
	close(errc)
	if perr != nil {
		return c, perr
	}
	if err := ctx.Err(); err != nil {
		return c, err
	}
	if err := <-errc; err != nil {
		return c, err
	}
	c.Messages = published.Load()
	var last int64
	for k := range got {
		last = max(last, lastAt[k].Load())
		c.Delivered = append(c.Delivered, got[k].Load())
	}
	if sink != nil {
		// A KEEP_ALL subscriber is a reader the stream is for, so the
		// cell ends when it has every message; a KEEP_LAST one is not
		// waited for (the publisher does not wait for it either): what
		// it got is counted, not when.
		all := kase == CaseGatewayR
		n, at, err := sink.finish(c.Messages, all, deadline.Add(time.Minute))
		if err != nil {
			return c, fmt.Errorf("DDS subscriber: %w", err)
		}
		c.DDSGot = n
		if all && n > 0 {
			last = max(last, int64(at.Sub(start)))
		}
	}
	c.Elapsed = benchutil.Seconds(time.Duration(last))
	if last > 0 {
		c.Rate = float64(c.Messages) / time.Duration(last).Seconds()
	}
	return c, nil
}

// throughputDDS measures DDS→DDS KEEP_ALL between two processes (layout
// LayoutProcs only): a writer process writes for Duration, the cell ends
// when the reader process has every message.
func (h *harness) throughputDDS(ctx context.Context, layout, kase string, size int) (ThroughputCell, error) {
	c := ThroughputCell{Layout: layout, Case: kase, Size: size}
	topic := fmt.Sprintf("%s_%s_tp_%d_dds", h.topic, h.tag(layout, false), size)
	sink, err := h.kidSink(topic, "all", size)
	if err != nil {
		return c, err
	}
	defer sink.close()
	w, err := h.startKid("send", topic, size, "all")
	if err != nil {
		return c, err
	}
	defer w.close()
	if err := waitFor(ctx, "the DDS writer and reader to match", func() bool { return w.matched() && sink.ready() }); err != nil {
		return c, err
	}
	if err := w.send("burst " + h.o.Duration.String()); err != nil {
		return c, err
	}
	l, err := w.expect("sent ", h.o.Duration+time.Minute)
	if err != nil {
		return c, err
	}
	var startNs int64
	if _, err := fmt.Sscanf(l, "sent %d %d", &c.Messages, &startNs); err != nil {
		return c, fmt.Errorf("%s: %q: %w", w.name, l, err)
	}
	n, last, err := sink.finish(c.Messages, true, time.Now().Add(time.Minute))
	if err != nil {
		return c, fmt.Errorf("DDS reader: %w", err)
	}
	c.DDSGot = n
	if d := last.Sub(time.Unix(0, startNs)); d > 0 {
		c.Elapsed = benchutil.Seconds(d)
		c.Rate = float64(c.Messages) / d.Seconds()
	}
	return c, nil
}

package benchbridge

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The streams of a run: one topic each, a publisher on host a and a
// subscription on host b, with the loan, publish, take and check of the
// timed and verification passes.

// stream is one topic: a publisher on host a, a subscription on host b.
type stream struct {
	topic    int
	pub      *zerocopy.Publisher
	sub      *zerocopy.Subscription
	pat      *pattern
	verify   bool
	next     uint64 // next sequence number to publish
	expect   uint64 // next sequence number the subscription must get
	sent     int
	received int
}

var benchQoS = qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable}

const benchType = "rgaps_bench/msg/Blob"

// openStream opens a topic's subscription on host b and publisher on
// host a, and waits until host a's bridge subscribed. A bridge that
// missed host b's interest (see resubscribes) is nudged by opening the
// subscription again, which sends the interest anew.
func openStream(p *pair, name string, topic int, pat *pattern, verify bool) (*stream, error) {
	spec := zerocopy.EndpointSpec{Topic: name, Type: benchType, Node: "/bench_sub", QoS: benchQoS}
	sub, err := p.b.Domain().NewSubscription(spec)
	if err != nil {
		return nil, err
	}
	pub, err := p.a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: name, Type: benchType, Node: "/bench_pub", QoS: benchQoS})
	if err != nil {
		sub.Close()
		return nil, err
	}
	s := &stream{topic: topic, pub: pub, sub: sub, pat: pat, verify: verify}
	deadline := time.Now().Add(setUpTimeout)
	nudge := time.Now().Add(time.Second)
	for pub.Matched() == 0 {
		if time.Now().After(deadline) {
			s.close()
			return nil, fmt.Errorf("topic %s: the bridge on host a did not subscribe", name)
		}
		if time.Now().After(nudge) {
			p.resubscribes.Add(1)
			s.sub.Close()
			if s.sub, err = p.b.Domain().NewSubscription(spec); err != nil {
				pub.Close()
				return nil, err
			}
			nudge = time.Now().Add(time.Second)
		}
		time.Sleep(time.Millisecond)
	}
	return s, nil
}

func (s *stream) close() error {
	return errors.Join(s.pub.Close(), s.sub.Close())
}

// loan takes a loan and fills it with the next message: the whole
// pattern, or (stampOnly) only its 16-byte stamp (timed runs).
func (s *stream) loan(stampOnly bool) (*zerocopy.Loan, error) {
	l, err := s.pub.Loan(s.pat.size)
	if err != nil {
		return nil, err
	}
	if stampOnly {
		s.pat.stampInto(l.Bytes(), s.next, s.topic)
	} else {
		s.pat.fill(l.Bytes(), s.next, s.topic)
	}
	s.next++
	return l, nil
}

func (s *stream) publish() error { return s.publishAs(false) }

func (s *stream) publishAs(stampOnly bool) error {
	l, err := s.loan(stampOnly)
	if err != nil {
		return err
	}
	if err := l.Publish(); err != nil {
		return err
	}
	s.sent++
	return nil
}

// take waits for the next message, checks it and returns it to the pool.
func (s *stream) take(stop <-chan struct{}) error { return s.takeAs(stop, s.verify) }

// takeAs is take checking the payload's CRC-32C only with crc (the stamp
// always).
func (s *stream) takeAs(stop <-chan struct{}, crc bool) error {
	deadline := time.Now().Add(takeTimeout)
	for {
		smp, err := s.sub.TakeWait(100 * time.Millisecond)
		if errors.Is(err, zerocopy.ErrTimeout) {
			select {
			case <-stop:
				return errStopped
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("topic %d: message %d did not arrive within %v", s.topic, s.expect, takeTimeout)
			}
			continue
		}
		if err != nil {
			return err
		}
		return s.checkAs(smp, crc)
	}
}

var errStopped = errors.New("stopped")

// errCorrupt reports a message that did not arrive intact.
var errCorrupt = errors.New("message not intact")

func (s *stream) check(smp *zerocopy.Sample) error { return s.checkAs(smp, s.verify) }

func (s *stream) checkAs(smp *zerocopy.Sample, crc bool) error {
	err := s.pat.check(smp.Bytes(), s.expect, s.topic, crc)
	smp.Return()
	if err != nil {
		return fmt.Errorf("topic %d, message %d: %w: %v", s.topic, s.expect, errCorrupt, err)
	}
	s.expect++
	s.received++
	return nil
}

// warm sends k messages one at a time (set-up of links and topic maps,
// first-touch of pool pages).
func (s *stream) warm(k int) error {
	for range k {
		if err := s.publish(); err != nil {
			return err
		}
		if err := s.take(nil); err != nil {
			return err
		}
	}
	return nil
}

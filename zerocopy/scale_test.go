package zerocopy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func init() {
	// fanout TOPIC N MSGS: N subscriptions on TOPIC; print "ready"; take
	// MSGS messages on each, checking them; print "ok".
	testutil.Role("fanout", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(a[1])
		msgs, _ := strconv.Atoi(a[2])
		subs := make([]*Subscription, n)
		for i := range subs {
			if subs[i], err = d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", Node: "/fanout", QoS: fanoutQoS}); err != nil {
				return fmt.Errorf("subscription %d: %w", i, err)
			}
		}
		fmt.Println("ready")
		for m := range msgs {
			for i, s := range subs {
				smp, err := s.TakeWait(time.Minute)
				if err != nil {
					return fmt.Errorf("subscription %d, message %d: %w", i, m, err)
				}
				want := fanoutMessage(m)
				if string(smp.Bytes()) != string(want) {
					return fmt.Errorf("subscription %d, message %d: %q, want %q", i, m, smp.Bytes(), want)
				}
				smp.Return()
			}
		}
		fmt.Println("ok")
		return nil
	})
	// manysubs PREFIX-TOPIC N: subscribe to topics PREFIX-TOPIC0 … N-1,
	// print "ready", then wait to be killed.
	testutil.Role("manysubs", func(a []string) error {
		d, err := childDomain()
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(a[1])
		for i := range n {
			if _, err := d.NewSubscription(EndpointSpec{Topic: fmt.Sprintf("%s%d", a[0], i), Type: "t/msg/T", Node: "/manysubs", QoS: qos.Default()}); err != nil {
				return err
			}
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return nil
	})
}

// A process with more topics open than one janitor pass audits
// (janitorAudits) still reclaims, over a few passes, the endpoints a
// killed process left on every one of them.
func TestJanitorCoversManyTopics(t *testing.T) {
	const n = 3*janitorAudits + 5
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pubs := make([]*Publisher, n)
	for i := range pubs {
		if pubs[i], err = d.NewPublisher(EndpointSpec{Topic: fmt.Sprintf("/janitor_many/t%d", i), Type: "t/msg/T", Node: "/p", QoS: qos.Default()}); err != nil {
			t.Fatal(err)
		}
		defer pubs[i].Close()
	}
	c := testutil.Start(t, "manysubs", "/janitor_many/t", strconv.Itoa(n))
	c.Expect(t, "ready", time.Minute)
	for i, p := range pubs {
		if m := p.Matched(); m != 1 {
			t.Fatalf("publisher %d matched %d", i, m)
		}
	}
	c.Cmd.Process.Kill()
	c.Wait(10 * time.Second)
	testutil.Eventually(t, 30*time.Second, "every topic's dead subscription is reclaimed", func() bool {
		for _, p := range pubs {
			if p.Matched() != 0 {
				return false
			}
		}
		return true
	})
}

var fanoutQoS = qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable}

func fanoutMessage(m int) []byte { return []byte(fmt.Sprintf("fan-out message %d", m)) }

// 256 subscriptions on one topic, spread over 8 processes (32 each), all
// get every message of one publisher; the topic then takes endpoints up to
// its documented limit (MaxEndpoints, 1024 by default: publishers and
// subscriptions of every process on the host), and the next one fails with
// ErrTooManyEndpoints naming the topic and the limit.
func TestManySubscriberProcesses(t *testing.T) {
	const procs, per, msgs = 8, 32, 5
	const topic = "/fanout/many"
	d, err := childDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	pub, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", Node: "/p", QoS: fanoutQoS})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	var cs []*testutil.Child
	for range procs {
		cs = append(cs, testutil.Start(t, "fanout", topic, strconv.Itoa(per), strconv.Itoa(msgs)))
	}
	for _, c := range cs {
		c.Expect(t, "ready", time.Minute)
	}
	if m := pub.Matched(); m != procs*per {
		t.Fatalf("publisher matched %d subscriptions, want %d", m, procs*per)
	}
	for m := range msgs {
		if err := pub.Publish(fanoutMessage(m)); err != nil {
			t.Fatalf("message %d: %v", m, err)
		}
	}
	for i, c := range cs {
		c.Expect(t, "ok", time.Minute)
		if err := c.Wait(time.Minute); err != nil {
			t.Fatalf("subscriber process %d: %v; %s", i, err, c.Stderr())
		}
	}

	// The limit: this process fills the topic's endpoint table.
	limit := int(d.Config().MaxEndpoints)
	var extra []*Subscription
	defer func() {
		for _, s := range extra {
			s.Close()
		}
	}()
	for len(extra) < limit-1 {
		s, err := d.NewSubscription(EndpointSpec{Topic: topic, Type: "t/msg/T", Node: "/p", QoS: fanoutQoS})
		if err != nil {
			t.Fatalf("endpoint %d of at most %d: %v", len(extra)+2, limit, err)
		}
		extra = append(extra, s)
	}
	_, err = d.NewSubscription(EndpointSpec{Topic: topic, Type: "t/msg/T", Node: "/p", QoS: fanoutQoS})
	if !errors.Is(err, ErrTooManyEndpoints) || !strings.Contains(err.Error(), topic) || !strings.Contains(err.Error(), strconv.Itoa(limit)) {
		t.Fatalf("endpoint %d: %v, want ErrTooManyEndpoints naming the topic and %d", limit+1, err, limit)
	}
	t.Logf("endpoint %d: %v", limit+1, err)
}

// A graph segment this build makes holds 1024 nodes (a ROS process has at
// least one: 256 subscriber processes and their publisher need 257); the
// next registration fails with ErrTooManyNodes, and closing a node frees
// its slot.
func TestNodeTable(t *testing.T) {
	d, err := Open(Config{Domain: 15, PoolSize: 1 << 20, JanitorPeriod: 20 * time.Millisecond}) // a domain of its own: TestSquattedSegmentsRefused squats 12
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var nodes []*NodeHandle
	defer func() {
		for _, n := range nodes {
			n.Close()
		}
	}()
	for i := range defaultNodeCap {
		n, err := d.RegisterNode(fmt.Sprintf("n%d", i), "/scale", "/")
		if err != nil {
			t.Fatalf("node %d of %d: %v", i+1, defaultNodeCap, err)
		}
		nodes = append(nodes, n)
	}
	if all, err := d.Nodes(); err != nil || len(all) != defaultNodeCap {
		t.Fatalf("%d nodes listed (%v), want %d", len(all), err, defaultNodeCap)
	}
	_, err = d.RegisterNode("one_more", "/scale", "/")
	if !errors.Is(err, ErrTooManyNodes) || !strings.Contains(err.Error(), strconv.Itoa(defaultNodeCap)) {
		t.Fatalf("node %d: %v, want ErrTooManyNodes naming %d", defaultNodeCap+1, err, defaultNodeCap)
	}
	nodes[7].Close()
	nodes = append(nodes[:7], nodes[8:]...)
	n, err := d.RegisterNode("one_more", "/scale", "/")
	if err != nil {
		t.Fatalf("a freed slot: %v", err)
	}
	nodes = append(nodes, n)
}

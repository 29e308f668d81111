package zerocopy

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The bridge's endpoints never match each other, so a message a daemon
// brought in from another host is not sent back out; they still match
// every ordinary endpoint, and graph queries flag them.
func TestRepublishEndpointsDoNotLoop(t *testing.T) {
	d := openDomain(t, nil)
	q := qos.Default()
	spec := func(bridge bool) EndpointSpec {
		return EndpointSpec{Topic: "/loop", Type: "std_msgs/msg/String", Node: "/n", QoS: q, Republish: bridge}
	}
	bpub, err := d.NewPublisher(spec(true))
	if err != nil {
		t.Fatal(err)
	}
	defer bpub.Close()
	bsub, err := d.NewSubscription(spec(true))
	if err != nil {
		t.Fatal(err)
	}
	defer bsub.Close()
	sub := mustSub(t, d, "/loop", q)
	pub := mustPub(t, d, "/loop", q)

	if err := bpub.Publish([]byte("from another host")); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish([]byte("local")); err != nil {
		t.Fatal(err)
	}
	// The ordinary subscription gets both, the bridge subscription only
	// the local one.
	for _, want := range []string{"from another host", "local"} {
		smp, err := sub.TakeWait(time.Second)
		if err != nil || string(smp.Bytes()) != want {
			t.Fatalf("ordinary subscription: %v %q, want %q", err, smp.Bytes(), want)
		}
		smp.Return()
	}
	smp, err := bsub.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "local" {
		t.Fatalf("bridge subscription: %v, want the local message", err)
	}
	smp.Return()
	if smp, err := bsub.Take(); !errors.Is(err, ErrNoData) {
		t.Fatalf("bridge subscription got %q (%v): a bridge publisher's message looped back", smp.Bytes(), err)
	}
	if bpub.Matched() != 1 || bsub.Matched() != 1 {
		t.Errorf("bridge endpoints matched %d/%d peers, want 1/1 (the ordinary ones only)", bpub.Matched(), bsub.Matched())
	}
	eps, err := d.Endpoints("/loop")
	if err != nil {
		t.Fatal(err)
	}
	nb := 0
	for _, ep := range eps {
		if ep.Republish {
			nb++
		}
	}
	if nb != 2 || len(eps) != 4 {
		t.Errorf("graph: %d endpoints, %d flagged bridge; want 4 and 2", len(eps), nb)
	}
	tops, _ := d.Topics()
	if len(tops) != 1 || tops[0].Publishers != 1 || tops[0].Subscriptions != 1 || tops[0].Republishing != 2 {
		t.Errorf("topic counts %+v: want 1 publisher, 1 subscription, 2 bridged", tops)
	}
}

// PublishAs stamps the origin's timestamp and GID; Shrink and CopyIn let a
// writer reserve an upper bound and fill it piecewise.
func TestPublishAsShrinkCopyIn(t *testing.T) {
	d := openDomain(t, nil)
	q := qos.Default()
	sub := mustSub(t, d, "/origin", q)
	pub := mustPub(t, d, "/origin", q)
	l, err := pub.Loan(1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.CopyIn(0, []byte("hello ")); err != nil {
		t.Fatal(err)
	}
	if err := l.CopyIn(6, []byte("world")); err != nil {
		t.Fatal(err)
	}
	if err := l.CopyIn(998, []byte("xyz")); err == nil {
		t.Fatal("CopyIn past the end of the loan succeeded")
	}
	for _, n := range []int{0, -1, 1001} {
		if err := l.Shrink(n); !errors.Is(err, ErrInvalid) {
			t.Errorf("Shrink(%d): %v, want ErrInvalid", n, err)
		}
	}
	if err := l.Shrink(11); err != nil {
		t.Fatal(err)
	}
	o := Origin{Timestamp: time.Unix(1700000000, 42), GID: GID{1, 2, 3}}
	if err := l.PublishAs(o); err != nil {
		t.Fatal(err)
	}
	smp, err := sub.TakeWait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer smp.Return()
	if !bytes.Equal(smp.Bytes(), []byte("hello world")) {
		t.Errorf("got %q", smp.Bytes())
	}
	if info := smp.Info(); !info.SourceTimestamp.Equal(o.Timestamp) || info.Publisher != o.GID {
		t.Errorf("info %+v, want timestamp %v and GID %v", info, o.Timestamp, o.GID)
	}
	if err := l.Shrink(5); !errors.Is(err, ErrInvalid) {
		t.Errorf("Shrink after publish: %v, want ErrInvalid", err)
	}
}

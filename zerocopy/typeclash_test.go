package zerocopy

import (
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// A second type on a topic name creates an endpoint that never matches the
// first type's (as DDS does); both sides count incompatible-type status, the
// graph lists both types, and each type's traffic keeps flowing.
func TestSecondTypeOnTopic(t *testing.T) {
	d := openDomain(t, nil)
	pub := mustPub(t, d, "/typed", qos.Default()) // std_msgs/msg/String
	sub := mustSub(t, d, "/typed", qos.Default())
	other, err := d.NewSubscription(EndpointSpec{Topic: "/typed", Type: "std_msgs/msg/Int32", Node: "/other", QoS: qos.Default()})
	if err != nil {
		t.Fatalf("a subscription of another type must be created: %v", err)
	}
	defer other.Close()
	otherPub, err := d.NewPublisher(EndpointSpec{Topic: "/typed", Type: "std_msgs/msg/Int32", Node: "/other", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer otherPub.Close()

	if got := pub.Matched(); got != 1 {
		t.Fatalf("String publisher matched %d, want 1 (its own type only)", got)
	}
	if got := other.Matched(); got != 1 {
		t.Fatalf("Int32 subscription matched %d, want 1", got)
	}
	if err := pub.Publish([]byte("string")); err != nil {
		t.Fatal(err)
	}
	if err := otherPub.Publish([]byte{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *Subscription
		want string
	}{{sub, "string"}, {other, "\x01\x00\x00\x00"}} {
		smp, err := c.s.TakeWait(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(smp.Bytes()); got != c.want {
			t.Fatalf("got %q, want %q", got, c.want)
		}
		smp.Return()
		if _, err := c.s.Take(); !errors.Is(err, ErrNoData) {
			t.Fatalf("a message of the other type was delivered: %v", err)
		}
	}

	// Each endpoint learns of the one endpoint of the other kind and type.
	deadline := time.Now().Add(10 * time.Second)
	for _, e := range []*endpoint{pub.endpoint, sub.endpoint, other.endpoint, otherPub.endpoint} {
		total := 0
		for total < 1 && time.Now().Before(deadline) {
			st := e.TakeStatus()
			total = st.IncompatibleType
			time.Sleep(10 * time.Millisecond)
		}
		if total != 1 {
			t.Fatalf("%s of %s: incompatible type count %d, want 1", e.kind, e.t.typ, total)
		}
	}

	topics, err := d.Topics()
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, ti := range topics {
		if ti.Name == "/typed" {
			types[ti.Type] = true
		}
	}
	if !types["std_msgs/msg/String"] || !types["std_msgs/msg/Int32"] {
		t.Fatalf("graph lists types %v for /typed, want both", types)
	}
	eps, err := d.Endpoints("/typed")
	if err != nil || len(eps) != 4 {
		t.Fatalf("endpoints of /typed: %d (%v), want 4 over both types", len(eps), err)
	}
}

// A front end that cannot decode a message drops it and counts it; the
// graph reports the count for that subscription only.
func TestDropMalformedCounted(t *testing.T) {
	d := openDomain(t, nil)
	mustPub(t, d, "/malformed", qos.Default())
	bad := mustSub(t, d, "/malformed", qos.Default())
	good := mustSub(t, d, "/malformed", qos.Default())
	for i := 1; i <= 3; i++ {
		if n := bad.DropMalformed(); n != uint64(i) {
			t.Fatalf("count %d after %d drops", n, i)
		}
	}
	eps, err := d.Endpoints("/malformed")
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		want := uint64(0)
		if ep.GID == bad.GID() {
			want = 3
		}
		if ep.Malformed != want {
			t.Fatalf("%s %s: malformed %d, want %d (good is %s)", ep.Kind, ep.GID, ep.Malformed, want, good.GID())
		}
	}
}

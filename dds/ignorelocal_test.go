//go:build cgo && !nodds

package dds

import (
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// A reader with IgnoreLocal neither matches nor receives its own
// participant's writer, and still receives another participant's.
func TestIgnoreLocal(t *testing.T) {
	requireDDS(t)
	p, other := openTest(t), openTest(t)
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityReliable, Liveliness: qos.LivelinessAutomatic}
	tp, err := p.Topic("/ignore_local", "std_msgs/msg/String")
	must(t, err)
	own, err := tp.NewWriter(EndpointOptions{QoS: q})
	must(t, err)
	rd, err := tp.NewReader(EndpointOptions{QoS: q, IgnoreLocal: true})
	must(t, err)
	plain, err := tp.NewReader(EndpointOptions{QoS: q})
	must(t, err)
	ot, err := other.Topic("/ignore_local", "std_msgs/msg/String")
	must(t, err)
	foreign, err := ot.NewWriter(EndpointOptions{QoS: q})
	must(t, err)
	waitMatched(t, "the plain reader", plain.Matched)
	waitMatched(t, "the foreign writer", foreign.Matched)
	// foreign matches both readers; own only the plain one
	waitMatched(t, "the ignoring reader", rd.Matched)
	time.Sleep(200 * time.Millisecond)
	if n, _ := own.Matched(); n != 1 {
		t.Errorf("own writer matches %d readers, want 1 (the reader without IgnoreLocal)", n)
	}
	if n, _ := rd.Matched(); n != 1 {
		t.Errorf("ignoring reader matches %d writers, want 1 (the other participant's)", n)
	}
	must(t, own.Write(stringCDR("own")))
	must(t, foreign.Write(stringCDR("foreign")))
	got := takeOne(t, rd)
	if string(got.Data[8:15]) != "foreign" || got.Writer != foreign.GUID() {
		t.Errorf("ignoring reader took % x from %s, want the foreign writer's", got.Data, got.Writer)
	}
	if s, ok, _ := rd.Take(); ok {
		t.Errorf("ignoring reader also took % x from %s", s.Data, s.Writer)
	}
}

package gateway

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// BenchmarkGatewaySplitToDDS: what carrying a split message (a GPU loan's
// layout, here in host memory) to DDS costs against the same message
// published whole, measured in the same run: sensor_msgs/Image of 4 and
// 64 MiB from an rgaps publisher through the gateway to a raw DDS reader
// of this process, publish → take, the two layouts alternating. It
// reports the medians and their ratio (split/whole).
//
//	go test ./gateway -run '^$' -bench GatewaySplitToDDS -benchtime 20x
func BenchmarkGatewaySplitToDDS(b *testing.B) {
	e, _ := startGatewayPool(b, 256<<20, "/gw_bench_split*")
	for _, n := range []int{4 << 20, 64 << 20} {
		// The endpoints outlive the runs of b.Run's function (a run with
		// b.N = 1 comes first), so the gateway's mirror stays up between
		// them: a mirror torn down drops what it holds.
		m := makeSplitMsg(b, "sensor_msgs/msg/Image", n, map[string]any{"header.frame_id": "camera", "encoding": "mono8"})
		topic := fmt.Sprintf("/gw_bench_split%d", n>>20)
		p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: m.typ, Node: "/gw_bench", QoS: testQoS})
		must(b, err)
		defer p.Close()
		tp, err := e.part.Topic(topic, m.typ)
		must(b, err)
		r, err := tp.NewReader(dds.EndpointOptions{QoS: testQoS})
		must(b, err)
		defer r.Close()
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if k, err := r.Matched(); err == nil && k >= 1 && p.Matched() >= 1 {
				break
			}
			if time.Now().After(end) {
				b.Fatal("the gateway's mirror did not come up")
			}
		}
		b.Run(fmt.Sprintf("%dMiB", n>>20), func(b *testing.B) {
			// one round: fill a loan of either layout, then time publish → take
			round := func(split bool) time.Duration {
				var l *zerocopy.Loan
				var err error
				if split {
					l, err = p.Loan(len(m.data))
					must(b, err)
					copy(l.Bytes(), m.data)
					must(b, l.SetMeta(m.meta))
				} else {
					l, err = p.Loan(len(m.whole))
					must(b, err)
					copy(l.Bytes(), m.whole)
				}
				start := time.Now()
				must(b, l.Publish())
				for time.Since(start) < 30*time.Second {
					s, ok, err := r.Take()
					must(b, err)
					if ok {
						d := time.Since(start)
						if !bytes.Equal(s.Data, m.whole) {
							b.Fatalf("DDS got %d bytes, not the message", len(s.Data))
						}
						return d
					}
					r.Wait(time.Second)
				}
				b.Fatalf("no DDS message within 30 s (split %v)", split)
				return 0
			}
			round(false) // warm up: pool pages committed, Cyclone's buffers
			round(true)
			var whole, split []time.Duration
			b.ResetTimer()
			for i := range b.N {
				first := i%2 == 0 // alternate which layout goes first
				split = append(split, round(first))
				whole = append(whole, round(!first))
			}
			b.StopTimer()
			mw, ms := median(whole), median(split)
			b.ReportMetric(float64(mw.Microseconds())/1000, "whole-ms")
			b.ReportMetric(float64(ms.Microseconds())/1000, "split-ms")
			b.ReportMetric(float64(ms)/float64(mw), "split/whole")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

package main

// rgaps topic hz: message rate and bandwidth over a sliding window.

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ---- hz ---------------------------------------------------------------------

type hzOpts struct {
	subscribeOpts
	window int
}

func parseHz(args []string, out io.Writer) (hzOpts, error) {
	var o hzOpts
	fs := newFlags("rgaps topic hz", "<topic> [type] [-window N] [-type T] [-qos NAME]", out)
	fs.IntVar(&o.window, "window", 10000, "compute over the last `N` messages")
	o.flags(fs, "message `type` (default: the topic's type in the graph)", "QoS profile (default: adapted to the topic's publishers)")
	if err := o.parse(fs, args); err != nil {
		return o, err
	}
	if o.window < 2 || o.window > 1<<24 {
		return o, badUsage("-window %d: must be in [2, %d]", o.window, 1<<24)
	}
	return o, o.checkQoS()
}

// hzWindow keeps the publish times and sizes of the last messages.
type hzWindow struct {
	at    []time.Time
	size  []int
	next  int // ring position of the next entry
	n     int // entries in use
	total int // messages seen
}

func newHzWindow(capacity int) *hzWindow {
	return &hzWindow{at: make([]time.Time, capacity), size: make([]int, capacity)}
}

func (h *hzWindow) add(at time.Time, size int) {
	h.at[h.next], h.size[h.next] = at, size
	h.next = (h.next + 1) % len(h.at)
	h.n = min(h.n+1, len(h.at))
	h.total++
}

type hzStats struct {
	rate, bandwidth        float64 // messages/s, bytes/s
	min, max, mean, stddev time.Duration
	window                 int
}

// stats computes over the window; ok is false with fewer than 2 messages
// (or no time between them).
func (h *hzWindow) stats() (st hzStats, ok bool) {
	if h.n < 2 {
		return st, false
	}
	first := (h.next - h.n + len(h.at)) % len(h.at)
	var sum, sumSq float64
	var nbytes int
	prev := h.at[first]
	for k := 1; k < h.n; k++ {
		i := (first + k) % len(h.at)
		d := h.at[i].Sub(prev)
		prev = h.at[i]
		if k == 1 || d < st.min {
			st.min = d
		}
		st.max = max(st.max, d)
		sum += float64(d)
		sumSq += float64(d) * float64(d)
		nbytes += h.size[i]
	}
	periods := float64(h.n - 1)
	mean := sum / periods
	if mean <= 0 {
		return st, false
	}
	st.mean = time.Duration(mean)
	st.stddev = time.Duration(math.Sqrt(max(0, sumSq/periods-mean*mean)))
	st.rate = float64(time.Second) / mean
	st.bandwidth = float64(nbytes) / (sum / float64(time.Second))
	st.window = h.n
	return st, true
}

func (st hzStats) String() string {
	return fmt.Sprintf("average rate: %.3f msgs/s  bandwidth: %s\n\tmin: %.6fs max: %.6fs mean: %.6fs std dev: %.6fs window: %d",
		st.rate, bandwidth(st.bandwidth), st.min.Seconds(), st.max.Seconds(), st.mean.Seconds(), st.stddev.Seconds(), st.window)
}

// bandwidth writes bytes/s in decimal units, as ros2 topic bw does.
func bandwidth(bps float64) string {
	switch {
	case bps >= 1e9:
		return fmt.Sprintf("%.3f GB/s", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%.3f MB/s", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%.3f KB/s", bps/1e3)
	}
	return fmt.Sprintf("%.0f B/s", bps)
}

func runHz(o hzOpts, w io.Writer) error {
	return o.run("_rgaps_hz", func(s *session, sub *zerocopy.Subscription, _ string) error {
		return measure(s, sub, o.window, w)
	})
}

// measure is hz of sub in session s, over the last window messages.
func measure(s *session, sub *zerocopy.Subscription, window int, w io.Writer) error {
	win := newHzWindow(window)
	items, ready := []zerocopy.Waitable{sub, s.stop}, make([]bool, 2)
	next := time.Now().Add(time.Second)
	reported := 0
	for !s.interrupted() {
		for {
			took, err := take(sub, func(smp *zerocopy.Sample) {
				// The publish time, not the time of this take: a rate is
				// the publisher's, whatever delays this process.
				win.add(smp.Info().SourceTimestamp, len(smp.Bytes()))
			})
			if err != nil {
				return err
			}
			if !took {
				break
			}
		}
		if now := time.Now(); !now.Before(next) {
			var err error
			if win.total == reported {
				if win.total > 0 { // before the first message, silence
					_, err = fmt.Fprintln(w, "no new messages")
				}
			} else if st, ok := win.stats(); ok {
				_, err = fmt.Fprintln(w, st)
			}
			if done, err := outputDone(err); done {
				return err
			}
			reported = win.total
			if next = next.Add(time.Second); next.Before(now) {
				next = now.Add(time.Second)
			}
		}
		s.ctx.Wait(items, ready, time.Until(next))
	}
	return nil
}

package benchbridge

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
)

// Multi-rail striping (issue 13, goal 2): one topic's ring written over K
// connections at once (ARCHITECTURE §3.7 "Rails"), against the bare loop
// over one endpoint pair and over K pairs (each message cut into K
// pieces), all in the same run.

// KeyRails is the rails variant: one topic, one ring over K rails.
const KeyRails = "rails"

// GoalRailsVsBare: one topic over K rails moves messages of GoalRailsSize
// at this multiple of the single-endpoint bare loop or better (on a host
// with cores for the rails: the 16-core H100 host).
const (
	GoalRailsVsBare = 1.5
	GoalRailsSize   = 64 << 20
)

// railsVariant is the rails variant; its K is the run's (Options.Rails,
// resolved in Run).
func railsVariant(provider string) Variant {
	return Variant{Key: KeyRails, Name: railsName(provider, 0), Provider: provider, Topics: 1, Latency: true}
}

func railsName(provider string, k int) string {
	if k == 0 {
		return "bridge " + provider + ", K rails"
	}
	return fmt.Sprintf("bridge %s, %s", provider, railsWord(k))
}

// railsK is K: Options.Rails, or what the bridge chooses here.
func (o Options) railsK() int {
	if o.Rails > 0 {
		return o.Rails
	}
	return bridge.AutoRails(o.Provider, ring.WriteImm, runtime.NumCPU())
}

// measureBareRails is fabric.MeasureBareRails over the libfabric provider
// of the bridge's provider name.
func measureBareRails(provider string, size, iters, k int, prefix string) (Baseline, error) {
	name, _ := strings.CutPrefix(provider, "fabric:")
	r, err := fabric.MeasureBareRails(name, size, iters, k, fabric.Options{Node: "127.0.0.1", NamePrefix: prefix, Timeout: 30 * time.Second})
	if err != nil {
		return Baseline{}, err
	}
	return Baseline{Size: r.Size, Iters: r.Iters, Elapsed: r.Elapsed}, nil
}

// railsWord is "1 rail" or "k rails".
func railsWord(k int) string { return plural(k, "rail") }

// plural is "1 thing" or "k things".
func plural(k int, thing string) string {
	if k == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", k, thing)
}

// railsRatios are the ratio cells of the rails variant at size: against
// the bare loop and against the bare loop over K endpoints.
func (r *Result) railsRatios(size int) []string {
	c := r.Variant(KeyRails).cell(size)
	if c == nil {
		return []string{"—", "—"}
	}
	return []string{times(vsBaseline(c.Runs, c.Messages, baselineFor(r.Bare, size))),
		times(vsBaseline(c.Runs, c.Messages, baselineFor(r.BareRails, size)))}
}

// writeRailsGoal writes the goal line of the rails variant, when it was
// measured at GoalRailsSize against the bare loop.
func (r *Result) writeRailsGoal(w io.Writer) {
	c := r.Variant(KeyRails).cell(GoalRailsSize)
	if c == nil {
		return
	}
	x := vsBaseline(c.Runs, c.Messages, baselineFor(r.Bare, GoalRailsSize))
	if x <= 0 {
		return
	}
	if r.Rails == 1 {
		fmt.Fprintf(w, "\nGoal: one topic over K rails at ≥ %.1f× the single-endpoint bare fi_writedata loop for %s messages: not measured (the rails variant has one rail in this run; -rails K measures K).\n",
			GoalRailsVsBare, benchutil.FormatSize(GoalRailsSize))
		return
	}
	fmt.Fprintf(w, "\nGoal: one topic over %d rails at ≥ %.1f× the single-endpoint bare fi_writedata loop for %s messages: **%s** (%s; %s the bare loop over %d endpoints).\n",
		r.Rails, GoalRailsVsBare, benchutil.FormatSize(GoalRailsSize), benchutil.MetWord(x >= GoalRailsVsBare), times(x),
		times(vsBaseline(c.Runs, c.Messages, baselineFor(r.BareRails, GoalRailsSize))), r.Rails)
}

// timedText says what the throughput runs time.
func (r *Result) timedText() string {
	if r.Netns {
		return "What is timed: the publisher process fills each whole message and the subscriber process checks it (a CRC-32C of the payload when verifying), as well as the bridges. "
	}
	return "What is timed: loan, publish, the bridges, take and return; the publisher writes " + filled(r.Fill) + " and the subscriber checks only the stamp, " +
		"as producing and consuming the data are the application's work, not the bridge's (the bytes moved are the whole message either way). " +
		"After each timed run an untimed verification pass (a quarter as many messages, at least 8, same window) writes whole payloads and checks their CRC-32C. "
}

// railsBaselineText describes the bare loop over K endpoints, when there
// is one.
func (r *Result) railsBaselineText() string {
	if len(r.BareRails) == 0 {
		return ""
	}
	return fmt.Sprintf("The bare loop over %d endpoints is the same loop between %d endpoint pairs at once, each message cut into %d pieces, one per pair (the rails variant's baseline). ", r.Rails, r.Rails, r.Rails)
}

// resolveRails gives the rails variant among vs its K and name, and
// returns K.
func (o Options) resolveRails(vs []Variant) int {
	k := o.railsK()
	for i := range vs {
		if vs[i].Key == KeyRails {
			vs[i].Rails, vs[i].Name = k, railsName(vs[i].Provider, k)
		}
	}
	return k
}

package benchbridge

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// GoalVsBare: the bridge's default path moves messages of GoalMinSize
// bytes or more at this fraction of the bare fi_writedata loop's
// throughput or better.
const (
	GoalVsBare  = 0.90
	GoalMinSize = 1 << 20
)

// Result is a run's measurements.
type Result struct {
	Machine  Machine `json:"machine"`
	Command  string  `json:"command,omitempty"` // set by Command
	Provider string  `json:"provider"`
	RingSize uint64  `json:"ring_size"`
	Verify   bool    `json:"verify"`
	Reps     int     `json:"reps"`
	Sizes    []int   `json:"sizes"`
	Prefix   string  `json:"prefix"`
	// Bare is the bare fi_writedata loop per size (empty, with BareNote
	// saying why, without libfabric).
	Bare     []Baseline `json:"bare"`
	BareNote string     `json:"bare_note,omitempty"`
	// BareStream is the bare loop from fresh memory into fresh memory per
	// size: the source cycles through the window's worth of messages, the
	// target through a ring-sized region (fabric.MeasureBareStream).
	BareStream []Baseline `json:"bare_stream,omitempty"`
	// Loop is the transport-level WriteImm loop per size.
	Loop []Baseline `json:"transport_loop"`
	// Rails is K of the rails variant; BareRails the bare loop over K
	// endpoint pairs per size (empty when K is 1 or there is no bare
	// loop).
	Rails int  `json:"rails"`
	Fill  bool `json:"fill"` // the timed publisher wrote whole payloads
	// GapNs is the pause before each latency round (Options.Gap).
	GapNs     int64           `json:"gap_ns,omitempty"`
	BareRails []Baseline      `json:"bare_rails,omitempty"`
	Variants  []VariantResult `json:"variants"`
	// Resubscribes counts subscriptions opened again because the bridge
	// on host a had not subscribed after a second (a bridge bug worked
	// around; see openStream).
	Resubscribes int               `json:"resubscribes"`
	Elapsed      benchutil.Seconds `json:"elapsed_s"`
	// Netns: the hosts were daemons and processes in two network
	// namespaces (RunNetns), not two bridges in this process.
	Netns bool `json:"netns,omitempty"`
}

// VariantResult is one bridge configuration's cells, one per size.
type VariantResult struct {
	Variant
	ProviderName  string `json:"provider_name"`
	ModeName      string `json:"mode"`
	WatermarkName string `json:"watermark"`
	Cells         []Cell `json:"cells"`
}

// Cell is one variant at one size.
type Cell struct {
	Size     int             `json:"size"`
	Messages int             `json:"messages"`   // timed, all topics
	Window   int             `json:"window"`     // per topic
	Elapsed  time.Duration   `json:"elapsed_ns"` // median of Runs
	Runs     []time.Duration `json:"runs_ns"`
	// Links are the bridge's link counters over one throughput run
	// (records and write-backs: averages over the runs; the others: sums).
	Links counters `json:"links"`
	// Latency (single-topic variants): samples and percentiles, ns.
	Rounds int   `json:"rounds,omitempty"`
	P50    int64 `json:"p50_ns,omitempty"`
	P99    int64 `json:"p99_ns,omitempty"`
	Mean   int64 `json:"mean_ns,omitempty"`
	// Sent and Received count every message of the cell (warm-up and
	// latency rounds included); each received one was checked.
	Sent     int `json:"sent"`
	Received int `json:"received"`

	lat []int64 // latency samples, ns
}

// BytesPerSecond is the cell's throughput.
func (c Cell) BytesPerSecond() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Size) * float64(c.Messages) / c.Elapsed.Seconds()
}

// MessagesPerSecond is the cell's message rate.
func (c Cell) MessagesPerSecond() float64 {
	if c.Elapsed <= 0 {
		return 0
	}
	return float64(c.Messages) / c.Elapsed.Seconds()
}

// Variant returns the results of the variant with key, or nil.
func (r *Result) Variant(key string) *VariantResult {
	for i := range r.Variants {
		if r.Variants[i].Key == key {
			return &r.Variants[i]
		}
	}
	return nil
}

func (v *VariantResult) cell(size int) *Cell {
	if v == nil {
		return nil
	}
	for i := range v.Cells {
		if v.Cells[i].Size == size {
			return &v.Cells[i]
		}
	}
	return nil
}

func baselineFor(bs []Baseline, size int) *Baseline {
	for i := range bs {
		if bs[i].Size == size {
			return &bs[i]
		}
	}
	return nil
}

// Messages is the number of messages the run delivered and checked.
func (r *Result) Messages() (sent, received int) {
	for _, v := range r.Variants {
		for _, c := range v.Cells {
			sent += c.Sent
			received += c.Received
		}
	}
	return sent, received
}

func gbps(bps float64) string {
	if bps <= 0 {
		return "—"
	}
	return strconv.FormatFloat(bps/1e9, 'f', 2, 64)
}

func rate(r float64) string {
	if r <= 0 {
		return "—"
	}
	if r >= 100 {
		return benchutil.Thousands(int64(r + 0.5))
	}
	return strconv.FormatFloat(r, 'f', 1, 64)
}

func pct(r float64) string {
	if r <= 0 {
		return "—"
	}
	return strconv.FormatFloat(100*r, 'f', 1, 64) + "%"
}

func times(r float64) string {
	if r <= 0 {
		return "—"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

// vsBaseline is the throughput of runs (msgs messages each) over the
// baseline's, repetition by repetition, median; 0 without a baseline.
func vsBaseline(runs []time.Duration, msgs int, b *Baseline) float64 {
	if b == nil {
		return 0
	}
	return medianRatio(runs, msgs, b.Runs, b.Iters)
}

// vsCell is c's throughput over d's (same size), median of per-repetition
// ratios.
func vsCell(c, d *Cell) float64 { return medianRatio(c.Runs, c.Messages, d.Runs, d.Messages) }

// WriteMarkdown writes the report.
func (r *Result) WriteMarkdown(w io.Writer) {
	def := r.Variant(KeyDefault)
	fmt.Fprintf(w, "# rgaps-bench bridge\n\n")
	sent, recv := r.Messages()
	check := "its sequence number, size and topic"
	if r.Verify {
		check += "; the warm-up, latency and verification messages also a CRC-32C of the whole payload"
	}
	fmt.Fprintf(w, r.hostsText()+
		"a publisher on host a, a subscriber on host b, RELIABLE KEEP_ALL. Ring %s. Default path: %s, write-imm, "+
		"watermark 0 (head write-back after every record), one ring per host pair, one rail. The subscriber checked every "+
		"message (%s): %s published, %s received intact.\n\n",
		benchutil.FormatSize(int(r.RingSize)), r.Provider, check, benchutil.Thousands(int64(sent)), benchutil.Thousands(int64(recv)))
	m := r.Machine
	t := benchutil.Table{Head: []string{"machine", ""}}
	lf := "yes"
	if !m.Libfabric {
		lf = "no (built without cgo or with nofabric)"
	}
	t.Rows = [][]string{
		{"CPU", fmt.Sprintf("%s (%d logical CPUs)", m.CPU, m.Cores)},
		{"kernel", m.Kernel}, {"OS", m.OS}, {"Go", m.Go}, {"libfabric", lf}, {"date", m.Date},
		{"run time", time.Duration(r.Elapsed).Round(100 * time.Millisecond).String()},
		{"load average (1, 5, 15 min)", "start " + m.LoadStart + ", end " + m.LoadEnd},
	}
	if r.Command != "" {
		t.Rows = append(t.Rows, []string{"command", "`" + r.Command + "`"})
	}
	t.Write(w)

	fmt.Fprintf(w, "\n## Throughput\n\n"+
		"Publish as fast as possible with at most *window* messages per topic published and not yet taken, on a fresh pair of bridges per row and repetition; timed from "+
		"the first publish until the subscriber took the last message (after two untimed warm-up messages and an untimed lap at the same window: as many messages as go round the window's pool blocks and the ring once, at most the timed count, so that every page the timed run touches is in memory on both hosts, as the bare loops' regions are before their clocks start). "+r.timedText()+
		"%s GB/s = 10⁹ bytes/s of payload. "+r.baselinesText()+r.railsBaselineText()+
		"\"vs …\" columns are medians of the per-repetition ratios (each repetition measures every row once); \"vs default\" compares with the bridge's default path at the same size; multi-topic rows are aggregates. records/msg and write-backs/msg are the bridge's link counters.\n\n", reps(r.Reps))
	t = benchutil.Table{Head: []string{"size", "path", "messages", "window", "msg/s", "GB/s", "vs bare loop", "vs default", "records/msg", "write-backs/msg"}, Align: "llrrrrrrrr"}
	for _, size := range r.Sizes {
		sz := benchutil.FormatSize(size)
		bare := baselineFor(r.Bare, size)
		if bare != nil {
			bareBps := bare.BytesPerSecond()
			t.Rows = append(t.Rows, []string{sz, "bare fi_writedata loop (" + r.Provider + ")", benchutil.Thousands(int64(bare.Iters)), "—",
				rate(bareBps / float64(size)), gbps(bareBps), "1.00×", "", "", ""})
		}
		if sb := baselineFor(r.BareStream, size); sb != nil {
			t.Rows = append(t.Rows, []string{sz, "bare fi_writedata loop, streaming (" + r.Provider + ")", benchutil.Thousands(int64(sb.Iters)), "—",
				rate(sb.BytesPerSecond() / float64(size)), gbps(sb.BytesPerSecond()), times(vsBaseline(sb.Runs, sb.Iters, bare)), "", "", ""})
		}
		if kb := baselineFor(r.BareRails, size); kb != nil {
			t.Rows = append(t.Rows, []string{sz, fmt.Sprintf("bare fi_writedata loop over %d endpoints (%s)", r.Rails, r.Provider), benchutil.Thousands(int64(kb.Iters)), "—",
				rate(kb.BytesPerSecond() / float64(size)), gbps(kb.BytesPerSecond()), times(vsBaseline(kb.Runs, kb.Iters, bare)), "", "", ""})
		}
		if l := baselineFor(r.Loop, size); l != nil {
			t.Rows = append(t.Rows, []string{sz, "transport WriteImm loop (" + r.Provider + ")", benchutil.Thousands(int64(l.Iters)), "—",
				rate(l.BytesPerSecond() / float64(size)), gbps(l.BytesPerSecond()), times(vsBaseline(l.Runs, l.Iters, bare)), "", "", ""})
		}
		dc := def.cell(size)
		for i := range r.Variants {
			v := &r.Variants[i]
			c := v.cell(size)
			if c == nil {
				continue
			}
			vsDef := ""
			if v.Key != KeyDefault && dc != nil {
				vsDef = times(vsCell(c, dc))
			}
			win := strconv.Itoa(c.Window)
			if v.Topics > 1 {
				win = fmt.Sprintf("%d × %d", v.Topics, c.Window)
			}
			t.Rows = append(t.Rows, []string{sz, v.Name, benchutil.Thousands(int64(c.Messages)), win,
				rate(c.MessagesPerSecond()), gbps(c.BytesPerSecond()), times(vsBaseline(c.Runs, c.Messages, bare)), vsDef,
				perMsg(c.Links.Records, c.Messages), perMsg(c.Links.WriteBacks, c.Messages)})
		}
	}
	t.Write(w)
	if r.BareNote != "" {
		fmt.Fprintf(w, "\nNo bare fi_writedata loop: %s.\n", r.BareNote)
	}
	if r.Resubscribes > 0 {
		fmt.Fprintf(w, "\nSet-up: %d subscription(s) had to be opened again because host a's bridge had not subscribed after a second "+
			"(its peer-up announcement of host b's interest overtook the update; not timed).\n", r.Resubscribes)
	}

	// Latency.
	fmt.Fprintf(w, "\n## Latency\n\n%s\n\n", r.latencyText())
	t = benchutil.Table{Head: []string{"size", "path", "rounds", "p50 µs", "p99 µs", "mean µs", "p50 vs default"}, Align: "llrrrrr"}
	for _, size := range r.Sizes {
		dc := def.cell(size)
		for i := range r.Variants {
			v := &r.Variants[i]
			c := v.cell(size)
			if c == nil || !v.Latency || c.Rounds == 0 {
				continue
			}
			vsDef := ""
			if v.Key != KeyDefault && dc != nil && dc.P50 > 0 {
				vsDef = times(float64(c.P50) / float64(dc.P50))
			}
			t.Rows = append(t.Rows, []string{benchutil.FormatSize(size), v.Name, strconv.Itoa(c.Rounds),
				benchutil.US(c.P50), benchutil.US(c.P99), benchutil.US(c.Mean), vsDef})
		}
	}
	t.Write(w)

	// Ratios.
	fmt.Fprintf(w, "\n## Ratios (throughput, same run, medians of per-repetition ratios)\n\n")
	t = benchutil.Table{Head: []string{"size", "bridge / bare loop", "bridge / streaming bare loop", "bridge / transport loop", "bridge " + r.Provider + " / bridge tcp",
		"write-twice / default", "watermark 1/4 / default", fmt.Sprintf("per-topic / one ring (%d topics)", Topics),
		railsWord(r.Rails) + " / bare loop", fmt.Sprintf("%s / bare over %s", railsWord(r.Rails), plural(r.Rails, "endpoint"))}, Align: "lrrrrrrrrr"}
	var goalCells []string
	goalMet, goalAny := true, false
	for _, size := range r.Sizes {
		dc := def.cell(size)
		row := []string{benchutil.FormatSize(size)}
		var bareR, streamR, loopR float64
		if dc != nil {
			bareR = vsBaseline(dc.Runs, dc.Messages, baselineFor(r.Bare, size))
			streamR = vsBaseline(dc.Runs, dc.Messages, baselineFor(r.BareStream, size))
			loopR = vsBaseline(dc.Runs, dc.Messages, baselineFor(r.Loop, size))
		}
		row = append(row, pct(bareR), pct(streamR), pct(loopR))
		other := func(key string) string {
			c := r.Variant(key).cell(size)
			if c == nil || dc == nil {
				return "—"
			}
			return times(vsCell(c, dc))
		}
		tcp := "—"
		if c := r.Variant(KeyPlainTCP).cell(size); c != nil && dc != nil {
			tcp = times(vsCell(dc, c))
		}
		row = append(row, tcp, other(KeyTwice), other(KeyQuarter))
		pt := "—"
		if one, per := r.Variant(KeyOneRing4).cell(size), r.Variant(KeyPerTopic4).cell(size); one != nil && per != nil {
			pt = times(vsCell(per, one))
		}
		row = append(row, pt)
		row = append(row, r.railsRatios(size)...)
		t.Rows = append(t.Rows, row)
		if size >= GoalMinSize && bareR > 0 {
			goalAny = true
			goalMet = goalMet && bareR >= GoalVsBare
			goalCells = append(goalCells, benchutil.FormatSize(size)+" "+pct(bareR))
		}
	}
	t.Write(w)
	if goalAny {
		fmt.Fprintf(w, "\nGoal: the bridge's default path (one rail) at ≥ %.0f%% of the bare fi_writedata loop for messages of %s or more: **%s** (%s).\n",
			100*GoalVsBare, benchutil.FormatSize(GoalMinSize), benchutil.MetWord(goalMet), strings.Join(goalCells, ", "))
	}
	r.writeRailsGoal(w)
}

func perMsg(n uint64, msgs int) string {
	if msgs == 0 {
		return "—"
	}
	return strconv.FormatFloat(float64(n)/float64(msgs), 'f', 2, 64)
}

func reps(n int) string {
	if n <= 1 {
		return "One run per row."
	}
	return fmt.Sprintf("msg/s and GB/s are the median of %d repetitions.", n)
}

// filled says what the timed publisher writes.
func filled(fill bool) string {
	if fill {
		return "each whole message (-fill: as a producer that writes its data with the CPU, so the data is in the cache when the bridge sends it)"
	}
	return "only each message's 16-byte stamp (sequence number, size, topic: the rest of the pool block is not touched, so the bridge sends data that is not in the cache, as after a DMA)"
}

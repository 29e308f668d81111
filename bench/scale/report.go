package benchscale

import (
	"fmt"
	"io"
	"strconv"
	"time"

	benchbridge "github.com/rmw-rgaps/rmw_rgaps/bench/bridge"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Goals of issue 13 for a daemon at 1,000 topics: resident memory and
// idle CPU time.
const (
	GoalRSSKiB  = 100 << 10 // 100 MiB
	GoalIdlePct = 1.0       // % of one core
	GoalTopics  = 1000
)

// Result is a run's measurements.
type Result struct {
	Machine  benchbridge.Machine `json:"machine"`
	Command  string              `json:"command,omitempty"` // set by Command
	Provider string              `json:"provider"`
	RingSize uint64              `json:"ring_size,omitempty"` // the daemons' -ring-size (0: default)
	// Netns: the hosts were two network namespaces joined by a veth pair
	// (false: both on loopback in this namespace).
	Netns   bool              `json:"netns"`
	Pubs    int               `json:"pub_procs"`
	Idle    benchutil.Seconds `json:"idle_window_s"`
	Cells   []Cell            `json:"cells"`
	Elapsed benchutil.Seconds `json:"elapsed_s"`
}

// Cell is one topic count with one subscriber process count.
type Cell struct {
	Topics        int `json:"topics"`
	SubProcs      int `json:"sub_procs"` // on host b, each subscribing to every topic
	PubProcs      int `json:"pub_procs"` // on host a, sharing the topics
	Subscriptions int `json:"subscriptions"`
	// SubSetUp: from asking the subscriber processes until the last one
	// had opened every subscription. DiscoveryBA: from then until host a's
	// daemon listed every one.
	SubSetUp    benchutil.Seconds `json:"sub_setup_s"`
	DiscoveryBA benchutil.Seconds `json:"discovery_b_to_a_s"`
	// PubSetUp: from asking the publisher processes until the last one
	// had opened every publisher. DiscoveryAB: from then until host b's
	// daemon listed every one. FirstMessage: from asking the publishers
	// until every subscription had taken its topic's first message (each
	// publisher publishes once host a's bridge matched it).
	PubSetUp     benchutil.Seconds `json:"pub_setup_s"`
	DiscoveryAB  benchutil.Seconds `json:"discovery_a_to_b_s"`
	FirstMessage benchutil.Seconds `json:"first_message_s"`
	// Daemons: host a's, host b's.
	Daemons [2]DaemonStats `json:"daemons"`
}

// DaemonStats is one daemon after the messages arrived.
type DaemonStats struct {
	Mem Mem `json:"mem"`
	// IdleCPU is its CPU time over the idle window, % of one core;
	// BaseIdleCPU the same once the daemons had connected, before any
	// endpoint (what an idle daemon costs whatever its topics).
	IdleCPU     float64 `json:"idle_cpu_pct"`
	BaseIdleCPU float64 `json:"base_idle_cpu_pct"`
}

func secs(s benchutil.Seconds) string {
	return strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 2, 64)
}

func mib(kib int64) string { return strconv.FormatFloat(float64(kib)/1024, 'f', 1, 64) }

func pctStr(p float64) string { return strconv.FormatFloat(p, 'f', 2, 64) + "%" }

// WriteMarkdown writes the report.
func (r *Result) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# rgaps-bench scale\n\n")
	where := "two network namespaces joined by a veth pair"
	if !r.Netns {
		where = "this network namespace twice, over 127.0.0.1"
	}
	ring := "default options (ring 64 MiB)"
	if r.RingSize != 0 {
		ring = "-ring-size " + benchutil.FormatSize(int(r.RingSize))
	}
	fmt.Fprintf(w, "Two emulated hosts (%s; separate shared-memory prefixes), rgapsd on each (`rgaps-bench daemon`, "+
		"provider %s, %s). Host a: %d publisher processes sharing the topics; host b: the subscriber processes, "+
		"each subscribing to every topic (RELIABLE, KEEP_LAST 4, 64-byte messages). Every cell starts fresh daemons.\n\n",
		where, r.Provider, ring, r.Pubs)
	m := r.Machine
	t := benchutil.Table{Head: []string{"machine", ""}}
	t.Rows = [][]string{
		{"CPU", fmt.Sprintf("%s (%d logical CPUs)", m.CPU, m.Cores)},
		{"kernel", m.Kernel}, {"OS", m.OS}, {"Go", m.Go}, {"date", m.Date},
		{"run time", time.Duration(r.Elapsed).Round(100 * time.Millisecond).String()},
		{"load average (1, 5, 15 min)", "start " + m.LoadStart + ", end " + m.LoadEnd},
	}
	if r.Command != "" {
		t.Rows = append(t.Rows, []string{"command", "`" + r.Command + "`"})
	}
	t.Write(w)

	fmt.Fprintf(w, "\n## Set-up and discovery (seconds)\n\n"+
		"sub set-up: the subscriber processes open their subscriptions (all processes at once); b → a: from then until "+
		"host a's daemon lists all of them (its status); pub set-up and a → b: the same for the publishers and host b's "+
		"daemon; first message: from asking the publishers until every subscription took its topic's first message "+
		"(each publisher publishes once host a's bridge subscription matched it).\n\n")
	t = benchutil.Table{Head: []string{"topics", "sub procs", "subscriptions", "sub set-up", "b → a", "pub set-up", "a → b", "first message"}, Align: "rrrrrrrr"}
	for _, c := range r.Cells {
		t.Rows = append(t.Rows, []string{strconv.Itoa(c.Topics), strconv.Itoa(c.SubProcs), benchutil.Thousands(int64(c.Subscriptions)),
			secs(c.SubSetUp), secs(c.DiscoveryBA), secs(c.PubSetUp), secs(c.DiscoveryAB), secs(c.FirstMessage)})
	}
	t.Write(w)

	fmt.Fprintf(w, "\n## Daemons: memory (MiB) and idle CPU\n\n"+
		"After the first messages: VmRSS (of it: RssAnon, the heap, the stacks and the pages of the ring the daemon reads that records "+
		"have landed in so far; RssShmem, the pages of topic segments it maps), PSS (shared pages divided among the processes that map them), VmHWM (peak), and VmRSS once the daemons had connected, before any endpoint (base). "+
		"Idle CPU: user + system time over %s with no traffic, after a %s pause, %% of one core; base: the same "+
		"once the daemons had connected, before any endpoint.\n\n",
		time.Duration(r.Idle), settle)
	t = benchutil.Table{Head: []string{"topics", "sub procs", "host", "RSS", "anon", "shmem", "PSS", "peak", "base", "threads", "idle CPU", "base idle CPU"}, Align: "rrlrrrrrrrrr"}
	for _, c := range r.Cells {
		for i, d := range c.Daemons {
			t.Rows = append(t.Rows, []string{strconv.Itoa(c.Topics), strconv.Itoa(c.SubProcs), string(rune('a' + i)),
				mib(d.Mem.RSS), mib(d.Mem.Anon), mib(d.Mem.Shmem), mib(d.Mem.PSS), mib(d.Mem.HWM), mib(d.Mem.Base), strconv.Itoa(d.Mem.Threads), pctStr(d.IdleCPU), pctStr(d.BaseIdleCPU)})
		}
	}
	t.Write(w)
	r.writeGoals(w)
}

// writeGoals states the goals for the cells of GoalTopics topics.
func (r *Result) writeGoals(w io.Writer) {
	any, rssOK, cpuOK := false, true, true
	worstRSS, worstCPU := int64(0), 0.0
	for _, c := range r.Cells {
		if c.Topics != GoalTopics {
			continue
		}
		any = true
		for _, d := range c.Daemons {
			worstRSS = max(worstRSS, d.Mem.RSS)
			worstCPU = max(worstCPU, d.IdleCPU)
			rssOK = rssOK && d.Mem.RSS <= GoalRSSKiB
			cpuOK = cpuOK && d.IdleCPU <= GoalIdlePct
		}
	}
	if !any {
		return
	}
	fmt.Fprintf(w, "\nGoals at %s topics: daemon RSS ≤ %s MiB: **%s** (largest %s MiB); idle CPU ≤ %s of a core: **%s** (largest %s).\n",
		benchutil.Thousands(GoalTopics), mib(GoalRSSKiB), benchutil.MetWord(rssOK), mib(worstRSS),
		pctStr(GoalIdlePct), benchutil.MetWord(cpuOK), pctStr(worstCPU))
}

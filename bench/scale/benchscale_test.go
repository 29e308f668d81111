package benchscale

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

const childRole = "benchscale-child"

func init() {
	// The benchmark runs `<exe> daemon ...`: this test binary, as rgapsd.
	testutil.Daemon = func(ctx context.Context, args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		return rgapsd.Main(ctx, args, cfg, os.Stderr)
	}
	testutil.Role(childRole, func([]string) error { return benche2e.ChildMain(os.Args[1:]) })
}

func TestMain(m *testing.M) { testutil.Main(m) }

// testOptions run the test binary as the daemons and every child: in two
// network namespaces where this process can make them, else on loopback.
func testOptions(t *testing.T) Options {
	t.Helper()
	p, err := fabric.Open("tcp", fabric.Options{})
	if errors.Is(err, transport.ErrNotSupported) {
		t.Skip("libfabric tcp: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Topics: QuickTopics, Subs: QuickSubs, Pubs: QuickPubs, Idle: 500 * time.Millisecond, Timeout: time.Minute,
		Exe: exe, ChildArgs: []string{}, ChildEnv: []string{testutil.ChildEnv + "=" + childRole},
		Prefix: testutil.Prefix() + "sc"}
	if why := netns.Unavailable(); why != "" {
		t.Logf("no network namespaces (%s): both hosts on loopback", why)
		o.Loopback = true
	}
	return o
}

// A tiny run through the real harness: two daemons, a publisher process
// and two subscriber processes each on ten topics; every subscription
// must take its topic's message (Run fails otherwise), the report must be
// well formed and every measured figure present.
func TestScaleQuick(t *testing.T) {
	o := testOptions(t)
	o.Topics = []int{10, 12}
	o.Pubs = 2
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 || res.Netns == o.Loopback {
		t.Fatalf("cells %+v, netns %v", res.Cells, res.Netns)
	}
	for i, c := range res.Cells {
		if c.Topics != o.Topics[i] || c.SubProcs != 2 || c.PubProcs != 2 || c.Subscriptions != 2*c.Topics {
			t.Errorf("cell %d: %+v", i, c)
		}
		for _, d := range []benchutil.Seconds{c.SubSetUp, c.DiscoveryBA, c.PubSetUp, c.DiscoveryAB, c.FirstMessage} {
			if d < 0 {
				t.Errorf("cell %d: a negative time: %+v", i, c)
			}
		}
		if c.FirstMessage <= 0 {
			t.Errorf("cell %d: no first-message time", i)
		}
		for h, d := range c.Daemons {
			if d.Mem.RSS <= 0 || d.Mem.HWM < d.Mem.RSS || d.Mem.Base <= 0 || d.Mem.Threads <= 0 || d.IdleCPU < 0 || d.BaseIdleCPU < 0 {
				t.Errorf("cell %d, daemon %c: %+v", i, 'a'+h, d)
			}
		}
	}
	var md bytes.Buffer
	res.WriteMarkdown(&md)
	tables := benchtest.MarkdownTables(t, md.String())
	if len(tables) != 3 || len(tables[1]) != 2 || len(tables[2]) != 4 {
		t.Fatalf("tables %v in\n%s", tables, md.String())
	}
	base := filepath.Join(t.TempDir(), "scale")
	if files, err := res.WritePlots(base); err != nil || len(files) != 4 {
		t.Fatalf("plots %v: %v", files, err)
	}
	benchtest.CheckPlot(t, base+"-setup")
	benchtest.CheckPlot(t, base+"-memory")
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cells) != 2 || back.Cells[1].Daemons[1].Mem.RSS != res.Cells[1].Daemons[1].Mem.RSS {
		t.Fatalf("JSON round trip: %v %+v", err, back)
	}
	noSegments(t, o.Prefix)
}

// noSegments fails t for anything of the run's prefixes left in /dev/shm.
func noSegments(t *testing.T, prefix string) {
	t.Helper()
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			t.Errorf("left in /dev/shm: %s", e.Name())
		}
	}
}

// The command line: -quick's cell, the JSON file, and a usage error.
func TestScaleCommand(t *testing.T) {
	o := testOptions(t)
	c, err := ParseArgs([]string{"-quick"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Options.Topics) != 1 || c.Options.Topics[0] != QuickTopics[0] || c.Options.Subs[0] != QuickSubs[0] || c.Options.Pubs != QuickPubs {
		t.Fatalf("-quick: %+v", c.Options)
	}
	if _, err := ParseArgs([]string{"-topics", "5", "-pubs", "6"}, &bytes.Buffer{}); !errors.Is(err, zerocopy.ErrInvalid) {
		t.Fatalf("more publishers than topics: %v", err)
	}
	if _, err := ParseArgs([]string{"-subs", "0"}, &bytes.Buffer{}); !errors.Is(err, zerocopy.ErrInvalid) {
		t.Fatalf("-subs 0: %v", err)
	}
	if c, err := ParseArgs([]string{"-ring", "8MiB"}, &bytes.Buffer{}); err != nil || c.Options.RingSize != 8<<20 {
		t.Fatalf("-ring 8MiB: %v %d", err, c.Options.RingSize)
	}
	// The real command, as rgaps-bench runs it (options it cannot take
	// from flags come through the test hooks of Run's defaults).
	out := filepath.Join(t.TempDir(), "scale.json")
	var stdout, stderr bytes.Buffer
	testHook = func(x *Options) {
		x.Exe, x.ChildArgs, x.ChildEnv, x.Prefix = o.Exe, o.ChildArgs, o.ChildEnv, o.Prefix
	}
	defer func() { testHook = nil }()
	plots := filepath.Join(filepath.Dir(out), "scale")
	args := []string{"-quick", "-idle", "200ms", "-ring", "4MiB", "-q", "-json", out, "-plot", plots}
	if o.Loopback {
		args = append(args, "-loopback")
	}
	if err := Command(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "# rgaps-bench scale") || !strings.Contains(stdout.String(), "`rgaps bench scale -quick") {
		t.Fatalf("report:\n%s", stdout.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil || len(r.Cells) != 1 || r.Cells[0].Topics != QuickTopics[0] || r.RingSize != 4<<20 {
		t.Fatalf("JSON: %v %+v", err, r)
	}
	benchtest.CheckPlot(t, plots+"-setup")
	benchtest.CheckPlot(t, plots+"-memory")
	noSegments(t, o.Prefix)
}

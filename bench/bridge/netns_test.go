package benchbridge

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

const netnsChildRole = "benchbridge-netns-child"

func init() {
	// -netns runs `<exe> daemon ...`: this test binary, as rgapsd.
	testutil.Daemon = func(ctx context.Context, args []string) error {
		cfg, err := zerocopy.Config{}.FromEnv()
		if err != nil {
			return err
		}
		return rgapsd.Main(ctx, args, cfg, os.Stderr)
	}
	testutil.Role(netnsChildRole, func([]string) error { return benche2e.ChildMain(os.Args[1:]) })
}

// -netns through the real harness, -quick's sizes: two rgapsd processes in
// two network namespaces per cell, the publisher and the subscriber as
// processes in them, the bare loop between them. Every message of every
// variant arrives intact (RunNetns fails otherwise; the counts say it
// checked), and the report has Run's shape, saying where it ran.
func TestQuickNetns(t *testing.T) {
	if why := netns.Unavailable(); why != "" {
		t.Skip("-netns needs network namespaces: ", why)
	}
	p, err := fabric.Open("tcp", fabric.Options{})
	if errors.Is(err, transport.ErrNotSupported) {
		t.Skip("libfabric tcp: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	c, err := ParseArgs([]string{"-quick", "-netns"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Netns {
		t.Fatal("-netns not parsed")
	}
	o := c.Options
	o.Prefix = testutil.Prefix() + "-nn"
	o.Variants = []string{KeyDefault, KeyPlainTCP, KeyTwice, KeyPerTopic4}
	o.Gap = time.Millisecond // the publisher process pauses before each latency round
	if testing.Verbose() {
		o.Progress = os.Stderr
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := RunNetns(ctx, o, NetnsOptions{Exe: exe, ChildArgs: []string{}, ChildEnv: []string{testutil.ChildEnv + "=" + netnsChildRole}})
	if err != nil {
		if errors.Is(err, ErrNoNetns) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	checkNoSegments(t, o.Prefix)
	if !res.Netns || len(res.Variants) != len(o.Variants) {
		t.Fatalf("netns %v, %d variants", res.Netns, len(res.Variants))
	}
	if len(res.Bare) != len(QuickSizes) {
		t.Errorf("%d bare-loop baselines between the namespaces, want %d (%s)", len(res.Bare), len(QuickSizes), res.BareNote)
	}
	for _, b := range res.Bare {
		if b.Elapsed <= 0 || b.Iters < QuickN {
			t.Errorf("bare loop %+v", b)
		}
	}
	for _, v := range res.Variants {
		for _, c := range v.Cells {
			if c.Sent == 0 || c.Received != c.Sent {
				t.Errorf("%s %d B: %d sent, %d received", v.Key, c.Size, c.Sent, c.Received)
			}
			if c.Messages < QuickN || c.Elapsed <= 0 {
				t.Errorf("%s %d B: %d timed messages in %v", v.Key, c.Size, c.Messages, c.Elapsed)
			}
			if v.Latency && c.Rounds != QuickRounds {
				t.Errorf("%s %d B: %d latency rounds, want %d", v.Key, c.Size, c.Rounds, QuickRounds)
			}
			if c.Links.Records < uint64(c.Messages) || c.Links.Dropped != 0 || c.Links.Dups != 0 {
				t.Errorf("%s %d B: link counters %+v", v.Key, c.Size, c.Links)
			}
		}
	}
	var md strings.Builder
	res.WriteMarkdown(&md)
	checkMarkdown(t, md.String(), res)
	if !strings.Contains(md.String(), "network namespaces") {
		t.Errorf("the report does not say the hosts were namespaces:\n%s", md.String())
	}
}

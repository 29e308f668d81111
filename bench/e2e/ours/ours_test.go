package ours

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
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

const childRole = "ours-test-child"

func init() {
	// The system runs `<exe> daemon ...`: this test binary, as rgapsd.
	testutil.Daemon = func(ctx context.Context, args []string) error {
		return rgapsd.Main(ctx, args, zerocopy.Config{Prefix: os.Getenv("RGAPS_SHM_PREFIX")}, os.Stderr)
	}
	testutil.Role(childRole, func([]string) error { return benche2e.ChildMain(os.Args[1:]) })
	if os.Getenv("RGAPS_E2E_TEST_CORRUPT") == "1" {
		testCorrupt = func(b []byte) { b[len(b)/2] ^= 0x40 }
	}
}

func TestMain(m *testing.M) { testutil.Main(m) }

// runOurs runs the rgaps system alone through the real harness on host
// memory (two rgapsd processes bridged over libfabric shm, a publisher on
// A, N subscribers on B), its children with env added, and returns its
// run. It skips where libfabric has no shm provider.
func runOurs(t *testing.T, sizes []int64, ns []int, rounds, warmup int, env ...string) benche2e.SystemRun {
	t.Helper()
	p, err := fabric.Open("shm", fabric.Options{})
	if errors.Is(err, transport.ErrNotSupported) {
		t.Skip("libfabric shm: ", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := benche2e.Run(context.Background(), benche2e.Options{
		Sizes: sizes, Ns: ns, Rounds: rounds, Warmup: warmup, HostOnly: true, Wire: "shm",
		Exe: exe, ChildArgs: []string{}, ChildEnv: append([]string{testutil.ChildEnv + "=" + childRole}, env...),
		Systems: []func() benche2e.System{benche2e.Ours}, PeerTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Systems) != 1 || res.Systems[0].Name != "rgaps" {
		t.Fatalf("systems %+v", res.Systems)
	}
	return res.Systems[0]
}

// The rgaps system through the real harness on host memory: every round's
// bytes are checked by checksum and the source timestamp must be the
// publisher's.
func TestOursHostFallback(t *testing.T) {
	sizes := []int64{64 << 10, 3<<20 + 100}
	run := runOurs(t, sizes, []int{1, 3}, 3, 1)
	if run.Err != "" {
		t.Fatal(run.Err)
	}
	for _, size := range sizes {
		for _, n := range []int{1, 3} {
			c := run.Cell(size, n)
			if c == nil || len(c.PerSub) != 3 {
				t.Fatalf("cell %d/%d: %+v", size, n, c)
			}
			for _, r := range c.PerSub {
				if len(r) != n {
					t.Fatalf("cell %d/%d: %d subscriber times, want %d", size, n, len(r), n)
				}
				for _, v := range r {
					if v <= 0 {
						t.Fatalf("cell %d/%d: latency %d", size, n, v)
					}
				}
			}
			if _, ok := c.Stages[StagePublish]; !ok {
				t.Errorf("cell %d/%d: no %q stage", size, n, StagePublish)
			}
		}
	}
}

// A message damaged on host A fails the round: every subscriber's check
// (run after all of them answered) compares its checksum.
func TestOursCatchesDamage(t *testing.T) {
	run := runOurs(t, []int64{64 << 10}, []int{2}, 1, 0, "RGAPS_E2E_TEST_CORRUPT=1")
	if !strings.Contains(run.Err, "checksum") {
		t.Fatalf("damaged messages: error %q, want a checksum error", run.Err)
	}
}

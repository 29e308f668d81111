package zerocopy

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

const gpuDomain = 11

func init() {
	testutil.Daemon = func(ctx context.Context, args []string) error {
		return runPoolDaemon(ctx, args, testutil.Prefix())
	}
	// gpusub TOPIC MEMORY(host|gpu) N HOLD: take N samples; for each print
	// "sum <seq> <checksum> <offset>" computed on the GPU (gpu) or on the
	// host bytes (host). HOLD=1: keep the samples, print "holding", wait to
	// be killed.
	testutil.Role("gpusub", func(a []string) error {
		d, err := gpuChildDomain()
		if err != nil {
			return err
		}
		defer d.Close()
		mem := MemoryHost
		if a[1] == "gpu" {
			mem = MemoryGPU
		}
		n, _ := strconv.Atoi(a[2])
		q := qos.Default()
		q.History = qos.HistoryKeepAll
		s, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/Tensor", Node: "/gpusub", QoS: q, Memory: mem})
		if err != nil {
			return err
		}
		defer s.Close()
		var dev *cuda.Device
		if mem == MemoryGPU {
			if dev, err = d.gpu(); err != nil {
				return err
			}
		}
		fmt.Println("ready")
		var held []*Sample
		for i := 0; i < n; i++ {
			smp, err := s.TakeWait(60 * time.Second)
			if err != nil {
				return err
			}
			var sum uint64
			if mem == MemoryGPU {
				p, err := smp.DevicePtr()
				if err != nil {
					return err
				}
				if sum, err = dev.Checksum(cuda.DevicePtr(p), uint64(smp.Size())); err != nil {
					return err
				}
			} else {
				if smp.Bytes() == nil {
					return errors.New("host subscription got a sample without host bytes")
				}
				sum = cuda.ChecksumHost(smp.Bytes())
			}
			fmt.Printf("sum %d %d %d\n", smp.Info().Sequence, sum, smp.Info().Offset)
			if a[3] == "1" {
				held = append(held, smp)
			} else if err := smp.Return(); err != nil {
				return err
			}
		}
		if a[3] == "1" {
			fmt.Println("holding")
			time.Sleep(time.Hour)
		}
		return nil
	})
}

// runPoolDaemon serves as the GPU pool daemon the engine auto-starts
// (`daemon -domain N -idle D`): the pool server of rgapsd, gpupool.Run. The
// engine must not import the bridge, so its tests run this part of
// rgapsd.Main.
func runPoolDaemon(ctx context.Context, args []string, prefix string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	domain := fs.Uint("domain", 0, "ROS domain id")
	idle := fs.Duration("idle", 0, "exit after this long unused")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := gpupool.ServerConfig{Prefix: prefix, Domain: uint32(*domain), AllowGroup: -1, Idle: *idle,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := gpupool.Run(ctx, cfg); !errors.Is(err, gpupool.ErrRunning) {
		return err
	}
	return nil
}

func gpuChildDomain() (*Domain, error) {
	return Open(Config{Domain: gpuDomain, PoolSize: 256 << 20, StagingSize: 256 << 20, JanitorPeriod: 20 * time.Millisecond, BlockTimeout: 300 * time.Millisecond})
}

// requireGPU skips when this machine has no usable GPU (and says why), and
// fails instead when RGAPS_REQUIRE_GPU=1.
func requireGPU(t testing.TB, d *Domain) *cuda.Device {
	t.Helper()
	dev, err := d.gpu()
	testutil.SkipWithoutGPU(t, err, ErrNotSupported)
	if err != nil {
		t.Fatal(err)
	}
	testutil.AllowCurrentFDs() // the driver's own, for the process's life
	useTestDaemon(t)
	return dev
}

// useTestDaemon makes a GPU topic that a test opens start this test binary
// as its daemon (testutil.Daemon), idling out soon after the test, so that
// no daemon (and no goroutine reaping it) outlives the run.
func useTestDaemon(t testing.TB) {
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "2s")
}

// Without a GPU, device loans fail with a typed error, and a GPU topic with
// only host readers works entirely on host memory.
func TestGPUFallbackWithoutGPU(t *testing.T) {
	d := openDomain(t, nil)
	if _, err := d.gpu(); !errors.Is(err, ErrNotSupported) {
		t.Skip("this machine has a GPU: the fallback is not what runs here")
	}
	p, err := d.NewPublisher(EndpointSpec{Topic: "/tensor", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.LoanDevice(1024); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("device loan without a GPU: %v", err)
	}
	if err := p.PublishFrom(0, 16); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("PublishFrom without a GPU: %v", err)
	}
	hs, err := d.NewSubscription(EndpointSpec{Topic: "/tensor", Type: "t/msg/T", QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if p.t.PoolKind() != PoolGPU {
		t.Fatal("topic made by a GPU publisher has no GPU pool")
	}
	if err := p.Publish([]byte("host data on a GPU topic")); err != nil {
		t.Fatal(err)
	}
	smp, err := hs.TakeWait(time.Second)
	if err != nil || string(smp.Bytes()) != "host data on a GPU topic" {
		t.Fatalf("host reader of a GPU topic: %v", err)
	}
	if _, err := smp.DevicePtr(); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("DevicePtr without a GPU: %v", err)
	}
	smp.Return()
	// A GPU reader cannot exist without a GPU: it is refused at creation,
	// with the reason.
	if _, err := d.NewSubscription(EndpointSpec{Topic: "/tensor", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU}); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("GPU subscription without a GPU: %v", err)
	}
}

// A kernel fills a device loan in the publisher; 8 GPU subscriber processes
// checksum the same bytes on the GPU, at the same pool offset (one copy).
func TestGPUCrossProcessChecksum(t *testing.T) {
	const subs, msgs = 8, 3
	_, dev, p, kids := gpuPubFixture(t, "/gpu8", subs, msgs, "0")
	want := map[uint64]uint64{}
	for i := 1; i <= msgs; i++ {
		size := uint64(64<<20) + uint64(i)*4097
		l, err := p.LoanDevice(int(size))
		if err != nil {
			t.Fatal(err)
		}
		ptr, _ := l.DevicePtr()
		if err := dev.FillPattern(cuda.DevicePtr(ptr), size, uint32(i), nil); err != nil {
			t.Fatal(err)
		}
		host := make([]byte, size)
		cuda.FillPatternHost(host, uint32(i))
		want[uint64(i)] = cuda.ChecksumHost(host)
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	checkSums(t, kids, want, msgs)
	testutil.Eventually(t, 10*time.Second, "device pool back to full", func() bool {
		st := p.t.dalloc.Stats()
		return st.UsedBlocks == 0
	})
}

func keepAll() qos.Profile {
	q := qos.Default()
	q.History = qos.HistoryKeepAll
	return q
}

// gpuPubFixture opens this process's GPU domain and a GPU publisher of
// topic (KEEP_ALL) with n GPU subscriber children expecting msgs messages
// (hold: see startGPUSubs), matched; all of it is closed when the test ends.
func gpuPubFixture(t *testing.T, topic string, n, msgs int, hold string) (*Domain, *cuda.Device, *Publisher, []*testutil.Child) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	dev := requireGPU(t, d)
	p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/Tensor", Node: "/pub", QoS: keepAll(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	kids := startGPUSubs(t, topic, "gpu", n, msgs, hold)
	testutil.Eventually(t, 30*time.Second, "subscribers matched", func() bool { return p.Matched() == n })
	return d, dev, p, kids
}

func startGPUSubs(t *testing.T, topic, mem string, n, msgs int, hold string) []*testutil.Child {
	kids := make([]*testutil.Child, n)
	for i := range kids {
		kids[i] = testutil.Start(t, "gpusub", topic, mem, strconv.Itoa(msgs), hold)
	}
	for _, k := range kids {
		k.Expect(t, "ready", 60*time.Second)
	}
	return kids
}

// checkSums reads "sum seq checksum offset" lines: every child must report
// the expected checksum, and all children one offset per sequence number.
func checkSums(t *testing.T, kids []*testutil.Child, want map[uint64]uint64, msgs int) map[uint64]uint64 {
	t.Helper()
	offsets := map[uint64]uint64{}
	for ki, k := range kids {
		for i := 0; i < msgs; i++ {
			var seq, sum, off uint64
			line := k.Expect(t, "sum", 60*time.Second)
			if _, err := fmt.Sscanf(line, "sum %d %d %d", &seq, &sum, &off); err != nil {
				t.Fatalf("child %d: %q", ki, line)
			}
			if sum != want[seq] {
				t.Errorf("child %d, message %d: checksum %d, want %d", ki, seq, sum, want[seq])
			}
			if o, ok := offsets[seq]; ok && o != off {
				t.Errorf("message %d read at offsets %d and %d: more than one copy", seq, o, off)
			}
			offsets[seq] = off
		}
	}
	return offsets
}

// SIGKILL of a GPU subscriber holding device samples gives the device pool
// back.
func TestGPUKilledHolderReclaimed(t *testing.T) {
	d, dev, p, kids := gpuPubFixture(t, "/gpuheld", 1, 2, "1")
	want := map[uint64]uint64{}
	for i := 1; i <= 2; i++ {
		l, err := p.LoanDevice(8 << 20)
		if err != nil {
			t.Fatal(err)
		}
		ptr, _ := l.DevicePtr()
		dev.FillPattern(cuda.DevicePtr(ptr), 8<<20, uint32(i), nil)
		host := make([]byte, 8<<20)
		cuda.FillPatternHost(host, uint32(i))
		want[uint64(i)] = cuda.ChecksumHost(host)
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	checkSums(t, kids, want, 2)
	kids[0].Expect(t, "holding", 30*time.Second)
	if p.t.dalloc.Stats().UsedBlocks != 2 {
		t.Fatalf("device blocks in use: %d, want 2", p.t.dalloc.Stats().UsedBlocks)
	}
	kids[0].Cmd.Process.Kill()
	kids[0].Wait(10 * time.Second)
	testutil.Eventually(t, 10*time.Second, "device pool reclaimed", func() bool {
		d.Reclaim()
		return p.t.dalloc.Stats().UsedBlocks == 0
	})
}

// The device pool full: a RELIABLE publisher waits then fails, a
// BEST_EFFORT one fails at once and counts a drop.
func TestGPUPoolExhaustion(t *testing.T) {
	d, err := Open(Config{Domain: gpuDomain, PoolSize: 8 << 20, StagingSize: 1 << 20, BlockTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	requireGPU(t, d)
	rel, err := d.NewPublisher(EndpointSpec{Topic: "/gpufull", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer rel.Close()
	be, err := d.NewPublisher(EndpointSpec{Topic: "/gpufull", Type: "t/msg/T", QoS: qos.SensorData(), Memory: MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	l, err := rel.LoanDevice(8 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.LoanDevice(1 << 20); !errors.Is(err, ErrPoolExhausted) {
		t.Fatalf("reliable device loan from a full pool: %v", err)
	}
	if _, err := be.LoanDevice(1 << 20); !errors.Is(err, ErrPoolExhausted) || be.Drops() != 1 {
		t.Fatalf("best-effort device loan from a full pool: %v, drops %d", err, be.Drops())
	}
	if _, err := rel.LoanDevice(9 << 20); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized device loan: %v", err)
	}
	l.Discard()
}

// Host and GPU readers of a GPU topic, and a GPU reader of a host topic:
// every reader gets the right bytes, host readers share one host copy.
func TestGPUMixedReaders(t *testing.T) {
	d, err := gpuChildDomain()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(t, d)
	for _, tc := range []struct {
		topic string
		mem   Memory
	}{{"/mixed_gpu", MemoryGPU}, {"/mixed_host", MemoryHost}} {
		t.Run(strings.TrimPrefix(tc.topic, "/"), func(t *testing.T) {
			p, err := d.NewPublisher(EndpointSpec{Topic: tc.topic, Type: "t/msg/Tensor", Node: "/pub", QoS: keepAll(), Memory: tc.mem})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			hosts := startGPUSubs(t, tc.topic, "host", 2, 2, "0")
			gpus := startGPUSubs(t, tc.topic, "gpu", 2, 2, "0")
			testutil.Eventually(t, 30*time.Second, "matched", func() bool { return p.Matched() == 4 })
			want := map[uint64]uint64{}
			for i := 1; i <= 2; i++ {
				size := uint64(16<<20 + i)
				l, err := p.LoanDevice(int(size))
				if err != nil {
					t.Fatal(err)
				}
				ptr, _ := l.DevicePtr()
				if err := dev.FillPattern(cuda.DevicePtr(ptr), size, uint32(10+i), nil); err != nil {
					t.Fatal(err)
				}
				host := make([]byte, size)
				cuda.FillPatternHost(host, uint32(10+i))
				want[uint64(i)] = cuda.ChecksumHost(host)
				if err := l.Publish(); err != nil {
					t.Fatal(err)
				}
			}
			checkSums(t, hosts, want, 2) // one host offset per message: one host copy
			checkSums(t, gpus, want, 2)
		})
	}
}

package bridge

import (
	"bytes"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	// The engine starts this test binary as the GPU pool daemon.
	testutil.Daemon = func(args []string) error {
		return Main(args, zerocopy.Config{Prefix: os.Getenv("RGAPS_SHM_PREFIX")}, zerocopy.LookupGroup)
	}
}

// requireGPU skips without a GPU (fails with RGAPS_REQUIRE_GPU=1).
func requireGPU(t *testing.T, d *zerocopy.Domain) *cuda.Device {
	t.Helper()
	dev, err := d.GPU()
	if errors.Is(err, zerocopy.ErrNotSupported) {
		if os.Getenv("RGAPS_REQUIRE_GPU") == "1" {
			t.Fatalf("RGAPS_REQUIRE_GPU=1 but: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	testutil.AllowCurrentFDs()
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "2s")
	return dev
}

// A GPU publisher on host a, a GPU subscriber on host b: host a's bridge
// reads the one host copy the engine stages for it, host b's bridge places
// every message once into host b's shared GPU pool, and the subscriber
// reads it there through a device pointer.
func TestGPUAcrossHosts(t *testing.T) {
	a, b := pair(t, "fabric:tcp", func(o *Options) { o.RingSize = 32 << 20; o.Engine.PoolSize = 256 << 20 })
	dev := requireGPU(t, b.Domain())
	if _, err := a.Domain().GPU(); err != nil {
		t.Fatal(err)
	}
	q := reliable()
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/gpu/frames", Type: "sensor_msgs/msg/Image", Node: "/l", QoS: q, Memory: zerocopy.MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/gpu/frames", Type: "sensor_msgs/msg/Image", Node: "/t", QoS: q, Memory: zerocopy.MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, 20*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
	sizes := []int{4 << 20, 1000, 64 << 20, 4 << 20}
	for i, n := range sizes {
		l, err := pub.LoanDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.DevicePtr()
		if err != nil {
			t.Fatal(err)
		}
		if err := dev.MemcpyHtoD(p, bytes.Repeat([]byte{byte(i*7 + 1)}, n)); err != nil {
			t.Fatal(err)
		}
		if err := l.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range sizes {
		smp, err := sub.TakeWait(30 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		p, err := smp.DevicePtr()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, smp.Size())
		if err := dev.MemcpyDtoH(got, p); err != nil {
			t.Fatal(err)
		}
		smp.Return()
		if !bytes.Equal(got, bytes.Repeat([]byte{byte(i*7 + 1)}, n)) {
			t.Fatalf("message %d: %d bytes on the device, want %d of %#x", i, len(got), n, i*7+1)
		}
	}
	eps, err := b.Domain().Endpoints("/gpu/frames")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range eps {
		if e.Path != "gpu-pool" {
			t.Errorf("host b endpoint (bridge %v, %v) uses %s, want gpu-pool", e.Bridge, e.Kind, e.Path)
		}
	}
}

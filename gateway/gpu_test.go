package gateway

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log/slog"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func init() {
	// The engine's auto-start runs this test binary (RGAPS_DAEMON) as
	// `daemon -domain N -idle D` for the GPU pools: the pool server of
	// rgapsd (which imports this package, so it cannot serve here).
	testutil.Daemon = func(ctx context.Context, args []string) error {
		fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
		domain := fs.Uint("domain", 0, "ROS domain id")
		idle := fs.Duration("idle", 0, "exit after this long unused")
		if err := fs.Parse(args); err != nil {
			return err
		}
		err := gpupool.Run(ctx, gpupool.ServerConfig{Prefix: testutil.Prefix(), Domain: uint32(*domain), AllowGroup: -1, Idle: *idle,
			Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
		if errors.Is(err, gpupool.ErrRunning) {
			return nil
		}
		return err
	}
}

// TestGatewayGPUSplit: with device memory. Out: a device loan's split
// message, with no host reader on the host (its only form on the
// device), reaches DDS whole, the gateway making the one device-to-host
// copy. In: a DDS message for a topic that device subscriptions alone read
// is placed in a device block (no host form made), and once a host reader
// joins, in a host block whose device form the engine makes; both readers
// find the data.
func TestGatewayGPUSplit(t *testing.T) {
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "2s")
	e := startGateway(t, "/gw_gpu*")
	_, err := e.dom.GPU()
	testutil.SkipWithoutGPU(t, err, zerocopy.ErrNotSupported)
	must(t, err)
	testutil.AllowCurrentFDs()
	img := imageMsg(t)

	// rgaps → DDS
	p, err := e.dom.NewPublisher(zerocopy.EndpointSpec{Topic: "/gw_gpu_out", Type: img.typ, Node: "/gw_test", QoS: testQoS, GPUPool: true})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	r := e.reader(t, "/gw_gpu_out", img.typ)
	eventually(t, "the gateway's DDS writer", matched(r.Matched, 1))
	eventually(t, "the gateway's subscription", func() bool { return p.Matched() >= 1 })
	eps, err := e.dom.Endpoints("/gw_gpu_out")
	must(t, err)
	for _, ep := range eps {
		if ep.Node == Node && ep.Memory != zerocopy.MemoryAny {
			t.Errorf("the gateway's subscription reads %v, not any form", ep.Memory)
		}
	}
	l, err := p.LoanDevice(len(img.data))
	must(t, err)
	if !l.OnDevice() {
		t.Fatal("a device loan of a GPU topic is not on the device")
	}
	must(t, l.CopyIn(0, img.data))
	must(t, l.SetMeta(img.meta))
	must(t, l.Publish())
	if got := take(t, r); !bytes.Equal(got, img.whole) {
		t.Fatalf("DDS got %d bytes, want the whole message's %d (first difference at %d)", len(got), len(img.whole), firstDiff(got, img.whole))
	}

	// DDS → rgaps
	spec := zerocopy.EndpointSpec{Topic: "/gw_gpu_in", Type: img.typ, Node: "/gw_test", QoS: testQoS, GPUPool: true, Memory: zerocopy.MemoryGPU}
	dev, err := e.dom.NewSubscription(spec)
	must(t, err)
	t.Cleanup(func() { dev.Close() })
	w := e.writer(t, "/gw_gpu_in", img.typ)
	eventually(t, "the mirror", func() bool { a, _ := w.Matched(); return a >= 1 && dev.Matched() >= 1 })
	cp, err := e.dom.NewCopier()
	must(t, err)
	t.Cleanup(func() { cp.Close() })
	staged, err := unix.Mmap(-1, 0, len(img.data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	must(t, err)
	t.Cleanup(func() { unix.Munmap(staged) })
	checkDevice := func(what string, wantHost bool) {
		t.Helper()
		smp, err := dev.TakeWait(10 * time.Second)
		must(t, err)
		defer smp.Return()
		if field, rest, err := schema.ParseMeta(smp.Meta()); err != nil || field != img.field || !bytes.Equal(rest, img.rest) {
			t.Errorf("%s: meta block: field %d, %v", what, field, err)
		}
		if (smp.Bytes() != nil) != wantHost {
			t.Errorf("%s: host form %v, want %v", what, smp.Bytes() != nil, wantHost)
		}
		if _, err := smp.DevicePtr(); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		clear(staged)
		x, err := cp.StageOut(staged, smp, 0)
		if err == nil {
			err = x.Wait()
		}
		if err != nil || !bytes.Equal(staged, img.data) {
			t.Errorf("%s: the device block holds other bytes (%v; first difference at %d)", what, err, firstDiff(staged, img.data))
		}
	}
	must(t, w.Write(img.whole))
	checkDevice("device readers alone", false)

	host := e.subscription(t, "/gw_gpu_in", img.typ)
	eventually(t, "the host reader", func() bool { return host.Matched() >= 1 })
	must(t, w.Write(img.whole))
	checkDevice("with a host reader", true)
	smp, err := host.TakeWait(10 * time.Second)
	must(t, err)
	if !bytes.Equal(smp.Bytes(), img.data) {
		t.Errorf("the host reader's block: %d bytes, not the data", len(smp.Bytes()))
	}
	smp.Return()
}

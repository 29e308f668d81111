package zerocopy

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
	"golang.org/x/sys/unix"
)

// BenchmarkGPUCopyPaths separates what a GPU publish costs: the bare
// host-to-device copy from each kind of source into each kind of
// destination, and the engine's Publish of a host loan to a GPU reader.
func BenchmarkGPUCopyPaths(b *testing.B) {
	d, err := Open(Config{Domain: gpuDomain, PoolSize: 256 << 20, StagingSize: 256 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	dev := requireGPU(b, d)
	const size = 64 << 20
	seg, err := shm.Create(fmt.Sprintf("%s_bench_src", d.cfg.Prefix), size, 0o600, -1)
	if err != nil {
		b.Fatal(err)
	}
	defer seg.Close()
	shmSrc := seg.Bytes(0, size)
	anonSrc, _ := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	defer unix.Munmap(anonSrc)
	privSrc, _ := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	defer unix.Munmap(privSrc)
	for _, s := range [][]byte{shmSrc, anonSrc, privSrc} {
		for i := range s {
			s[i] = byte(i)
		}
		if err := dev.HostRegister(s, cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap); err != nil {
			b.Fatal(err)
		}
		defer dev.HostUnregister(s)
	}
	plain, err := dev.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Free(plain)
	vmm, err := dev.CreateShareable(size)
	if err != nil {
		b.Fatal(err)
	}
	defer vmm.Close()
	for _, src := range []struct {
		name string
		b    []byte
	}{{"shm", shmSrc}, {"anon-shared", anonSrc}, {"anon-private", privSrc}} {
		for _, dst := range []struct {
			name string
			p    cuda.DevicePtr
		}{{"cuMemAlloc", plain}, {"vmm", vmm.Ptr()}} {
			b.Run(src.name+"→"+dst.name, func(b *testing.B) {
				b.SetBytes(size)
				for i := 0; i < b.N; i++ {
					if err := dev.MemcpyHtoD(dst.p, src.b); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("engine-publish", func(b *testing.B) {
		p, err := d.NewPublisher(EndpointSpec{Topic: "/gpubench", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		s, err := d.NewSubscription(EndpointSpec{Topic: "/gpubench", Type: "t/msg/T", QoS: qos.Default(), Memory: MemoryGPU})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.SetBytes(size)
		var pub time.Duration
		for i := 0; i < b.N; i++ {
			l, err := p.Loan(size)
			if err != nil {
				b.Fatal(err)
			}
			t0 := time.Now()
			if err := l.Publish(); err != nil {
				b.Fatal(err)
			}
			pub += time.Since(t0)
			smp, err := s.Take()
			if err != nil {
				b.Fatal(err)
			}
			smp.Return()
		}
		b.ReportMetric(float64(pub.Microseconds())/float64(b.N), "publish-µs")
	})
}

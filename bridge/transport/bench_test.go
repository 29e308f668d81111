package transport_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

var benchSizes = []int{4 << 10, 1 << 20, 4 << 20, 64 << 20}

// BenchmarkWriteImm is the throughput of a WriteImm loop (bytes/s through
// b.SetBytes): one goroutine posts b.N writes of the size back to back,
// another polls the receiving endpoint until every immediate arrived.
// Both endpoints are in this process, over 127.0.0.1 or shm; on these
// software providers the figure is kernel-TCP or memcpy speed, and the
// point is the overhead against BenchmarkBare in the same run.
func BenchmarkWriteImm(b *testing.B) {
	for _, name := range []string{"fabric-tcp", "fabric-shm", "plaintcp"} {
		v := variantNamed(name)
		b.Run(name, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(sizeName(size), func(b *testing.B) { benchWriteImm(b, v, size) })
			}
		})
	}
}

func benchWriteImm(b *testing.B, v *variant, size int) {
	tx, err := v.open("127.0.0.1", 30*time.Second)
	skipUnsupported(b, err)
	defer tx.Close()
	rx, err := v.open("127.0.0.1", 30*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	ln, err := rx.Listen(v.listenAddr("127.0.0.1"))
	if err != nil {
		b.Fatal(err)
	}
	type accepted struct {
		ep  transport.Endpoint
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		ep, err := ln.Accept()
		ch <- accepted{ep, err}
	}()
	sender, err := tx.Dial(ln.Addr())
	if err != nil {
		ln.Close()
		<-ch
		b.Fatal(err)
	}
	a := <-ch
	ln.Close()
	if a.err != nil {
		b.Fatal(a.err)
	}
	receiver := a.ep
	src, err := tx.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	fill(src.Bytes(), 1)
	dst, err := rx.Alloc(size)
	if err != nil {
		b.Fatal(err)
	}
	remote := dst.Desc()

	b.SetBytes(int64(size))
	b.ResetTimer()
	done := make(chan error, 1)
	go func() {
		buf := make([]uint64, 256)
		for got := 0; got < b.N; {
			n, err := receiver.Wait(buf, 30*time.Second)
			if err != nil {
				done <- err
				return
			}
			if n == 0 {
				done <- errors.New("no immediate for 30 s")
				return
			}
			got += n
		}
		done <- nil
	}()
	for i := 0; i < b.N; i++ {
		if err := sender.WriteImm(src.Bytes(), src, remote, 0, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
	// The sender keeps progressing until the receiver has everything.
	var rerr error
wait:
	for spins := 0; ; spins++ {
		select {
		case rerr = <-done:
			break wait
		default:
		}
		if _, err := sender.Poll(nil); err != nil {
			b.Fatal(err)
		}
		transport.Backoff(spins)
	}
	b.StopTimer()
	if rerr != nil {
		b.Fatal(rerr)
	}
	// Close both while both still progress, so the bye handshake is quick.
	closed := make(chan error, 1)
	go func() { closed <- receiver.Close() }()
	if err := sender.Close(); err != nil {
		b.Error(err)
	}
	if err := <-closed; err != nil {
		b.Error(err)
	}
}

// BenchmarkBare is fabric.MeasureBare: the same loop as BenchmarkWriteImm
// as bare fi_writedata calls in C, the baseline for the transport's
// overhead.
func BenchmarkBare(b *testing.B) {
	for _, prov := range []string{"tcp", "shm"} {
		b.Run(prov, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(sizeName(size), func(b *testing.B) {
					// MeasureBare times its loop itself (set-up excluded):
					// its figures replace the benchmark's own.
					res, err := fabric.MeasureBareWith(prov, size, b.N, fabric.Options{NamePrefix: testutil.Prefix(), Timeout: 30 * time.Second})
					skipUnsupported(b, err)
					b.ReportMetric(float64(res.Elapsed.Nanoseconds())/float64(b.N), "ns/op")
					b.ReportMetric(res.BytesPerSecond()/1e6, "MB/s")
				})
			}
		})
	}
}

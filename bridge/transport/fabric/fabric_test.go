//go:build cgo && !nofabric

package fabric

import (
	"bytes"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// checkClosed makes the test fail if libfabric objects outlive it
// (register it before opening anything: cleanups run last first).
func checkClosed(t *testing.T) {
	t.Cleanup(func() {
		if c := Outstanding(); c != (Counts{}) {
			t.Errorf("libfabric objects left open: %+v", c)
		}
	})
}

func open(t *testing.T, name string, opts Options) *Provider {
	t.Helper()
	opts.NamePrefix = testutil.Prefix()
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Second
	}
	p, err := Open(name, opts)
	if errors.Is(err, transport.ErrNotSupported) && os.Getenv("RGAPS_REQUIRE_FABRIC") != "1" {
		t.Skipf("not supported here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
			t.Error(err)
		}
	})
	return p
}

// pair connects two endpoints of p (one provider: shared domain and keys).
func pair(t *testing.T, p *Provider) (dialer, accepted *Endpoint) {
	t.Helper()
	addr := ""
	if p.epType == epMsg {
		addr = "127.0.0.1:0"
	}
	ln, err := p.Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan transport.Endpoint, 1)
	go func() {
		e, err := ln.Accept()
		if err != nil {
			t.Error(err)
		}
		ch <- e
	}()
	d, err := p.Dial(ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	a := <-ch
	ln.Close()
	if a == nil {
		t.FailNow()
	}
	dialer, accepted = d.(*Endpoint), a.(*Endpoint)
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { accepted.Close(); close(done) }()
		dialer.Close()
		<-done
	})
	return dialer, accepted
}

func TestUnknownProvider(t *testing.T) {
	if _, err := Open("no-such-provider", Options{}); !errors.Is(err, transport.ErrNotSupported) {
		t.Fatalf("Open of an unknown provider: %v, want ErrNotSupported", err)
	}
	if _, err := Open("verbs", Options{}); err != nil && !errors.Is(err, transport.ErrNotSupported) {
		t.Fatalf("Open verbs without RDMA hardware: %v, want ErrNotSupported or success", err)
	}
}

// TestForcedVerbsPaths checks that the Force options really take the
// paths verbs needs: descriptors, a full receive queue whose receives are
// posted again when consumed, and the fence.
func TestForcedVerbsPaths(t *testing.T) {
	for _, prov := range []string{"tcp", "shm"} {
		t.Run(prov, func(t *testing.T) {
			checkClosed(t)
			p := open(t, prov, Options{ForceRxCQData: true, ForceMRLocal: true, ForceFence: true})
			if !p.descs || !p.rxCQData || !p.fence {
				t.Fatalf("forced paths off: %s", p.Describe())
			}
			d, a := pair(t, p)
			if a.c.rxDepth != min(p.rxSize, 1024) {
				t.Errorf("receive queue %d deep, want %d", a.c.rxDepth, min(p.rxSize, 1024))
			}
			src, err := p.Alloc(4096)
			if err != nil {
				t.Fatal(err)
			}
			dst, err := p.Alloc(4096)
			if err != nil {
				t.Fatal(err)
			}
			if sr := src.(*Region); sr.descFor() == nil && sr.desc != nil {
				t.Error("no descriptor passed for the local buffer")
			}
			// The fence waits for the Write's delivery, which needs the
			// receiver to progress meanwhile.
			type waited struct {
				n    int
				imms []uint64
				err  error
			}
			got := make(chan waited, 1)
			go func() {
				imms := make([]uint64, 4)
				n, err := a.Wait(imms, 20*time.Second)
				got <- waited{n, imms[:n], err}
			}()
			if err := d.Write(src.Bytes()[:8], src, dst.Desc(), 0); err != nil {
				t.Fatal(err)
			}
			if err := d.WriteImm(src.Bytes()[8:16], src, dst.Desc(), 8, 5); err != nil {
				t.Fatal(err)
			}
			if st := d.Stats(); st.Fences != 1 {
				t.Errorf("a WriteImm after a Write did not fence: %+v", st)
			}
			if w := <-got; w.err != nil || w.n != 1 || w.imms[0] != 5 {
				t.Fatalf("Wait: %d %v %v", w.n, w.imms, w.err)
			}
			if err := d.Flush(20 * time.Second); err != nil {
				t.Fatal(err)
			}
			// The receives consumed by control messages (shm's hello) were
			// posted again: the queue is still full.
			a.mu.Lock()
			posted := a.c.rxDepth - len(a.c.unposted)
			a.mu.Unlock()
			if posted != a.c.rxDepth {
				t.Errorf("%d of %d receives posted", posted, a.c.rxDepth)
			}
		})
	}
}

// TestProviderEAgain: writes to a peer that does not poll fill shm's
// queue, and the provider's -FI_EAGAIN is retried while progressing until
// the peer polls again. tcp in libfabric 1.17 never answers -FI_EAGAIN
// (its transfer pool grows); there the context slots fill instead.
func TestProviderEAgain(t *testing.T) {
	for _, prov := range []string{"shm", "tcp"} {
		t.Run(prov, func(t *testing.T) {
			checkClosed(t)
			p := open(t, prov, Options{})
			d, a := pair(t, p)
			src, _ := p.Alloc(4096)
			dst, _ := p.Alloc(64 * 4096)
			// The receiver polls only once the sender met a full queue.
			stop := make(chan struct{})
			drained := make(chan int, 1)
			go func() {
				for d.Stats().Retries == 0 {
					select {
					case <-stop:
						drained <- 0
						return
					case <-time.After(100 * time.Microsecond):
					}
				}
				got := 0
				imms := make([]uint64, 256)
				for {
					n, err := a.Poll(imms)
					got += n
					if err != nil {
						t.Error(err)
						drained <- got
						return
					}
					select {
					case <-stop:
						drained <- got
						return
					default:
					}
				}
			}()
			n := 0
			for ; n < 100000 && d.Stats().Retries == 0; n++ {
				if err := d.WriteImm(src.Bytes(), src, dst.Desc(), uint64(n%64*4096), uint64(n)); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.Flush(20 * time.Second); err != nil {
				t.Error(err)
			}
			close(stop)
			<-drained
			st := d.Stats()
			t.Logf("%s: %d writes, retries %d, -FI_EAGAIN %d", prov, n, st.Retries, d.ProviderEAgain())
			if st.Retries == 0 {
				t.Errorf("%d writes never met a full queue", n)
			}
			if prov == "shm" && d.ProviderEAgain() == 0 {
				t.Error("shm never answered -FI_EAGAIN")
			}
		})
	}
}

func TestLocalRegionChecks(t *testing.T) {
	checkClosed(t)
	p := open(t, "tcp", Options{})
	q := open(t, "tcp", Options{})
	d, a := pair(t, p)
	src, _ := p.Alloc(4096)
	dst, _ := p.Alloc(4096)
	other, _ := q.Alloc(4096)
	remote := dst.Desc()
	go a.Wait(nil, time.Second) // progress the receiver a little
	outside, err := transport.MapAnon(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer transport.Unmap(outside)
	if err := d.WriteImm(outside[:16], src, remote, 0, 1); !errors.Is(err, transport.ErrOutOfBounds) {
		t.Errorf("src outside the local region: %v, want ErrOutOfBounds", err)
	}
	if err := d.WriteImm(src.Bytes()[4000:4096], src, remote, 0, 2); err != nil {
		t.Errorf("src at the end of the local region: %v", err)
	}
	if err := d.Write(other.Bytes()[:16], other, remote, 0); err == nil {
		t.Error("a region of another provider was accepted")
	}
	if err := d.Write(src.Bytes()[:16], nil, remote, 0); err == nil {
		t.Error("a nil local region was accepted")
	}
}

func TestErrorIs(t *testing.T) {
	for _, c := range []struct {
		code int
		want error
	}{
		{int(syscall.ECONNRESET), transport.ErrPeerClosed},
		{int(syscall.EPIPE), transport.ErrPeerClosed},
		{int(syscall.ENOTCONN), transport.ErrPeerClosed},
		{int(syscall.ETIMEDOUT), transport.ErrTimeout},
	} {
		err := fiError("test", c.code, "")
		if !errors.Is(err, c.want) {
			t.Errorf("%v is not %v", err, c.want)
		}
		if e := err.(*Error); e.Text == "" {
			t.Errorf("code %d: no fi_strerror text", c.code)
		}
	}
}

// TestCompletionError: a message longer than the peer's posted receive
// fails there for real (FI_ETRUNC); the error comes through fi_cq_readerr
// as an *Error with libfabric's text, and sticks.
func TestCompletionError(t *testing.T) {
	for _, prov := range []string{"tcp", "shm"} {
		t.Run(prov, func(t *testing.T) {
			checkClosed(t)
			p := open(t, prov, Options{})
			d, a := pair(t, p)
			src, _ := p.Alloc(4096)
			if err := d.sendRaw(src.Bytes()[:2*ctlSize], src.(*Region)); err != nil {
				t.Fatal(err)
			}
			var aerr error
			deadline := time.Now().Add(20 * time.Second)
			for aerr == nil && time.Now().Before(deadline) {
				d.Poll(nil)
				_, aerr = a.Poll(nil)
			}
			var fe *Error
			if !errors.As(aerr, &fe) || fe.Op != "completion" || fe.Text == "" {
				t.Fatalf("receiver's error: %v, want a completion error with text", aerr)
			}
			t.Logf("%s: %v", prov, aerr)
			if _, err := a.Poll(nil); err != aerr {
				t.Errorf("error did not stick: %v", err)
			}
			if err := a.WriteImm(nil, src, transport.RemoteRegion{Len: 8}, 0, 1); err != aerr {
				t.Errorf("WriteImm after the error: %v", err)
			}
		})
	}
}

func TestMeasureBare(t *testing.T) {
	checkClosed(t)
	for _, prov := range []string{"tcp", "shm"} {
		res, err := MeasureBareWith(prov, 1<<20, 32, Options{NamePrefix: testutil.Prefix(), Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Iters != 32 || res.Elapsed <= 0 || res.BytesPerSecond() <= 0 {
			t.Errorf("%s: %+v", prov, res)
		}
		t.Logf("%s: 32 × 1 MiB in %v (%.0f MB/s)", prov, res.Elapsed, res.BytesPerSecond()/1e6)
	}
	// Over 3 endpoint pairs at once: a message's pieces of 1/3 each
	// (the last shorter), every pair's writes all received.
	res, err := MeasureBareRails("tcp", 1<<20+5, 16, 3, Options{NamePrefix: testutil.Prefix(), Timeout: 20 * time.Second})
	if err != nil || res.Iters != 16 || res.Size != 1<<20+5 || res.Elapsed <= 0 {
		t.Errorf("3 endpoints: %+v %v", res, err)
	}
	// From fresh memory into fresh memory: 5 source and 3 target slots of
	// an odd size (slots 64-byte aligned), 16 writes wrapping around
	// both; a write past either region fails its completion.
	for _, prov := range []string{"tcp", "shm"} {
		size := 100<<10 + 3
		stride := (size + 63) &^ 63
		res, err = MeasureBareStream(prov, size, 16, 5*stride, 3*stride+63, Options{NamePrefix: testutil.Prefix(), Timeout: 20 * time.Second})
		if err != nil || res.Iters != 16 || res.Size != size || res.Elapsed <= 0 {
			t.Errorf("%s streaming: %+v %v", prov, res, err)
		}
	}
	if _, err := MeasureBare("tcp", 0, 1); err == nil {
		t.Error("a bare loop of 0-byte writes was accepted")
	}
	if _, err := MeasureBareRails("tcp", 1<<20, 1, 0, Options{}); err == nil {
		t.Error("a bare loop over 0 endpoints was accepted")
	}
}

// A record's parts (header, meta, payload from three regions) written as
// one write where the provider needs a fence between writes (shm): the
// peer finds their concatenation in its region when the immediate comes,
// and no fence was waited for. Where writes are ordered (tcp) nothing is
// gathered, and WriteImmGather refuses.
func TestWriteImmGather(t *testing.T) {
	checkClosed(t)
	p := open(t, "shm", Options{})
	if !p.fence || p.gather() < 3 {
		t.Fatalf("shm: fenced %v, gathers %d parts (iov limit %d), want fenced and at least 3", p.fence, p.gather(), p.iovLimit)
	}
	d, a := pair(t, p)
	if d.MaxGather() != p.gather() {
		t.Errorf("MaxGather %d, provider %d", d.MaxGather(), p.gather())
	}
	sizes := []int{64, 1000, 300_000}
	var regs []transport.Region
	for _, n := range sizes {
		r, err := p.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		regs = append(regs, r)
	}
	dst, err := p.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	imms := make([]uint64, 4)
	for round := range 20 {
		var srcs [][]byte
		var want []byte
		for k, r := range regs {
			b := r.Bytes()[:sizes[k]]
			for i := range b {
				b[i] = byte(round*7 + k*31 + i)
			}
			srcs = append(srcs, b)
			want = append(want, b...)
		}
		off := uint64(round * 4096)
		if err := d.WriteImmGather(srcs, regs, dst.Desc(), off, uint64(1000+round)); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		got := 0
		for got == 0 {
			if _, err := d.Poll(nil); err != nil {
				t.Fatal(err)
			}
			if got, err = a.Poll(imms); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: no immediate", round)
			}
		}
		if got != 1 || imms[0] != uint64(1000+round) {
			t.Fatalf("round %d: immediates %v, want [%d]", round, imms[:got], 1000+round)
		}
		if !bytes.Equal(dst.Bytes()[off:off+uint64(len(want))], want) {
			t.Fatalf("round %d: the peer's region does not hold the parts' concatenation", round)
		}
	}
	if st := d.Stats(); st.Fences != 0 || st.Writes != 20 {
		t.Errorf("stats %+v: want 20 writes and no fence", st)
	}
	// Bad calls: more parts than it takes, regions not matching parts, a
	// part outside its region, past the end of the peer's region.
	three := [][]byte{regs[0].Bytes()[:8], regs[1].Bytes()[:8], regs[2].Bytes()[:8]}
	many := make([][]byte, p.gather()+1)
	manyRegs := make([]transport.Region, len(many))
	for i := range many {
		many[i], manyRegs[i] = regs[0].Bytes()[:8], regs[0]
	}
	if err := d.WriteImmGather(many, manyRegs, dst.Desc(), 0, 1); !errors.Is(err, transport.ErrNotSupported) {
		t.Errorf("%d parts: %v, want ErrNotSupported", len(many), err)
	}
	if err := d.WriteImmGather(three, regs[:2], dst.Desc(), 0, 1); !errors.Is(err, transport.ErrNotSupported) {
		t.Errorf("3 parts, 2 regions: %v, want ErrNotSupported", err)
	}
	if err := d.WriteImmGather([][]byte{regs[1].Bytes()[:8], regs[1].Bytes()[:8]}, []transport.Region{regs[1], regs[0]}, dst.Desc(), 0, 1); !errors.Is(err, transport.ErrOutOfBounds) {
		t.Errorf("a part outside its region: %v, want ErrOutOfBounds", err)
	}
	if err := d.WriteImmGather(three, regs, dst.Desc(), 1<<20-16, 1); err == nil {
		t.Error("a write past the end of the peer's region was accepted")
	}
	q := open(t, "tcp", Options{})
	dq, _ := pair(t, q)
	if dq.MaxGather() >= 2 {
		t.Errorf("tcp orders writes, yet gathers %d parts", dq.MaxGather())
	}
	tr, err := q.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tdst, err := q.Alloc(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer tdst.Close()
	if err := dq.WriteImmGather([][]byte{tr.Bytes()[:8], tr.Bytes()[8:16]}, []transport.Region{tr, tr}, tdst.Desc(), 0, 1); !errors.Is(err, transport.ErrNotSupported) {
		t.Errorf("tcp: %v, want ErrNotSupported", err)
	}
}

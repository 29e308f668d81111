package benchbridge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
)

// Baseline is one measured loop: Iters messages of Size bytes in Elapsed.
type Baseline struct {
	Size    int             `json:"size"`
	Iters   int             `json:"iters"`
	Elapsed time.Duration   `json:"elapsed_ns"` // median of Runs
	Runs    []time.Duration `json:"runs_ns,omitempty"`
}

// BytesPerSecond is the loop's throughput.
func (b Baseline) BytesPerSecond() float64 {
	if b.Elapsed <= 0 {
		return 0
	}
	return float64(b.Size) * float64(b.Iters) / b.Elapsed.Seconds()
}

func notSupported(err error) bool { return errors.Is(err, transport.ErrNotSupported) }

// measureBare is fabric.MeasureBare over the libfabric provider of the
// bridge's provider name: a bare fi_writedata loop in C between two
// endpoints of this process. Plain TCP has no such loop
// (transport.ErrNotSupported).
func measureBare(provider string, size, iters int, prefix string) (Baseline, error) {
	name, ok := strings.CutPrefix(provider, "fabric:")
	if !ok {
		return Baseline{}, fmt.Errorf("provider %s: %w: no bare fi_writedata loop without libfabric", provider, transport.ErrNotSupported)
	}
	r, err := fabric.MeasureBareWith(name, size, iters, fabric.Options{Node: "127.0.0.1", NamePrefix: prefix, Timeout: 30 * time.Second})
	if err != nil {
		return Baseline{}, err
	}
	return Baseline{Size: r.Size, Iters: r.Iters, Elapsed: r.Elapsed}, nil
}

// measureBareStream is fabric.MeasureBareStream over the libfabric
// provider of the bridge's provider name: the bare loop with the source
// cycling through srcSpan bytes and the target through dstSpan.
func measureBareStream(provider string, size, iters, srcSpan, dstSpan int, prefix string) (Baseline, error) {
	name, ok := strings.CutPrefix(provider, "fabric:")
	if !ok {
		return Baseline{}, fmt.Errorf("provider %s: %w: no bare fi_writedata loop without libfabric", provider, transport.ErrNotSupported)
	}
	r, err := fabric.MeasureBareStream(name, size, iters, srcSpan, dstSpan, fabric.Options{Node: "127.0.0.1", NamePrefix: prefix, Timeout: 30 * time.Second})
	if err != nil {
		return Baseline{}, err
	}
	return Baseline{Size: r.Size, Iters: r.Iters, Elapsed: r.Elapsed}, nil
}

// measureLoop is the ring's traffic without the ring: through the
// transport.Provider API of the bridge's provider, one goroutine writes
// iters size-byte messages with immediates back to back at consecutive
// 64-byte-aligned offsets of a ringSize remote region (wrapping like the
// ring), another polls the receiving endpoint until every immediate
// arrived. No headers, no head write-backs, no pools.
func measureLoop(provider string, size, iters int, ringSize uint64) (res Baseline, err error) {
	if size > transport.MaxMessage || uint64(size) > ringSize {
		return res, fmt.Errorf("%d bytes: larger than one write or the ring", size)
	}
	tx, err := bridge.OpenProvider(provider, "127.0.0.1", nil)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, tx.Close()) }()
	rx, err := bridge.OpenProvider(provider, "127.0.0.1", nil)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, rx.Close()) }()
	addr := "127.0.0.1:0"
	if provider == "fabric:shm" {
		addr = ""
	}
	ln, err := rx.Listen(addr)
	if err != nil {
		return res, err
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
		return res, err
	}
	a := <-ch
	ln.Close()
	if a.err != nil {
		sender.Close()
		return res, a.err
	}
	receiver := a.ep
	defer func() {
		// Close both at once, so each progresses the other's goodbye.
		closed := make(chan error, 1)
		go func() { closed <- receiver.Close() }()
		err = errors.Join(err, sender.Close(), <-closed)
	}()
	src, err := tx.Alloc(size)
	if err != nil {
		return res, err
	}
	dst, err := rx.Alloc(int(ringSize))
	if err != nil {
		return res, err
	}
	remote := dst.Desc()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		buf := make([]uint64, 256)
		for got := 0; got < iters; {
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
	step := (uint64(size) + 63) &^ 63
	var off uint64
	for i := range iters {
		if off+uint64(size) > ringSize {
			off = 0
		}
		if err := sender.WriteImm(src.Bytes(), src, remote, off, uint64(i)); err != nil {
			// The receiver waits at most 30 s more.
			<-done
			return res, err
		}
		off += step
	}
	// The sender keeps progressing until the receiver has everything.
	for spins := 0; ; spins++ {
		select {
		case err := <-done:
			if err != nil {
				return res, err
			}
			return Baseline{Size: size, Iters: iters, Elapsed: time.Since(start)}, nil
		default:
		}
		if _, err := sender.Poll(nil); err != nil {
			<-done
			return res, err
		}
		transport.Backoff(spins)
	}
}

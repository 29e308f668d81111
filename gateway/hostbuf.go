package gateway

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// minBuf is the smallest hostBuf mapping; larger ones are powers of two.
const minBuf = 1 << 20

// hostBuf is a mirror's buffer for the payloads it copies between DDS and
// device memory: host memory outside the Go heap (an anonymous mapping, as
// the engine's Copier requires), reused from one message to the next and
// mapped anew, larger, when a message needs more; and the engine copier
// that copies into it (StageOut) or out of it (CopyIn), made at first use
// (a GPU is there then), from when on the mapping is pinned for the GPU.
// One goroutine uses it; no copy is in flight when get is called (the
// caller waited for each).
type hostBuf struct {
	dom   *zerocopy.Domain
	mem   []byte       // the mapping, whole
	unpin func() error // nil while unpinned
	cp    *zerocopy.Copier
}

// get returns n bytes of the buffer (their contents are left over from
// earlier messages), growing it first when it is smaller.
func (b *hostBuf) get(n int) ([]byte, error) {
	if n <= len(b.mem) {
		return b.mem[:n:n], nil
	}
	size := minBuf
	for size < n {
		size <<= 1
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("gateway: mapping a %d-byte buffer: %w", size, err)
	}
	pinned := b.cp != nil
	b.release()
	b.mem = mem
	if pinned {
		b.pin()
	}
	return b.mem[:n:n], nil
}

// copier is the buffer's engine copier, made (and the buffer pinned) on
// first use. Without a GPU it returns an error wrapping
// zerocopy.ErrNotSupported.
func (b *hostBuf) copier() (*zerocopy.Copier, error) {
	if b.cp != nil {
		return b.cp, nil
	}
	cp, err := b.dom.NewCopier()
	if err != nil {
		return nil, err
	}
	b.cp = cp
	b.pin()
	return cp, nil
}

// pin page-locks the mapping for the GPU, so its copies run at DMA speed;
// where that fails they still run, slower.
func (b *hostBuf) pin() {
	if len(b.mem) == 0 {
		return
	}
	if unpin, err := b.dom.PinHost(b.mem); err == nil {
		b.unpin = unpin
	}
}

// release unpins and unmaps the mapping.
func (b *hostBuf) release() error {
	var errs []error
	if b.unpin != nil {
		errs = append(errs, b.unpin())
		b.unpin = nil
	}
	if b.mem != nil {
		errs = append(errs, unix.Munmap(b.mem))
		b.mem = nil
	}
	return errors.Join(errs...)
}

// close waits for the copier's copies and frees everything.
func (b *hostBuf) close() error {
	var err error
	if b.cp != nil {
		err = b.cp.Close()
		b.cp = nil
	}
	return errors.Join(err, b.release())
}

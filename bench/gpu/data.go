package benchgpu

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// device is what the benchmark asks of a GPU. *cuda.Device is the real
// one; the package's tests substitute a host-memory fake (testDevice) to
// exercise the processes, the protocol and the report on machines without
// a GPU.
type device interface {
	Alloc(size uint64) (cuda.DevicePtr, error)
	Free(p cuda.DevicePtr) error
	FillPattern(p cuda.DevicePtr, n uint64, seed uint32, s *cuda.Stream) error
	MemcpyDtoH(dst []byte, src cuda.DevicePtr) error
	MemcpyHtoD(dst cuda.DevicePtr, src []byte) error
	CtxSynchronize() error
	Checksum(p cuda.DevicePtr, n uint64) (uint64, error)
	HostRegister(b []byte, flags cuda.HostRegisterFlags) error
	HostUnregister(b []byte) error
}

var _ device = (*cuda.Device)(nil)

// testDevice, set only by this package's tests, makes the fake device that
// Options.fake and request.Fake select.
var testDevice func() device

// Message contents.
//
// Data path 1 sends the built-in pattern (cuda.FillPattern, seed per
// message) straight from device memory; the host subscriber and the UDS
// receiver check it at spotChecks places.
//
// Data path 3 sends, in message i, host pattern i%2 (seeds dp3Seeds, whose
// low bytes differ, so consecutive messages differ in every byte), with
// three 8-byte words written over it just before Publish: t0 (wall clock
// UnixNano) at offset 0, and i at the middle and at the end (so a message
// copied only in part is caught). Every subscriber runs the checksum kernel
// on its device pointer; the parent compares the value with
// cuda.ChecksumHost of the bytes it published, computed once per pattern
// and corrected for the three words (the checksum is a weighted sum, so a
// word's contribution can be replaced).

// dp3Seeds are the seeds of data path 3's two host patterns.
var dp3Seeds = [2]uint32{0xA5, 0x5A}

// spotChecks is how many evenly spread bytes checkPattern reads besides the
// first and last 64.
const spotChecks = 256

// checkPattern verifies b against the pattern of seed at the first and last
// 64 bytes and spotChecks places between; it describes the first
// difference, or returns "".
func checkPattern(b []byte, seed uint32) string {
	n := uint64(len(b))
	if n == 0 {
		return "empty message"
	}
	try := func(i uint64) string {
		if want := cuda.PatternByte(i, seed); b[i] != want {
			return fmt.Sprintf("byte %d is %#02x, want %#02x (pattern seed %d)", i, b[i], want, seed)
		}
		return ""
	}
	for i := uint64(0); i < min(n, 64); i++ {
		if s := try(i); s != "" {
			return s
		}
	}
	for i := n - min(n, 64); i < n; i++ {
		if s := try(i); s != "" {
			return s
		}
	}
	for k := uint64(1); k <= spotChecks; k++ {
		if s := try(k * (n - 1) / (spotChecks + 1)); s != "" {
			return s
		}
	}
	return ""
}

// stampOffsets are where data path 3 writes its three words in a message of
// size bytes (size >= MinSize).
func stampOffsets(size int) [3]int { return [3]int{0, (size / 2) &^ 7, size - 8} }

// stampWords are the three words of message i stamped at t0.
func stampWords(t0 int64, i int) [3]uint64 { return [3]uint64{uint64(t0), uint64(i), uint64(i)} }

// stamp writes the words into b.
func stamp(b []byte, words [3]uint64) {
	for k, off := range stampOffsets(len(b)) {
		binary.LittleEndian.PutUint64(b[off:off+8], words[k])
	}
}

// checksumAt is the contribution of b, placed at offset off of a message,
// to cuda.ChecksumHost of the message.
func checksumAt(b []byte, off int) uint64 {
	var sum uint64
	m := uint64(off % 251)
	for _, v := range b {
		sum += uint64(v) * (m + 1)
		if m++; m == 251 {
			m = 0
		}
	}
	return sum
}

// stampedChecksum is cuda.ChecksumHost of pattern pat (whose checksum is
// base) with the words stamped over it.
func stampedChecksum(base uint64, pat []byte, words [3]uint64) uint64 {
	sum := base
	var w [8]byte
	for k, off := range stampOffsets(len(pat)) {
		binary.LittleEndian.PutUint64(w[:], words[k])
		sum += checksumAt(w[:], off) - checksumAt(pat[off:off+8], off)
	}
	return sum
}

// parallelChecksum is cuda.ChecksumHost(b) computed on every core: chunks
// that start at multiples of 251 bytes have the same weights as the whole.
func parallelChecksum(b []byte) uint64 {
	const chunk = 251 << 16 // ≈ 16 MB
	if len(b) <= chunk {
		return cuda.ChecksumHost(b)
	}
	parts := make([]uint64, (len(b)+chunk-1)/chunk)
	parallel(len(parts), func(k int) {
		parts[k] = cuda.ChecksumHost(b[k*chunk : min(len(b), (k+1)*chunk)])
	})
	var sum uint64
	for _, p := range parts {
		sum += p
	}
	return sum
}

// parallelCopy copies src into dst (equal lengths) on every core.
func parallelCopy(dst, src []byte) {
	const chunk = 8 << 20
	n := (len(src) + chunk - 1) / chunk
	if n <= 1 {
		copy(dst, src)
		return
	}
	parallel(n, func(k int) {
		lo, hi := k*chunk, min(len(src), (k+1)*chunk)
		copy(dst[lo:hi], src[lo:hi])
	})
}

// parallel runs fn(0..n-1) on at most GOMAXPROCS goroutines.
func parallel(n int, fn func(k int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	next := make(chan int, n)
	for k := range n {
		next <- k
	}
	close(next)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				fn(k)
			}
		}()
	}
	wg.Wait()
}

// touch writes every page of b so page faults are not timed.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
}

package transport

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// MapAnon maps n bytes (rounded up to whole pages) of zeroed anonymous
// memory outside the Go heap: memory a provider may register and hand to
// hardware or to a C library that keeps using it after a call returns.
// The returned slice is exactly n bytes long; release it with Unmap.
func MapAnon(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("mapping %d bytes: size must be positive", n)
	}
	page := os.Getpagesize()
	size := (n + page - 1) / page * page
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mapping %d bytes: %w", size, err)
	}
	return b[:n], nil
}

// Unmap releases memory from MapAnon.
func Unmap(b []byte) error {
	if err := unix.Munmap(b[:cap(b)]); err != nil {
		return fmt.Errorf("unmapping %d bytes: %w", cap(b), err)
	}
	return nil
}

// Populate faults in every page of b (memory from MapAnon) as if each were
// written, without touching its contents (madvise MADV_POPULATE_WRITE,
// Linux 5.14): safe while a provider lands bytes in it, and one system
// call instead of a page fault per page. It returns ErrNotSupported on
// older kernels.
func Populate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	if errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("%w: madvise(MADV_POPULATE_WRITE): %v", ErrNotSupported, err)
	}
	return err
}

package shm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Dir is where POSIX shared-memory objects live on Linux (shm_open uses it).
const Dir = "/dev/shm"

// ErrExist is returned by Segment.Publish when a segment of that name already
// exists: another process arrived first.
var ErrExist = errors.New("shared-memory segment already exists")

// ErrNotExist is returned by Open when no segment of that name exists.
var ErrNotExist = errors.New("shared-memory segment does not exist")

// ErrNoSpace is returned (wrapped, together with ENOSPC) by Commit when the
// file system behind Dir has no room left for the range.
var ErrNoSpace = errors.New("no space left in " + Dir)

// Segment is one mapped POSIX shared-memory object. All methods that take
// offsets panic on an offset outside the mapping or a misaligned word: those
// are programming errors of the format owner, not input errors (the format
// owner validates sizes read from shared memory before using them).
//
// A segment is a sparse file: its size is fixed at creation, but it uses
// memory only for the ranges that were committed (Commit) or touched.
// Touching a page that was never committed, even to read it, allocates it
// and, when the file system is full, kills the process with SIGBUS; so the
// format owner commits every range before anything touches it.
type Segment struct {
	name string // final name under Dir
	tmp  string // temporary name until Publish; "" once published or opened
	fd   int    // kept open for Commit; -1 once closed
	data []byte
}

// Create makes a new, unpublished segment of size bytes with the given
// permission bits (e.g. 0600, or 0660 for group access). The segment is
// sparse: nothing is committed yet, and the caller must Commit every range
// before touching it. The segment lives under a temporary name until
// Publish links it to name, so other processes never see it half-initialised.
func Create(name string, size int64, perm os.FileMode, gid int) (*Segment, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("creating segment %q: size %d must be positive", name, size)
	}
	tmp := fmt.Sprintf("%.200s.tmp%d_%x", name, os.Getpid(), rand.Uint64())
	path := filepath.Join(Dir, tmp)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, uint32(perm.Perm()))
	if err != nil {
		return nil, fmt.Errorf("creating segment %q: %w", name, err)
	}
	fail := func(what string, err error) (*Segment, error) {
		unix.Close(fd)
		unix.Unlink(path)
		return nil, fmt.Errorf("creating segment %q: %s: %w", name, what, err)
	}
	// The umask may have narrowed the mode; set exactly what was asked.
	if err := unix.Fchmod(fd, uint32(perm.Perm())); err != nil {
		return fail("fchmod", err)
	}
	if gid >= 0 {
		if err := unix.Fchown(fd, -1, gid); err != nil {
			return fail("fchown", err)
		}
	}
	if err := unix.Ftruncate(fd, size); err != nil {
		return fail("sizing", err)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	return &Segment{name: name, tmp: tmp, fd: fd, data: data}, nil
}

// Publish makes a created segment visible under its final name, atomically.
// It returns ErrExist when another process published one first; the caller
// then closes this one (which removes it) and opens the existing one.
func (s *Segment) Publish() error {
	if s.tmp == "" {
		return nil
	}
	err := unix.Link(filepath.Join(Dir, s.tmp), filepath.Join(Dir, s.name))
	unix.Unlink(filepath.Join(Dir, s.tmp))
	s.tmp = ""
	if errors.Is(err, unix.EEXIST) {
		return ErrExist
	}
	if err != nil {
		return fmt.Errorf("publishing segment %q: %w", s.name, err)
	}
	return nil
}

// Open maps an existing segment. minSize is the smallest size a valid segment
// can have; a smaller object is refused (a truncated segment must not be
// mapped and then read past its end).
func Open(name string, minSize int64) (*Segment, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := unix.Open(filepath.Join(Dir, name), unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("opening segment %q: %w", name, ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("opening segment %q: %w", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("opening segment %q: %w", name, err)
	}
	if st.Size < minSize {
		unix.Close(fd)
		return nil, fmt.Errorf("opening segment %q: size %d is smaller than the %d-byte minimum (truncated?)", name, st.Size, minSize)
	}
	data, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping segment %q: %w", name, err)
	}
	return &Segment{name: name, fd: fd, data: data}, nil
}

// Commit makes the pages covering [off, off+n) use memory now (fallocate),
// so that touching them can never fault for lack of space: a full file
// system fails here, with an error wrapping ErrNoSpace and ENOSPC, instead
// of with a SIGBUS later. Committing a committed range is a no-op, so
// processes racing to commit the same range need no coordination.
func (s *Segment) Commit(off, n uint64) error {
	if n == 0 {
		return nil
	}
	if s.fd < 0 {
		return fmt.Errorf("committing in segment %q: closed", s.name)
	}
	page := uint64(os.Getpagesize())
	start, end := off&^(page-1), min((off+n+page-1)&^(page-1), uint64(len(s.data)))
	if off+n < off || off+n > uint64(len(s.data)) {
		panic(fmt.Sprintf("shm: commit [%d,+%d) outside segment %q of %d bytes", off, n, s.name, len(s.data)))
	}
	for {
		err := unix.Fallocate(s.fd, 0, int64(start), int64(end-start))
		if err == unix.EINTR {
			continue
		}
		if errors.Is(err, unix.ENOSPC) {
			return fmt.Errorf("committing %d bytes of segment %q: %w (%w)", end-start, s.name, ErrNoSpace, err)
		}
		if err != nil {
			return fmt.Errorf("committing %d bytes of segment %q: %w", end-start, s.name, err)
		}
		return nil
	}
}

// Usage is the memory the segment's file uses now, in bytes (its allocated
// blocks): what it costs in Dir, whatever its size.
func (s *Segment) Usage() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err != nil {
		return 0, err
	}
	return uint64(st.Blocks) * 512, nil
}

// Unlink removes a published segment's name. Mappings stay valid.
func Unlink(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := unix.Unlink(filepath.Join(Dir, name)); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing segment %q: %w", name, err)
	}
	return nil
}

// List returns the names of the segments whose names start with prefix.
func List(prefix string) ([]string, error) {
	ents, err := os.ReadDir(Dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, prefix) && !strings.Contains(n, ".tmp") {
			out = append(out, n)
		}
	}
	return out, nil
}

// MaxNameLen is the longest segment name: a file name's 255 bytes less
// room for the temporary suffix Create appends.
const MaxNameLen = 220

func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen || strings.ContainsAny(name, "/\x00") || name[0] == '.' {
		return fmt.Errorf("invalid shared-memory segment name %q", name)
	}
	return nil
}

// Name is the segment's published name.
func (s *Segment) Name() string { return s.name }

// Size is the mapped size in bytes.
func (s *Segment) Size() int64 { return int64(len(s.data)) }

// Close unmaps the segment (and removes it if it was never published).
// Every slice and word obtained from it becomes invalid.
func (s *Segment) Close() error {
	if s.tmp != "" {
		unix.Unlink(filepath.Join(Dir, s.tmp))
		s.tmp = ""
	}
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
	}
	if s.data == nil {
		return nil
	}
	err := unix.Munmap(s.data)
	s.data = nil
	return err
}

func (s *Segment) check(off, n uint64, align uint64) {
	if off+n < off || off+n > uint64(len(s.data)) || off%align != 0 {
		panic(fmt.Sprintf("shm: access [%d,+%d) align %d outside segment %q of %d bytes", off, n, align, s.name, len(s.data)))
	}
}

// Bytes returns the n bytes at off as a slice aliasing shared memory.
func (s *Segment) Bytes(off, n uint64) []byte {
	s.check(off, n, 1)
	return s.data[off : off+n : off+n]
}

// Uint32 returns the 4-byte-aligned word at off for atomic access.
func (s *Segment) Uint32(off uint64) *atomic.Uint32 {
	s.check(off, 4, 4)
	return (*atomic.Uint32)(unsafe.Pointer(&s.data[off]))
}

// Uint64 returns the 8-byte-aligned word at off for atomic access.
func (s *Segment) Uint64(off uint64) *atomic.Uint64 {
	s.check(off, 8, 8)
	return (*atomic.Uint64)(unsafe.Pointer(&s.data[off]))
}

// LocalWords maps n futex words in anonymous shared memory: process-local
// wake-up words (guard conditions) that futex_waitv can wait on together
// with words in shared segments. They are never freed (a few per process).
func LocalWords(n int) ([]*atomic.Uint32, error) {
	size := (n*4 + 4095) &^ 4095
	data, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mapping local futex words: %w", err)
	}
	out := make([]*atomic.Uint32, n)
	for i := range out {
		out[i] = (*atomic.Uint32)(unsafe.Pointer(&data[i*4]))
	}
	return out, nil
}

// ReadOnlyView maps n bytes at off (a multiple of the page size) of the
// published segment a second time, read-only: subscribers read samples
// through it, so a stray write to a shared sample faults in the writer
// instead of corrupting what every other subscriber reads.
func (s *Segment) ReadOnlyView(off, n uint64) ([]byte, error) {
	s.check(off, n, uint64(os.Getpagesize()))
	if s.fd < 0 {
		return nil, fmt.Errorf("mapping %q read-only: closed", s.name)
	}
	b, err := unix.Mmap(s.fd, int64(off), int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping %q read-only: %w", s.name, err)
	}
	return b, nil
}

// Unmap releases a view returned by ReadOnlyView.
func Unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

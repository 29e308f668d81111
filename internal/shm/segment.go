package shm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
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

// ErrUntrusted is returned by Open for an object that this process must not
// use: not a regular file, owned by another user (outside the allowed group),
// with a mode wider than the configured one, or with more than one name.
// Another local user who can read or write a segment can read or forge every
// message of its topic, so such a segment is refused, never joined.
var ErrUntrusted = errors.New("shared-memory segment not trusted")

// ErrTruncated is returned (wrapped) when a segment's file is shorter than it
// must be: by Open for a file below the minimum size, and by Health for a
// file that shrank under its mapping (touching the lost part faults).
var ErrTruncated = errors.New("shared-memory segment truncated")

// ErrReplaced is returned by Health when the segment's name no longer names
// the mapped file (removed, or another file put in its place).
var ErrReplaced = errors.New("shared-memory segment removed or replaced")

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
	name     string // final name under Dir
	path     []byte // its path, NUL-terminated (Health's lstat allocates nothing)
	tmp      string // temporary name until Publish; "" once published or opened
	fd       int    // kept open for Commit; -1 once closed
	data     []byte
	dev, ino uint64 // the file's identity, for Health, Users and locks
}

// Access is who may share a segment: the permission bits segments are
// created with, and the group allowed in (-1: none besides the creator's
// own). Open refuses a segment that does not fit it (ErrUntrusted).
type Access struct {
	Perm  os.FileMode
	Group int
}

// trusted checks a segment's file against acc: a regular file with one
// link, owned by this process's effective uid, or (when acc gives a group
// access) by any member of that group; with no permission bits beyond
// acc.Perm, and group bits only for the allowed group.
func trusted(name string, st *unix.Stat_t, acc Access) error {
	euid, egid := uint32(unix.Geteuid()), uint32(unix.Getegid())
	perm := uint32(acc.Perm.Perm())
	mode := st.Mode & 0o7777
	var why []string
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		why = append(why, fmt.Sprintf("not a regular file (type %#o)", st.Mode&unix.S_IFMT))
	}
	if st.Nlink != 1 {
		why = append(why, fmt.Sprintf("%d links (a hard link from elsewhere?), want 1", st.Nlink))
	}
	groupOK := acc.Group >= 0 && st.Gid == uint32(acc.Group)
	if st.Uid != euid && !(groupOK && perm&0o060 != 0) {
		why = append(why, fmt.Sprintf("owned by %s, not by %s", userName(st.Uid), userName(euid)))
	}
	if mode&^perm != 0 {
		why = append(why, fmt.Sprintf("mode %#o is wider than %#o", mode, perm))
	}
	if mode&0o070 != 0 && !groupOK && !(acc.Group < 0 && st.Gid == egid) {
		why = append(why, fmt.Sprintf("group %d has access, which is not the allowed group", st.Gid))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: segment %q is owned by %s (mode %#o, %d links): %s; remove it if you trust neither it nor its owner",
		ErrUntrusted, name, userName(st.Uid), mode, st.Nlink, strings.Join(why, ", "))
}

// userName is "uid N (name)" or "uid N".
func userName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
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
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("fstat", err)
	}
	data, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mmap", err)
	}
	return &Segment{name: name, path: cpath(name), tmp: tmp, fd: fd, data: data, dev: st.Dev, ino: st.Ino}, nil
}

// Publish makes a created segment visible under its final name, atomically
// and without a second link (rename with RENAME_NOREPLACE: an opener never
// sees the file with two names, which Open refuses). It returns ErrExist
// when another process published one first; the caller then closes this
// one (which removes it) and opens the existing one.
func (s *Segment) Publish() error {
	if s.tmp == "" {
		return nil
	}
	from, to := filepath.Join(Dir, s.tmp), filepath.Join(Dir, s.name)
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		// A file system without the flag: link, then drop the temporary
		// name (openers retry while they see two links).
		err = unix.Link(from, to)
	}
	unix.Unlink(from)
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
// can have; a smaller object is refused with ErrTruncated (a truncated
// segment must not be mapped and then read past its end). The name is
// opened without following a symbolic link, and the file must fit acc
// (ErrUntrusted otherwise, naming its owner).
func Open(name string, minSize int64, acc Access) (*Segment, error) {
	fd, st, err := openChecked(name, acc)
	if err != nil {
		return nil, err
	}
	if st.Size < minSize {
		unix.Close(fd)
		return nil, fmt.Errorf("opening segment %q: %w: size %d is smaller than the %d-byte minimum", name, ErrTruncated, st.Size, minSize)
	}
	data, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("mapping segment %q: %w", name, err)
	}
	return &Segment{name: name, path: cpath(name), fd: fd, data: data, dev: st.Dev, ino: st.Ino}, nil
}

// openChecked opens name (no symbolic link, no blocking on a FIFO) and
// checks it against acc. A file seen with two links is looked at again for
// a moment: a creator on a file system without RENAME_NOREPLACE links its
// temporary name first and removes it right after.
func openChecked(name string, acc Access) (int, *unix.Stat_t, error) {
	if err := checkName(name); err != nil {
		return -1, nil, err
	}
	for try := 0; ; try++ {
		fd, err := unix.Open(filepath.Join(Dir, name), unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if errors.Is(err, unix.ENOENT) {
			return -1, nil, fmt.Errorf("opening segment %q: %w", name, ErrNotExist)
		}
		if errors.Is(err, unix.ELOOP) {
			return -1, nil, fmt.Errorf("opening segment %q: %w: it is a symbolic link", name, ErrUntrusted)
		}
		if err != nil {
			return -1, nil, fmt.Errorf("opening segment %q: %w", name, err)
		}
		st := new(unix.Stat_t)
		if err := unix.Fstat(fd, st); err != nil {
			unix.Close(fd)
			return -1, nil, fmt.Errorf("opening segment %q: %w", name, err)
		}
		err = trusted(name, st, acc)
		if err == nil {
			return fd, st, nil
		}
		unix.Close(fd)
		if st.Nlink == 2 && try < 20 {
			time.Sleep(time.Millisecond)
			continue
		}
		return -1, nil, err
	}
}

// Inspect reports the identity and size of the segment file name after the
// same checks Open makes, without mapping it.
func Inspect(name string, acc Access) (dev, ino uint64, size int64, err error) {
	fd, st, err := openChecked(name, acc)
	if err != nil {
		return 0, 0, 0, err
	}
	unix.Close(fd)
	return st.Dev, st.Ino, st.Size, nil
}

// RemoveIf unlinks name if it still names the file (dev, ino): a segment
// judged unusable is removed, never a newer one that took its name since.
func RemoveIf(name string, dev, ino uint64) error {
	if err := checkName(name); err != nil {
		return err
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(Dir, name), &st); err != nil {
		return err
	}
	if st.Dev != dev || st.Ino != ino {
		return fmt.Errorf("segment %q was replaced meanwhile", name)
	}
	return unix.Unlink(filepath.Join(Dir, name))
}

// Health reports what became of the segment's file since it was mapped:
// nil, ErrTruncated when the file is now shorter than the mapping (touching
// the lost part faults), or ErrReplaced when its name no longer names it.
func (s *Segment) Health() error {
	if s.fd < 0 {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(s.fd, &st); err != nil {
		return err
	}
	if st.Size < int64(len(s.data)) {
		return fmt.Errorf("%w: segment %q is now %d bytes, %d are mapped", ErrTruncated, s.name, st.Size, len(s.data))
	}
	var pst unix.Stat_t
	if err := lstat(s.path, &pst); err != nil || pst.Dev != s.dev || pst.Ino != s.ino {
		return fmt.Errorf("%w: the name %q no longer names the mapped file", ErrReplaced, s.name)
	}
	return nil
}

// cpath is the NUL-terminated path of a segment name under Dir.
func cpath(name string) []byte { return append([]byte(filepath.Join(Dir, name)), 0) }

// lstat is unix.Lstat of a NUL-terminated path, without copying it (the
// janitor audits tens of segments a second).
func lstat(path []byte, st *unix.Stat_t) error {
	_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(fdcwd), uintptr(unsafe.Pointer(&path[0])),
		uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// Contains reports whether addr lies in the segment's mapping.
func (s *Segment) Contains(addr uintptr) bool {
	return InRange(s.data, addr)
}

// InRange reports whether addr lies in b.
func InRange(b []byte, addr uintptr) bool {
	if len(b) == 0 {
		return false
	}
	base := uintptr(unsafe.Pointer(&b[0]))
	return addr >= base && addr-base < uintptr(len(b))
}

// Fence replaces the segment's mapping, in place, by private zero pages:
// after its file was truncated, code still holding slices into it (a loan
// being written, a sample being read) reads and writes harmless memory
// instead of faulting. The segment is unusable afterwards except to Close.
func (s *Segment) Fence() error { return FenceView(s.data) }

// FenceView does what Fence does for a view (ReadOnlyView). It then wakes
// every WaitFenced of this process: a sleeper on a word of the view can no
// longer be woken through it.
func FenceView(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(&b[0]), uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	fences.Add(1)
	WakeAll(&fences)
	return err
}

// Identity is the segment file's device and inode numbers.
func (s *Segment) Identity() (dev, ino uint64) { return s.dev, s.ino }

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

// check panics with an *AccessError unless [off, off+n) lies in the
// mapping, aligned. It is small enough to be inlined into every accessor
// (the message is formatted only when the panic is printed).
func (s *Segment) check(off, n uint64, align uint64) {
	if off+n < off || off+n > uint64(len(s.data)) || off&(align-1) != 0 {
		panic(&AccessError{Off: off, N: n, Align: align, Segment: s.name, Size: len(s.data)})
	}
}

// AccessError is what an access outside a segment's mapping (or
// misaligned) panics with: a shared value that defeated an index check.
type AccessError struct {
	Off, N, Align uint64
	Segment       string
	Size          int
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("shm: access [%d,+%d) align %d outside segment %q of %d bytes", e.Off, e.N, e.Align, e.Segment, e.Size)
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

// Set32 stores v in the 4-byte-aligned word at off with a plain store,
// not an atomic one (which is a locked instruction on x86: several times
// the cost). For words that only holders of a lock write and that others
// read under that lock, or only after an atomic store that follows this
// one (the lock's release, or a word that publishes them): a reader then
// sees either value, whole (an aligned word is written by one
// instruction on every supported target). Readers load with Uint32.
func (s *Segment) Set32(off uint64, v uint32) {
	s.check(off, 4, 4)
	*(*uint32)(unsafe.Pointer(&s.data[off])) = v
}

// Set64 is Set32 for the 8-byte-aligned word at off.
func (s *Segment) Set64(off uint64, v uint64) {
	s.check(off, 8, 8)
	*(*uint64)(unsafe.Pointer(&s.data[off])) = v
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

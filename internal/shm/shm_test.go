package shm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// own is the access of segments this test creates.
var own = Access{Perm: 0o600, Group: -1}

func name(t *testing.T) string { return fmt.Sprintf("rgtshm%d_%s", os.Getpid(), t.Name()) }

// Two creators race for one name: exactly one publishes, the other gets
// ErrExist; an opener sees the winner's bytes; a small file is refused.
func TestCreatePublishOpen(t *testing.T) {
	n := name(t)
	defer Unlink(n)
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, err := Create(n, 8192, 0o600, -1)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			s.Bytes(0, 1)[0] = byte('A' + i)
			if err := s.Publish(); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, ErrExist) {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d creators published, want 1", wins.Load())
	}
	s, err := Open(n, 8192, own)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b := s.Bytes(0, 1)[0]; b < 'A' || b > 'D' {
		t.Fatalf("opened segment holds %q", b)
	}
	if _, err := Open(n, 8193, own); err == nil {
		t.Fatal("a segment smaller than the minimum was opened")
	}
	if _, err := Open(n+"_missing", 1, own); !errors.Is(err, ErrNotExist) {
		t.Fatalf("missing segment: %v", err)
	}
	if _, err := Create("bad/name", 10, 0o600, -1); err == nil {
		t.Fatal("a name with a slash was accepted")
	}
	left, _ := List(fmt.Sprintf("rgtshm%d_", os.Getpid()))
	if len(left) != 1 {
		t.Fatalf("segments after the race: %v (temporary files left?)", left)
	}
}

// One futex_waitv wait covers words in different mappings; a wake on any of
// them ends it, and a value already changed ends it at once.
func TestWaitMany(t *testing.T) {
	words, err := LocalWords(3)
	if err != nil {
		t.Fatal(err)
	}
	ws := []Waiter{{words[0], 0}, {words[1], 0}, {words[2], 0}}
	if err := WaitMany(ws, 5*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("nothing changed: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- WaitMany(ws, 10*time.Second) }()
	time.Sleep(10 * time.Millisecond)
	words[2].Add(1)
	Wake(words[2], 1)
	if err := <-done; err != nil {
		t.Fatalf("woken wait: %v", err)
	}
	if err := WaitMany(ws, 10*time.Second); err != nil {
		t.Fatalf("already changed word: %v", err)
	}
}

// More words than one futex_waitv takes are waited on in batches, each
// asleep in the kernel: a wake of a word of any batch ends the wait (and
// every batch's thread), a word that changed before the wait ends it at
// once, and nothing changed is a timeout. A change without a wake is not
// seen before the timeout: the batches sleep, nothing polls the words.
func TestWaitManyBeyondOneCall(t *testing.T) {
	const n = 1000
	words, err := LocalWords(n)
	if err != nil {
		t.Fatal(err)
	}
	ws := make([]Waiter, n)
	for i := range ws {
		ws[i] = Waiter{words[i], 0}
	}
	if err := WaitMany(ws, 20*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("nothing changed: %v", err)
	}
	for _, i := range []int{0, MaxWaitMany - 2, MaxWaitMany - 1, 500, n - 1} {
		done := make(chan error, 1)
		go func() { done <- WaitMany(ws, time.Minute) }()
		time.Sleep(10 * time.Millisecond)
		words[i].Add(1)
		Wake(words[i], 1)
		if err := <-done; err != nil {
			t.Fatalf("word %d woken: %v", i, err)
		}
		ws[i].Val = words[i].Load()
	}
	words[700].Add(1)
	if err := WaitMany(ws, time.Minute); err != nil {
		t.Fatalf("word 700 changed before the wait: %v", err)
	}
	ws[700].Val = words[700].Load()
	done := make(chan error, 1)
	go func() { done <- WaitMany(ws, 2*time.Second) }()
	// Every batch asleep in the kernel first: a change before a batch's
	// futex_waitv compares its words ends the wait, rightly.
	batches := (n + MaxWaitMany - 2) / (MaxWaitMany - 1)
	if !awaitWaitvSleepers(batches, time.Second) {
		time.Sleep(100 * time.Millisecond) // /proc/self/task/*/syscall unreadable here
	}
	words[900].Add(1) // no wake
	if err := <-done; !errors.Is(err, ErrTimeout) {
		t.Fatalf("a change without a wake ended the wait (%v): the words were polled", err)
	}
}

// awaitWaitvSleepers waits up to d until at least n of this process's
// threads are inside futex_waitv (/proc/self/task/*/syscall); false when
// that cannot be read.
func awaitWaitvSleepers(n int, d time.Duration) bool {
	want := strconv.Itoa(sysFutexWaitv) + " "
	for end := time.Now().Add(d); ; {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return false
		}
		in, readable := 0, false
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/syscall")
			if err != nil {
				continue // exited, or not readable
			}
			readable = true
			if strings.HasPrefix(string(b), want) {
				in++
			}
		}
		if !readable {
			return false
		}
		if in >= n || time.Now().After(end) {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// A wait on a word of a segment whose file is truncated and whose mapping
// this process then fences (no wake can reach the word's futex any more)
// ends through the fence: WaitFenced needs no slices to notice it. It
// also ends at once when a fence came between the caller's reading of
// Fences and the wait, and a plain change of its word ends it as before.
func TestWaitFencedWakesOnFence(t *testing.T) {
	n := name(t)
	defer Unlink(n)
	s, err := Create(n, 8192, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := s.Uint32(64)
	seen := Fences()
	done := make(chan error, 1)
	go func() { done <- WaitFenced([]Waiter{{w, w.Load()}}, seen, -1) }()
	time.Sleep(20 * time.Millisecond) // asleep by now (not needed for the outcome)
	if err := os.Truncate(filepath.Join(Dir, n), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Fence(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wait ended by the fence: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a wait on a word of a fenced mapping did not end")
	}
	// A fence since the caller read Fences ends the wait at once.
	words, err := LocalWords(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := WaitFenced([]Waiter{{words[0], words[0].Load()}}, seen, time.Minute); err != nil {
		t.Fatalf("wait after a fence the caller did not see: %v", err)
	}
	// And otherwise like WaitMany.
	seen = Fences()
	if err := WaitFenced([]Waiter{{words[0], words[0].Load()}}, seen, 5*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("nothing changed: %v", err)
	}
	go func() { done <- WaitFenced([]Waiter{{words[0], 0}}, seen, -1) }()
	time.Sleep(10 * time.Millisecond)
	words[0].Add(1)
	Wake(words[0], 1)
	if err := <-done; err != nil {
		t.Fatalf("woken wait: %v", err)
	}
}

// A lock held by a process that has died is taken over, and says so.
func TestLockTakeoverFromDeadHolder(t *testing.T) {
	s, err := Create(name(t), 4096, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot run a short-lived process: %v", err)
	}
	dead := uint32(cmd.Process.Pid)
	l := LockAt(s, 0)
	if l.Lock() {
		t.Fatal("a free lock reported a recovery")
	}
	l.Unlock()
	s.Uint32(0).Store(dead) // as if that process died holding it
	if !l.Lock() {
		t.Fatal("takeover from a dead holder not reported")
	}
	if l.HeldBy().Pid != uint32(os.Getpid()) {
		t.Fatalf("held by %v", l.HeldBy())
	}
	l.Unlock()
	if !Alive(Self()) || Alive(Owner{Pid: dead}) {
		t.Fatal("Alive disagrees with reality")
	}
}

// Goroutines exclude each other through the lock as processes do.
func TestLockMutualExclusion(t *testing.T) {
	s, err := Create(name(t), 4096, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := LockAt(s, 0)
	counter := s.Uint64(64)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				l.Lock()
				v := counter.Load()
				counter.Store(v + 1) // not atomic as a pair: the lock makes it so
				l.Unlock()
			}
		}()
	}
	wg.Wait()
	if counter.Load() != 16000 {
		t.Fatalf("counter %d, want 16000", counter.Load())
	}
}

// A created segment is sparse: it uses no memory until a range is
// committed, and then exactly the pages covering that range, however often
// (and by however many mappings) it is committed again.
func TestCommitSparse(t *testing.T) {
	page := uint64(os.Getpagesize())
	s, err := Create(name(t), 64<<20, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	usage := func() uint64 {
		t.Helper()
		u, err := s.Usage()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if u := usage(); u != 0 {
		t.Fatalf("fresh 64 MiB segment uses %d bytes, want 0", u)
	}
	// [page-8, page+8) straddles two pages.
	for i := 0; i < 3; i++ {
		if err := s.Commit(page-8, 16); err != nil {
			t.Fatal(err)
		}
	}
	if u := usage(); u != 2*page {
		t.Fatalf("after committing two pages: %d bytes used, want %d", u, 2*page)
	}
	if err := s.Commit(32<<20, 1<<20); err != nil {
		t.Fatal(err)
	}
	if u := usage(); u != 2*page+1<<20 {
		t.Fatalf("after committing 1 MiB more: %d bytes used, want %d", u, 2*page+1<<20)
	}
	s.Uint64(page).Store(7) // committed pages are usable
	if err := s.Commit(0, 0); err != nil {
		t.Fatal(err)
	}
}

// lockWithin runs l.LockWith in a goroutine and fails the test if it has
// not returned within a generous deadline (a hang, not a slow machine).
func lockWithin(t *testing.T, l Lock, limit time.Duration) (bool, error) {
	t.Helper()
	type res struct {
		r   bool
		err error
	}
	ch := make(chan res, 1)
	go func() { r, err := l.LockWith(limit, nil); ch <- res{r, err} }()
	select {
	case x := <-ch:
		return x.r, x.err
	case <-time.After(60 * time.Second):
		t.Fatalf("Lock still waiting on holder %v after a minute", l.HeldBy())
	}
	return false, nil
}

// Every value a dead or foreign holder can leave in the lock word is taken
// over (issue 12 item 4): a live pid with start time 0 or another start
// time, this process's own pid while it does not hold the lock, and a live
// process that does not map the segment.
func TestLockForeignHolderValues(t *testing.T) {
	s, err := Create(name(t), 4096, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	live := uint32(sleeper.Process.Pid)
	var liveStart uint64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if st, ok := startTime(live); ok {
			liveStart = st
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no start time for the sleeper")
		}
	}
	me := Self()
	cases := []struct {
		name  string
		owner Owner
	}{
		{"live pid, start 0", Owner{live, 0}},
		{"live pid, other start", Owner{live, liveStart + 1}},
		{"live pid not mapping the segment", Owner{live, liveStart}},
		{"own pid, start 0", Owner{me.Pid, 0}},
		{"own pid, not held here", Owner{me.Pid, me.Start}},
		{"pid beyond pid_max", Owner{0xffffffff, 0xffffffffffffffff}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := LockAt(s, 0)
			s.Uint32(0).Store(c.owner.Pid)
			s.Uint32(4).Store(7) // waiters: anything
			s.Uint64(8).Store(c.owner.Start)
			r, err := lockWithin(t, l, time.Hour)
			if err != nil || !r {
				t.Fatalf("LockWith: recovered %v, %v; want a takeover", r, err)
			}
			l.Unlock()
		})
	}
}

// A live holder that maps the segment is waited for up to the limit, and
// then named in the error.
func TestLockLimitNamesHolder(t *testing.T) {
	s, err := Create(name(t), 4096, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := LockAt(s, 0)
	l.Lock()
	_, err = lockWithin(t, LockAt(s, 0), 200*time.Millisecond)
	l.Unlock()
	if !errors.Is(err, ErrLockTimeout) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("got %v, want ErrLockTimeout naming pid %d", err, os.Getpid())
	}
}

// Open refuses a segment it must not trust, naming its owner; the caller's
// own segment with the expected mode and one link is opened.
func TestOpenRefusesUntrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives a file to another uid with chown")
	}
	n := name(t)
	path := filepath.Join(Dir, n)
	mk := func(mode os.FileMode) {
		os.Remove(path)
		if err := os.WriteFile(path, make([]byte, 8192), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(path, mode)
	}
	defer os.Remove(path)
	defer os.Remove(path + "_other")
	cases := []struct {
		name  string
		setup func()
		want  string
	}{
		{"other owner", func() { mk(0o600); os.Chown(path, 65534, 65534) }, "uid 65534"},
		{"mode 0666", func() { mk(0o666) }, "mode 0666"},
		{"group access", func() { mk(0o660); os.Chown(path, 0, 65534) }, "group 65534"},
		{"hard link", func() { mk(0o600); os.Link(path, path+"_other") }, "2 links"},
		{"symbolic link", func() {
			os.Remove(path)
			os.WriteFile(path+"_other", make([]byte, 8192), 0o600)
			os.Symlink(path+"_other", path)
		}, "symbolic link"},
		{"fifo", func() { os.Remove(path); unix.Mkfifo(path, 0o600) }, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(path + "_other")
			c.setup()
			s, err := Open(n, 4096, own)
			if err == nil {
				s.Close()
				t.Fatal("an untrusted segment was opened")
			}
			if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrUntrusted mentioning %q", err, c.want)
			}
		})
	}
	mk(0o600)
	s, err := Open(n, 4096, own)
	if err != nil {
		t.Fatalf("own segment: %v", err)
	}
	s.Close()
	// A group that is allowed may own it (another member created it).
	os.Chown(path, 65534, 65534)
	os.Chmod(path, 0o660)
	s, err = Open(n, 4096, Access{Perm: 0o660, Group: 65534})
	if err != nil {
		t.Fatalf("segment of the allowed group: %v", err)
	}
	s.Close()
}

// startTime reads field 22 of /proc/<pid>/stat without allocating (but
// under the race detector): the
// same value a plain parse gives, for this process and for one whose
// command name holds spaces and parentheses; a process that is gone has
// none.
func TestStartTime(t *testing.T) {
	dir := t.TempDir()
	odd := filepath.Join(dir, "x) (y z")
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep(1) to run: %v", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	plain := func(pid int) uint64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		var v uint64
		fmt.Sscan(f[19], &v)
		return v
	}
	for _, pid := range []int{os.Getpid(), cmd.Process.Pid} {
		got, ok := startTime(uint32(pid))
		if want := plain(pid); !ok || got != want || got == 0 {
			t.Errorf("pid %d: start time %d (%v), want %d", pid, got, ok, want)
		}
	}
	if n := testing.AllocsPerRun(20, func() { startTime(uint32(os.Getpid())) }); n != 0 && !raceEnabled {
		t.Errorf("startTime allocates %v times", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if st, ok := startTime(uint32(cmd.Process.Pid)); ok {
		t.Errorf("a reaped process has start time %d", st)
	}
}

package shm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
	s, err := Open(n, 8192)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b := s.Bytes(0, 1)[0]; b < 'A' || b > 'D' {
		t.Fatalf("opened segment holds %q", b)
	}
	if _, err := Open(n, 8193); err == nil {
		t.Fatal("a segment smaller than the minimum was opened")
	}
	if _, err := Open(n+"_missing", 1); !errors.Is(err, ErrNotExist) {
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

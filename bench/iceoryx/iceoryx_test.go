package iceoryx

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

const (
	rolePub = "iceoryx-pub"
	roleSub = "iceoryx-sub"
	msgSize = 64 << 10
	msgs    = 5
)

var testService = ServiceName{"rgaps_test", "iceoryx", "pubsub"}

func init() {
	testutil.Role(rolePub, pubRole)
	testutil.Role(roleSub, subRole)
}

func fill(b []byte, seq int) {
	for i := range b {
		b[i] = byte(i*7 + seq)
	}
}

func check(b []byte, seq int) error {
	for i := range b {
		if b[i] != byte(i*7+seq) {
			return fmt.Errorf("message %d: byte %d is %#x, want %#x", seq, i, b[i], byte(i*7+seq))
		}
	}
	return nil
}

// pubRole publishes msgs messages once a subscriber is connected.
func pubRole(args []string) error {
	if err := InitRuntime(fmt.Sprintf("rgaps_test_pub_%d", os.Getpid())); err != nil {
		return err
	}
	defer ShutdownRuntime()
	p, err := NewPublisher(testService, 0)
	if err != nil {
		return err
	}
	defer p.Close()
	deadline := time.Now().Add(20 * time.Second)
	for !p.HasSubscribers() {
		if time.Now().After(deadline) {
			return errors.New("no subscriber came")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for seq := range msgs {
		b, err := p.Loan(msgSize)
		if err != nil {
			return err
		}
		fill(b, seq)
		if err := p.Publish(b); err != nil {
			return err
		}
		// The queue holds them all, but pace them so the subscriber
		// also exercises waiting.
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("sent")
	// Stay registered until the subscriber has read everything (the
	// parent creates the file args[0]).
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(args[0]); err == nil {
			return nil
		}
	}
	return errors.New("the parent did not say done")
}

// subRole receives and checks msgs messages, printing "got N".
func subRole(args []string) error {
	if err := InitRuntime(fmt.Sprintf("rgaps_test_sub_%d", os.Getpid())); err != nil {
		return err
	}
	defer ShutdownRuntime()
	s, err := NewSubscriber(testService, 16)
	if err != nil {
		return err
	}
	defer s.Close()
	fmt.Println("ready")
	got := 0
	deadline := time.Now().Add(30 * time.Second)
	for got < msgs {
		if time.Now().After(deadline) {
			return fmt.Errorf("received %d of %d messages", got, msgs)
		}
		if _, err := s.Wait(100 * time.Millisecond); err != nil {
			return err
		}
		for {
			b, ok, err := s.Take(msgSize)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			cerr := check(b, got)
			if err := s.Release(b); err != nil {
				return err
			}
			if cerr != nil {
				return cerr
			}
			got++
		}
	}
	fmt.Println("got", got)
	return nil
}

// skipUnavailable skips t when iceoryx cannot be used here, saying why;
// RGAPS_REQUIRE_IOX=1 turns the skip into a failure.
func skipUnavailable(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, ErrNotSupported) && os.Getenv("RGAPS_REQUIRE_IOX") != "1" {
		t.Skip("iceoryx not available (scripts/setup.sh installs it): ", err)
	}
	t.Fatal(err)
}

func TestConfigTOML(t *testing.T) {
	got := ConfigTOML([]Mempool{{Size: 1 << 20, Count: 3}, {Size: 4096, Count: 10}})
	want := "[general]\nversion = 1\n\n[[segment]]\n" +
		"\n[[segment.mempool]]\nsize = " + strconv.Itoa(4096+ChunkOverhead) + "\ncount = 10\n" +
		"\n[[segment.mempool]]\nsize = " + strconv.Itoa(1<<20+ChunkOverhead) + "\ncount = 3\n"
	if got != want {
		t.Errorf("config:\n%s\nwant:\n%s", got, want)
	}
}

func TestFindRouDiEnv(t *testing.T) {
	t.Setenv("RGAPS_IOX_ROUDI", "/nonexistent/iox-roudi")
	if _, err := FindRouDi(); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("FindRouDi with a missing RGAPS_IOX_ROUDI: %v, want ErrNotSupported", err)
	}
}

// TestPubSub: a real RouDi, a publisher process and a subscriber process;
// every byte of every message checked.
func TestPubSub(t *testing.T) {
	_, err := FindRouDi()
	skipUnavailable(t, err)
	skipUnavailable(t, Load())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := StartRouDi(ctx, RouDiOptions{Dir: t.TempDir(), Mempools: []Mempool{{Size: msgSize, Count: 8}}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			r.Stop()
		}
	}()
	sub := testutil.Start(t, roleSub)
	sub.Expect(t, "ready", 30*time.Second)
	done := t.TempDir() + "/done"
	pub := testutil.Start(t, rolePub, done)
	pub.Expect(t, "sent", 30*time.Second)
	if l := sub.Expect(t, "got", 30*time.Second); strings.TrimSpace(l) != fmt.Sprintf("got %d", msgs) {
		t.Errorf("subscriber: %q", l)
	}
	if err := sub.Wait(10 * time.Second); err != nil {
		t.Errorf("subscriber: %v; stderr: %s", err, sub.Stderr())
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pub.Wait(10 * time.Second); err != nil {
		t.Errorf("publisher: %v; stderr: %s", err, pub.Stderr())
	}
	stopped = true
	if err := r.Stop(); err != nil {
		t.Error(err)
	}
}

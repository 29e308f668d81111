package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Adversaries of issue 12 items 1-7: another local user squatting the
// names, and a failing machine truncating or scribbling over segments.

const hardDomain = 11

func hardCfg() Config {
	cfg, _ := Config{Domain: hardDomain, PoolSize: 1 << 20, MaxSamples: 64, MaxEndpoints: 8, QueueCap: 16, HeldCap: 8,
		JanitorPeriod: 20 * time.Millisecond, BlockTimeout: 100 * time.Millisecond, LockTimeout: 5 * time.Second}.withDefaults()
	return cfg
}

func init() {
	// squat DOMAIN TOPIC...: as another user, create the domain's graph
	// segment (DOMAIN >= 0) and a host and a GPU topic segment for each
	// TOPIC, all mode 0666, and hard-link a segment of our own under the
	// name of TOPIC of type "t/msg/Link".
	testutil.Role("squat", func(a []string) error {
		dom, _ := strconv.Atoi(a[0])
		cfg := hardCfg()
		cfg.Perm = 0o666
		if dom >= 0 {
			gc := cfg
			gc.Domain = uint32(dom)
			g, err := openGraph(gc)
			if err != nil {
				return err
			}
			g.close()
		}
		for _, topic := range a[1:] {
			for _, k := range []PoolKind{PoolHost, PoolGPU} {
				typ := "t/msg/T"
				if k == PoolGPU {
					typ = "t/msg/G"
				}
				name, _ := segName(cfg, topic, typ)
				seg, err := createSegment(cfg, name, topic, typ, k)
				if err != nil {
					return err
				}
				seg.Close()
			}
			name, _ := segName(cfg, topic, "t/msg/Link")
			own := filepath.Join(shm.Dir, name+"_mine")
			if err := os.WriteFile(own, make([]byte, 1<<20), 0o600); err != nil {
				return err
			}
			if err := os.Link(own, filepath.Join(shm.Dir, name)); err != nil {
				return err
			}
		}
		fmt.Println("squatted")
		return nil
	})
	// victim TOPIC OTHER: publish to and take from both topics in a loop
	// until TOPIC fails; print "corrupt" with the error, then check that
	// OTHER still works and print "other ok".
	testutil.Role("victim", func(a []string) error {
		d, err := Open(hardCfg())
		if err != nil {
			return err
		}
		defer d.Close()
		type pair struct {
			p *Publisher
			s *Subscription
		}
		mk := func(topic string) (pair, error) {
			p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", QoS: qos.Default()})
			if err != nil {
				return pair{}, err
			}
			s, err := d.NewSubscription(EndpointSpec{Topic: topic, Type: "t/msg/T", QoS: qos.Default()})
			return pair{p, s}, err
		}
		vt, err := mk(a[0])
		if err != nil {
			return err
		}
		ot, err := mk(a[1])
		if err != nil {
			return err
		}
		// A subscriber blocked on the victim topic must learn it too.
		waitErr := make(chan error, 1)
		w, err := d.NewSubscription(EndpointSpec{Topic: a[0], Type: "t/msg/T", QoS: qos.Default()})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		go func() {
			for {
				smp, err := w.TakeWait(time.Hour)
				if err != nil {
					waitErr <- err
					return
				}
				smp.Return()
			}
		}()
		msg := make([]byte, 3000)
		for i := 0; ; i++ {
			if err := vt.p.Publish(msg); err != nil {
				fmt.Println("corrupt", err)
				break
			}
			if smp, err := vt.s.TakeWait(time.Second); err != nil {
				fmt.Println("corrupt", err)
				break
			} else {
				smp.Return()
			}
			time.Sleep(time.Millisecond)
		}
		if err := <-waitErr; !errors.Is(err, ErrCorrupt) {
			return fmt.Errorf("blocked subscriber got %v, want ErrCorrupt", err)
		}
		if err := ot.p.Publish([]byte("still here")); err != nil {
			return err
		}
		smp, err := ot.s.TakeWait(10 * time.Second)
		if err != nil || string(smp.Bytes()) != "still here" {
			return fmt.Errorf("other topic: %v", err)
		}
		smp.Return()
		fmt.Println("other ok")
		for _, x := range []pair{ot} {
			x.p.Close()
			x.s.Close()
		}
		vt.p.Close()
		vt.s.Close()
		w.Close()
		return nil
	})
}

// runAs starts role as uid/gid 65534 (nobody) from a copy of the test
// binary that user may execute.
func runAs(t *testing.T, role string, args ...string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs a squatter as uid 65534 (nobody)")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "rgaps-squat")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	cp := filepath.Join(dir, "zerocopy.test")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(cp, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(dst, src)
	src.Close()
	dst.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cp, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testutil.ChildEnv+"="+strings.Join(append([]string{role}, args...), "\x1f"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("squatter as nobody: %v\n%s", err, out)
	}
	return string(out)
}

// removeNobodys removes the run's segments the squatter left.
func removeNobodys() {
	ents, _ := os.ReadDir(shm.Dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), testutil.Prefix()+"_d") {
			if fi, err := e.Info(); err == nil && fi.Sys().(*syscall.Stat_t).Uid == 65534 {
				os.Remove(filepath.Join(shm.Dir, e.Name()))
			}
		}
	}
}

// Item 1: segments another user created (mode 0666) or hard-linked under
// the domain's names are refused, with an error naming the owner, for every
// segment kind: graph, host topic, GPU topic, and a hard link.
func TestSquattedSegmentsRefused(t *testing.T) {
	defer removeNobodys()
	cfg := hardCfg()
	d, err := Open(cfg) // the graph of hardDomain is root's before the squat
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const squatDomain = 12
	out := runAs(t, "squat", strconv.Itoa(squatDomain), "/secret")
	if !strings.Contains(out, "squatted") {
		t.Fatalf("squatter: %s", out)
	}
	for _, typ := range []string{"t/msg/T", "t/msg/G", "t/msg/Link"} {
		mem := MemoryHost
		if typ == "t/msg/G" {
			mem = MemoryGPU
		}
		p, err := d.NewPublisher(EndpointSpec{Topic: "/secret", Type: typ, QoS: qos.Default(), Memory: mem})
		if err == nil {
			p.Publish([]byte("root's secret"))
			p.Close()
			t.Fatalf("type %s: root joined a segment another user made", typ)
		}
		if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "nobody") {
			t.Fatalf("type %s: got %v, want ErrUntrusted naming nobody", typ, err)
		}
	}
	sc := cfg
	sc.Domain = squatDomain
	if d2, err := Open(sc); err == nil {
		d2.Close()
		t.Fatal("root joined a graph segment another user made")
	} else if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "nobody") {
		t.Fatalf("graph: got %v, want ErrUntrusted naming nobody", err)
	}
	// Clean leaves them alone and says whose they are.
	ents, err := d.Clean()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Removed && strings.Contains(e.Name, "secret") {
			t.Fatalf("clean removed another user's segment %s", e.Name)
		}
	}
}

// Item 2: truncating a topic's segment under a process that uses it turns
// into ErrCorrupt on that topic (for the publisher, the subscriber and a
// blocked subscriber), never a crash, and another topic keeps working; once
// the process is gone, the next process's clean removes the truncated
// segment and the topic works again.
func TestTruncatedSegmentIsAnError(t *testing.T) {
	for _, size := range []int64{8192, 0} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			topic := fmt.Sprintf("/trunc%d", size)
			k := testutil.Start(t, "victim", topic, topic+"_other")
			k.Expect(t, "ready", 30*time.Second)
			name, _ := segName(hardCfg(), topic, "t/msg/T")
			time.Sleep(50 * time.Millisecond) // let it publish a few
			if err := os.Truncate(filepath.Join(shm.Dir, name), size); err != nil {
				t.Fatal(err)
			}
			l := k.Expect(t, "corrupt", 60*time.Second)
			if !strings.Contains(l, ErrCorrupt.Error()) {
				t.Fatalf("victim: %s", l)
			}
			k.Expect(t, "other ok", 60*time.Second)
			if err := k.Wait(30 * time.Second); err != nil {
				t.Fatalf("victim: %v\n%s", err, k.Stderr())
			}
			d, err := Open(hardCfg()) // cleans what is unusable
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			p, err := d.NewPublisher(EndpointSpec{Topic: topic, Type: "t/msg/T", QoS: qos.Default()})
			if err != nil {
				t.Fatalf("topic after the truncated segment's users left: %v", err)
			}
			p.Close()
		})
	}
}

// withDeadline runs fn and fails the test if it has not returned within a
// generous deadline (a hang, not a slow machine).
func withDeadline(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// Item 3: random head and tail words in an endpoint slot do not make
// reclaiming that slot (clean) spin: the topic is marked corrupt and,
// unused, removed.
func TestRandomRingWordsBounded(t *testing.T) {
	cfg := hardCfg()
	d, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	k := testutil.Start(t, "idle", "/ring")
	k.Expect(t, "ready", 30*time.Second)
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	ccfg, _ := Config{Domain: crashDomain}.withDefaults()
	name, _ := segName(ccfg, "/ring", "t/msg/T")
	path := filepath.Join(shm.Dir, name)
	l := layoutFor(ccfg, PoolHost)
	patch(path, int64(l.endpointsOff+eHead), binary.LittleEndian.AppendUint64(nil, 0x1234_5678_9abc))
	patch(path, int64(l.endpointsOff+eTail), binary.LittleEndian.AppendUint64(nil, 0xffff_ffff_ffff_fff0))
	cd, err := Open(Config{Domain: crashDomain, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cd.Close()
	var ents []CleanEntry
	withDeadline(t, "clean", func() { ents, err = cd.Clean() })
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range ents {
		if e.Name == name {
			found = true
			if !e.Removed || !strings.Contains(e.Reason, "ring head") {
				t.Fatalf("clean: %+v, want removed for its ring", e)
			}
		}
	}
	if !found {
		t.Fatalf("clean said nothing about %s: %+v", name, ents)
	}
}

// Item 4: a lock word naming a live process with start time 0 does not
// hang publishers, subscribers, joiners or clean.
func TestLockWordOfLiveProcess(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/lockword", qos.Default())
	s := mustSub(t, d, "/lockword", qos.Default())
	sleeper := exec.Command("sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	p.t.u64(hLock + 8).Store(0)
	p.t.u32(hLock).Store(uint32(sleeper.Process.Pid))
	withDeadline(t, "publish, take, join and clean", func() {
		if err := p.Publish([]byte("x")); err != nil {
			t.Error(err)
		}
		if smp, err := s.TakeWait(30 * time.Second); err != nil {
			t.Error(err)
		} else {
			smp.Return()
		}
		mustSub(t, d, "/lockword", qos.Default())
		if _, err := d.Clean(); err != nil {
			t.Error(err)
		}
	})
}

// Item 5: queue entries naming free samples are never delivered: the take
// fails with ErrCorrupt.
func TestQueueNamingFreeSamples(t *testing.T) {
	d := openDomain(t, nil)
	p := mustPub(t, d, "/freeq", qos.Default())
	s := mustSub(t, d, "/freeq", qos.Default())
	for i := 0; i < 3; i++ {
		if err := p.Publish([]byte("real")); err != nil {
			t.Fatal(err)
		}
		smp, err := s.TakeWait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		smp.Return()
	}
	tp := s.t
	so := tp.slotOff(s.slot)
	tail := tp.u64(so + eTail).Load()
	for i := uint64(0); i < 16; i++ {
		tp.ringWord(s.slot, tail+i).Store(uint32(i%3) + 1) // the three freed samples
	}
	tp.u64(so + eTail).Store(tail + 16)
	defer d.Clean() // removes the damaged segment once closed
	defer p.Close()
	defer s.Close()
	smp, err := s.Take()
	if err == nil {
		t.Fatalf("a free sample was delivered: %q", smp.Bytes())
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("got %v, want ErrCorrupt", err)
	}
	if err := p.Publish([]byte("more")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("publisher after the damage: %v, want ErrCorrupt", err)
	}
}

// Item 6: damage found by one process (the publisher, on the allocator)
// reaches a subscriber blocked in another process and new joiners; another
// topic keeps working. Item 7: clean keeps the damaged segment while that
// process maps it, naming it, and removes it once it is gone.
func TestDamageReachesEveryone(t *testing.T) {
	k := testutil.Start(t, "victim", "/dmg", "/dmg_other")
	k.Expect(t, "ready", 30*time.Second)
	cfg := hardCfg()
	name, _ := segName(cfg, "/dmg", "t/msg/T")
	l := layoutFor(cfg, PoolHost)
	// Scribble over the allocator's first-level bitmap and list heads.
	patch(filepath.Join(shm.Dir, name), int64(l.tlsfOff)+80, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5a, 0x5a, 0x5a, 0x5a})
	k.Expect(t, "corrupt", 60*time.Second)
	k.Expect(t, "other ok", 60*time.Second)
	d, err := Open(Config{Domain: hardDomain, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.NewSubscription(EndpointSpec{Topic: "/dmg", Type: "t/msg/T", QoS: qos.Default()}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("new joiner: %v, want ErrCorrupt", err)
	}
	if err := k.Wait(30 * time.Second); err != nil {
		t.Fatalf("victim: %v\n%s", err, k.Stderr())
	}
	// The victim closed its endpoints (which fails on the damaged topic)
	// and exited; the segment is left to clean.
	ents, err := d.Clean()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name == name {
			if !e.Removed || !strings.Contains(e.Reason, "corrupt") {
				t.Fatalf("clean: %+v", e)
			}
			return
		}
	}
	t.Fatalf("clean said nothing about %s: %+v", name, ents)
}

// Item 7: a corrupt segment still mapped by a live process is kept, and
// clean names that process.
func TestCleanKeepsDamagedInUse(t *testing.T) {
	k := testutil.Start(t, "idle", "/inuse")
	k.Expect(t, "ready", 30*time.Second)
	ccfg, _ := Config{Domain: crashDomain}.withDefaults()
	name, _ := segName(ccfg, "/inuse", "t/msg/T")
	patch(filepath.Join(shm.Dir, name), hMagic, []byte("XXXXXXXX"))
	d, err := Open(Config{Domain: crashDomain, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	check := func(removed bool, text string) {
		t.Helper()
		ents, err := d.Clean()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name == name {
				if e.Removed != removed || !strings.Contains(e.Reason, text) {
					t.Fatalf("clean: %+v, want removed=%v mentioning %q", e, removed, text)
				}
				return
			}
		}
		t.Fatalf("clean said nothing about %s: %+v", name, ents)
	}
	check(false, fmt.Sprintf("in use by pid %d", k.Cmd.Process.Pid))
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	check(true, "bad magic")
}

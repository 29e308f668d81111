//go:build cgo && !nodds

package dds

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestMain(m *testing.M) {
	testutil.Role("dds-echo", echoRole)
	testutil.Main(m)
}

// testDomain is the DDS domain of this test process and its children:
// one of 100..199, so concurrent runs rarely meet.
var testDomain = uint32(100 + os.Getpid()%100)

// requireDDS skips the test when libddsc cannot be loaded.
func requireDDS(t testing.TB) {
	t.Helper()
	if err := Load(); errors.Is(err, ErrNotSupported) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func openTest(t testing.TB) *Participant {
	t.Helper()
	p, err := Open(Config{Domain: testDomain})
	must(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// stringCDR is a std_msgs/msg/String message serialized (little endian).
func stringCDR(s string) []byte {
	b := []byte{0, 1, 0, 0}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)+1))
	return append(append(b, s...), 0)
}

// blobCDR is a message of n random bytes after the header and a length.
func blobCDR(n int, seed uint64) []byte {
	b := binary.LittleEndian.AppendUint32([]byte{0, 1, 0, 0}, uint32(n))
	r := rand.New(rand.NewPCG(seed, seed))
	for range n {
		b = append(b, byte(r.Uint32()))
	}
	return b
}

// waitMatched waits until f reports at least one match.
func waitMatched(t testing.TB, what string, f func() (int, error)) {
	t.Helper()
	testutil.Eventually(t, 20*time.Second, what+" matched", func() bool {
		n, err := f()
		return err == nil && n > 0
	})
}

// takeOne waits for and takes one sample.
func takeOne(t testing.TB, r *Reader) Sample {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		s, ok, err := r.Take()
		must(t, err)
		if ok {
			return s
		}
		if _, err := r.Wait(time.Second); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no sample on %s", r.Topic().Name())
	return Sample{}
}

// pair makes a writer (with wo) and a default reader on a String-typed
// or other topic of p.
func pair(t testing.TB, p *Participant, topic, typ string, wo EndpointOptions) (*Writer, *Reader) {
	t.Helper()
	tp, err := p.Topic(topic, typ)
	must(t, err)
	w, err := tp.NewWriter(wo)
	must(t, err)
	r, err := tp.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	return w, r
}

func TestRoundTripInProcess(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	for _, c := range []struct {
		topic, typ string
		msgs       [][]byte
	}{
		{"/rgaps_test_string", "std_msgs/msg/String", [][]byte{stringCDR("hello"), stringCDR("Hello World: 12"), stringCDR("")}},
		{"/rgaps_test_blob", "rgaps_test/msg/Blob", [][]byte{blobCDR(4<<20, 1), blobCDR(4<<20+1, 2)}},
	} {
		w, r := pair(t, p, c.topic, c.typ, EndpointOptions{QoS: qos.Default()})
		waitMatched(t, "writer", w.Matched)
		before := time.Now()
		for _, m := range c.msgs {
			must(t, w.Write(m))
		}
		for i, m := range c.msgs {
			s := takeOne(t, r)
			if !bytes.Equal(s.Data, m) {
				t.Errorf("%s message %d: got %d bytes, want %d (%x... vs %x...)", c.topic, i, len(s.Data), len(m), head(s.Data), head(m))
			}
			if s.Writer != w.GUID() {
				t.Errorf("%s: writer %v, want %v", c.topic, s.Writer, w.GUID())
			}
			if s.SourceTime.Before(before.Add(-time.Second)) || s.SourceTime.After(time.Now()) {
				t.Errorf("%s: source time %v, written after %v", c.topic, s.SourceTime, before)
			}
		}
		must(t, w.Close())
		must(t, r.Close())
	}
}

func head(b []byte) []byte { return b[:min(len(b), 16)] }

// TestWriteAt checks that the source timestamp is the writer's.
func TestWriteAt(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	w, r := pair(t, p, "/rgaps_test_ts", "std_msgs/msg/String", EndpointOptions{QoS: qos.Default()})
	waitMatched(t, "writer", w.Matched)
	at := time.Unix(1700000000, 123456789)
	must(t, w.WriteAt(stringCDR("x"), at))
	if s := takeOne(t, r); !s.SourceTime.Equal(at) {
		t.Errorf("source time %v, want %v", s.SourceTime, at)
	}
	if err := w.Write([]byte{0, 1}); err == nil {
		t.Error("a 2-byte message was written")
	}
}

// TestReaderCloseWakesWait checks that Close ends a Wait in progress.
func TestReaderCloseWakesWait(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	tp, err := p.Topic("/rgaps_test_close", "std_msgs/msg/String")
	must(t, err)
	r, err := tp.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	done := make(chan error, 1)
	go func() { _, err := r.Wait(-1); done <- err }()
	time.Sleep(100 * time.Millisecond)
	must(t, r.Close())
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Wait after Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Close")
	}
	if _, _, err := r.Take(); !errors.Is(err, ErrClosed) {
		t.Errorf("Take after Close: %v", err)
	}
}

func TestQoSMapping(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	tp, err := p.Topic("/rgaps_test_qos", "std_msgs/msg/String")
	must(t, err)
	for _, c := range []struct {
		in, want qos.Profile
	}{
		{qos.Default(), qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityReliable,
			Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}},
		{qos.SensorData(), qos.Profile{History: qos.HistoryKeepLast, Depth: 5, Reliability: qos.ReliabilityBestEffort,
			Durability: qos.DurabilityVolatile, Liveliness: qos.LivelinessAutomatic}},
		{qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable, Durability: qos.DurabilityTransientLocal,
			Deadline: time.Second, Lifespan: 2 * time.Second, Liveliness: qos.LivelinessManualByTopic, LivelinessLease: 3 * time.Second},
			qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable, Durability: qos.DurabilityTransientLocal,
				Deadline: time.Second, Lifespan: 2 * time.Second, Liveliness: qos.LivelinessManualByTopic, LivelinessLease: 3 * time.Second}},
	} {
		ud := []byte("typehash=RIHS01_00;")
		w, err := tp.NewWriter(EndpointOptions{QoS: c.in, UserData: ud})
		must(t, err)
		got, gotUD, err := w.QoS()
		must(t, err)
		if got != c.want || !bytes.Equal(gotUD, ud) {
			t.Errorf("writer QoS of %v: %v %q, want %v %q", c.in, got, gotUD, c.want, ud)
		}
		must(t, w.Close())
	}
	if _, err := tp.NewWriter(EndpointOptions{QoS: qos.Profile{Reliability: qos.ReliabilityUnknown}}); err == nil {
		t.Error("a writer with unknown reliability was made")
	}
}

func TestDiscoveryListsEndpoints(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	w, r := pair(t, p, "/rgaps_test_disc", "std_msgs/msg/String", EndpointOptions{QoS: qos.SensorData(), UserData: []byte("typehash=x;")})
	var found [2]bool
	testutil.Eventually(t, 10*time.Second, "own endpoints listed", func() bool {
		eps, err := p.Endpoints()
		must(t, err)
		for _, e := range eps {
			switch {
			case e.Writer && e.GUID == w.GUID():
				found[1] = e.Topic == "rt/rgaps_test_disc" && e.Type == "std_msgs::msg::dds_::String_" &&
					e.Participant == p.GUID() && e.QoS.Reliability == qos.ReliabilityBestEffort &&
					e.QoS.Depth == 5 && string(e.UserData) == "typehash=x;"
			case !e.Writer && e.GUID == r.GUID():
				found[0] = e.QoS.Reliability == qos.ReliabilityReliable
			}
		}
		return found[0] && found[1]
	})
}

// TestRoundTripTwoProcesses sends Strings and 4 MiB messages to a child
// process (another participant, through the network stack), which writes
// each back on a second topic.
func TestRoundTripTwoProcesses(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	msgs := [][]byte{stringCDR("hello"), stringCDR("Hello World: 7"), blobCDR(4<<20, 3), stringCDR("bye")}
	child := testutil.Start(t, "dds-echo", strconv.Itoa(int(testDomain)), strconv.Itoa(len(msgs)))
	in, err := p.Topic("/rgaps_test_ping", "rgaps_test/msg/Blob")
	must(t, err)
	out, err := p.Topic("/rgaps_test_pong", "rgaps_test/msg/Blob")
	must(t, err)
	w, err := in.NewWriter(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	r, err := out.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	child.Expect(t, "ready", 30*time.Second)
	waitMatched(t, "writer", w.Matched)
	waitMatched(t, "reader", r.Matched)
	for _, m := range msgs {
		must(t, w.Write(m))
	}
	if acked, err := w.WaitForAcks(30 * time.Second); err != nil || !acked {
		t.Errorf("the child's reader did not acknowledge every message: %v %v", acked, err)
	}
	for i, m := range msgs {
		s := takeOne(t, r)
		if !bytes.Equal(s.Data, m) {
			t.Errorf("message %d back: %d bytes, want %d", i, len(s.Data), len(m))
		}
		if s.Writer == (GUID{}) || s.Writer.Prefix() == p.GUID().Prefix() {
			t.Errorf("message %d back from writer %v: not the child's", i, s.Writer)
		}
		// Over the wire, a sample carries its writer's sequence number
		// (the 4 MiB one came in fragments).
		if s.Seq != int64(i+1) {
			t.Errorf("message %d back: writer sequence number %d, want %d", i, s.Seq, i+1)
		}
	}
	must(t, r.Close()) // the child leaves when its writer has no reader left
	if err := child.Wait(30 * time.Second); err != nil {
		t.Fatalf("child: %v\n%s", err, child.Stderr())
	}
}

// A reader that asks more than a writer offers (RELIABLE of a
// BEST_EFFORT writer, TRANSIENT_LOCAL of a VOLATILE one) does not match
// it, and both report the policy in their incompatible-QoS status; a
// sample of a writer of this process has no sequence number.
func TestIncompatibleQoS(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	for i, c := range []struct {
		w, r qos.Profile
		pol  qos.Policy
	}{
		{w: qos.Profile{Reliability: qos.ReliabilityBestEffort}, r: qos.Profile{Reliability: qos.ReliabilityReliable}, pol: qos.PolicyReliability},
		{w: qos.Profile{Durability: qos.DurabilityVolatile}, r: qos.Profile{Durability: qos.DurabilityTransientLocal}, pol: qos.PolicyDurability},
	} {
		tp, err := p.Topic(fmt.Sprintf("/rgaps_incompat%d", i), "rgaps_test/msg/Blob")
		must(t, err)
		w, err := tp.NewWriter(EndpointOptions{QoS: c.w})
		must(t, err)
		r, err := tp.NewReader(EndpointOptions{QoS: c.r})
		must(t, err)
		testutil.Eventually(t, 10*time.Second, "incompatible QoS reported", func() bool {
			ri, err1 := r.Incompatible()
			wi, err2 := w.Incompatible()
			return err1 == nil && err2 == nil && ri.Total == 1 && wi.Total == 1 && ri.LastPolicy == c.pol && wi.LastPolicy == c.pol
		})
		if n, _ := r.Matched(); n != 0 {
			t.Errorf("case %d: an incompatible writer matched", i)
		}
		ok, err := w.WaitForAcks(0)
		if err != nil || !ok {
			t.Errorf("case %d: a writer with no reader has nothing unacknowledged: %v %v", i, ok, err)
		}
		must(t, w.Close())
		must(t, r.Close())
	}
	tp, err := p.Topic("/rgaps_incompat_ok", "rgaps_test/msg/Blob")
	must(t, err)
	w, err := tp.NewWriter(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	r, err := tp.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	waitMatched(t, "reader", r.Matched)
	must(t, w.Write(stringCDR("local")))
	if s := takeOne(t, r); s.Seq != 0 {
		t.Errorf("a sample handed over in this process has sequence number %d, want 0 (unknown)", s.Seq)
	}
	if ri, _ := r.Incompatible(); ri.Total != 0 {
		t.Errorf("compatible endpoints report %+v", ri)
	}
}

// A TRANSIENT_LOCAL KEEP_ALL writer keeps every message for late joiners,
// or its last LateJoinerLimit ones.
func TestLateJoinerLimit(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	q := qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable, Durability: qos.DurabilityTransientLocal}
	for _, limit := range []int{0, 100} {
		tp, err := p.Topic(fmt.Sprintf("/rgaps_late_joiners%d", limit), "rgaps_test/msg/Blob")
		must(t, err)
		w, err := tp.NewWriter(EndpointOptions{QoS: q, LateJoinerLimit: limit})
		must(t, err)
		const n = 300
		for i := range n {
			must(t, w.Write(stringCDR(strconv.Itoa(i))))
		}
		r, err := tp.NewReader(EndpointOptions{QoS: q})
		must(t, err)
		want := n
		if limit > 0 {
			want = limit
		}
		for i := n - want; i < n; i++ {
			if s := takeOne(t, r); !bytes.Equal(s.Data, stringCDR(strconv.Itoa(i))) {
				t.Fatalf("limit %d: late joiner got %q, want message %d", limit, s.Data[8:], i)
			}
		}
		if s, ok, _ := r.Take(); ok {
			t.Errorf("limit %d: late joiner got %q more", limit, s.Data[8:])
		}
	}
}

// echoRole (args: domain, count) writes each of count messages it takes
// from rt/rgaps_test_ping back on rt/rgaps_test_pong.
func echoRole(args []string) error {
	dom, _ := strconv.Atoi(args[0])
	n, _ := strconv.Atoi(args[1])
	p, err := Open(Config{Domain: uint32(dom)})
	if err != nil {
		return err
	}
	defer p.Close()
	in, err := p.Topic("/rgaps_test_ping", "rgaps_test/msg/Blob")
	if err != nil {
		return err
	}
	out, err := p.Topic("/rgaps_test_pong", "rgaps_test/msg/Blob")
	if err != nil {
		return err
	}
	r, err := in.NewReader(EndpointOptions{QoS: qos.Default()})
	if err != nil {
		return err
	}
	w, err := out.NewWriter(EndpointOptions{QoS: qos.Default()})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	deadline := time.Now().Add(60 * time.Second)
	for got := 0; got < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d messages", got, n)
		}
		s, ok, err := r.Take()
		if err != nil {
			return err
		}
		if !ok {
			if _, err := r.Wait(time.Second); err != nil {
				return err
			}
			continue
		}
		if err := w.Write(s.Data); err != nil {
			return err
		}
		got++
	}
	// Stay until the parent has everything (it ends the test by waiting
	// for this process after its last take).
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m, _ := w.Matched(); m == 0 {
			break
		}
	}
	return nil
}

//go:build cgo && !nodds

package dds

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// TestWriteParts: a message written in three parts reaches a reader in
// this process and, through the network stack, one in a child process
// (which writes it back whole) as the parts joined, at its exact length.
func TestWriteParts(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	body := blobCDR(4<<20+1, 9)[4:]
	parts := [][3][]byte{
		{{0, 1, 0, 0, 5, 0, 0}, body, []byte{1, 2, 3}}, // an odd head and tail around 4 MiB
		{stringCDR("whole"), nil, nil},                 // one part
		{{0, 1, 0, 0}, []byte{9}, nil},
	}
	child := testutil.Start(t, "dds-echo", strconv.Itoa(int(testDomain)), strconv.Itoa(len(parts)))
	in, err := p.Topic("/rgaps_test_ping", "rgaps_test/msg/Blob")
	must(t, err)
	out, err := p.Topic("/rgaps_test_pong", "rgaps_test/msg/Blob")
	must(t, err)
	w, err := in.NewWriter(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	local, err := in.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	back, err := out.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	child.Expect(t, "ready", 30*time.Second)
	testutil.Eventually(t, 20*time.Second, "the local and the child's reader matched", func() bool {
		n, err := w.Matched()
		return err == nil && n >= 2
	})
	waitMatched(t, "reader of the echo", back.Matched)
	for _, ps := range parts {
		must(t, w.WriteParts(ps[0], ps[1], ps[2]))
	}
	for i, ps := range parts {
		want := bytes.Join(ps[:], nil)
		if s := takeOne(t, local); !bytes.Equal(s.Data, want) {
			t.Errorf("message %d in this process: %d bytes, want %d", i, len(s.Data), len(want))
		}
		if s := takeOne(t, back); !bytes.Equal(s.Data, want) {
			t.Errorf("message %d back from the child: %d bytes, want %d", i, len(s.Data), len(want))
		}
	}
	must(t, back.Close())
	if err := child.Wait(30 * time.Second); err != nil {
		t.Fatalf("child: %v\n%s", err, child.Stderr())
	}
	if err := w.WriteParts([]byte{0, 1, 0}, []byte{0}, nil); err == nil {
		t.Error("parts with a 3-byte head were written")
	}
}

// TestTakeTo: a message is taken into the caller's buffer; one too long
// for it is dropped with an error, and the next is taken.
func TestTakeTo(t *testing.T) {
	requireDDS(t)
	p := openTest(t)
	w, r := pair(t, p, "/rgaps_test_take_to", "rgaps_test/msg/Blob", EndpointOptions{QoS: qos.Default()})
	waitMatched(t, "writer", w.Matched)
	small, big := stringCDR("fits"), blobCDR(1<<20, 4)
	for _, m := range [][]byte{small, big, small} {
		must(t, w.Write(m))
	}
	buf := make([]byte, 64)
	into := func(n int) []byte { return buf[:min(n, len(buf))] }
	var got [][]byte
	var failed int
	for end := time.Now().Add(20 * time.Second); len(got)+failed < 3 && time.Now().Before(end); {
		s, ok, err := r.TakeTo(into)
		switch {
		case err != nil:
			failed++
		case ok:
			if &s.Data[0] != &buf[0] {
				t.Error("the message was not taken into the buffer")
			}
			got = append(got, bytes.Clone(s.Data))
		default:
			r.Wait(100 * time.Millisecond)
		}
	}
	if failed != 1 || len(got) != 2 || !bytes.Equal(got[0], small) || !bytes.Equal(got[1], small) {
		t.Errorf("took %d messages (%q) and failed %d times; want the two small ones and one failure", len(got), got, failed)
	}
}

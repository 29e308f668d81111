package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// setVersion overwrites the layout version word (offset 8 in both
// formats) of the /dev/shm files whose names contain every part; it
// returns how many it changed.
func setVersion(t *testing.T, v uint32, parts ...string) int {
	t.Helper()
	ents, _ := os.ReadDir(shm.Dir)
	n := 0
next:
	for _, e := range ents {
		for _, p := range parts {
			if !strings.Contains(e.Name(), p) {
				continue next
			}
		}
		f, err := os.OpenFile(filepath.Join(shm.Dir, e.Name()), os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		if _, err := f.WriteAt(b[:], 8); err != nil {
			t.Fatal(err)
		}
		f.Close()
		n++
	}
	return n
}

// Segments an older build left behind (an upgrade: another layout version,
// their processes gone) are replaced by the next process that needs the
// name, and removed by Clean (which Open runs): they never make the new
// build fail.
func TestOldVersionSegmentsReplaced(t *testing.T) {
	var kids []*testutil.Child
	for _, topic := range []string{"/upgraded", "/left_over"} {
		k := testutil.Start(t, "idle", topic)
		k.Expect(t, "ready", 30*time.Second)
		kids = append(kids, k)
	}
	for _, k := range kids {
		k.Cmd.Process.Kill()
		k.Wait(10 * time.Second)
	}
	dom := fmt.Sprintf("%s_d%d_", testutil.Prefix(), crashDomain) // this run's segments only: other runs share /dev/shm
	for _, name := range []string{"upgraded", "left"} {
		if n := setVersion(t, TopicVersion-1, dom+"t", name); n != 1 {
			t.Fatalf("patched %d segments of %s, want 1", n, name)
		}
	}
	if n := setVersion(t, GraphVersion-1, dom+"graph"); n != 1 {
		t.Fatalf("patched %d graph segments, want 1", n)
	}
	d := openDomain(t, func(c *Config) { c.Domain = crashDomain })
	p, err := d.NewPublisher(EndpointSpec{Topic: "/upgraded", Type: "t/msg/T", Node: "/new", QoS: keepAll()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Publish([]byte("new build")); err != nil {
		t.Fatal(err)
	}
	// One an older build's process still maps is refused, naming it.
	k := testutil.Start(t, "idle", "/in_use")
	k.Expect(t, "ready", 30*time.Second)
	if n := setVersion(t, TopicVersion-1, dom+"t", "in_use"); n != 1 {
		t.Fatalf("patched %d segments of /in_use, want 1", n)
	}
	_, err = d.NewPublisher(EndpointSpec{Topic: "/in_use", Type: "t/msg/T", Node: "/new", QoS: keepAll()})
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), fmt.Sprintf("in use by pid %d", k.Cmd.Process.Pid)) {
		t.Fatalf("a segment of another version in use: %v", err)
	}
	k.Cmd.Process.Kill()
	k.Wait(10 * time.Second)
	testutil.Eventually(t, 10*time.Second, "the old /in_use removed once its user is gone", func() bool {
		d.Clean()
		return setVersion(t, TopicVersion-1, dom+"t", "in_use") == 0
	})
	// Open cleaned the domain: the old /left_over, which nobody maps, is gone.
	if n := setVersion(t, TopicVersion, dom+"t", "left"); n != 0 {
		t.Fatalf("the old version's /left_over is still in %s", shm.Dir)
	}
}

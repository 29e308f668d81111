package test

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestRmwFootprint runs 20 demo talker/listener pairs, each node a process
// of its own with what rclcpp gives every node (/rosout, /parameter_events,
// the seven parameter and type description services), through
// librmw_rgaps with no setting changed, inside a 64 MiB /dev/shm (Docker's
// default). Every listener must hear its talker and get an answer from one
// of its services, and no process may fail (a full /dev/shm would fail a
// create or publish). The /dev/shm usage is reported.
func TestRmwFootprint(t *testing.T) {
	const pairs = 20
	k := rmwBuild(t)
	if !testutil.InSmallShm(t, "64m") {
		return
	}
	t.Setenv("RGAPS_RMW_BUILT", k.dir) // the child uses what the parent built
	var env []string
	for _, e := range rmwEnv(k, 62) {
		if !strings.HasPrefix(e, "RGAPS_POOL_SIZE=") && !strings.HasPrefix(e, "RGAPS_RMW_SMALL_POOL_SIZE=") {
			env = append(env, e)
		}
	}
	type node struct {
		p     *capiProc
		stdin io.WriteCloser
	}
	var nodes []node
	var listeners []*capiProc
	for i := 0; i < pairs; i++ {
		ns := fmt.Sprintf("/pair%d", i)
		for _, role := range []string{"talker", "listener"} {
			p, w := rmwStart(t, env, k.progs["rmw_proc"], "ros_node", role, ns)
			nodes = append(nodes, node{p, w})
			if role == "listener" {
				listeners = append(listeners, p)
			}
		}
	}
	for _, p := range listeners {
		p.expect(t, "RECEIVED")
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		t.Fatal(err)
	}
	used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
	t.Logf("%d pairs (%d node processes) running: /dev/shm uses %.1f MiB of %d MiB",
		pairs, 2*pairs, float64(used)/(1<<20), st.Blocks*uint64(st.Bsize)>>20)
	logSegments(t)
	for _, n := range nodes {
		n.stdin.Close()
	}
	for _, n := range nodes {
		code := n.p.wait(t)
		out := n.p.stdout()
		if code != 0 || !strings.Contains(out, "ALL PASS") || strings.Contains(out, "FAIL") || strings.Contains(n.p.stderr(), "no space left") {
			t.Fatalf("%s: exit %d\n%s", n.p.name, code, n.p)
		}
	}
}

// logSegments reports what the segments in /dev/shm use, by kind.
func logSegments(t *testing.T) {
	ents, err := os.ReadDir("/dev/shm")
	if err != nil {
		t.Fatal(err)
	}
	type agg struct{ n, bytes, max int64 }
	kinds := map[string]*agg{}
	for _, e := range ents {
		var st unix.Stat_t
		if unix.Stat(filepath.Join("/dev/shm", e.Name()), &st) != nil {
			continue
		}
		kind := "other"
		switch n := e.Name(); {
		case strings.Contains(n, "_rq") || strings.Contains(n, "_rr") || strings.Contains(n, "parameter") && !strings.HasSuffix(n, "parameter_events") || strings.Contains(n, "type_description"):
			kind = "service request/response"
		case strings.HasSuffix(n, "chatter"):
			kind = "chatter"
		case strings.HasSuffix(n, "rosout"):
			kind = "/rosout"
		case strings.HasSuffix(n, "parameter_events"):
			kind = "/parameter_events"
		case strings.HasSuffix(n, "graph"):
			kind = "graph"
		}
		a := kinds[kind]
		if a == nil {
			a = &agg{}
			kinds[kind] = a
		}
		a.n++
		a.bytes += st.Blocks * 512
		a.max = max(a.max, st.Blocks*512)
	}
	var names []string
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		a := kinds[k]
		t.Logf("  %-26s %4d segments, %8.1f KiB in all, %7.1f KiB the largest", k, a.n, float64(a.bytes)/1024, float64(a.max)/1024)
	}
}

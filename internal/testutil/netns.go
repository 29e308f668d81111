package testutil

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
)

// Hosts are two emulated hosts (package netns), removed at the end of the
// test.
type Hosts = netns.Pair

var hostSeq atomic.Int32

// NewHosts creates the namespaces, or skips the test saying why when this
// process cannot (not root, no nsenter(1), namespaces not permitted).
func NewHosts(t testing.TB) *Hosts {
	t.Helper()
	if why := netns.Unavailable(); why != "" {
		t.Skip("two emulated hosts need network namespaces: ", why)
	}
	pid, seq := os.Getpid(), hostSeq.Add(1)
	x := (pid*7+int(seq))%250 + 1
	h, err := netns.New(fmt.Sprintf("rgt%d-%d", pid, seq), fmt.Sprintf("rg%d%d", pid%100000, seq%100),
		fmt.Sprintf("10.%d.%d", 200+int(seq)%50, x))
	if err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") || strings.Contains(err.Error(), "Permission denied") {
			t.Skip("this root cannot create network namespaces: ", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

package bridge

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

const roleOwner = "bridge-graph-owner"

func init() {
	// graph-owner PREFIX TOPIC: a publisher on TOPIC, then wait to be
	// killed.
	testutil.Role(roleOwner, func(a []string) error {
		d, err := zerocopy.Open(zerocopy.Config{Prefix: a[0], PoolSize: 1 << 20, NoDaemonAutostart: true})
		if err != nil {
			return err
		}
		if _, err := d.NewPublisher(zerocopy.EndpointSpec{Topic: a[1], Type: "test_msgs/msg/Owned", Node: "/owner", QoS: reliable()}); err != nil {
			return err
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return nil
	})
}

// remotePublisher reports whether b's daemon lists a publisher of topic on
// the other host.
func remotePublisher(b *Bridge, topic string) bool {
	for _, p := range b.Status().Peers {
		if slices.ContainsFunc(p.Endpoints, func(e RemoteEndpoint) bool { return e.Topic == topic && e.Kind == "publisher" }) {
			return true
		}
	}
	return false
}

// The graph watcher reads the topics only when the graph changed, or when
// a process that owned endpoints at its last scan died: a publisher of a
// process killed on a topic that no live process has open (so no janitor
// reclaims its slot and nothing moves the graph generation) leaves the
// other host's graph; and an idle daemon scans nothing.
func TestGraphWatcherFollowsDeathsNotTime(t *testing.T) {
	a, b := pair(t, "tcp", nil)
	topic := "/graph_watch/orphan"
	child := testutil.Start(t, roleOwner, testutil.Prefix()+"a", topic)
	child.Expect(t, "ready", 30*time.Second)
	testutil.Eventually(t, 10*time.Second, "host b lists host a's publisher", func() bool { return remotePublisher(b, topic) })

	// Idle: a's watcher reads nothing for a while (several watch periods).
	time.Sleep(2 * watchPeriod)
	before := a.scans.Load()
	time.Sleep(4 * watchPeriod)
	if n := a.scans.Load() - before; n != 0 {
		t.Errorf("host a's graph watcher scanned %d times with nothing changed", n)
	}

	child.Cmd.Process.Kill()
	child.Wait(10 * time.Second)
	testutil.Eventually(t, 10*time.Second, "host b drops the killed process's publisher", func() bool { return !remotePublisher(b, topic) })
	// The orphaned segment is the test's to remove (nobody reclaims it).
	d, err := zerocopy.Open(zerocopy.Config{Prefix: testutil.Prefix() + "a", NoDaemonAutostart: true, SkipStaleClean: true})
	if err != nil {
		t.Fatal(err)
	}
	d.CleanStale()
	d.Close()
}

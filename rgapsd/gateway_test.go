package rgapsd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// With -dds the daemon runs the DDS gateway beside the pool server: an
// rgaps publisher's message reaches a DDS reader, and only topics that
// -dds-topics matches are carried.
func TestMainDDSGateway(t *testing.T) {
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	t.Setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
	domain := uint32(200 + os.Getpid()%32)
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: domain}
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"-dds", "-dds-topics", "/a,[x"}, cfg, &out); err == nil || !strings.Contains(err.Error(), "pattern") {
		t.Errorf("bad pattern: %v", err)
	}
	t.Run("flags", func(t *testing.T) {
		testMainDDSGateway(t, cfg, []string{"-dds", "-dds-topics", "/rgd_yes*", "-dds-ledger", t.TempDir() + "/ledger"})
	})
	t.Run("config file", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(dir+"/secret", []byte("0123456789abcdef-test-secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		conf := "listen = 127.0.0.1:0\nsecret-file = secret\ndds = on\ndds-topics = /rgd_yes*\ndds-ledger = " + dir + "/ledger\n"
		if err := os.WriteFile(dir+"/rgapsd.conf", []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		testMainDDSGateway(t, cfg, []string{"-config", dir + "/rgapsd.conf"})
	})
}

// testMainDDSGateway runs Main with args, which must start the gateway
// carrying /rgd_yes* only, and checks that it carries /rgd_yes to DDS and
// not /rgd_no.
func testMainDDSGateway(t *testing.T, cfg zerocopy.Config, args []string) {
	domain := cfg.Domain
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, args, cfg, &log)
	}()

	dom, err := zerocopy.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Close()
	part, err := dds.Open(dds.Config{Domain: domain})
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 10, Reliability: qos.ReliabilityReliable, Liveliness: qos.LivelinessAutomatic}
	msg := []byte{0, 1, 0, 0, 3, 0, 0, 0, 'h', 'i', 0, 0}
	for _, topic := range []string{"/rgd_yes", "/rgd_no"} {
		pub, err := dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: "std_msgs/msg/String", Node: "/t", QoS: q})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		tp, err := part.Topic(topic, "std_msgs/msg/String")
		if err != nil {
			t.Fatal(err)
		}
		r, err := tp.NewReader(dds.EndpointOptions{QoS: q})
		if err != nil {
			t.Fatal(err)
		}
		if topic == "/rgd_no" {
			time.Sleep(time.Second)
			if n, _ := r.Matched(); n != 0 || pub.Matched() != 0 {
				t.Errorf("%s is carried though -dds-topics excludes it", topic)
			}
			continue
		}
		testutil.Eventually(t, 20*time.Second, "the gateway's writer", func() bool { n, _ := r.Matched(); return n > 0 && pub.Matched() > 0 })
		if err := pub.Publish(msg); err != nil {
			t.Fatal(err)
		}
		r.Wait(10 * time.Second)
		if s, ok, err := r.Take(); err != nil || !ok || !bytes.Equal(s.Data, msg) {
			t.Fatalf("DDS took %v %v % x", ok, err, s.Data)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "carrying topic") {
		t.Errorf("log:\n%s", log.String())
	}
}

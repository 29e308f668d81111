package test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The graph both ways through `rgaps daemon -dds`, as a user sees it: a
// ROS 2 node on DDS (this test's participant, speaking ros_discovery_info
// as rmw_cyclonedds_cpp does) is listed by `rgaps node list`, its topic by
// `rgaps topic list` and `topic info -v`, until its participant leaves;
// the node `rgaps topic pub` makes is in the gateway's ros_discovery_info
// with the gateway's DDS writer of its topic. The DDS domain is this
// process's one of 200–231 (the gateway tests' range), off other runs.
func TestCLIDDSGraph(t *testing.T) {
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	bin := buildCLI(t, t.TempDir())
	domain := uint32(200 + os.Getpid()%32)
	d := strconv.Itoa(int(domain))
	daemon := startCLIEnv(t, bin, []string{"ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"}, "daemon", "-dds", "-domain", d)
	defer daemon.interrupt(t)

	part, err := dds.Open(dds.Config{Domain: domain, UserData: []byte("enclave=/;")})
	if err != nil {
		t.Fatal(err)
	}
	defer part.Close()
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 1, Reliability: qos.ReliabilityReliable,
		Durability: qos.DurabilityTransientLocal, Liveliness: qos.LivelinessAutomatic}
	it, err := part.RawTopic("ros_discovery_info", "rmw_dds_common::msg::dds_::ParticipantEntitiesInfo_")
	if err != nil {
		t.Fatal(err)
	}
	iw, err := it.NewWriter(dds.EndpointOptions{QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	ir, err := it.NewReader(dds.EndpointOptions{QoS: qos.Profile{History: qos.HistoryKeepAll, Reliability: qos.ReliabilityReliable,
		Durability: qos.DurabilityTransientLocal, Liveliness: qos.LivelinessAutomatic}, IgnoreLocal: true})
	if err != nil {
		t.Fatal(err)
	}
	ct, err := part.Topic("/cli_dds_chatter", "std_msgs/msg/String")
	if err != nil {
		t.Fatal(err)
	}
	cw, err := ct.NewWriter(dds.EndpointOptions{QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	talker := fmt.Sprintf("cli_dds_talker_%d", os.Getpid())
	if err := iw.Write(participantInfo(part.GUID(), "/", talker, cw.GUID())); err != nil {
		t.Fatal(err)
	}

	testutil.Eventually(t, 60*time.Second, "the DDS node in rgaps node list", func() bool {
		return strings.Contains(mustRun(t, bin, "node", "list", "-v", "-domain", d), "/"+talker+"  (DDS participant "+part.GUID().String()+")")
	})
	if list := mustRun(t, bin, "topic", "list", "-t", "-domain", d); !strings.Contains(list, "/cli_dds_chatter [std_msgs/msg/String]\n") {
		t.Errorf("topic list:\n%s", list)
	}
	info := mustRun(t, bin, "topic", "info", "-v", "/cli_dds_chatter", "-domain", d)
	for _, want := range []string{"Publisher count: 1", "Node name: " + talker, "GID: " + hexGUID(cw.GUID()), "DDS participant: " + part.GUID().String(), "Data path: dds"} {
		if !strings.Contains(info, want) {
			t.Errorf("topic info lacks %q:\n%s", want, info)
		}
	}

	// rgaps → DDS: the CLI publisher's node, with the gateway's writer
	pub := startCLI(t, bin, "topic", "pub", "/cli_dds_rg", "hello", "-rate", "5", "-domain", d)
	rgNode := fmt.Sprintf("_rgaps_pub_%d", pub.cmd.Process.Pid)
	testutil.Eventually(t, 60*time.Second, "the rgaps node in the gateway's ros_discovery_info", func() bool {
		var gw dds.GUID
		eps, _ := part.Endpoints()
		for _, e := range eps {
			if e.Writer && e.Topic == "rt/cli_dds_rg" {
				gw = e.GUID
			}
		}
		for {
			s, ok, err := ir.Take()
			if err != nil || !ok {
				return false
			}
			if gw != (dds.GUID{}) && s.Writer.Prefix() == gw.Prefix() && bytes.Contains(s.Data, []byte(rgNode+"\x00")) && bytes.Contains(s.Data, gw[:]) {
				return true
			}
		}
	})
	// node list: hidden nodes only with -a, this host's with their process
	pid := pub.cmd.Process.Pid
	if all := mustRun(t, bin, "node", "list", "-a", "-v", "-domain", d); !strings.Contains(all, fmt.Sprintf("/%s  (this host, process %d)\n", rgNode, pid)) {
		t.Errorf("node list -a -v:\n%s", all)
	}
	if plain := mustRun(t, bin, "node", "list", "-domain", d); strings.Contains(plain, rgNode) || !strings.Contains(plain, "/"+talker+"\n") {
		t.Errorf("node list:\n%s", plain)
	}
	pub.interrupt(t)

	part.Close()
	testutil.Eventually(t, 60*time.Second, "the DDS node gone from rgaps node list", func() bool {
		return !strings.Contains(mustRun(t, bin, "node", "list", "-domain", d), talker)
	})
}

// participantInfo is a ParticipantEntitiesInfo of one node with writers,
// XCDR1 little endian as rmw_cyclonedds_cpp writes it.
func participantInfo(part dds.GUID, ns, name string, writers ...dds.GUID) []byte {
	b := append([]byte{0, 1, 0, 0}, part[:]...)
	u32 := func(v int) {
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	u32(1)
	for _, s := range []string{ns, name} {
		u32(len(s) + 1)
		b = append(append(b, s...), 0)
	}
	u32(0)
	u32(len(writers))
	for _, w := range writers {
		b = append(b, w[:]...)
	}
	return b
}

func hexGUID(g dds.GUID) string { return fmt.Sprintf("%x", g[:]) }

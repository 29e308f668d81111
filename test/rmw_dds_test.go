package test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The rmw's graph queries show a ROS 2 node on DDS that `rgaps daemon -dds`
// reports (this test's participant, speaking ros_discovery_info as
// rmw_cyclonedds_cpp does, with a publisher): node names, topic list,
// publisher count, endpoint info, the node's publishers; and no more once
// its participant left (rmw/test/rmw_dds.c). DDS domain: this process's
// one of 200–231.
func TestRmwDDSGraph(t *testing.T) {
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	k := rmwBuild(t)
	bin := buildCLI(t, t.TempDir())
	domain := 200 + os.Getpid()%32
	daemon := startCLIEnv(t, bin, []string{"ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST"}, "daemon", "-dds", "-domain", strconv.Itoa(domain))
	defer daemon.interrupt(t)

	part, err := dds.Open(dds.Config{Domain: uint32(domain), UserData: []byte("enclave=/;")})
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
	const topic = "/rmw_dds_chatter"
	ct, err := part.Topic(topic, "std_msgs/msg/String")
	if err != nil {
		t.Fatal(err)
	}
	cw, err := ct.NewWriter(dds.EndpointOptions{QoS: qos.Default()})
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("rmw_dds_talker_%d", os.Getpid())
	if err := iw.Write(participantInfo(part.GUID(), "/", name, cw.GUID())); err != nil {
		t.Fatal(err)
	}
	watch, _ := rmwStart(t, rmwEnv(k, domain), k.progs["rmw_dds"], "watch", name, topic)
	watch.expect(t, "SEEN")
	part.Close()
	rmwPassed(t, watch)
}

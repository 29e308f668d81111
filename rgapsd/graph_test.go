package rgapsd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/status"
	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// discoveryInfo is a ParticipantEntitiesInfo with one node and its writer
// gids, as rmw_cyclonedds_cpp writes it (XCDR1, little endian).
func discoveryInfo(part dds.GUID, ns, name string, writers ...dds.GUID) []byte {
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
	u32(0) // readers
	u32(len(writers))
	for _, w := range writers {
		b = append(b, w[:]...)
	}
	return b
}

// The daemon reports the DDS gateway's graph on its own socket, which
// status.Query joins to the bridge's answer when the daemon bridges too:
// with -dds alone and with a bridge. A ROS 2 node on DDS (a participant speaking
// ros_discovery_info as rmw_cyclonedds_cpp does) is there with its
// publisher, and gone when its participant leaves.
func TestMainDDSGraph(t *testing.T) {
	if err := dds.Load(); errors.Is(err, dds.ErrNotSupported) {
		t.Skip(err)
	}
	t.Setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
	t.Setenv("RGAPS_CLUSTER_SECRET", "rgapsd graph test secret")
	domain := uint32(200 + os.Getpid()%32)
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: domain}
	for _, mode := range []struct {
		name string
		args []string
	}{
		{"gateway alone", []string{"-dds"}},
		{"gateway and bridge", []string{"-dds", "-listen", "127.0.0.1:0", "-provider", "tcp", "-host-id", "graphhost"}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var log syncBuffer
			done := make(chan error, 1)
			go func() { done <- Main(ctx, mode.args, cfg, &log) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
				if t.Failed() {
					t.Log(log.String())
				}
			}()

			part, err := dds.Open(dds.Config{Domain: domain, UserData: []byte("enclave=/;")})
			if err != nil {
				t.Fatal(err)
			}
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
			ct, err := part.Topic("/rgd_graph_chatter", "std_msgs/msg/String")
			if err != nil {
				t.Fatal(err)
			}
			cw, err := ct.NewWriter(dds.EndpointOptions{QoS: q})
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("rgd_talker_%d", os.Getpid())
			if err := iw.Write(discoveryInfo(part.GUID(), "/", name, cw.GUID())); err != nil {
				t.Fatal(err)
			}
			var st status.Status
			bridged := len(mode.args) > 1
			testutil.Eventually(t, 20*time.Second, "the DDS node on the status socket", func() bool {
				st, err = status.Query(cfg)
				return err == nil && st.DDS != nil && len(st.DDS.Endpoints) > 0 && (st.Host == "graphhost") == bridged &&
					slices.ContainsFunc(st.DDS.Nodes, func(n status.DDSNode) bool { return n.Name == name })
			})
			i := slices.IndexFunc(st.DDS.Endpoints, func(e status.RemoteEndpoint) bool { return e.Node == "/"+name })
			if i < 0 {
				t.Fatalf("no endpoint of /%s: %+v", name, st.DDS.Endpoints)
			}
			e := st.DDS.Endpoints[i]
			if e.Topic != "/rgd_graph_chatter" || e.Type != "std_msgs/msg/String" || e.Kind != "publisher" ||
				e.GID != zerocopy.GID(cw.GUID()).String() || e.Path != status.PathDDS || e.Host != part.GUID().String() {
				t.Errorf("endpoint %+v", e)
			}
			nodes, _ := st.Graph()
			if !slices.ContainsFunc(nodes, func(n zerocopy.NodeInfo) bool { return n.FullName() == "/"+name }) {
				t.Errorf("Graph() nodes %+v", nodes)
			}
			part.Close()
			testutil.Eventually(t, 20*time.Second, "the DDS node gone", func() bool {
				st, err = status.Query(cfg)
				return err == nil && st.DDS != nil && !slices.ContainsFunc(st.DDS.Nodes, func(n status.DDSNode) bool { return n.Name == name })
			})
		})
	}
}

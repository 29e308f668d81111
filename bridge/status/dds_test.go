package status

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// The DDS section is an added field (version 1 still), absent without the
// gateway; Graph joins the peers' and the DDS nodes' graphs in the
// engine's terms.
func TestStatusDDSGraph(t *testing.T) {
	hash := "RIHS01_" + strings.Repeat("ab", 32)
	gid := strings.Repeat("01", 16)
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 7, Reliability: qos.ReliabilityReliable, Liveliness: qos.LivelinessAutomatic}
	st := Status{Version: Version, Peers: []PeerStatus{{Host: "h2", Nodes: []RemoteNode{{Host: "h2", Name: "far", Namespace: "/", Enclave: "/"}},
		Endpoints: []RemoteEndpoint{{Host: "h2", Topic: "/t", Type: "std_msgs/msg/String", Kind: "subscription", Node: "/far", GID: gid, Path: "tcp"}}}},
		DDS: &DDSGraph{Participant: "p", Nodes: []DDSNode{{Participant: "p2", Name: "talker", Namespace: "/ns"}},
			Endpoints: []RemoteEndpoint{{Host: "p2", Topic: "/chatter", Type: "std_msgs/msg/String", TypeHash: hash, Kind: "publisher", Node: "/ns/talker", GID: gid, QoS: q, Path: PathDDS}}}}
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil || back.DDS == nil || len(back.DDS.Nodes) != 1 || back.DDS.Endpoints[0].QoS != q {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if plain, _ := json.Marshal(Status{Version: Version}); strings.Contains(string(plain), "dds") {
		t.Errorf("a status without the gateway has a dds field: %s", plain)
	}
	nodes, eps := back.Graph()
	if len(nodes) != 2 || nodes[0].FullName() != "/far" || nodes[1].FullName() != "/ns/talker" || nodes[0].Enclave != "/" {
		t.Errorf("nodes %+v", nodes)
	}
	wantHash, _ := zerocopy.ParseTypeHash(hash)
	var wantGID zerocopy.GID
	for i := range wantGID {
		wantGID[i] = 1
	}
	want := []zerocopy.EndpointInfo{
		{Topic: "/t", Type: "std_msgs/msg/String", Kind: zerocopy.KindSubscription, Node: "/far", GID: wantGID, Path: "tcp"},
		{Topic: "/chatter", Type: "std_msgs/msg/String", TypeHash: wantHash, Kind: zerocopy.KindPublisher, Node: "/ns/talker", GID: wantGID, QoS: q, Path: PathDDS},
	}
	if len(eps) != len(want) {
		t.Fatalf("endpoints %+v", eps)
	}
	for i := range want {
		if eps[i] != want[i] {
			t.Errorf("endpoint %d: %+v, want %+v", i, eps[i], want[i])
		}
	}
	if bad := (RemoteEndpoint{GID: "zz", TypeHash: "nonsense"}).Info(); bad.GID != (zerocopy.GID{}) || bad.TypeHash != (zerocopy.TypeHash{}) {
		t.Errorf("malformed GID and hash read as %v %v, want zero", bad.GID, bad.TypeHash)
	}
}

// Query joins the bridge's answer and the DDS gateway's, each from its
// own socket; either may be missing, not both; a gateway of another
// version is refused.
func TestQueryJoinsSockets(t *testing.T) {
	cfg := zerocopy.Config{Prefix: fmt.Sprintf("rgst%d", os.Getpid()), Domain: 7}
	if _, err := Query(cfg); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("no daemon: %v", err)
	}
	serve := func(socket string, st Status) func() {
		ln, err := Listen(socket)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Serve(ln, func() Status { return st }, nil)
		}()
		return func() { ln.Close(); <-done }
	}
	dds := &DDSGraph{Participant: "p", Nodes: []DDSNode{{Participant: "q", Name: "n", Namespace: "/"}}}
	stopDDS := serve(DDSSocket(cfg), Status{Version: Version, DDS: dds})
	st, err := Query(cfg)
	if err != nil || st.Version != Version || st.Provider != "" || st.DDS == nil || st.DDS.Nodes[0].Name != "n" {
		t.Fatalf("gateway alone: %+v, %v", st, err)
	}
	if _, err := Listen(DDSSocket(cfg)); err == nil {
		t.Error("a second listener on the DDS socket")
	}
	stopBridge := serve(Socket(cfg), Status{Version: Version, Host: "h", Provider: "tcp"})
	st, err = Query(cfg)
	if err != nil || st.Host != "h" || st.Provider != "tcp" || st.DDS == nil || len(st.DDS.Nodes) != 1 {
		t.Fatalf("bridge and gateway: %+v, %v", st, err)
	}
	stopDDS()
	st, err = Query(cfg)
	if err != nil || st.Host != "h" || st.DDS != nil {
		t.Fatalf("bridge alone: %+v, %v", st, err)
	}
	stopNew := serve(DDSSocket(cfg), Status{Version: Version + 1})
	if _, err := Query(cfg); !errors.Is(err, ErrVersion) {
		t.Errorf("a gateway of another version: %v", err)
	}
	stopNew()
	stopBridge()
}

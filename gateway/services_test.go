package gateway

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

const (
	addReq  = "example_interfaces/srv/AddTwoInts_Request"
	addResp = "example_interfaces/srv/AddTwoInts_Response"
)

// cdrInts is the CDR of int64 fields (little endian) after header h.
func cdrInts(h []byte, vs ...int64) []byte {
	b := append([]byte{0, 1, 0, 0}, h...)
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, uint64(v))
	}
	return b
}

// ddsHead is rmw_cyclonedds_cpp's request header: client id, sequence.
func ddsHead(id uint64, seq int64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, id), uint64(seq))
}

// rgapsHead is the rmw's service prefix: GID, sequence, 4 reserved.
func rgapsHead(gid []byte, seq int64) []byte {
	return append(binary.LittleEndian.AppendUint64(bytes.Clone(gid[:16]), uint64(seq)), 0, 0, 0, 0)
}

func int64At(b []byte, off int) int64 { return int64(binary.LittleEndian.Uint64(b[off:])) }

// svcTestEnds are one side's ends of service svc on each graph, made as the
// two rmws make them: the rgaps ones publish on one of /_rgaps_rq<svc>,
// /_rgaps_rr<svc> and subscribe to the other, the DDS ones write on one
// of rq/<svc>Request, rr/<svc>Reply and read the other.
type svcTestEnds struct {
	pub *zerocopy.Publisher
	sub *zerocopy.Subscription
	w   *dds.Writer
	r   *dds.Reader
}

// serviceEnds makes a DDS client and an rgaps service of svc (ddsClient)
// or an rgaps client and a DDS service, and waits until the gateway's
// mirror matched all four.
func (e *env) serviceEnds(t *testing.T, svc string, ddsClient bool) svcTestEnds {
	t.Helper()
	rgTopics, rgTypes := [2]string{"/_rgaps_rr" + svc, "/_rgaps_rq" + svc}, [2]string{addResp, addReq}
	dTopics := [2]string{"rq" + svc + "Request", "rr" + svc + "Reply"}
	dTypes := [2]string{"example_interfaces::srv::dds_::AddTwoInts_Request_", "example_interfaces::srv::dds_::AddTwoInts_Response_"}
	if !ddsClient {
		rgTopics[0], rgTopics[1], rgTypes[0], rgTypes[1] = rgTopics[1], rgTopics[0], rgTypes[1], rgTypes[0]
		dTopics[0], dTopics[1], dTypes[0], dTypes[1] = dTopics[1], dTopics[0], dTypes[1], dTypes[0]
	}
	s := svcTestEnds{pub: e.publisher(t, rgTopics[0], rgTypes[0]), sub: e.subscription(t, rgTopics[1], rgTypes[1])}
	wt, err := e.part.RawTopic(dTopics[0], dTypes[0])
	must(t, err)
	rt, err := e.part.RawTopic(dTopics[1], dTypes[1])
	must(t, err)
	s.w, err = wt.NewWriter(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	s.r, err = rt.NewReader(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	t.Cleanup(func() { s.w.Close(); s.r.Close() })
	eventually(t, "the gateway's service mirror", func() bool {
		a, _ := s.w.Matched()
		b, _ := s.r.Matched()
		return a >= 1 && b >= 1 && s.pub.Matched() >= 1 && s.sub.Matched() >= 1
	})
	return s
}

// TestGatewayServiceFromDDS: a raw DDS client's requests reach an rgaps
// service made as the rmw makes it, and each reply comes back with the
// client's own request header.
func TestGatewayServiceFromDDS(t *testing.T) {
	e := startGateway(t)
	s := e.serviceEnds(t, "/gw_svc_in", true)
	reqs, resps, w, r := s.sub, s.pub, s.w, s.r
	calls := []struct {
		id   uint64
		seq  int64
		a, b int64
	}{{0x1122334455667788, 7, 2, 3}, {0x99, 1, 40, 2}}
	for _, c := range calls {
		must(t, w.Write(cdrInts(ddsHead(c.id, c.seq), c.a, c.b)))
	}
	var gid []byte
	for range calls { // the service: echo GID and sequence, answer a+b
		q := takeRgaps(t, reqs)
		if len(q) != 28+4+16 || !bytes.Equal(q[24:32], []byte{0, 0, 0, 0, 0, 1, 0, 0}) {
			t.Fatalf("rgaps request % x", q)
		}
		if gid != nil && !bytes.Equal(gid, q[:16]) {
			t.Fatalf("requests with two GIDs: % x, % x", gid, q[:16])
		}
		gid = q[:16]
		must(t, resps.Publish(append(rgapsHead(q, int64At(q, 16)), cdrInts(nil, int64At(q, 32)+int64At(q, 40))...)))
	}
	// A reply for another client is not carried.
	must(t, resps.Publish(append(rgapsHead(make([]byte, 16), 1), cdrInts(nil, -1)...)))
	got := map[uint64][]byte{}
	for range calls {
		d := take(t, r)
		got[binary.LittleEndian.Uint64(d[4:])] = d
	}
	for _, c := range calls {
		want := cdrInts(ddsHead(c.id, c.seq), c.a+c.b)
		if d := got[c.id]; !bytes.HasPrefix(d, want) {
			t.Errorf("reply to %x: % x, want % x", c.id, d, want)
		}
	}
	if d, ok, _ := r.Take(); ok {
		t.Errorf("an extra reply: % x", d.Data)
	}
}

// TestGatewayServiceToDDS: an rgaps client's request (the rmw's prefix)
// reaches a raw DDS service with a made-up rmw_cyclonedds_cpp header, and
// the service's reply comes back to the client's GID and sequence.
func TestGatewayServiceToDDS(t *testing.T) {
	e := startGateway(t)
	s := e.serviceEnds(t, "/gw_svc_out", false)
	reqs, resps, w, r := s.pub, s.sub, s.w, s.r
	gid := reqs.GID()
	must(t, reqs.Publish(append(rgapsHead(gid[:], 9), cdrInts(nil, 20, 22)...)))
	q := take(t, r)
	if len(q) < 4+16+16 || !bytes.Equal(q[:4], []byte{0, 1, 0, 0}) || int64At(q, 12) == 0 || int64At(q, 20) != 20 || int64At(q, 28) != 22 {
		t.Fatalf("DDS request % x", q)
	}
	must(t, w.Write(cdrInts(q[4:20], 42)))
	must(t, w.Write(cdrInts(ddsHead(1, 1), -1))) // another client's: not carried
	want := append(rgapsHead(gid[:], 9), cdrInts(nil, 42)...)
	if got := takeRgaps(t, resps); !bytes.Equal(got, want) {
		t.Fatalf("rgaps reply % x, want % x", got, want)
	}
	if s, err := resps.TakeWait(300e6); err == nil {
		t.Errorf("an extra reply: % x", s.Bytes())
		s.Return()
	}
}

package gateway

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/dds"
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

// rawEnds are a raw DDS writer on one service topic and a reader on the
// other, as rmw_cyclonedds_cpp names them.
func (e *env) rawEnds(t *testing.T, wrTopic, wrType, rdTopic, rdType string) (*dds.Writer, *dds.Reader) {
	t.Helper()
	wt, err := e.part.RawTopic(wrTopic, wrType)
	must(t, err)
	rt, err := e.part.RawTopic(rdTopic, rdType)
	must(t, err)
	w, err := wt.NewWriter(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	r, err := rt.NewReader(dds.EndpointOptions{QoS: testQoS})
	must(t, err)
	t.Cleanup(func() { w.Close(); r.Close() })
	return w, r
}

// TestGatewayServiceFromDDS: a raw DDS client's requests reach an rgaps
// service made as the rmw makes it, and each reply comes back with the
// client's own request header.
func TestGatewayServiceFromDDS(t *testing.T) {
	e := startGateway(t)
	const svc = "/gw_svc_in"
	reqs := e.subscription(t, "/_rgaps_rq"+svc, addReq)
	resps := e.publisher(t, "/_rgaps_rr"+svc, addResp)
	w, r := e.rawEnds(t, "rq"+svc+"Request", "example_interfaces::srv::dds_::AddTwoInts_Request_",
		"rr"+svc+"Reply", "example_interfaces::srv::dds_::AddTwoInts_Response_")
	eventually(t, "the gateway's service mirror", func() bool {
		a, _ := w.Matched()
		b, _ := r.Matched()
		return a >= 1 && b >= 1 && reqs.Matched() >= 1 && resps.Matched() >= 1
	})
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
	const svc = "/gw_svc_out"
	reqs := e.publisher(t, "/_rgaps_rq"+svc, addReq)
	resps := e.subscription(t, "/_rgaps_rr"+svc, addResp)
	w, r := e.rawEnds(t, "rr"+svc+"Reply", "example_interfaces::srv::dds_::AddTwoInts_Response_",
		"rq"+svc+"Request", "example_interfaces::srv::dds_::AddTwoInts_Request_")
	eventually(t, "the gateway's service mirror", func() bool {
		a, _ := w.Matched()
		b, _ := r.Matched()
		return a >= 1 && b >= 1 && reqs.Matched() >= 1 && resps.Matched() >= 1
	})
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

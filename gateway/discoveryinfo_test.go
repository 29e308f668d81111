package gateway

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// handInfo is a ParticipantEntitiesInfo written byte by byte as XCDR1
// lays it out (what rmw_cyclonedds_cpp sends): header, gid, node count,
// then per node two strings (length with the NUL, bytes, NUL, padding to
// 4 before the next length) and two gid sequences.
func handInfo(order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}, part gid, nodes []nodeEntities) []byte {
	kind := byte(1)
	if order == binary.BigEndian {
		kind = 0
	}
	b := []byte{0, kind, 0, 0}
	pad := func() {
		for (len(b)-4)%4 != 0 {
			b = append(b, 0)
		}
	}
	u32 := func(v int) { pad(); b = order.AppendUint32(b, uint32(v)) }
	b = append(b, part[:]...)
	u32(len(nodes))
	for _, n := range nodes {
		for _, s := range []string{n.namespace, n.name} {
			u32(len(s) + 1)
			b = append(append(b, s...), 0)
		}
		for _, gs := range [][]gid{n.readers, n.writers} {
			u32(len(gs))
			for _, g := range gs {
				b = append(b, g[:]...)
			}
		}
	}
	return b
}

func testGid(n byte) gid {
	var g gid
	for i := range g {
		g[i] = n + byte(i)
	}
	return g
}

var testNodes = []nodeEntities{
	{namespace: "/", name: "talker", writers: []gid{testGid(1), testGid(2)}},
	{namespace: "/robot/arm", name: "ctl", readers: []gid{testGid(3)}},
	{namespace: "/", name: "_ros2cli_1"},
}

// The gateway decodes what a DDS rmw writes, in either byte order, with
// the padding a DDS sample may carry after it, and writes the same bytes
// rmw_cyclonedds_cpp would.
func TestDiscoveryInfoCodec(t *testing.T) {
	want := participantInfo{gid: testGid(100), nodes: testNodes}
	le := handInfo(binary.LittleEndian, want.gid, want.nodes)
	if got := want.encode(); !bytes.Equal(got, le) {
		t.Fatalf("encode:\n% x\nwant\n% x", got, le)
	}
	for name, b := range map[string][]byte{
		"little endian":    le,
		"big endian":       handInfo(binary.BigEndian, want.gid, want.nodes),
		"with DDS padding": append(append([]byte(nil), le...), 0, 0),
	} {
		got, err := decodeInfo(b)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, want)
		}
	}
	if _, err := zerocopy.ParseTypeHash(infoTypeHash); err != nil {
		t.Errorf("infoTypeHash: %v", err)
	}
	empty := participantInfo{gid: testGid(7)}
	if got, err := decodeInfo(empty.encode()); err != nil || got.gid != empty.gid || len(got.nodes) != 0 {
		t.Errorf("no nodes: %+v, %v", got, err)
	}
}

// A malformed sample is an error naming what is wrong, never a panic:
// every truncation, lengths beyond the bytes there, names beyond the bound
// or not ROS names, trailing bytes, another encapsulation.
func TestDiscoveryInfoMalformed(t *testing.T) {
	good := handInfo(binary.LittleEndian, testGid(100), testNodes)
	for n := 0; n < len(good); n++ {
		if _, err := decodeInfo(good[:n]); err == nil {
			t.Fatalf("truncated to %d of %d bytes: no error", n, len(good))
		}
	}
	// the writer gid count of the last node (empty) patched to 2^32-1
	huge := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(huge[len(huge)-4:], 0xffffffff)
	cases := map[string]struct {
		b    []byte
		want string
	}{
		"gid count beyond the bytes": {huge, "writer gids"},
		"long name":                  {handInfo(binary.LittleEndian, testGid(1), []nodeEntities{{namespace: "/", name: strings.Repeat("n", 257)}}), "bound 256"},
		"bad name":                   {handInfo(binary.LittleEndian, testGid(1), []nodeEntities{{namespace: "/", name: "a b"}}), "node 0"},
		"bad ns":                     {handInfo(binary.LittleEndian, testGid(1), []nodeEntities{{namespace: "rel", name: "a"}}), "node 0"},
		"trailing":                   {append(append([]byte(nil), good...), 1, 2, 3, 4, 5), "after the message"},
		"nonzero padding":            {append(append([]byte(nil), good...), 9), "after the message"},
		"XCDR2 header":               {append([]byte{0, 7, 0, 0}, good[4:]...), "encapsulation"},
	}
	for name, c := range cases {
		if _, err := decodeInfo(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	// A sequence count patched to a huge value must be refused before
	// allocating.
	bad := append([]byte(nil), good...)
	binary.LittleEndian.PutUint32(bad[4+16:], 1<<30)
	if _, err := decodeInfo(bad); err == nil {
		t.Error("a node count of 2^30 was accepted")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		b := append([]byte(nil), good...)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.Uint32())
		}
		decodeInfo(b) // must not panic
	}
}

func FuzzDecodeInfo(f *testing.F) {
	f.Add(handInfo(binary.LittleEndian, testGid(100), testNodes))
	f.Add(handInfo(binary.BigEndian, testGid(1), nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodeInfo(b)
		if err != nil {
			return
		}
		if q, err := decodeInfo(p.encode()); err != nil || !reflect.DeepEqual(p, q) {
			t.Errorf("re-encoded sample decodes as %+v, %v; want %+v", q, err, p)
		}
	})
}

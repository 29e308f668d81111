package schema_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// TestByteField: the rmw's rule for the device field (rgaps_ts_byte_member).
func TestByteField(t *testing.T) {
	all := msg(t, "test_msgs/AllTypes")
	cases := []struct {
		m    *schema.Message
		name string
		want string // field name, "" for an error
	}{
		{msg(t, "sensor_msgs/msg/Image"), "", "data"},
		{msg(t, "std_msgs/msg/UInt8MultiArray"), "", "data"},
		{msg(t, "sensor_msgs/msg/CompressedImage"), "", "data"},
		{msg(t, "std_msgs/msg/String"), "", ""},
		{all, "", ""},               // three byte sequences, none named data
		{all, "u8_seq", "u8_seq"},   // uint8[]
		{all, "o_seq", "o_seq"},     // byte[]
		{all, "u8_bseq", "u8_bseq"}, // uint8[<=4]
		{all, "i8_seq", ""},         // int8[]: numbers, not bytes
		{all, "u8_arr", ""},         // uint8[5]: a fixed array
		{all, "nothing", ""},
		{idlTypes, "cs", "cs"}, // char[<=2]
	}
	for _, c := range cases {
		i, err := schema.ByteField(c.m, c.name)
		if c.want == "" {
			if err == nil || !errors.Is(err, schema.ErrNoByteField) {
				t.Errorf("%s %q: %d, %v; want ErrNoByteField", c.m.Name, c.name, i, err)
			}
			continue
		}
		if err != nil || c.m.Fields[i].Name != c.want {
			t.Errorf("%s %q: %d, %v; want %s", c.m.Name, c.name, i, err, c.want)
		}
	}
}

// TestDetachAttach: for random values of types with byte fields before,
// between and after other fields, Detach gives the field's bytes and the
// CDR of the message with the field empty, Attach and Join give the whole
// CDR back, byte for byte what Encode writes.
func TestDetachAttach(t *testing.T) {
	all := msg(t, "test_msgs/AllTypes")
	type target struct {
		m     *schema.Message
		field string
	}
	targets := []target{{all, "o_seq"}, {all, "u8_seq"}, {all, "u8_bseq"}, {idlTypes, "cs"},
		{msg(t, "sensor_msgs/msg/Image"), "data"}, {msg(t, "std_msgs/msg/UInt8MultiArray"), "data"},
		{msg(t, "sensor_msgs/msg/PointCloud2"), "data"}}
	g := gen{rand.New(rand.NewPCG(3, 14))}
	for it := range 200 {
		for _, tg := range targets {
			i, err := schema.ByteField(tg.m, tg.field)
			if err != nil {
				t.Fatal(err)
			}
			v := g.value(tg.m)
			if !tg.m.Fields[i].IsUpperBound {
				b := make([]byte, g.r.IntN(40))
				for k := range b {
					b[k] = byte(g.r.UintN(256))
				}
				v.Values[i] = b // every length modulo 8
			}
			whole, err := schema.Encode(tg.m, v)
			if err != nil {
				t.Fatal(err)
			}
			data := v.Values[i].([]byte)
			empty := v.Clone()
			empty.Values[i] = []byte{}
			wantRest, err := schema.Encode(tg.m, empty)
			if err != nil {
				t.Fatal(err)
			}
			be := cdr.NewEncoderOrder(nil, cdr.BigEndian)
			if err := schema.EncodeTo(be, tg.m, v); err != nil {
				t.Fatal(err)
			}
			for _, in := range [][]byte{whole, be.Bytes(), append(bytes.Clone(whole), 0, 0, 0)} {
				rest, got, err := schema.Detach(tg.m, i, in)
				if err != nil {
					t.Fatalf("iter %d %s.%s: Detach: %v", it, tg.m.Name, tg.field, err)
				}
				if !bytes.Equal(got, data) || !bytes.Equal(rest, wantRest) {
					t.Fatalf("iter %d %s.%s: Detach gave %d bytes and %x, want %d bytes and %x", it, tg.m.Name, tg.field, len(got), rest, len(data), wantRest)
				}
			}
			head, tail, err := schema.Attach(tg.m, i, wantRest, len(data))
			if err != nil {
				t.Fatalf("iter %d %s.%s: Attach: %v", it, tg.m.Name, tg.field, err)
			}
			if j := append(append(append([]byte(nil), head...), data...), tail...); !bytes.Equal(j, whole) {
				t.Fatalf("iter %d %s.%s: head+data+tail\n%x\nwant\n%x", it, tg.m.Name, tg.field, j, whole)
			}
			if j, err := schema.Join(tg.m, i, wantRest, data); err != nil || !bytes.Equal(j, whole) {
				t.Fatalf("iter %d %s.%s: Join: %v", it, tg.m.Name, tg.field, err)
			}
			// the field's bytes in rest are ignored: the C walker skips them
			if j, err := schema.Join(tg.m, i, whole, data); err != nil || !bytes.Equal(j, whole) {
				t.Fatalf("iter %d %s.%s: Join over a non-empty field: %v", it, tg.m.Name, tg.field, err)
			}
		}
	}
}

// TestSplitErrors: bad fields, bounds and meta headers are errors.
func TestSplitErrors(t *testing.T) {
	all := msg(t, "test_msgs/AllTypes")
	img := msg(t, "sensor_msgs/msg/Image")
	whole, err := schema.Encode(img, schema.New(img))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := schema.Detach(img, 3, whole); err == nil { // encoding: a string
		t.Error("Detach of a string field")
	}
	if _, _, err := schema.Attach(img, 7, whole, 1); err == nil {
		t.Error("Attach of field 7 of 7")
	}
	if _, _, err := schema.Detach(img, 6, whole[:len(whole)-1]); err == nil {
		t.Error("Detach of a truncated message")
	}
	b, _ := schema.ByteField(all, "u8_bseq")
	if _, _, err := schema.Attach(all, b, mustEncode(t, all, schema.New(all)), 5); err == nil || !errors.Is(err, schema.ErrValue) {
		t.Errorf("Attach of 5 bytes to a uint8[<=4]: %v", err)
	}
	meta := schema.AppendMetaHeader(nil, 6)
	if f, rest, err := schema.ParseMeta(append(meta, whole...)); err != nil || f != 6 || !bytes.Equal(rest, whole) {
		t.Errorf("ParseMeta: %d %x %v", f, rest, err)
	}
	for name, bad := range map[string][]byte{
		"short":   meta[:12],
		"no CDR":  meta,
		"magic":   append([]byte("RGDX"), append(meta[4:], whole...)...),
		"version": append(append([]byte("RGDM\x02"), meta[5:]...), whole...),
	} {
		if _, _, err := schema.ParseMeta(bad); err == nil {
			t.Errorf("ParseMeta accepted a meta block with bad %s", name)
		}
	}
}

func mustEncode(t *testing.T, m *schema.Message, v *schema.Struct) []byte {
	t.Helper()
	b, err := schema.Encode(m, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

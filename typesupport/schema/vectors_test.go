package schema_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

var reg = func() *msgparse.Registry {
	r := interfaces.Registry()
	r.AddMessage("test_msgs", "BoolDouble", "bool flag\nfloat64 value\n")
	r.AddMessage("test_msgs", "Int16Seq", "uint8 tag\nint16[] values\n")
	r.AddMessage("test_msgs", "WStr", "wstring w\nuint8 after\n")
	r.AddMessage("test_msgs", "AllTypes", allTypesMsg)
	r.AddMessage("test_msgs", "Inner", innerMsg)
	return r
}()

func msg(t testing.TB, name string) *schema.Message {
	t.Helper()
	m, err := reg.Message(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func set(t testing.TB, s *schema.Struct, path string, v any) {
	t.Helper()
	if err := s.Set(path, v); err != nil {
		t.Fatal(err)
	}
}

// vector checks that v encodes to exactly want, that SerializedSize agrees,
// and that want decodes back to v.
func vector(t *testing.T, m *schema.Message, v *schema.Struct, want []byte) {
	t.Helper()
	got, err := schema.Encode(m, v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s encodes to\n % x\nwant\n % x", m.FullName(), got, want)
	}
	if n, err := schema.SerializedSize(m, v); n != len(want) || err != nil {
		t.Fatalf("SerializedSize %d (%v), want %d", n, err, len(want))
	}
	back, err := schema.Decode(m, want)
	if err != nil {
		t.Fatal(err)
	}
	if !schema.Equal(back, v) {
		t.Fatalf("decoded\n%v\nwant\n%v", back, v)
	}
}

func TestVectorString(t *testing.T) {
	m := msg(t, "std_msgs/msg/String")
	v := schema.New(m)
	set(t, v, "data", "hello")
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // encapsulation: CDR_LE, options 0
		0x06, 0x00, 0x00, 0x00, // string length 6 = "hello" + NUL
		0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, // "hello" NUL (no trailing padding)
	})
}

func TestVectorHeader(t *testing.T) {
	m := msg(t, "std_msgs/msg/Header")
	v := schema.New(m)
	set(t, v, "stamp.sec", int32(1700000000)) // 0x6553f100
	set(t, v, "stamp.nanosec", uint32(500))   // 0x1f4
	set(t, v, "frame_id", "base_link")
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE
		0x00, 0xf1, 0x53, 0x65, // stamp.sec int32 at payload 0
		0xf4, 0x01, 0x00, 0x00, // stamp.nanosec uint32 at 4
		0x0a, 0x00, 0x00, 0x00, // frame_id length 10 at 8
		'b', 'a', 's', 'e', '_', 'l', 'i', 'n', 'k', 0x00, // "base_link" NUL, payload 12..21
	})

	// the same Header from a big-endian peer
	be := []byte{
		0x00, 0x00, 0x00, 0x00, // CDR_BE
		0x65, 0x53, 0xf1, 0x00, // sec, big endian
		0x00, 0x00, 0x01, 0xf4, // nanosec
		0x00, 0x00, 0x00, 0x0a, // length 10
		'b', 'a', 's', 'e', '_', 'l', 'i', 'n', 'k', 0x00,
		0x00, 0x00, // trailing padding some writers add: ignored
	}
	back, err := schema.Decode(m, be)
	if err != nil || !schema.Equal(back, v) {
		t.Fatalf("big endian: %v\n%v", err, back)
	}
}

func TestVectorBoolThenDouble(t *testing.T) {
	m := msg(t, "test_msgs/BoolDouble")
	v := schema.New(m)
	set(t, v, "flag", true)
	set(t, v, "value", 1.5)
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE
		0x01,                                     // flag at payload 0
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // 7 padding bytes: float64 aligns to 8 (XCDR1)
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf8, 0x3f, // 1.5 = 0x3ff8000000000000 at payload 8
	})
}

func TestVectorInt16Sequence(t *testing.T) {
	m := msg(t, "test_msgs/Int16Seq")
	v := schema.New(m)
	set(t, v, "tag", uint8(0xab))
	set(t, v, "values", []int16{1, -2, 0x0300})
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE
		0xab,             // tag at payload 0
		0x00, 0x00, 0x00, // pad: the count is a uint32
		0x03, 0x00, 0x00, 0x00, // 3 elements, at payload 4
		0x01, 0x00, // 1
		0xfe, 0xff, // -2
		0x00, 0x03, // 0x0300
	})
	// empty sequence: just the count
	set(t, v, "values", []int16{})
	vector(t, m, v, []byte{0x00, 0x01, 0x00, 0x00, 0xab, 0, 0, 0, 0, 0, 0, 0})
}

func TestVectorImage(t *testing.T) {
	m := msg(t, "sensor_msgs/msg/Image")
	v := schema.New(m)
	set(t, v, "header.stamp.sec", int32(10))
	set(t, v, "header.stamp.nanosec", uint32(20))
	set(t, v, "header.frame_id", "cam")
	set(t, v, "height", uint32(2))
	set(t, v, "width", uint32(3))
	set(t, v, "encoding", "mono8")
	set(t, v, "is_bigendian", uint8(0))
	set(t, v, "step", uint32(3))
	set(t, v, "data", []uint8{1, 2, 3, 4, 5, 6})
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE
		0x0a, 0x00, 0x00, 0x00, // header.stamp.sec = 10 (payload 0)
		0x14, 0x00, 0x00, 0x00, // header.stamp.nanosec = 20 (4)
		0x04, 0x00, 0x00, 0x00, 'c', 'a', 'm', 0x00, // header.frame_id "cam" (8..16)
		0x02, 0x00, 0x00, 0x00, // height (16)
		0x03, 0x00, 0x00, 0x00, // width (20)
		0x06, 0x00, 0x00, 0x00, 'm', 'o', 'n', 'o', '8', 0x00, // encoding "mono8" (24..34)
		0x00,                   // is_bigendian (34)
		0x00,                   // pad to 36 for step
		0x03, 0x00, 0x00, 0x00, // step (36)
		0x06, 0x00, 0x00, 0x00, // data count (40)
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, // data (44..50)
	})
}

func TestVectorPoseDefaults(t *testing.T) {
	m := msg(t, "geometry_msgs/msg/Pose")
	v := schema.New(m) // orientation.w defaults to 1
	set(t, v, "position.x", 2.0)
	want := []byte{0x00, 0x01, 0x00, 0x00}
	want = append(want, 0, 0, 0, 0, 0, 0, 0, 0x40)    // position.x = 2.0
	want = append(want, make([]byte, 16)...)          // position.y, z
	want = append(want, make([]byte, 24)...)          // orientation.x, y, z
	want = append(want, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f) // orientation.w = 1.0
	vector(t, m, v, want)
	if n, fixed := schema.FixedSize(m); !fixed || n != 60 {
		t.Fatalf("FixedSize %d %v", n, fixed)
	}
}

func TestVectorEmpty(t *testing.T) {
	// std_msgs/Empty: the single uint8 rosidl adds; Cyclone writes the same
	// one zero byte for a member-less struct.
	m := msg(t, "std_msgs/msg/Empty")
	vector(t, m, schema.New(m), []byte{0x00, 0x01, 0x00, 0x00, 0x00})
}

func TestVectorWString(t *testing.T) {
	m := msg(t, "test_msgs/WStr")
	v := schema.New(m)
	set(t, v, "w", "é😀") // UTF-16: 00e9, d83d de00
	set(t, v, "after", uint8(7))
	vector(t, m, v, []byte{
		0x00, 0x01, 0x00, 0x00, // CDR_LE
		0x03, 0x00, 0x00, 0x00, // 3 UTF-16 code units (no terminator)
		0xe9, 0x00, 0x00, 0x00, // each unit as a uint32, as rosidl_typesupport_fastrtps and
		0x3d, 0xd8, 0x00, 0x00, // rmw_cyclonedds write it
		0x00, 0xde, 0x00, 0x00,
		0x07, // after
	})
}

func TestValueErrors(t *testing.T) {
	m := msg(t, "test_msgs/AllTypes")
	cases := []struct {
		path string
		v    any
		want string
	}{
		{"i32", "x", "i32"},
		{"header.frame_id", 5, "header.frame_id"},
		{"points", make([]*schema.Struct, 1), "points"},
		{"i32_bseq", []int32{1, 2, 3, 4}, "i32_bseq"},
		{"bs", "123456789", "bs"},
		{"bws", "héllo", "bws"},
		{"bs_bseq", []string{"ok", "toolong"}, "bs_bseq[1]"},
		{"s_arr", []string{"one"}, "s_arr"},
	}
	for _, c := range cases {
		v := schema.New(m)
		if err := v.Set(c.path, c.v); err == nil {
			t.Errorf("Set %s accepted %v", c.path, c.v)
		}
		// force the bad value in and encode
		v = schema.New(m)
		forceSet(v, c.path, c.v)
		_, err := schema.Encode(m, v)
		var fe *schema.FieldError
		if !errors.As(err, &fe) || fe.Path != c.want || !errors.Is(err, schema.ErrValue) {
			t.Errorf("%s: got %v, want path %s", c.path, err, c.want)
		}
		if _, err2 := schema.SerializedSize(m, v); err2 == nil {
			t.Errorf("%s: SerializedSize accepted it", c.path)
		}
	}
	// nested element path
	v := schema.New(m)
	p := schema.New(msg(t, "geometry_msgs/Pose"))
	p.Values[0] = "not a point"
	v.Values[m.FieldIndex("poses")] = []*schema.Struct{schema.New(p.Type), p}
	_, err := schema.Encode(m, v)
	var fe *schema.FieldError
	if !errors.As(err, &fe) || fe.Path != "poses[1].position" || fe.Type != "test_msgs/msg/AllTypes" {
		t.Fatalf("got %v", err)
	}
	// wrong message type
	if _, err := schema.Encode(m, schema.New(msg(t, "std_msgs/String"))); !errors.Is(err, schema.ErrValue) {
		t.Fatal(err)
	}
}

// forceSet stores v without checks (bs_bseq[1]-style paths name the field).
func forceSet(s *schema.Struct, path string, v any) {
	for {
		i := -1
		head, rest := path, ""
		for j := 0; j < len(path); j++ {
			if path[j] == '.' {
				head, rest = path[:j], path[j+1:]
				break
			}
		}
		i = s.Type.FieldIndex(head)
		if rest == "" {
			s.Values[i] = v
			return
		}
		s, path = s.Values[i].(*schema.Struct), rest
	}
}

func TestDecodeErrors(t *testing.T) {
	h := msg(t, "std_msgs/msg/Header")
	data := []byte{0, 1, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0, 0, 'a', 0}
	_, err := schema.Decode(h, data)
	var fe *schema.FieldError
	if !errors.As(err, &fe) || fe.Path != "frame_id" || !errors.Is(err, cdr.ErrTruncated) {
		t.Fatalf("got %v", err)
	}
	if _, err := schema.Decode(h, []byte{0, 2, 0, 0}); !errors.Is(err, cdr.ErrUnsupportedEncapsulation) {
		t.Fatal(err)
	}
	// bounds are enforced on input too
	r := msgparse.NewRegistry()
	r.AddMessage("p", "B", "int32[<=2] s\nstring<=3 t\n")
	b, _ := r.Message("p/B")
	_, err = schema.Decode(b, []byte{0, 1, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0})
	if !errors.As(err, &fe) || fe.Path != "s" || !errors.Is(err, cdr.ErrTooLong) {
		t.Fatalf("sequence bound: %v", err)
	}
	_, err = schema.Decode(b, []byte{0, 1, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 'a', 'b', 'c', 'd', 0})
	if !errors.As(err, &fe) || fe.Path != "t" || !errors.Is(err, cdr.ErrTooLong) {
		t.Fatalf("string bound: %v", err)
	}
	// a huge count of nested messages is refused before allocating
	pc := msg(t, "sensor_msgs/msg/PointCloud2")
	hdr := []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0}
	huge := append(hdr, 0x00, 0x00, 0x00, 0x10) // 256 Mi PointFields
	huge = append(huge, make([]byte, 64)...)
	_, err = schema.Decode(pc, huge)
	if !errors.As(err, &fe) || fe.Path != "fields" || !errors.Is(err, cdr.ErrTruncated) {
		t.Fatalf("huge count: %v", err)
	}
}

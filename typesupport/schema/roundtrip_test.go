package schema_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// allTypesMsg uses every field form a .msg file can express.
const allTypesMsg = `# Every .msg field form, for the codec tests.
uint8 MODE_A=1
string NAME="all types"

bool b
byte o
char c
float32 f32
float64 f64
int8 i8
uint8 u8
int16 i16
uint16 u16
int32 i32
uint32 u32
int64 i64
uint64 u64
string s
wstring ws
string<=8 bs
wstring<=4 bws
bool[3] b_arr
byte[2] o_arr
char[2] c_arr
float32[2] f32_arr
float64[3] f64_arr
int8[2] i8_arr
uint8[5] u8_arr
int16[2] i16_arr
uint16[2] u16_arr
int32[2] i32_arr
uint32[2] u32_arr
int64[2] i64_arr
uint64[2] u64_arr
string[2] s_arr
wstring[2] ws_arr
bool[] b_seq
byte[] o_seq
uint8[] u8_seq
int8[] i8_seq
float32[] f32_seq
float64[] f64_seq
int16[] i16_seq
uint16[] u16_seq
int32[] i32_seq
uint32[] u32_seq
int64[] i64_seq
uint64[] u64_seq
string[] s_seq
wstring[] ws_seq
int32[<=3] i32_bseq
float64[<=2] f64_bseq
uint8[<=4] u8_bseq
string<=5[<=3] bs_bseq
std_msgs/Header header
geometry_msgs/Point[2] points
geometry_msgs/Pose[] poses
builtin_interfaces/Time[<=2] times
Inner inner
Inner[] inners
int32 with_default 7
float64[2] arr_default [0.5, -1]
uint8 last
`

const innerMsg = `uint8 tag
float64[] vals
string<=10 label
geometry_msgs/Quaternion q
`

// idlTypes has the types only IDL files declare: long double, char, wchar.
var idlTypes = &schema.Message{Package: "test_msgs", Name: "IdlOnly", Fields: []schema.Field{
	{Name: "c", Type: schema.TypeChar},
	{Name: "ld", Type: schema.TypeLongDouble},
	{Name: "w", Type: schema.TypeWchar},
	{Name: "lds", Type: schema.TypeLongDouble, IsArray: true},
	{Name: "ws", Type: schema.TypeWchar, IsArray: true, ArraySize: 3},
	{Name: "cs", Type: schema.TypeChar, IsArray: true, ArraySize: 2, IsUpperBound: true},
	{Name: "tail", Type: schema.TypeInt8},
}}

// gen builds random values for a schema.
type gen struct{ r *rand.Rand }

func (g gen) count(f *schema.Field) int {
	switch {
	case f.IsFixedArray():
		return f.ArraySize
	case f.IsUpperBound:
		return g.r.IntN(f.ArraySize + 1)
	}
	return g.r.IntN(5)
}

var runePool = []rune("aZ09 _-é߷€中😀𝄞\u00a0\uffff")

func (g gen) str(f *schema.Field) string {
	max := 12
	if f.StringUpperBound > 0 {
		max = f.StringUpperBound
	}
	if f.Type == schema.TypeString {
		b := make([]byte, g.r.IntN(max+1))
		for i := range b {
			b[i] = byte(g.r.UintN(256)) // any bytes, NUL and invalid UTF-8 included
		}
		return string(b)
	}
	var rs []rune
	units := g.r.IntN(max + 1)
	for n := 0; n < units; {
		r := runePool[g.r.IntN(len(runePool))]
		if n+utf16.RuneLen(r) > units {
			r = 'x'
		}
		rs = append(rs, r)
		n += utf16.RuneLen(r)
	}
	return string(rs)
}

func (g gen) scalar(f *schema.Field) any {
	r := g.r
	switch f.Type {
	case schema.TypeFloat:
		if r.IntN(4) == 0 {
			return math.Float32frombits(r.Uint32()) // NaN payloads and all
		}
		return float32(r.NormFloat64())
	case schema.TypeDouble:
		if r.IntN(4) == 0 {
			return math.Float64frombits(r.Uint64())
		}
		return r.NormFloat64() * 1e6
	case schema.TypeLongDouble:
		var ld cdr.LongDouble
		for i := range ld {
			ld[i] = byte(r.UintN(256))
		}
		return ld
	case schema.TypeChar, schema.TypeOctet, schema.TypeUint8:
		return uint8(r.UintN(256))
	case schema.TypeWchar, schema.TypeUint16:
		return uint16(r.UintN(1 << 16))
	case schema.TypeBoolean:
		return r.IntN(2) == 1
	case schema.TypeInt8:
		return int8(r.Uint32())
	case schema.TypeInt16:
		return int16(r.Uint32())
	case schema.TypeUint32:
		return r.Uint32()
	case schema.TypeInt32:
		return int32(r.Uint32())
	case schema.TypeUint64:
		return r.Uint64()
	case schema.TypeInt64:
		return int64(r.Uint64())
	case schema.TypeString, schema.TypeWString:
		return g.str(f)
	case schema.TypeMessage:
		return g.value(f.Message)
	}
	panic("bad type")
}

func (g gen) value(m *schema.Message) *schema.Struct {
	v := schema.New(m)
	for i := range m.Fields {
		f := &m.Fields[i]
		if !f.IsArray {
			v.Values[i] = g.scalar(f)
			continue
		}
		n := g.count(f)
		elems := make([]any, n)
		for j := range elems {
			elems[j] = g.scalar(f)
		}
		// build the typed slice through FromMap's conversion of []any
		s, err := schema.FromMap(m, map[string]any{f.Name: elems})
		if err != nil {
			panic(err)
		}
		v.Values[i] = s.Values[i]
	}
	return v
}

func TestRoundTripRandom(t *testing.T) {
	all := msg(t, "test_msgs/AllTypes")
	schemas := []*schema.Message{all, idlTypes, msg(t, "sensor_msgs/msg/PointCloud2"), msg(t, "sensor_msgs/msg/CameraInfo")}
	for _, m := range schemas {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	g := gen{rand.New(rand.NewPCG(42, 7))}
	iters := 400
	if testing.Short() {
		iters = 50
	}
	for it := range iters {
		for _, m := range schemas {
			v := g.value(m)
			data, err := schema.Encode(m, v)
			if err != nil {
				t.Fatalf("iter %d %s: encode: %v", it, m.Name, err)
			}
			if n, _ := schema.SerializedSize(m, v); n != len(data) {
				t.Fatalf("iter %d %s: SerializedSize %d, Encode wrote %d", it, m.Name, n, len(data))
			}
			back, err := schema.Decode(m, data)
			if err != nil {
				t.Fatalf("iter %d %s: decode: %v", it, m.Name, err)
			}
			if !schema.Equal(back, v) {
				t.Fatalf("iter %d %s: round trip differs\n got %v\nwant %v", it, m.Name, back, v)
			}
			// big-endian stream
			e := cdr.NewEncoderOrder(nil, cdr.BigEndian)
			if err := schema.EncodeTo(e, m, v); err != nil {
				t.Fatal(err)
			}
			if len(e.Bytes()) != len(data) {
				t.Fatalf("BE length %d, LE %d", len(e.Bytes()), len(data))
			}
			if back, err := schema.Decode(m, e.Bytes()); err != nil || !schema.Equal(back, v) {
				t.Fatalf("iter %d %s: BE round trip: %v", it, m.Name, err)
			}
			// Map / FromMap
			if fm, err := schema.FromMap(m, v.Map()); err != nil || !schema.Equal(fm, v) {
				t.Fatalf("iter %d %s: FromMap(Map): %v", it, m.Name, err)
			}
			// Clone is deep and equal
			if c := v.Clone(); !schema.Equal(c, v) {
				t.Fatal("Clone differs")
			}
			// PayloadSize at another start offset: what EncodeTo appends there
			pe := cdr.NewPayloadEncoder(nil, cdr.LittleEndian)
			pe.WriteOctets(make([]byte, it%8))
			if err := schema.EncodeTo(pe, m, v); err != nil {
				t.Fatal(err)
			}
			if n, _ := schema.PayloadSize(m, v, it%8); n != len(pe.Bytes())-it%8 {
				t.Fatalf("PayloadSize at %d: %d, wrote %d", it%8, n, len(pe.Bytes())-it%8)
			}
			// every strict prefix fails cleanly (a few iterations: it is quadratic)
			if it < 20 {
				for n := range len(data) {
					if _, err := schema.Decode(m, data[:n]); err == nil {
						t.Fatalf("iter %d %s: prefix %d/%d decoded", it, m.Name, n, len(data))
					}
				}
			}
		}
	}
}

func TestSizes(t *testing.T) {
	cases := []struct {
		name         string
		src          string
		max          int
		bounded, fix bool
	}{
		// 4 header + 24
		{"Point", "float64 x\nfloat64 y\nfloat64 z\n", 28, true, true},
		// a@0, count@4, 2 int32 @8..16, string: len@16 + 3 + NUL → 24, float64@24..32
		{"Bounded", "uint8 a\nint32[<=2] b\nstring<=3 c\nfloat64 d\n", 36, true, false},
		{"Unbounded", "uint8 a\nint32[] b\n", 0, false, false},
		{"UnboundedStr", "string s\n", 0, false, false},
		// x@0; elements {uint8 a; uint16 b} at 1,4,8 → 12
		{"Misaligned", "uint8 x\nElem[3] arr\n", 16, true, true},
		// 100000 {uint8; float64}: 16 bytes each
		{"Many", "Elem2[100000] arr\n", 4 + 16*100000, true, true},
		// {uint8; float64} after a uint8: first at 1 (double at 8..16), then 16.. → 1 + 15 + 16*2
		{"ManyOff", "uint8 x\nElem2[3] arr\n", 4 + 48, true, true},
		{"WStr", "wstring<=3 w\nuint8 t\n", 4 + 4 + 12 + 1, true, false},
	}
	r := interfaces.Registry()
	r.AddMessage("size_msgs", "Elem", "uint8 a\nuint16 b\n")
	r.AddMessage("size_msgs", "Elem2", "uint8 a\nfloat64 b\n")
	for _, c := range cases {
		r.AddMessage("size_msgs", c.name, c.src)
	}
	for _, c := range cases {
		m, err := r.Message("size_msgs/" + c.name)
		if err != nil {
			t.Fatal(err)
		}
		max, bounded := schema.MaxSerializedSize(m)
		if bounded != c.bounded || (bounded && max != c.max) {
			t.Errorf("%s: MaxSerializedSize %d %v, want %d %v", c.name, max, bounded, c.max, c.bounded)
		}
		fixed, isFixed := schema.FixedSize(m)
		if isFixed != c.fix || (isFixed && fixed != c.max) {
			t.Errorf("%s: FixedSize %d %v", c.name, fixed, isFixed)
		}
		if isFixed {
			if n, _ := schema.SerializedSize(m, schema.New(m)); n != fixed {
				t.Errorf("%s: SerializedSize of a value %d != FixedSize %d", c.name, n, fixed)
			}
		}
	}
	// the maximum is reached by a value filling every bound
	m, _ := r.Message("size_msgs/Bounded")
	v := schema.New(m)
	set(t, v, "b", []int32{1, 2})
	set(t, v, "c", "abc")
	if n, _ := schema.SerializedSize(m, v); n != 36 {
		t.Errorf("full Bounded value: %d", n)
	}
}

func TestMinPayloadSize(t *testing.T) {
	for name, want := range map[string]int{
		"std_msgs/msg/String":        4,
		"std_msgs/msg/Header":        12,
		"geometry_msgs/msg/Pose":     56,
		"sensor_msgs/msg/Image":      12 + 4 + 4 + 4 + 1 + 4 + 4,
		"sensor_msgs/msg/CameraInfo": 12 + 8 + 4 + 4 + 30*8 + 8 + 17,
	} {
		if got := schema.MinPayloadSize(msg(t, name)); got != want {
			t.Errorf("%s: %d want %d", name, got, want)
		}
	}
}

func TestFormat(t *testing.T) {
	m := msg(t, "sensor_msgs/msg/PointCloud2")
	v := schema.New(m)
	set(t, v, "header.stamp.sec", int32(3))
	set(t, v, "header.frame_id", "it's")
	f := schema.New(msg(t, "sensor_msgs/PointField"))
	set(t, f, "name", "x")
	set(t, f, "datatype", uint8(7))
	set(t, v, "fields", []*schema.Struct{f})
	set(t, v, "data", []uint8{1, 2, 3})
	set(t, v, "is_dense", true)
	want := `header:
  stamp:
    sec: 3
    nanosec: 0
  frame_id: it's
height: 0
width: 0
fields:
- name: x
  offset: 0
  datatype: 7
  count: 0
is_bigendian: false
point_step: 0
row_step: 0
data:
- 1
- 2
- 3
is_dense: true
`
	if got := v.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var b strings.Builder
	set(t, v, "data", make([]uint8, 10))
	if err := schema.Format(&b, v, schema.FormatOptions{TruncateLength: 2}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "data:\n- 0\n- 0\n- '... 8 more'\n") {
		t.Errorf("truncation:\n%s", b.String())
	}
	pm := msg(t, "geometry_msgs/msg/Pose")
	if got := schema.New(pm).String(); !strings.Contains(got, "orientation:\n  x: 0.0\n  y: 0.0\n  z: 0.0\n  w: 1.0\n") {
		t.Errorf("Pose:\n%s", got)
	}
}

func TestGetSetFromMap(t *testing.T) {
	h := msg(t, "std_msgs/msg/Header")
	v, err := schema.FromMap(h, map[string]any{
		"stamp":    map[string]any{"sec": 5.0, "nanosec": 7}, // JSON numbers
		"frame_id": "map",
	})
	if err != nil {
		t.Fatal(err)
	}
	if x, ok := v.Get("stamp.sec"); !ok || x != int32(5) {
		t.Fatalf("stamp.sec %v", x)
	}
	if _, ok := v.Get("stamp.nope"); ok {
		t.Fatal("Get of a missing field")
	}
	for _, bad := range []map[string]any{
		{"nope": 1},
		{"stamp": map[string]any{"sec": 1.5}},
		{"stamp": map[string]any{"sec": float64(1 << 40)}},
		{"stamp": map[string]any{"nanosec": -1}},
		{"frame_id": 3},
		{"stamp": "now"},
	} {
		if _, err := schema.FromMap(h, bad); err == nil {
			t.Errorf("FromMap accepted %v", bad)
		}
	}
	img := msg(t, "sensor_msgs/msg/Image")
	v, err = schema.FromMap(img, map[string]any{"data": []any{1, 2.0, uint8(3)}, "encoding": "rgb8"})
	if err != nil {
		t.Fatal(err)
	}
	if x, _ := v.Get("data"); string(x.([]uint8)) != "\x01\x02\x03" {
		t.Fatalf("data %v", x)
	}
	if err := v.Set("height", 3); err == nil {
		t.Fatal("Set accepted an int for a uint32")
	}
	if err := v.Set("header.stamp.sec", int32(9)); err != nil {
		t.Fatal(err)
	}
	if err := v.Set("height.x", uint32(1)); err == nil {
		t.Fatal("Set descended into a scalar")
	}
}

func TestValidate(t *testing.T) {
	bad := []*schema.Message{
		{Name: "NoFields"},
		{Name: "Dup", Fields: []schema.Field{{Name: "a", Type: schema.TypeInt8}, {Name: "a", Type: schema.TypeInt8}}},
		{Name: "BadID", Fields: []schema.Field{{Name: "a", Type: 19}}},
		{Name: "NoNested", Fields: []schema.Field{{Name: "a", Type: schema.TypeMessage}}},
		{Name: "StrBound", Fields: []schema.Field{{Name: "a", Type: schema.TypeInt8, StringUpperBound: 3}}},
		{Name: "Arr", Fields: []schema.Field{{Name: "a", Type: schema.TypeInt8, ArraySize: 3}}},
		{Name: "Upper0", Fields: []schema.Field{{Name: "a", Type: schema.TypeInt8, IsArray: true, IsUpperBound: true}}},
		{Name: "Default", Fields: []schema.Field{{Name: "a", Type: schema.TypeInt8, Default: 3}}},
	}
	self := &schema.Message{Name: "Self"}
	self.Fields = []schema.Field{{Name: "me", Type: schema.TypeMessage, Message: self}}
	bad = append(bad, self)
	for _, m := range bad {
		if err := m.Validate(); err == nil {
			t.Errorf("%s validated", m.Name)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder for several schemas. A
// decode must never panic; when it succeeds, the value must re-encode to
// exactly SerializedSize bytes that decode to an equal value.
func FuzzDecode(f *testing.F) {
	all, _ := reg.Message("test_msgs/AllTypes")
	schemas := []*schema.Message{all, idlTypes}
	for _, n := range []string{"sensor_msgs/msg/Image", "std_msgs/msg/Header", "sensor_msgs/msg/PointCloud2", "test_msgs/WStr"} {
		m, _ := reg.Message(n)
		schemas = append(schemas, m)
	}
	g := gen{rand.New(rand.NewPCG(1, 1))}
	for i := range 8 {
		for _, m := range schemas {
			data, err := schema.Encode(m, g.value(m))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			if i == 0 {
				f.Add(data[:len(data)/2])
			}
		}
	}
	f.Add([]byte{0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 1, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range schemas {
			v, err := schema.Decode(m, data)
			if err != nil {
				var fe *schema.FieldError
				var ce *cdr.Error
				if !errors.As(err, &fe) && !errors.As(err, &ce) {
					t.Fatalf("%s: unexpected error type %T: %v", m.Name, err, err)
				}
				continue
			}
			out, err := schema.Encode(m, v)
			if err != nil {
				t.Fatalf("%s: re-encode: %v", m.Name, err)
			}
			if n, _ := schema.SerializedSize(m, v); n != len(out) {
				t.Fatalf("%s: SerializedSize %d, encoded %d", m.Name, n, len(out))
			}
			back, err := schema.Decode(m, out)
			if err != nil || !schema.Equal(back, v) {
				t.Fatalf("%s: decode(encode(decode(x))) differs: %v", m.Name, err)
			}
		}
	})
}

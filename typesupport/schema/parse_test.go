package schema_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

func parse(t *testing.T, name, text string) *schema.Struct {
	t.Helper()
	v, err := schema.Parse(msg(t, name), text)
	if err != nil {
		t.Fatalf("Parse(%s, %q): %v", name, text, err)
	}
	return v
}

func get(t *testing.T, v *schema.Struct, path string) any {
	t.Helper()
	x, ok := v.Get(path)
	if !ok {
		t.Fatalf("no field %s", path)
	}
	return x
}

func TestParseValues(t *testing.T) {
	for _, c := range []struct {
		typ, text, path string
		want            any
	}{
		{"std_msgs/msg/String", "{data: hello}", "data", "hello"},
		{"std_msgs/msg/String", "data: hello world", "data", "hello world"},
		{"std_msgs/msg/String", "data: a, b [c]", "data", "a, b [c]"}, // block style: to the line's end
		{"std_msgs/msg/String", "{data: 'it''s: fine'}", "data", "it's: fine"},
		{"std_msgs/msg/String", `{data: "tab\there \u00e9 \x41"}`, "data", "tab\there é A"},
		{"std_msgs/msg/String", "{data: http://x/y}", "data", "http://x/y"},
		{"std_msgs/msg/String", "{data: 123}", "data", "123"},
		{"std_msgs/msg/String", "{data: ''}", "data", ""},
		{"std_msgs/msg/String", "", "data", ""},
		{"std_msgs/msg/String", "{}", "data", ""},
		{"std_msgs/msg/String", " {\n  data: multi\n }\n", "data", "multi"},
		{"std_msgs/msg/Int32", "{data: -42}", "data", int32(-42)},
		{"std_msgs/msg/Int32", "data: 0x7fffffff", "data", int32(math.MaxInt32)},
		{"std_msgs/msg/Int32", "{data: +7}", "data", int32(7)},
		{"std_msgs/msg/Int64", "{data: -9223372036854775808}", "data", int64(math.MinInt64)},
		{"std_msgs/msg/UInt8", "{data: 255}", "data", uint8(255)},
		{"std_msgs/msg/Bool", "{data: true}", "data", true},
		{"std_msgs/msg/Bool", "{data: False}", "data", false},
		{"std_msgs/msg/Float64", "{data: 1.5e3}", "data", 1500.0},
		{"std_msgs/msg/Float64", "{data: 2}", "data", 2.0},
		{"std_msgs/msg/Float64", "{data: -.inf}", "data", math.Inf(-1)},
		{"std_msgs/msg/Float32", "{data: 0.25}", "data", float32(0.25)},
		{"geometry_msgs/msg/Twist", "{linear: {x: 0.5}, angular: {z: -1}}", "angular.z", -1.0},
		{"geometry_msgs/msg/Twist", "{linear: {x: 0.5}, angular: {z: -1}}", "linear.x", 0.5},
		{"geometry_msgs/msg/Pose", "{position: {x: 1, y: 2, z: 3}}", "orientation.w", 1.0}, // default kept
		{"sensor_msgs/msg/Image", "{header: {frame_id: cam}, height: 2, width: 3, encoding: rgb8, data: [1,2,3]}", "data", []uint8{1, 2, 3}},
		{"sensor_msgs/msg/Image", "{header: {frame_id: cam}, height: 2, width: 3, encoding: rgb8, data: [1,2,3]}", "header.frame_id", "cam"},
		{"sensor_msgs/msg/Image", "{data: [], encoding: 32FC1}", "encoding", "32FC1"},
		{"sensor_msgs/msg/Image", "{data: [\n 1,\n 2,\n]}", "data", []uint8{1, 2}},
		{"test_msgs/msg/AllTypes", "{f64_arr: [1, 2.5, -3], s_arr: [a, 'b c'], c: 120, b_seq: [true, false]}", "f64_arr", []float64{1, 2.5, -3}},
		{"test_msgs/msg/AllTypes", "{f64_arr: [1, 2.5, -3], s_arr: [a, 'b c'], c: 120, b_seq: [true, false]}", "s_arr", []string{"a", "b c"}},
		{"test_msgs/msg/AllTypes", "{f64_arr: [1, 2.5, -3], s_arr: [a, 'b c'], c: 120, b_seq: [true, false]}", "c", uint8(120)},
		{"test_msgs/msg/AllTypes", "{f64_arr: [1, 2.5, -3], s_arr: [a, 'b c'], c: 120, b_seq: [true, false]}", "b_seq", []bool{true, false}},
		{"test_msgs/msg/AllTypes", "{ws: héllo, bs: '12345678'}", "ws", "héllo"},
	} {
		v := parse(t, c.typ, c.text)
		if got := get(t, v, c.path); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%s, %q).%s = %#v, want %#v", c.typ, c.text, c.path, got, c.want)
		}
	}
}

func TestParseNestedSequence(t *testing.T) {
	v := parse(t, "sensor_msgs/msg/PointCloud2",
		"{fields: [{name: x, offset: 0, datatype: 7, count: 1}, {name: y, offset: 4, datatype: 7, count: 1}], is_dense: true}")
	fs := get(t, v, "fields").([]*schema.Struct)
	if len(fs) != 2 || get(t, fs[1], "name") != "y" || get(t, fs[1], "offset") != uint32(4) {
		t.Errorf("fields: %v", fs)
	}
	// what Parse reads, Encode writes and Decode gives back
	b, err := schema.Encode(v.Type, v)
	if err != nil {
		t.Fatal(err)
	}
	back, err := schema.Decode(v.Type, b)
	if err != nil || !schema.Equal(back, v) {
		t.Errorf("round trip: %v\n%v", err, back)
	}
}

func TestParseKeywords(t *testing.T) {
	before := time.Now().Unix()
	v := parse(t, "std_msgs/msg/Header", "{stamp: now, frame_id: map}")
	if s := int64(get(t, v, "stamp.sec").(int32)); s < before || s > time.Now().Unix() {
		t.Errorf("stamp now: sec %d", s)
	}
	v = parse(t, "geometry_msgs/msg/PoseStamped", "{header: auto}")
	if s := int64(get(t, v, "header.stamp.sec").(int32)); s < before {
		t.Errorf("header auto: sec %d", s)
	}
	if _, err := schema.Parse(msg(t, "std_msgs/msg/Header"), "{stamp: 'now'}"); err == nil {
		t.Error("a quoted 'now' is a string, not the keyword")
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		typ, text string
		want      string // in the message
		field     string // the FieldError's path, "" for syntax errors
	}{
		{"std_msgs/msg/String", "{dta: x}", `has no field "dta" (it has data)`, ""},
		{"std_msgs/msg/String", "hello", "want a mapping of std_msgs/msg/String's fields", ""},
		{"std_msgs/msg/String", "[1, 2]", "want a mapping", ""},
		{"std_msgs/msg/String", "{data: x", "missing '}'", ""},
		{"std_msgs/msg/String", "{data: 'x}", "unterminated quoted string", ""},
		{"std_msgs/msg/String", `{data: "\q"}`, `unknown escape \q`, ""},
		{"std_msgs/msg/String", "{data: x} y", "text after the closing '}'", ""},
		{"std_msgs/msg/String", "{data: x, data: y}", `field "data" given twice`, ""},
		{"std_msgs/msg/String", "{data:x}", "want 'name: value'", ""},
		{"std_msgs/msg/String", "{data: }", "missing value", ""},
		{"std_msgs/msg/String", "{data: a: b}", "': ' inside a value", ""},
		{"std_msgs/msg/String", "{data: [x]}", "want a string", "data"},
		{"std_msgs/msg/String", "data: a: b", "contains ': '", ""},
		{"std_msgs/msg/String", "data: x\nother", "want 'name: value' on each line", ""},
		{"std_msgs/msg/String", "data:", `no value for "data"`, ""},
		{"std_msgs/msg/String", "{data: &anchor x}", "cannot start a value", ""},
		{"std_msgs/msg/Int32", "{data: abc}", "'abc' is not an integer (int32)", "data"},
		{"std_msgs/msg/Int32", "{data: 1.5}", "not an integer", "data"},
		{"std_msgs/msg/Int32", "{data: 2147483648}", "out of range for int32", "data"},
		{"std_msgs/msg/Int32", "{data: '5'}", "numbers are not quoted", "data"},
		{"std_msgs/msg/UInt8", "{data: 256}", "out of range for uint8", "data"},
		{"std_msgs/msg/UInt8", "{data: -1}", "out of range for uint8", "data"},
		{"std_msgs/msg/Bool", "{data: 1}", "not a bool", "data"},
		{"std_msgs/msg/Float64", "{data: fast}", "not a number", "data"},
		{"std_msgs/msg/Float64", "{data: inf}", "not a number", "data"},
		{"std_msgs/msg/Float32", "{data: 1e39}", "out of range for float32", "data"},
		{"geometry_msgs/msg/Twist", "{linear: 1}", "want a geometry_msgs/msg/Vector3 as a mapping", "linear"},
		{"geometry_msgs/msg/Twist", "{linear: {w: 1}}", `geometry_msgs/msg/Vector3 has no field "w"`, "linear"},
		{"sensor_msgs/msg/Image", "{data: [1, 2, 300]}", "300 is out of range for uint8", "data[2]"},
		{"sensor_msgs/msg/Image", "{data: 5}", "want a sequence [...] for uint8[]", "data"},
		{"sensor_msgs/msg/Image", "{header: {stamp: {sec: x}}}", "not an integer", "header.stamp.sec"},
		{"sensor_msgs/msg/CameraInfo", "{k: [1, 2, 3]}", "float64[9] takes exactly 9 elements, got 3", "k"},
		{"test_msgs/msg/AllTypes", "{bs: '123456789'}", "", "bs"},
		{"std_msgs/msg/String", `{data: "a\0b"}`, "cannot hold NUL", "data"},
		{"sensor_msgs/msg/PointCloud2", "{fields: [{name: x}, {count: -1}]}", "out of range for uint32", "fields[1].count"},
	} {
		_, err := schema.Parse(msg(t, c.typ), c.text)
		if err == nil {
			t.Errorf("Parse(%s, %q): no error", c.typ, c.text)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s, %q): %v, want %q in it", c.typ, c.text, err, c.want)
		}
		var fe *schema.FieldError
		var se *schema.SyntaxError
		switch {
		case c.field != "" && (!errors.As(err, &fe) || fe.Path != c.field || fe.Type != c.typ):
			t.Errorf("Parse(%s, %q): %v, want a FieldError for %s", c.typ, c.text, err, c.field)
		case c.field == "" && !errors.As(err, &se) && !errors.Is(err, schema.ErrValue):
			t.Errorf("Parse(%s, %q): %v (%T), want a SyntaxError or ErrValue", c.typ, c.text, err, err)
		}
	}
}

func TestIsMapping(t *testing.T) {
	for text, want := range map[string]bool{
		"{data: x}": true, "data: x": true, "  data:\tx": true, "": true, "data:": true,
		"hello": false, "data:x": false, "http://x": false, "[1]": false, "'data: x'": false, "a b: c": false,
	} {
		if got := schema.IsMapping(text); got != want {
			t.Errorf("IsMapping(%q) = %v", text, got)
		}
	}
}

func TestFormatEcho(t *testing.T) {
	v := parse(t, "sensor_msgs/msg/Image", "{header: {stamp: {sec: 5}, frame_id: cam}, height: 1, width: 2, encoding: rgb8, data: [1, 2, 3, 4, 5, 6]}")
	var b strings.Builder
	if err := schema.Format(&b, v, schema.FormatOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `header:
  stamp:
    sec: 5
    nanosec: 0
  frame_id: cam
height: 1
width: 2
encoding: rgb8
is_bigendian: 0
step: 0
data:
- 1
- 2
- 3
- 4
- 5
- 6
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	schema.Format(&b, v, schema.FormatOptions{NoArr: true, NoStr: true})
	if s := b.String(); !strings.Contains(s, "data: '<sequence type: uint8, length: 6>'\n") || !strings.Contains(s, "encoding: '<string length: 4>'\n") {
		t.Errorf("NoArr, NoStr:\n%s", s)
	}
	b.Reset()
	schema.Format(&b, parse(t, "sensor_msgs/msg/CameraInfo", ""), schema.FormatOptions{NoArr: true})
	if s := b.String(); !strings.Contains(s, "k: '<array type: float64[9]>'\n") || !strings.Contains(s, "d: '<sequence type: float64, length: 0>'\n") {
		t.Errorf("NoArr:\n%s", s)
	}
	// strings: plain when YAML reads them back as the same string
	for in, want := range map[string]string{
		"hello world": "hello world", "": "''", "it's": "it's", "Hello World: 1": "'Hello World: 1'",
		"123": "'123'", "1.5": "'1.5'", "true": "'true'", "null": "'null'", "- x": "'- x'", " pad": "' pad'",
		"a\nb": `"a\nb"`, "#x": "'#x'", "http://x": "http://x", "32FC1": "32FC1", "1:20": "'1:20'",
	} {
		v := parse(t, "std_msgs/msg/String", "")
		v.Values[0] = in
		if got := strings.TrimSuffix(v.String(), "\n"); got != "data: "+want {
			t.Errorf("%q printed as %s, want data: %s", in, got, want)
		}
		// and what is printed reads back as the same string
		if back, err := schema.Parse(v.Type, "{"+strings.TrimSuffix(v.String(), "\n")+"}"); in != "a\nb" && (err != nil || back.Values[0] != in) {
			t.Errorf("%q printed as %s reads back as %v, %v", in, want, back, err)
		}
	}
	for f, want := range map[float64]string{0: "0.0", 1: "1.0", -2.5: "-2.5", 1e-5: "1.0e-05", 1e16: "1.0e+16", 123456.0: "123456.0", 0.1: "0.1", 1.5e300: "1.5e+300"} {
		v := parse(t, "std_msgs/msg/Float64", "")
		v.Values[0] = f
		if got := v.String(); got != "data: "+want+"\n" {
			t.Errorf("%v printed as %q, want %s", f, got, want)
		}
	}
}

// FuzzParse: any text either parses into a value that encodes, or fails
// with an error; nothing panics.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"{data: [1, 2]}", "{header: {frame_id: 'a''b'}, data: [\n1]}", "data: x", `{encoding: "\u00e9\x00"}`, "{fields: [{name: x}]}", "{", "[", "'", "{a: {b: {c: [", "{k: [.nan, -.inf, 0x10, +3]}"} {
		f.Add(s)
	}
	m := msg(f, "sensor_msgs/msg/Image")
	pc := msg(f, "sensor_msgs/msg/PointCloud2")
	ci := msg(f, "sensor_msgs/msg/CameraInfo")
	f.Fuzz(func(t *testing.T, text string) {
		for _, typ := range []*schema.Message{m, pc, ci} {
			v, err := schema.Parse(typ, text)
			if err != nil {
				continue
			}
			if _, err := schema.Encode(typ, v); err != nil {
				t.Errorf("Parse(%q) gave a value Encode refuses: %v", text, err)
			}
		}
	})
}

func TestFlowStringReadsBack(t *testing.T) {
	for _, c := range []struct{ typ, text string }{
		{"sensor_msgs/msg/PointCloud2", "{header: {stamp: {sec: 1, nanosec: 2}, frame_id: 'a, b'}, fields: [{name: '[x]', offset: 4}], data: [1, 2], is_dense: true}"},
		{"test_msgs/msg/AllTypes", "{s: 'it''s {x}', f64_arr: [1.5, -.inf, 1e-9], s_arr: ['', 'true'], i64: -5, ws: \"tab\\tx\"}"},
	} {
		v := parse(t, c.typ, c.text)
		s := schema.FlowString(v, 0)
		back, err := schema.Parse(v.Type, s)
		if err != nil || !schema.Equal(back, v) {
			t.Errorf("%s: FlowString %s reads back as %v, %v", c.typ, s, back, err)
		}
	}
	v := parse(t, "sensor_msgs/msg/Image", "{data: [1, 2, 3, 4, 5]}")
	if s := schema.FlowString(v, 2); !strings.Contains(s, "data: [1, 2, '... 3 more']}") {
		t.Errorf("truncated: %s", s)
	}
}

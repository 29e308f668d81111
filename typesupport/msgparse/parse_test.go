package msgparse

import (
	"errors"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

func testRegistry() *Registry {
	r := NewRegistry()
	r.AddMessage("builtin_interfaces", "Time", "int32 sec\nuint32 nanosec\n")
	r.AddMessage("builtin_interfaces", "Duration", "int32 sec\nuint32 nanosec\n")
	r.AddMessage("std_msgs", "Header", "builtin_interfaces/Time stamp\nstring frame_id\n")
	r.AddMessage("geometry_msgs", "Point", "float64 x\nfloat64 y\nfloat64 z\n")
	return r
}

func mustParse(t *testing.T, pkg, name, src string) *schema.Message {
	t.Helper()
	m, err := ParseMessage(pkg, name, src, testRegistry())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	return m
}

func TestPrimitiveTypes(t *testing.T) {
	src := `bool a
byte b
char c
float32 d
float64 e
int8 f
uint8 g
int16 h
uint16 i
int32 j
uint32 k
int64 l
uint64 m
string n
wstring o
`
	m := mustParse(t, "pkg", "Prims", src)
	want := []schema.TypeID{schema.TypeBoolean, schema.TypeOctet, schema.TypeUint8, schema.TypeFloat, schema.TypeDouble,
		schema.TypeInt8, schema.TypeUint8, schema.TypeInt16, schema.TypeUint16, schema.TypeInt32, schema.TypeUint32,
		schema.TypeInt64, schema.TypeUint64, schema.TypeString, schema.TypeWString}
	if len(m.Fields) != len(want) {
		t.Fatalf("%d fields", len(m.Fields))
	}
	for i, f := range m.Fields {
		if f.Type != want[i] || f.IsArray || f.Message != nil || f.Default != nil {
			t.Errorf("field %s: %+v, want type %v", f.Name, f, want[i])
		}
		if f.Name != string(rune('a'+i)) {
			t.Errorf("field %d named %q", i, f.Name)
		}
	}
	if m.FullName() != "pkg/msg/Prims" || m.Namespace() != "pkg__msg" || m.DDSTypeName() != "pkg::msg::dds_::Prims_" {
		t.Errorf("names %s %s %s", m.FullName(), m.Namespace(), m.DDSTypeName())
	}
}

func TestArraysAndBounds(t *testing.T) {
	src := `int32[3] fixed
int32[] unbounded
int32[<=5] bounded
string<=10 bstr
wstring<=4 bwstr
string<=5[<=3] bstrs
string[2] strs
Header[] headers
geometry_msgs/Point[4] points
geometry_msgs/msg/Point one
builtin_interfaces/Time[<=2] times
time t
duration dur
`
	r := testRegistry()
	r.AddMessage("std_msgs", "Holder", src)
	m, err := r.Message("std_msgs/msg/Holder")
	if err != nil {
		t.Fatal(err)
	}
	type exp struct {
		typ                   schema.TypeID
		strBound              int
		isArray, upper        bool
		size                  int
		nested, typeStringArg string
	}
	want := []exp{
		{schema.TypeInt32, 0, true, false, 3, "", "int32[3]"},
		{schema.TypeInt32, 0, true, false, 0, "", "int32[]"},
		{schema.TypeInt32, 0, true, true, 5, "", "int32[<=5]"},
		{schema.TypeString, 10, false, false, 0, "", "string<=10"},
		{schema.TypeWString, 4, false, false, 0, "", "wstring<=4"},
		{schema.TypeString, 5, true, true, 3, "", "string<=5[<=3]"},
		{schema.TypeString, 0, true, false, 2, "", "string[2]"},
		{schema.TypeMessage, 0, true, false, 0, "std_msgs/msg/Header", "std_msgs/Header[]"},
		{schema.TypeMessage, 0, true, false, 4, "geometry_msgs/msg/Point", "geometry_msgs/Point[4]"},
		{schema.TypeMessage, 0, false, false, 0, "geometry_msgs/msg/Point", "geometry_msgs/Point"},
		{schema.TypeMessage, 0, true, true, 2, "builtin_interfaces/msg/Time", "builtin_interfaces/Time[<=2]"},
		{schema.TypeMessage, 0, false, false, 0, "builtin_interfaces/msg/Time", "builtin_interfaces/Time"},
		{schema.TypeMessage, 0, false, false, 0, "builtin_interfaces/msg/Duration", "builtin_interfaces/Duration"},
	}
	if len(m.Fields) != len(want) {
		t.Fatalf("%d fields", len(m.Fields))
	}
	for i, w := range want {
		f := m.Fields[i]
		nested := ""
		if f.Message != nil {
			nested = f.Message.FullName()
		}
		if f.Type != w.typ || f.StringUpperBound != w.strBound || f.IsArray != w.isArray || f.IsUpperBound != w.upper ||
			f.ArraySize != w.size || nested != w.nested || f.TypeString() != w.typeStringArg {
			t.Errorf("field %s: %+v (%s), want %+v", f.Name, f, f.TypeString(), w)
		}
	}
	// the nested schemas are shared
	h, _ := r.Message("std_msgs/Header")
	if m.Fields[7].Message != h || h.Fields[0].Message != m.Fields[11].Message {
		t.Error("nested schemas are not shared")
	}
	if !m.Fields[1].IsSequence() || !m.Fields[2].IsSequence() || m.Fields[0].IsSequence() || !m.Fields[0].IsFixedArray() {
		t.Error("IsSequence/IsFixedArray")
	}
}

func TestConstantsDefaultsComments(t *testing.T) {
	src := `# file comment
# more

int8 NEG=-128   # comment after a constant
uint8 HEX = 0xff
uint64 BIG=18446744073709551615
bool FLAG=True
float64 PI=3.14159
string GREETING="hello # not a comment"
string BARE=it's
float32 HALF = .5
    # an indented comment line
int32 count 42  # default
int32 octal 0o17
float32 ratio -1.5e3
float64 inf_val inf
bool on true
bool off 0
string s1 "quoted \"inner\" # still the string"
string s2 'single'
string s3 bare words here
string s4 "a=b"
string<=3 s5 'abc'
wstring w "héllo"
int16[3] arr [1, -2, 3]
float64[<=4] seq [1.5, 2]
uint8[] bytes []
string[] names ["a,b", 'c', d]
bool[2] flags [true, False]
`
	m := mustParse(t, "pkg", "Defaults", src)
	wantConsts := []schema.Constant{
		{Name: "NEG", Type: schema.TypeInt8, Value: int8(-128)},
		{Name: "HEX", Type: schema.TypeUint8, Value: uint8(255)},
		{Name: "BIG", Type: schema.TypeUint64, Value: uint64(math.MaxUint64)},
		{Name: "FLAG", Type: schema.TypeBoolean, Value: true},
		{Name: "PI", Type: schema.TypeDouble, Value: 3.14159},
		{Name: "GREETING", Type: schema.TypeString, Value: "hello # not a comment"},
		{Name: "BARE", Type: schema.TypeString, Value: "it's"},
		{Name: "HALF", Type: schema.TypeFloat, Value: float32(0.5)},
	}
	if !reflect.DeepEqual(m.Constants, wantConsts) {
		t.Errorf("constants\n got %#v\nwant %#v", m.Constants, wantConsts)
	}
	wantDefaults := map[string]any{
		"count":   int32(42),
		"octal":   int32(15),
		"ratio":   float32(-1500),
		"inf_val": math.Inf(1),
		"on":      true,
		"off":     false,
		"s1":      `quoted "inner" # still the string`,
		"s2":      "single",
		"s3":      "bare words here",
		"s4":      "a=b",
		"s5":      "abc",
		"w":       "héllo",
		"arr":     []int16{1, -2, 3},
		"seq":     []float64{1.5, 2},
		"bytes":   []uint8{},
		"names":   []string{"a,b", "c", "d"},
		"flags":   []bool{true, false},
	}
	if len(m.Fields) != len(wantDefaults) {
		t.Fatalf("%d fields: %+v", len(m.Fields), m.Fields)
	}
	for _, f := range m.Fields {
		if !reflect.DeepEqual(f.Default, wantDefaults[f.Name]) {
			t.Errorf("default of %s: got %#v want %#v", f.Name, f.Default, wantDefaults[f.Name])
		}
	}
	if c, ok := m.Constant("HEX"); !ok || c.Value != uint8(255) {
		t.Error("Constant lookup")
	}
	// New applies the defaults
	v := schema.New(m)
	if x, _ := v.Get("count"); x != int32(42) {
		t.Errorf("New: count %v", x)
	}
}

func TestEmptyMessage(t *testing.T) {
	m := mustParse(t, "std_msgs", "Empty", "# nothing but comments\n\n")
	if len(m.Fields) != 1 || m.Fields[0].Name != EmptyStructMember || m.Fields[0].Type != schema.TypeUint8 {
		t.Fatalf("%+v", m.Fields)
	}
	// constants only: still needs the member
	m = mustParse(t, "pkg", "OnlyConsts", "int32 A=1\n")
	if len(m.Fields) != 1 || len(m.Constants) != 1 {
		t.Fatalf("%+v", m)
	}
}

func TestService(t *testing.T) {
	src := "# AddTwoInts\nint64 a\nint64 b\n---\nint64 sum # the sum\n"
	s, err := ParseService("example_interfaces", "AddTwoInts", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.FullName() != "example_interfaces/srv/AddTwoInts" ||
		s.Request.FullName() != "example_interfaces/srv/AddTwoInts_Request" ||
		s.Response.FullName() != "example_interfaces/srv/AddTwoInts_Response" ||
		len(s.Request.Fields) != 2 || len(s.Response.Fields) != 1 || s.Response.Fields[0].Name != "sum" {
		t.Fatalf("%+v %+v %+v", s, s.Request, s.Response)
	}
	// empty request (std_srvs/Trigger)
	s, err = ParseService("std_srvs", "Trigger", "---\nbool success\nstring message\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Request.Fields[0].Name != EmptyStructMember || len(s.Response.Fields) != 2 {
		t.Fatalf("%+v", s)
	}
	// CRLF line endings and a separator with trailing spaces
	s, err = ParseService("pkg", "Crlf", "int8 a\r\n---  \r\nint8 b\r\n", nil)
	if err != nil || s.Request.Fields[0].Name != "a" || s.Response.Fields[0].Name != "b" {
		t.Fatalf("%v %+v", err, s)
	}
	// an error in the response names the file's line
	_, err = ParseService("pkg", "Bad", "int8 a\n---\nint8 b\nflaot64 c\n", nil)
	assertErr(t, err, "pkg/srv/Bad.srv", 4, "unknown type")
}

func assertErr(t *testing.T, err error, file string, line int, substr string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("want *msgparse.Error, got %v", err)
	}
	if pe.File != file || pe.Line != line || !strings.Contains(pe.Error(), substr) {
		t.Fatalf("got %q (file %s line %d), want %s:%d containing %q", pe.Error(), pe.File, pe.Line, file, line, substr)
	}
}

func TestMessageErrors(t *testing.T) {
	cases := []struct {
		src    string
		line   int
		substr string
	}{
		{"int32", 1, "needs a type and a name"},
		{"int32 a\nflaot64 x", 2, `unknown type "flaot64"`},
		{"int32 Bad", 1, "invalid field name"},
		{"int32 a__b", 1, "invalid field name"},
		{"int32 a_", 1, "invalid field name"},
		{"int32 _a", 1, "invalid field name"},
		{"int32[0] a", 1, "integer > 0"},
		{"int32[-1] a", 1, "integer > 0"},
		{"int32[x] a", 1, "integer > 0"},
		{"int32[<=0] a", 1, "integer > 0"},
		{"int32[3 a", 1, "malformed type"},
		{"int32] a", 1, "has no '['"},
		{"string<=0 a", 1, "integer > 0"},
		{"string<=x a", 1, "integer > 0"},
		{"Unknown a", 1, "unknown message type"},
		{"other_pkg/Thing a", 1, "unknown message type"},
		{"Bad_Name a", 1, "invalid type name"},
		{"Bad__pkg/Type a", 1, "invalid package name"},
		{"a/b/c/D x", 1, "unknown type"},
		{"std_msgs/Header h 5", 1, "cannot have a default"},
		{"int8 a 128", 1, "out of range"},
		{"uint8 a -1", 1, "out of range"},
		{"byte a 256", 1, "out of range"},
		{"int32 a 1.5", 1, "not an integer"},
		{"bool a yes", 1, "true, false, 1 or 0"},
		{"float32 a 1e39", 1, "out of range"},
		{"float64 a 1,5", 1, "not a floating point"},
		{"string<=3 a abcd", 1, "exceeds the bound"},
		{"wstring<=1 a 😀", 1, "exceeds the bound"},
		{`string a "in"ner"`, 1, "unescaped"},
		{"int32[3] a [1, 2]", 1, "exactly 3"},
		{"int32[<=2] a [1, 2, 3]", 1, "at most 2"},
		{"int32[] a 1, 2", 1, "start with '['"},
		{"int32[] a [1, , 2]", 1, "element 1"},
		{`string[] a ["x" "y"]`, 1, "expected ','"},
		{`string[] a ["x]`, 1, "unterminated"},
		{"int32 lower=1", 1, "invalid constant name"},
		{"int32 A_=1", 1, "invalid constant name"},
		{"int32[2] ARR=1", 1, "primitive, non-array"},
		{"string<=3 S=abc", 1, "primitive, non-array"},
		{"Header H=1", 1, "primitive, non-array"},
		{"int32 A=", 1, "missing value"},
		{"int32 A=x", 1, "not an integer"},
		{"int32 a\nint64 a", 2, "already declared on line 1"},
		{"int32 A=1\nint32 A=2", 2, "already declared on line 1"},
		{"int32 a\n---\nint32 b", 2, "unexpected '---'"},
	}
	for _, c := range cases {
		_, err := ParseMessage("pkg", "Msg", c.src, testRegistry())
		if err == nil {
			t.Errorf("%q: no error", c.src)
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.File != "pkg/msg/Msg.msg" || pe.Line != c.line || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%q: got %v, want line %d containing %q", c.src, err, c.line, c.substr)
		}
	}
	// a field of unknown type wraps ErrUnknownType
	_, err := ParseMessage("pkg", "Msg", "Nope x", testRegistry())
	if !errors.Is(err, ErrUnknownType) {
		t.Errorf("not ErrUnknownType: %v", err)
	}
	// no resolver
	_, err = ParseMessage("pkg", "Msg", "Other x", nil)
	assertErr(t, err, "pkg/msg/Msg.msg", 1, "no resolver")
	// invalid names of the type itself
	_, err = ParseMessage("Pkg", "Msg", "int8 a", nil)
	assertErr(t, err, "Pkg/msg/Msg.msg", 0, "invalid package name")
	_, err = ParseMessage("pkg", "msg", "int8 a", nil)
	assertErr(t, err, "pkg/msg/msg.msg", 0, "invalid type name")
}

func TestServiceErrors(t *testing.T) {
	_, err := ParseService("pkg", "S", "int8 a\nint8 b\n", nil)
	assertErr(t, err, "pkg/srv/S.srv", 0, "no '---'")
	_, err = ParseService("pkg", "S", "int8 a\n---\nint8 b\n---\n", nil)
	assertErr(t, err, "pkg/srv/S.srv", 4, "second '---' separator (the first is on line 2)")
	_, err = ParseService("pkg", "S", "int8 a\nint8 a\n---\n", nil)
	assertErr(t, err, "pkg/srv/S.srv", 2, "already declared")
}

func TestRegistryCycle(t *testing.T) {
	r := NewRegistry()
	r.AddMessage("pkg", "A", "int32 x\nB b\n")
	r.AddMessage("pkg", "B", "A[] back\n")
	r.AddMessage("pkg", "Self", "Self me\n")
	for _, name := range []string{"pkg/A", "pkg/msg/B", "pkg/Self"} {
		_, err := r.Message(name)
		if err == nil || !strings.Contains(err.Error(), "contains itself") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := r.Message("nope"); err == nil {
		t.Error("bad name accepted")
	}
}

func TestRegistryFS(t *testing.T) {
	fsys := fstest.MapFS{
		"share/builtin_interfaces/msg/Time.msg": {Data: []byte("int32 sec\nuint32 nanosec\n")},
		"share/std_msgs/msg/Header.msg":         {Data: []byte("builtin_interfaces/Time stamp\nstring frame_id\n")},
		"share/std_srvs/srv/Trigger.srv":        {Data: []byte("---\nbool success\nstring message\n")},
		"share/std_msgs/msg/README.md":          {Data: []byte("ignored")},
		"share/std_msgs/srv/Wrong.msg":          {Data: []byte("ignored: .msg outside msg/")},
	}
	r := NewRegistry()
	n, err := r.AddFS(fsys)
	if err != nil || n != 3 {
		t.Fatalf("AddFS: %d %v", n, err)
	}
	if got := r.Messages(); !reflect.DeepEqual(got, []string{"builtin_interfaces/msg/Time", "std_msgs/msg/Header"}) {
		t.Errorf("Messages %v", got)
	}
	if got := r.Services(); !reflect.DeepEqual(got, []string{"std_srvs/srv/Trigger"}) {
		t.Errorf("Services %v", got)
	}
	h, err := r.Message("std_msgs/msg/Header")
	if err != nil || h.Fields[0].Message.FullName() != "builtin_interfaces/msg/Time" {
		t.Fatal(h, err)
	}
	s, err := r.Service("std_srvs/srv/Trigger")
	if err != nil || s.Response.Fields[1].Name != "message" {
		t.Fatal(s, err)
	}
	if _, err := r.Service("std_srvs/Nope"); !errors.Is(err, ErrUnknownType) {
		t.Fatal(err)
	}
	// a later definition replaces an earlier one and drops cached schemas
	r.AddMessage("builtin_interfaces", "Time", "int64 sec\nuint32 nanosec\n")
	h2, _ := r.Message("std_msgs/Header")
	if h2 == h || h2.Fields[0].Message.Fields[0].Type != schema.TypeInt64 {
		t.Fatal("cache not reset")
	}
}

func TestStripComment(t *testing.T) {
	for in, want := range map[string]string{
		"int32 a # c":                 "int32 a ",
		`string s "x # y" # z`:        `string s "x # y" `,
		`string s it's # z`:           `string s it's `,
		`string s 'a\'#' # z`:         `string s 'a\'#' `,
		`string[] s ["#", '#'] # end`: `string[] s ["#", '#'] `,
		"# whole":                     "",
	} {
		if got := stripComment(in); got != want {
			t.Errorf("stripComment(%q) = %q want %q", in, got, want)
		}
	}
}

func TestRegistryConcurrent(t *testing.T) {
	r := testRegistry()
	r.AddMessage("pkg", "Outer", "std_msgs/Header h\ngeometry_msgs/Point[] p\n")
	done := make(chan *schema.Message)
	for range 8 {
		go func() {
			m, err := r.Message("pkg/Outer")
			if err != nil {
				t.Error(err)
			}
			done <- m
		}()
	}
	first := <-done
	for range 7 {
		if m := <-done; m != first {
			t.Error("different schemas for one type")
		}
	}
}

func TestRegistryLookup(t *testing.T) {
	asked := map[string]int{}
	r := NewRegistry()
	r.AddMessage("pkg", "Added", "pkg/Looked inner\n")
	r.SetLookup(func(kind, pkg, name string) (string, error) {
		asked[kind+":"+pkg+"/"+name]++
		switch pkg + "/" + name {
		case "pkg/Looked":
			return "int32 x\n", nil
		case "pkg/Srv":
			return "int32 a\n---\nint32 b\n", nil
		case "pkg/Failing":
			return "", errors.New("disk on fire")
		}
		return "", fs.ErrNotExist
	})
	m, err := r.Message("pkg/msg/Added")
	if err != nil || m.Fields[0].Message.Fields[0].Name != "x" {
		t.Fatalf("nested lookup: %v", err)
	}
	if _, err := r.Message("pkg/Looked"); err != nil {
		t.Fatal(err)
	}
	if asked["msg:pkg/Looked"] != 1 || asked["msg:pkg/Added"] != 0 {
		t.Errorf("asked %v: want the missing definition once, never an added one", asked)
	}
	if s, err := r.Service("pkg/srv/Srv"); err != nil || s.Request.Fields[0].Name != "a" || asked["srv:pkg/Srv"] != 1 {
		t.Errorf("service lookup: %v, %v", s, err)
	}
	if _, err := r.Message("pkg/Missing"); !errors.Is(err, ErrUnknownType) {
		t.Errorf("missing: %v", err)
	}
	if _, err := r.Message("pkg/Failing"); err == nil || errors.Is(err, ErrUnknownType) || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("failing lookup: %v", err)
	}
}

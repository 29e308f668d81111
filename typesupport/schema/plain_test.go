package schema_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// plainDefs are the .msg definitions of plain_test, the types of
// testdata/plain_c.c that are not ROS's own.
var plainDefs = map[string]string{
	"Mixed":        "uint8 a\nuint32 b\nuint8 c\nfloat64 d\nint16 e\nint8 f\n",
	"MixedNested":  "int16 tag\nMixed m\n",
	"Inner":        "uint8 x\nuint32 y\n",
	"Outer":        "uint8 a\nInner b\n",
	"Tail":         "int32 a\nuint8 b\n",
	"TailThenByte": "Tail t\nuint8 c\n",
	"TailThenInt":  "Tail t\nint32 c\n",
	"TailArray":    "Tail[3] t\n",
	"TailArray20":  "Tail[20] t\n",
	"TailGrid":     "uint8 tag\nTailArray20[18] rows\n",
	"ByteTail":     "uint8 a\nuint32 b\nuint8 c\n",
	"ByteTails":    "ByteTail[20] v\n",
	"Padded":       "int64 a\nuint8 b\n",
	"PaddedPair":   "Padded[2] p\n",
	"Points20":     "geometry_msgs/Point[20] p\n",
	"Poses":        "geometry_msgs/Pose[3] poses\nuint8 n\n",
	"Bools":        "bool[5] flags\nint64 stamp\n",
	"BoolsShort":   "bool[3] b\nint16 s\n",
	"Floats":       "float32[3] f\nfloat64 d\n",
	"Seq":          "int32 x\nint32[] v\n",
	"Bounded":      "int32[<=3] v\n",
	"Empty":        "uint8 structure_needs_at_least_one_member\n",
}

// plainSchemas returns the Go descriptions of the types of plain_c.c.
func plainSchemas(t *testing.T) map[string]*schema.Message {
	t.Helper()
	r := interfaces.Registry()
	for name, src := range plainDefs {
		r.AddMessage("plain_test", name, src)
	}
	out := map[string]*schema.Message{}
	for _, name := range []string{
		"std_msgs/msg/Int32", "std_msgs/msg/Float64", "std_msgs/msg/Bool", "std_msgs/msg/String",
		"builtin_interfaces/msg/Time", "std_msgs/msg/Header", "geometry_msgs/msg/Point",
		"geometry_msgs/msg/Vector3", "geometry_msgs/msg/Quaternion", "geometry_msgs/msg/Pose",
		"geometry_msgs/msg/Twist", "geometry_msgs/msg/PoseStamped", "sensor_msgs/msg/Image",
	} {
		out[name] = msgOf(t, r.Message, name)
	}
	for name := range plainDefs {
		out["plain_test/msg/"+name] = msgOf(t, r.Message, "plain_test/msg/"+name)
	}
	// IDL char and wchar, and long double: no .msg spelling
	hand := []*schema.Message{
		{Package: "plain_test", Kind: "msg", Name: "Chars", Fields: []schema.Field{
			{Name: "c", Type: schema.TypeChar}, {Name: "w", Type: schema.TypeWchar}, {Name: "u", Type: schema.TypeUint8}}},
		{Package: "plain_test", Kind: "msg", Name: "LongD", Fields: []schema.Field{
			{Name: "a", Type: schema.TypeInt32}, {Name: "l", Type: schema.TypeLongDouble}}},
	}
	for _, m := range hand {
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		out[m.FullName()] = m
	}
	return out
}

func msgOf(t *testing.T, get func(string) (*schema.Message, error), name string) *schema.Message {
	t.Helper()
	m, err := get(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return m
}

// plainWant is the plain size of every type of plain_c.c, -1 for the types
// that are not plain, worked out by hand from the layouts.
var plainWant = map[string]int{
	"std_msgs/msg/Int32":            4,
	"std_msgs/msg/Float64":          8,
	"std_msgs/msg/Bool":             1,
	"std_msgs/msg/String":           -1,
	"builtin_interfaces/msg/Time":   8,
	"std_msgs/msg/Header":           -1,
	"geometry_msgs/msg/Point":       24,
	"geometry_msgs/msg/Vector3":     24,
	"geometry_msgs/msg/Quaternion":  32,
	"geometry_msgs/msg/Pose":        56,
	"geometry_msgs/msg/Twist":       48,
	"geometry_msgs/msg/PoseStamped": -1,
	"sensor_msgs/msg/Image":         -1,
	"plain_test/msg/Mixed":          27, // a@0 b@4 c@8 d@16 e@24 f@26; sizeof 32
	"plain_test/msg/MixedNested":    -1, // m.a lies at 8 in C, at 2 in CDR
	"plain_test/msg/Inner":          8,
	"plain_test/msg/Outer":          -1,   // b.x at 4 in C, 1 in CDR
	"plain_test/msg/Tail":           5,    // sizeof 8
	"plain_test/msg/TailThenByte":   -1,   // c at 8 in C, 5 in CDR
	"plain_test/msg/TailThenInt":    12,   // c aligned to 8 in both
	"plain_test/msg/TailArray":      21,   // elements at 0, 8, 16
	"plain_test/msg/TailArray20":    157,  // beyond the walker's probe of 17
	"plain_test/msg/TailGrid":       2881, // rows at 4: 4 + 17*160 + 157
	"plain_test/msg/ByteTail":       9,    // sizeof 12
	"plain_test/msg/ByteTails":      -1,   // v[1].a at 12 in C, 9 in CDR
	"plain_test/msg/Padded":         9,
	"plain_test/msg/PaddedPair":     25,
	"plain_test/msg/Points20":       480,
	"plain_test/msg/Poses":          169,
	"plain_test/msg/Bools":          16,
	"plain_test/msg/BoolsShort":     6,
	"plain_test/msg/Floats":         24,
	"plain_test/msg/Chars":          5, // wchar: 2 bytes at 2 in both
	"plain_test/msg/LongD":          -1,
	"plain_test/msg/Seq":            -1,
	"plain_test/msg/Bounded":        -1,
	"plain_test/msg/Empty":          1,
}

// TestPlainSizeAgainstWalkers compares schema.PlainSize with what the rmw
// library's C walkers decide for the same types laid out by the C
// compiler (testdata/plain_c.c, built with ts_cdr.c and ts_cxx.cpp): the
// decision, the plain size and the struct's size must all agree.
func TestPlainSizeAgainstWalkers(t *testing.T) {
	schemas := plainSchemas(t)
	for name, want := range plainWant {
		m := schemas[name]
		if m == nil {
			t.Fatalf("no schema for %s", name)
		}
		size, plain := schema.PlainSize(m)
		if !plain {
			size = -1
		}
		if size != want {
			t.Errorf("PlainSize(%s) = %d (-1: not plain), want %d", name, size, want)
		}
	}

	c := walkerAnswers(t)
	if len(c) != len(plainWant) {
		t.Errorf("plain_c printed %d types, the table has %d", len(c), len(plainWant))
	}
	for name, got := range c {
		m := schemas[name]
		if m == nil {
			t.Errorf("plain_c printed %s, which the test has no schema of", name)
			continue
		}
		size, plain := schema.PlainSize(m)
		if plain != got.plain || size != got.size {
			t.Errorf("%s: Go says plain=%v size %d, the walkers plain=%v size %d", name, plain, size, got.plain, got.size)
		}
		if cs, ok := schema.CSize(m); !ok || cs != got.sizeOf {
			t.Errorf("%s: Go lays it out in %d bytes (%v), the C compiler in %d", name, cs, ok, got.sizeOf)
		}
	}
}

type walkerAnswer struct {
	plain        bool
	size, sizeOf int
}

// walkerAnswers builds and runs testdata/plain_c.c.
func walkerAnswers(t *testing.T) map[string]walkerAnswer {
	t.Helper()
	cc := ""
	for _, c := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	cxx, err := exec.LookPath("g++")
	if cc == "" || err != nil {
		t.Skip("no C and C++ compilers (gcc or cc, g++) on PATH: the walkers cannot be built to compare with")
	}
	ts, err := filepath.Abs(filepath.Join("..", "introspection"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	objs := []string{filepath.Join(dir, "plain_c.o"), filepath.Join(dir, "ts_cdr.o"), filepath.Join(dir, "ts_cxx.o")}
	build := func(tool string, args ...string) {
		t.Helper()
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
		}
	}
	build(cc, "-std=gnu11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"+ts, "-c", filepath.Join("testdata", "plain_c.c"), "-o", objs[0])
	build(cc, "-std=gnu11", "-O1", "-c", filepath.Join(ts, "ts_cdr.c"), "-o", objs[1])
	build(cxx, "-std=c++17", "-O1", "-c", filepath.Join(ts, "ts_cxx.cpp"), "-o", objs[2])
	prog := filepath.Join(dir, "plain_c")
	build(cxx, append(objs, "-o", prog)...)
	var stderr bytes.Buffer
	cmd := exec.Command(prog)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("plain_c: %v\n%s%s", err, out, stderr.Bytes())
	}
	answers := map[string]walkerAnswer{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			t.Fatalf("plain_c printed %q", sc.Text())
		}
		var n [3]int
		for i := range n {
			if n[i], err = strconv.Atoi(f[i+1]); err != nil {
				t.Fatalf("plain_c printed %q: %v", sc.Text(), err)
			}
		}
		answers[f[0]] = walkerAnswer{plain: n[0] == 1, size: n[1], sizeOf: n[2]}
	}
	return answers
}

// TestPlainSizeOf covers what the walkers cannot be asked: descriptions
// that are not valid, and the plain size of a type that is not plain.
func TestPlainSizeOf(t *testing.T) {
	if size, plain := schema.PlainSize(nil); plain || size != 0 {
		t.Errorf("PlainSize(nil) = %d, %v", size, plain)
	}
	noNested := &schema.Message{Package: "p", Name: "N", Fields: []schema.Field{{Name: "m", Type: schema.TypeMessage}}}
	if _, plain := schema.PlainSize(noNested); plain {
		t.Error("a message field without its message is plain")
	}
	badType := &schema.Message{Package: "p", Name: "B", Fields: []schema.Field{{Name: "x", Type: 99}}}
	if _, plain := schema.PlainSize(badType); plain {
		t.Error("an invalid type id is plain")
	}
	str := &schema.Message{Package: "p", Name: "S", Fields: []schema.Field{{Name: "s", Type: schema.TypeString, StringUpperBound: 5}}}
	if size, plain := schema.PlainSize(str); plain || size != 0 {
		t.Errorf("a bounded string: %d, %v", size, plain)
	}
}

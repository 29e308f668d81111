package test

// The introspection walkers of the type support (typesupport/introspection:
// ts_cdr.c, ts_member.c, ts_cxx.cpp), which the rmw library links, tested alone, as
// plain C and C++: the test programs in typesupport/introspection/testdata
// (with hand-written rosidl introspection tables for C and C++ messages) are
// compiled with gcc/g++ together with the library sources, under
// AddressSanitizer, UndefinedBehaviorSanitizer and LeakSanitizer when the
// compiler has them, and run as separate processes. Their self-tests cover
// resolution, loanability, bounds, hostile input and the invariants of
// detached byte members (rgaps_ts_byte_member, ..._detached); the vectors are
// cross-checked against the Go codec (typesupport/schema, typesupport/cdr):
// the Go side encodes the same values, the C and C++ serialisations must be
// the same bytes, and the C and C++ deserialisations of the Go bytes (little
// and big endian) must give the expected fields and serialise back to them.

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// tsKit is what the subtests share: the built programs.
type tsKit struct {
	dir    string
	cProg  string
	cxProg string
	env    []string
}

func TestTS(t *testing.T) {
	cc, cxx := tsCompilers(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	k := &tsKit{dir: t.TempDir()}
	ts := filepath.Join(root, "typesupport", "introspection")
	san := tsSanitizers(t, cc, k.dir)
	k.env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0", "UBSAN_OPTIONS=print_stacktrace=1")

	// The walkers as cgo compiles them in their package: default flags, no
	// ROS headers; warnings are errors here.
	t.Run("CompileLikeCgo", func(t *testing.T) {
		for _, src := range tsCSources {
			tsRun(t, cc, "-std=gnu11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-c", filepath.Join(ts, src+".c"), "-o", filepath.Join(k.dir, "cgo_"+src+".o"))
			tsRun(t, cc, "-std=c11", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", "-c", filepath.Join(ts, src+".c"), "-o", filepath.Join(k.dir, "c11_"+src+".o"))
		}
		tsRun(t, cxx, "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-c", filepath.Join(ts, "ts_cxx.cpp"), "-o", filepath.Join(k.dir, "cgo_ts_cxx.o"))
		tsRun(t, cxx, "-std=c++11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", filepath.Join(ts, "ts_cxx.cpp"))
		// the headers from C++ too (the rmw shim may be C++)
		hdr := filepath.Join(k.dir, "hdr.cpp")
		if err := os.WriteFile(hdr, []byte("#include \"rgaps_ts.h\"\nint f(const rgaps_ts *t) { return rgaps_ts_is_plain(t); }\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tsRun(t, cxx, "-Wall", "-Wextra", "-Werror", "-I"+ts, "-fsyntax-only", hdr)
		// no main, no strong symbol but rgaps_ts_* defined by the library
		// objects (weak ones are C++ template instances libstdc++ shares)
		out, err := exec.Command("nm", "-g", "--defined-only", filepath.Join(k.dir, "cgo_ts_cdr.o"), filepath.Join(k.dir, "cgo_ts_member.o"), filepath.Join(k.dir, "cgo_ts_cxx.o")).CombinedOutput()
		if err != nil {
			t.Skipf("nm: %v", err)
		}
		n := 0
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) != 3 || strings.ContainsAny(f[1], "WVwvu") {
				continue
			}
			n++
			if !strings.HasPrefix(f[2], "rgaps_ts_") {
				t.Errorf("library object defines %q (%s)", f[2], f[1])
			}
		}
		if n < 10 {
			t.Errorf("only %d rgaps_ts_ symbols defined:\n%s", n, out)
		}
	})

	flags := append([]string{"-g", "-O1", "-Wall", "-Wextra", "-Werror", "-fno-omit-frame-pointer"}, san...)
	var objs []string
	for _, src := range tsCSources {
		objs = append(objs, filepath.Join(k.dir, src+".o"))
		tsRun(t, cc, append(append([]string{"-std=gnu11"}, flags...), "-c", filepath.Join(ts, src+".c"), "-o", objs[len(objs)-1])...)
	}
	objs = append(objs, filepath.Join(k.dir, "ts_cxx.o"))
	tsRun(t, cxx, append(append([]string{}, flags...), "-c", filepath.Join(ts, "ts_cxx.cpp"), "-o", objs[len(objs)-1])...)
	k.cProg = filepath.Join(k.dir, "ts_c_test")
	tsRun(t, cc, append(append([]string{"-std=gnu11"}, flags...), "-c", filepath.Join(ts, "testdata", "ts_c_test.c"), "-o", k.cProg+".o")...)
	tsRun(t, cxx, append(append(append([]string{}, san...), objs...), k.cProg+".o", "-o", k.cProg)...)
	k.cxProg = filepath.Join(k.dir, "ts_cpp_test")
	tsRun(t, cxx, append(append([]string{"-std=c++20", "-Wno-invalid-offsetof"}, flags...), "-c", filepath.Join(ts, "testdata", "ts_cpp_test.cpp"), "-o", k.cxProg+".o")...)
	tsRun(t, cxx, append(append(append([]string{}, san...), objs...), k.cxProg+".o", "-o", k.cxProg)...)

	t.Run("CSelftest", func(t *testing.T) { k.program(t, k.cProg, "selftest") })
	t.Run("CDetached", func(t *testing.T) { k.program(t, k.cProg, "detached") })
	t.Run("CThreads", func(t *testing.T) { k.program(t, k.cProg, "threads") })
	t.Run("CThreadsTSan", func(t *testing.T) {
		// the same program under ThreadSanitizer: the type cache and the
		// per-thread error are race-free
		tsan := []string{"-g", "-O1", "-fsanitize=thread"}
		prog := filepath.Join(k.dir, "ts_c_test_tsan")
		if out, err := exec.Command(cc, append(tsan, "-std=gnu11", "-c", filepath.Join(ts, "ts_cdr.c"), "-o", prog+"_lib.o")...).CombinedOutput(); err != nil {
			t.Skipf("no ThreadSanitizer: %v\n%s", err, out)
		}
		tsRun(t, cc, append(tsan, "-std=gnu11", "-c", filepath.Join(ts, "ts_member.c"), "-o", prog+"_member.o")...)
		tsRun(t, cxx, append(tsan, "-c", filepath.Join(ts, "ts_cxx.cpp"), "-o", prog+"_cxx.o")...)
		tsRun(t, cc, append(tsan, "-std=gnu11", "-c", filepath.Join(ts, "testdata", "ts_c_test.c"), "-o", prog+".o")...)
		tsRun(t, cxx, append(tsan, prog+"_lib.o", prog+"_member.o", prog+"_cxx.o", prog+".o", "-o", prog)...)
		k.program(t, prog, "threads")
	})
	t.Run("CXXSelftest", func(t *testing.T) { k.program(t, k.cxProg, "selftest") })
	t.Run("CXXDetached", func(t *testing.T) { k.program(t, k.cxProg, "detached") })

	vecs := tsVectors(t)
	vdir := filepath.Join(k.dir, "vectors")
	if err := os.Mkdir(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, v := range vecs {
		le, err := schema.Encode(v.msg, v.val)
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		e := cdr.NewEncoderOrder(nil, cdr.BigEndian)
		if err := schema.EncodeTo(e, v.msg, v.val); err != nil {
			t.Fatalf("%s big-endian: %v", v.name, err)
		}
		tsWrite(t, filepath.Join(vdir, "go_"+v.name+".cdr"), le)
		tsWrite(t, filepath.Join(vdir, "go_"+v.name+"_be.cdr"), e.Bytes())
	}
	t.Run("CVectors", func(t *testing.T) {
		k.program(t, k.cProg, "vectors", vdir)
		tsCompare(t, vdir, "c", vecs, nil)
	})
	t.Run("CXXVectors", func(t *testing.T) {
		k.program(t, k.cxProg, "vectors", vdir)
		tsCompare(t, vdir, "cpp", vecs, map[string]bool{"padded": true, "outer": true})
	})
}

// tsCSources are the C files of typesupport/introspection (without .c).
var tsCSources = []string{"ts_cdr", "ts_member"}

// program runs a test program and fails on a non-zero exit, a sanitizer
// report or a missing final OK.
func (k *tsKit) program(t *testing.T, prog string, args ...string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = k.env
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", filepath.Base(prog), strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(prog), err)
	}
	if bytes.Contains(out, []byte("Sanitizer")) || bytes.Contains(out, []byte("runtime error")) ||
		bytes.Contains(out, []byte("WARNING: ThreadSanitizer")) {
		t.Fatal("sanitizer report")
	}
	if !bytes.HasSuffix(bytes.TrimSpace(out), []byte("OK")) {
		t.Fatal("no final OK")
	}
}

type tsVector struct {
	name string
	msg  *schema.Message
	val  *schema.Struct
}

// tsCompare checks that <prefix>_<name>.cdr is byte for byte what Go encoded.
func tsCompare(t *testing.T, dir, prefix string, vecs []tsVector, skip map[string]bool) {
	t.Helper()
	for _, v := range vecs {
		if skip[v.name] {
			continue
		}
		want, err := os.ReadFile(filepath.Join(dir, "go_"+v.name+".cdr"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, prefix+"_"+v.name+".cdr"))
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %s serialisation differs from Go's\n got % x\nwant % x", v.name, prefix, got, want)
			if back, err := schema.Decode(v.msg, got); err != nil {
				t.Errorf("%s: Go cannot decode the %s bytes: %v", v.name, prefix, err)
			} else {
				t.Errorf("%s: the %s bytes decode to\n%v\nwant\n%v", v.name, prefix, back, v.val)
			}
			continue
		}
		back, err := schema.Decode(v.msg, got)
		if err != nil || !schema.Equal(back, v.val) {
			t.Errorf("%s: decode %v, equal %v", v.name, err, back != nil && schema.Equal(back, v.val))
		}
	}
}

// tsVectors builds the values the C and C++ programs build (typesupport/introspection/testdata/ts_c_test.c
// and ts_cpp_test.cpp: the same numbers and strings).
func tsVectors(t *testing.T) []tsVector {
	r := interfaces.Registry()
	r.AddMessage("geometry_msgs", "PoseArray", "std_msgs/Header header\ngeometry_msgs/Pose[] poses\n")
	r.AddMessage("rgaps_test", "Nested", "uint8 lead\nstd_msgs/Header[2] pair\nbuiltin_interfaces/Time[<=3] times\n"+
		"std_msgs/Header[] headers\ngeometry_msgs/Pose pose\ngeometry_msgs/PoseArray[1] arrays\nuint16 tail\n")
	r.AddMessage("rgaps_test", "Padded", "float64 x\nuint8 a\n")
	r.AddMessage("rgaps_test", "PaddedArray", "uint8 lead\nrgaps_test/Padded[3] p\nfloat64 tail\n")
	r.AddMessage("rgaps_test", "Inner", "uint8 x\nuint32 y\n")
	r.AddMessage("rgaps_test", "Outer", "uint8 a\nrgaps_test/Inner b\n")
	get := func(name string) *schema.Message {
		m, err := r.Message(name)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	set := func(s *schema.Struct, path string, v any) {
		t.Helper()
		if err := s.Set(path, v); err != nil {
			t.Fatal(err)
		}
	}

	all := tsAllTypes(t)
	allV := schema.New(all)
	for _, fv := range []struct {
		name string
		v    any
	}{
		{"b", true}, {"o", uint8(0xAB)}, {"c", uint8('A')}, {"wc", uint16(0x20AC)}, {"f", float32(1.5)},
		{"d", -2.25}, {"ld", cdr.LongDoubleFromFloat64(3)}, {"i8", int8(-5)}, {"u8", uint8(250)},
		{"i16", int16(-300)}, {"u16", uint16(60000)}, {"i32", int32(-70000)}, {"u32", uint32(4000000000)},
		{"i64", int64(-5000000000)}, {"u64", uint64(18000000000000000000)},
		{"s", "hello, wörld"}, {"sb", "abcde"}, {"ws", "hé€😀"}, {"wsb", "wxyz"},
		{"ai32", []int32{1, -2, 3}}, {"ab", []bool{true, false, true}}, {"ad", []float64{0.5, -0.25}},
		{"as", []string{"", "x"}}, {"au8", []uint8{1, 2, 3, 4, 5}}, {"aws", []string{"a", ""}},
		{"su8", []uint8{9, 8, 7}}, {"si16", []int16{-1, 2, -3, 4}}, {"sd", []float64{1e10, -1e-10}},
		{"sbool", []bool{false, true, true}}, {"sf", []float32{0.125}}, {"su64", []uint64{1, math.MaxUint64}},
		{"ss", []string{"one", "", "three"}}, {"sws", []string{"ω"}}, {"sc", []uint8{'x', 'y'}},
		{"swc", []uint16{0x3A9, 0x41}}, {"sld", []cdr.LongDouble{cdr.LongDoubleFromFloat64(-0.5)}},
		{"bi32", []int32{7, 8, 9}}, {"bss", []string{"abc", "de"}}, {"empty_d", []float64{}}, {"tail", uint8(0x5A)},
	} {
		set(allV, fv.name, fv.v)
	}

	image := get("sensor_msgs/msg/Image")
	imgV := schema.New(image)
	set(imgV, "header.stamp.sec", int32(1700000000))
	set(imgV, "header.stamp.nanosec", uint32(123456789))
	set(imgV, "header.frame_id", "camera")
	set(imgV, "height", uint32(10))
	set(imgV, "width", uint32(20))
	set(imgV, "encoding", "rgb8")
	set(imgV, "step", uint32(60))
	data := make([]uint8, 600)
	for i := range data {
		data[i] = uint8(i*7 + 3)
	}
	set(imgV, "data", data)

	pose := get("geometry_msgs/msg/Pose")
	poseArray := get("geometry_msgs/msg/PoseArray")
	paV := func() *schema.Struct {
		v := schema.New(poseArray)
		set(v, "header.stamp.sec", int32(-1))
		set(v, "header.stamp.nanosec", uint32(999999999))
		set(v, "header.frame_id", "map")
		poses := make([]*schema.Struct, 3)
		for i := range poses {
			p := schema.New(pose)
			set(p, "position.x", float64(i)+0.5)
			set(p, "position.y", float64(-i))
			set(p, "position.z", float64(i)*100)
			set(p, "orientation.z", 0.25*float64(i))
			poses[i] = p
		}
		set(v, "poses", poses)
		return v
	}

	header := get("std_msgs/msg/Header")
	tm := get("builtin_interfaces/msg/Time")
	nested := get("rgaps_test/msg/Nested")
	nV := schema.New(nested)
	set(nV, "lead", uint8(1))
	pair := []*schema.Struct{schema.New(header), schema.New(header)}
	set(pair[0], "stamp.sec", int32(10))
	set(pair[0], "frame_id", "left")
	set(pair[1], "stamp.nanosec", uint32(20))
	set(pair[1], "frame_id", "right")
	set(nV, "pair", pair)
	times := []*schema.Struct{schema.New(tm), schema.New(tm)}
	set(times[0], "sec", int32(1))
	set(times[0], "nanosec", uint32(2))
	set(times[1], "sec", int32(3))
	set(times[1], "nanosec", uint32(4))
	set(nV, "times", times)
	var headers []*schema.Struct
	for i, id := range []string{"a", "", "ccc"} {
		h := schema.New(header)
		set(h, "stamp.sec", int32(100+i))
		set(h, "frame_id", id)
		headers = append(headers, h)
	}
	set(nV, "headers", headers)
	set(nV, "pose.position.y", 2.5)
	set(nV, "arrays", []*schema.Struct{paV()})
	set(nV, "tail", uint16(0xBEEF))

	padded := get("rgaps_test/msg/Padded")
	paddedArray := get("rgaps_test/msg/PaddedArray")
	padV := schema.New(paddedArray)
	set(padV, "lead", uint8(7))
	var ps []*schema.Struct
	for i := range 3 {
		p := schema.New(padded)
		set(p, "x", float64(i)-1.5)
		set(p, "a", uint8(0xF0+i))
		ps = append(ps, p)
	}
	set(padV, "p", ps)
	set(padV, "tail", -2.0)

	outer := get("rgaps_test/msg/Outer")
	outV := schema.New(outer)
	set(outV, "a", uint8(1))
	set(outV, "b.x", uint8(2))
	set(outV, "b.y", uint32(0x03040506))

	return []tsVector{
		{"all", all, allV},
		{"zero", all, schema.New(all)},
		{"image", image, imgV},
		{"posearray", poseArray, paV()},
		{"nested", nested, nV},
		{"padded", paddedArray, padV},
		{"outer", outer, outV},
	}
}

// tsAllTypes is rgaps_test/msg/AllTypes of the test programs, built by hand:
// .msg files cannot declare IDL char, wchar or long double.
func tsAllTypes(t *testing.T) *schema.Message {
	type F = schema.Field
	scalar := func(name string, ty schema.TypeID) F { return F{Name: name, Type: ty} }
	array := func(name string, ty schema.TypeID, n int) F {
		return F{Name: name, Type: ty, IsArray: true, ArraySize: n}
	}
	seq := func(name string, ty schema.TypeID) F { return F{Name: name, Type: ty, IsArray: true} }
	m := &schema.Message{Package: "rgaps_test", Kind: "msg", Name: "AllTypes", Fields: []F{
		scalar("b", schema.TypeBoolean), scalar("o", schema.TypeOctet), scalar("c", schema.TypeChar),
		scalar("wc", schema.TypeWchar), scalar("f", schema.TypeFloat), scalar("d", schema.TypeDouble),
		scalar("ld", schema.TypeLongDouble), scalar("i8", schema.TypeInt8), scalar("u8", schema.TypeUint8),
		scalar("i16", schema.TypeInt16), scalar("u16", schema.TypeUint16), scalar("i32", schema.TypeInt32),
		scalar("u32", schema.TypeUint32), scalar("i64", schema.TypeInt64), scalar("u64", schema.TypeUint64),
		scalar("s", schema.TypeString), {Name: "sb", Type: schema.TypeString, StringUpperBound: 5},
		scalar("ws", schema.TypeWString), {Name: "wsb", Type: schema.TypeWString, StringUpperBound: 4},
		array("ai32", schema.TypeInt32, 3), array("ab", schema.TypeBoolean, 3), array("ad", schema.TypeDouble, 2),
		array("as", schema.TypeString, 2), array("au8", schema.TypeUint8, 5), array("aws", schema.TypeWString, 2),
		seq("su8", schema.TypeUint8), seq("si16", schema.TypeInt16), seq("sd", schema.TypeDouble),
		seq("sbool", schema.TypeBoolean), seq("sf", schema.TypeFloat), seq("su64", schema.TypeUint64),
		seq("ss", schema.TypeString), seq("sws", schema.TypeWString), seq("sc", schema.TypeChar),
		seq("swc", schema.TypeWchar), seq("sld", schema.TypeLongDouble),
		{Name: "bi32", Type: schema.TypeInt32, IsArray: true, ArraySize: 3, IsUpperBound: true},
		{Name: "bss", Type: schema.TypeString, StringUpperBound: 3, IsArray: true, ArraySize: 2, IsUpperBound: true},
		seq("empty_d", schema.TypeDouble), scalar("tail", schema.TypeUint8),
	}}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

// tsCompilers finds gcc and g++; without both the layer cannot be built.
func tsCompilers(t *testing.T) (cc, cxx string) {
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc on PATH")
	}
	cxx, err = exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++ on PATH (scripts/setup.sh installs it)")
	}
	return cc, cxx
}

// tsSanitizers returns the sanitizer flags if the compiler can build and run
// a program with them, nil otherwise (logged).
func tsSanitizers(t *testing.T, cc, dir string) []string {
	flags := []string{"-fsanitize=address,undefined", "-fno-sanitize-recover=all"}
	src := filepath.Join(dir, "san.c")
	tsWrite(t, src, []byte("#include <stdlib.h>\nint main(void){char *p = malloc(4); p[0] = 0; int r = p[0]; free(p); return r;}\n"))
	exe := filepath.Join(dir, "san")
	if out, err := exec.Command(cc, append(flags, src, "-o", exe)...).CombinedOutput(); err != nil {
		t.Logf("building without sanitizers: %v\n%s", err, out)
		return nil
	}
	if out, err := exec.Command(exe).CombinedOutput(); err != nil {
		t.Logf("building without sanitizers (they do not run here): %v\n%s", err, out)
		return nil
	}
	return flags
}

func tsRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

func tsWrite(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", path, err))
	}
}

package test

// `rgaps topic pub` and `echo` with message types: values in ros2's flow
// syntax published by one CLI process and printed by another as ros2
// prints them, types found in RGAPS_INTERFACE_PATH, raw fallbacks and the
// errors of bad input. Domains 68 and 69.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLITypes(t *testing.T) {
	bin := buildCLI(t, t.TempDir())
	// A package of one's own, found through RGAPS_INTERFACE_PATH: nested
	// messages (embedded and its own), a fixed array, a bounded sequence.
	defs := t.TempDir()
	writeFile(t, filepath.Join(defs, "cli_msgs", "msg", "Reading.msg"),
		"std_msgs/Header header\ncli_msgs/Unit unit\nfloat64[3] xyz\nint16[<=4] codes\n")
	writeFile(t, filepath.Join(defs, "cli_msgs", "msg", "Unit.msg"), "string name\nbool si true\n")
	env := []string{"RGAPS_INTERFACE_PATH=" + defs, "AMENT_PREFIX_PATH="}

	for _, c := range []struct {
		name, typ, values, want string
		echoArgs                []string
	}{
		{name: "String", typ: "std_msgs/msg/String", values: "{data: hello world}", want: "data: hello world\n---\n"},
		{name: "StringShortType", typ: "std_msgs/String", values: "data: 'Hello World: 1'", want: "data: 'Hello World: 1'\n---\n"},
		{name: "Int32Bare", typ: "std_msgs/msg/Int32", values: "-7", want: "data: -7\n---\n"},
		{name: "Twist", typ: "geometry_msgs/msg/Twist", values: "{linear: {x: 0.5}, angular: {z: -1.25}}", want: `linear:
  x: 0.5
  y: 0.0
  z: 0.0
angular:
  x: 0.0
  y: 0.0
  z: -1.25
---
`},
		{name: "Pose", typ: "geometry_msgs/msg/Pose", values: "{position: {x: 1, y: 2e-5, z: 3}}", want: `position:
  x: 1.0
  y: 2.0e-05
  z: 3.0
orientation:
  x: 0.0
  y: 0.0
  z: 0.0
  w: 1.0
---
`},
		{name: "Image", typ: "sensor_msgs/msg/Image", values: "{header: {stamp: {sec: 7, nanosec: 9}, frame_id: cam}, height: 2, width: 3, encoding: rgb8, step: 9, data: [1, 2, 3, 250, 251, 252]}",
			echoArgs: []string{"-truncate-length", "4"}, want: `header:
  stamp:
    sec: 7
    nanosec: 9
  frame_id: cam
height: 2
width: 3
encoding: rgb8
is_bigendian: 0
step: 9
data:
- 1
- 2
- 3
- 250
- '... 2 more'
---
`},
		{name: "ImageNoArr", typ: "sensor_msgs/msg/Image", values: "{encoding: mono8, data: [1, 2, 3]}", echoArgs: []string{"--no-arr"},
			want: "header:\n  stamp:\n    sec: 0\n    nanosec: 0\n  frame_id: ''\nheight: 0\nwidth: 0\nencoding: mono8\nis_bigendian: 0\nstep: 0\ndata: '<sequence type: uint8, length: 3>'\n---\n"},
		{name: "ArrayOfMessages", typ: "std_msgs/msg/Float32MultiArray", values: "{layout: {dim: [{label: rows, size: 2, stride: 4}, {label: cols, size: 2, stride: 2}]}, data: [1.5, -2, 0.25, 8]}", want: `layout:
  dim:
  - label: rows
    size: 2
    stride: 4
  - label: cols
    size: 2
    stride: 2
  data_offset: 0
data:
- 1.5
- -2.0
- 0.25
- 8.0
---
`},
		{name: "OwnPackage", typ: "cli_msgs/msg/Reading", values: "{header: {frame_id: lab}, unit: {name: kelvin}, xyz: [1, 2, 3], codes: [-1, 7]}",
			echoArgs: []string{"--flow-style"},
			want:     "{header: {stamp: {sec: 0, nanosec: 0}, frame_id: lab}, unit: {name: kelvin, si: true}, xyz: [1.0, 2.0, 3.0], codes: [-1, 7]}\n---\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			topic := "/cli_types_" + strings.ToLower(c.name)
			echoType := c.typ
			if c.name == "StringShortType" {
				echoType = "std_msgs/msg/String" // the same topic as pub's short name
			}
			echo := startCLIEnv(t, bin, env, append([]string{"topic", "echo", topic, echoType, "-n", "1", "-domain", "68"}, c.echoArgs...)...)
			// after "--" a value may start with '-'
			pub := startCLIEnv(t, bin, env, "topic", "pub", "-times", "1", "-wait", "60", "-domain", "68", "--", topic, c.typ, c.values)
			if code := echo.wait(t); code != 0 {
				t.Fatalf("echo exited %d\n%s\n%s", code, echo, pub)
			}
			if got := echo.stdout.String(); got != c.want {
				t.Errorf("echo printed\n%s\nwant\n%s\n%s", got, c.want, echo)
			}
			if code := pub.wait(t); code != 0 {
				t.Fatalf("pub exited %d\n%s", code, pub)
			}
			if !strings.Contains(pub.stdout.String(), "publishing #1: {") {
				t.Errorf("pub printed\n%s", pub)
			}
		})
	}

	t.Run("UnknownTypeRaw", func(t *testing.T) {
		t.Parallel()
		// No definition: echo refuses to guess, -raw prints summary lines,
		// pub sends raw payloads with -size or -raw.
		out, errOut, code := runCLI(t, bin, "topic", "echo", "/cli_nodef", "nope_msgs/msg/Blob", "-domain", "69")
		if code != 2 || !strings.Contains(errOut, "unknown message type nope_msgs/msg/Blob") || !strings.Contains(errOut, "-raw") || out != "" {
			t.Errorf("echo of an unknown type: exit %d\nstdout %q\nstderr %q", code, out, errOut)
		}
		echo := startCLI(t, bin, "topic", "echo", "/cli_nodef", "nope_msgs/msg/Blob", "-raw", "-n", "2", "-domain", "69")
		pub := startCLI(t, bin, "topic", "pub", "/cli_nodef", "nope_msgs/msg/Blob", "-raw", "abc", "-times", "2", "-rate", "50", "-wait", "60", "-domain", "69")
		if code := echo.wait(t); code != 0 {
			t.Fatalf("echo exited %d\n%s", code, echo)
		}
		if got, want := echo.stdout.String(), "seq=1 size=3 bytes first=616263\nseq=2 size=3 bytes first=616263\n"; got != want {
			t.Errorf("echo -raw printed %q, want %q", got, want)
		}
		pub.wait(t)
		// echo without a type takes the topic's from the graph, and says
		// it cannot decode it
		pub = startCLI(t, bin, "topic", "pub", "/cli_nodef2", "-type", "nope_msgs/msg/Blob", "-size", "64", "-rate", "20", "-wait", "0", "-domain", "69")
		out, errOut, code = runCLI(t, bin, "topic", "echo", "/cli_nodef2", "-domain", "69")
		if code != 1 || !strings.Contains(errOut, "cannot decode the topic's type: unknown message type nope_msgs/msg/Blob") || out != "" {
			t.Errorf("echo of a topic of an unknown type: exit %d\nstdout %q\nstderr %q", code, out, errOut)
		}
		pub.interrupt(t)
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		// bytes that are not the topic's type: said on stderr, echo goes on
		echo := startCLI(t, bin, "topic", "echo", "/cli_bad", "std_msgs/msg/Int32", "-n", "2", "-domain", "69")
		pub := startCLI(t, bin, "topic", "pub", "/cli_bad", "std_msgs/msg/Int32", "-raw", "xy", "-times", "1", "-wait", "60", "-domain", "69")
		if code := pub.wait(t); code != 0 {
			t.Fatalf("pub exited %d\n%s", code, pub)
		}
		pub = startCLI(t, bin, "topic", "pub", "/cli_bad", "std_msgs/msg/Int32", "{data: 3}", "-times", "1", "-wait", "60", "-domain", "69")
		if code := echo.wait(t); code != 0 {
			t.Fatalf("echo exited %d\n%s", code, echo)
		}
		if got := echo.stdout.String(); got != "data: 3\n---\n" {
			t.Errorf("echo printed %q", got)
		}
		if !strings.Contains(echo.err.String(), "not a valid std_msgs/msg/Int32") {
			t.Errorf("echo did not report the malformed message:\n%s", echo)
		}
		pub.wait(t)
	})

	t.Run("BadValues", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"std_msgs/msg/String", "{data: x"}, "values for std_msgs/msg/String: syntax error at offset 8: missing '}'"},
			{[]string{"std_msgs/msg/Int32", "{data: abc}"}, "std_msgs/msg/Int32 field data: value does not match the schema: 'abc' is not an integer (int32)"},
			{[]string{"std_msgs/msg/UInt8", "{data: 300}"}, "field data"},
			{[]string{"geometry_msgs/msg/Twist", "{linear: {w: 1}}"}, `geometry_msgs/msg/Vector3 has no field "w" (it has x, y, z)`},
			{[]string{"sensor_msgs/msg/Image", "{data: [1, x]}"}, "field data[1]"},
			{[]string{"sensor_msgs/msg/CameraInfo", "{k: [1]}"}, "float64[9] takes exactly 9 elements, got 1"},
			{[]string{"cli_msgs/msg/Reading", "{codes: [1, 2, 3, 4, 5]}"}, "int16[<=4] takes at most 4 elements, got 5"},
			{[]string{"nope_msgs/msg/Blob", "{data: 1}"}, "unknown message type nope_msgs/msg/Blob: no definition in " + defs},
		} {
			args := append([]string{"topic", "pub", "/cli_badvalues"}, c.args...)
			out, errOut, code := runCLIEnv(t, bin, env, append(args, "-domain", "69")...)
			if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
				t.Errorf("rgaps %q: exit %d\nstdout %q\nstderr %q\nwant exit 2 and %q", args, code, out, errOut, c.want)
			}
		}
	})
}

// runCLIEnv is runCLI with more environment variables.
func runCLIEnv(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startCLIEnv(t, bin, env, args...)
	code = p.wait(t)
	return p.stdout.String(), p.err.String(), code
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

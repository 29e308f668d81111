package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// TestTopicValues: pub's values become the CDR the codec writes, in place
// in a buffer of the exact size.
func TestTopicValues(t *testing.T) {
	str := mustType(t, "std_msgs/msg/String")
	for in, want := range map[string]string{
		"hello":            "hello",
		"x y":              "x y",
		"it's":             "it's",
		"http://x":         "http://x",
		"data:hello":       "data:hello", // no blank after ':': a scalar, as YAML reads it
		"'quoted'":         "'quoted'",   // a lone value is taken as written
		"data: hello":      "hello",
		"{data: 'x y'}":    "x y",
		`{data: "a\tb"}`:   "a\tb",
		"{}":               "",
		"":                 "",
		"  data:  spaced ": "spaced",
	} {
		v, err := parseValues(str, in)
		if err != nil || v.Values[0] != want {
			t.Errorf("parseValues(String, %q) = %v, %v; want %q", in, v, err, want)
		}
	}
	for _, in := range []string{"{other: 1}", "metadata: x", "data: 'unterminated", `data: "bad \q escape"`, "a\x00b", "{data: [1]}"} {
		if v, err := parseValues(str, in); err == nil {
			t.Errorf("parseValues(String, %q) = %v, want an error", in, v)
		}
	}
	// the bytes: what rmw_fastrtps writes for std_msgs/String "hello"
	v, err := parseValues(str, "hello")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 14)
	if err := encodeInto(b, v, 0); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 1, 0, 0, 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0}; !bytes.Equal(b, want) {
		t.Errorf("hello: % x, want % x", b, want)
	}
	if err := encodeInto(make([]byte, 20), v, 0); err == nil {
		t.Error("encodeInto a buffer of the wrong size: no error")
	}
	// one-field messages of other types take their value alone too
	if v, err := parseValues(mustType(t, "std_msgs/msg/Int32"), "-5"); err != nil || v.Values[0] != int32(-5) {
		t.Errorf("Int32 -5: %v, %v", v, err)
	}
	if _, err := parseValues(mustType(t, "std_msgs/msg/Int32"), "five"); err == nil || !strings.Contains(err.Error(), "field data") {
		t.Errorf("Int32 five: %v, want an error naming the field", err)
	}
	tw, err := parseValues(mustType(t, "geometry_msgs/msg/Twist"), "{linear: {x: 0.5}, angular: {z: 1}}")
	if err != nil || schema.FlowString(tw, 0) != "{linear: {x: 0.5, y: 0.0, z: 0.0}, angular: {x: 0.0, y: 0.0, z: 1.0}}" {
		t.Errorf("Twist: %v, %v", tw, err)
	}
}

func mustType(t *testing.T, name string) *schema.Message {
	t.Helper()
	m, err := resolveMessage(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTopicResolve(t *testing.T) {
	if m, err := resolveMessage("std_msgs/String"); err != nil || m.FullName() != "std_msgs/msg/String" {
		t.Errorf("short name: %v, %v", m, err)
	}
	for _, name := range []string{"nope_msgs/msg/Nope", "a", "std_msgs/srv/String", "Std/msg/X"} {
		if _, err := resolveMessage(name); !errors.Is(err, errUnknownType) {
			t.Errorf("%s: %v, want errUnknownType", name, err)
		}
	}
}

func TestTopicEchoFormat(t *testing.T) {
	var b bytes.Buffer
	str := mustType(t, "std_msgs/msg/String")
	for in, want := range map[string]string{
		"hello":          "data: hello\n---\n",
		"":               "data: ''\n---\n",
		" padded":        "data: ' padded'\n---\n",
		"two\nlines":     "data: \"two\\nlines\"\n---\n",
		"Hello World: 1": "data: 'Hello World: 1'\n---\n",
		"héllo wörld":    "data: héllo wörld\n---\n",
	} {
		v := schema.New(str)
		v.Values[0] = in
		enc, err := schema.Encode(str, v)
		if err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := (echoFormat{}).printMessage(&b, str, 0, enc, nil); err != nil || b.String() != want {
			t.Errorf("echo of %q: %q, %v; want %q", in, b.String(), err, want)
		}
	}
	img := mustType(t, "sensor_msgs/msg/Image")
	v, err := parseValues(img, "{header: {frame_id: cam}, height: 1, width: 3, encoding: mono8, step: 3, data: [7, 8, 9]}")
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := schema.Encode(img, v)
	b.Reset()
	if err := (echoFormat{opt: schema.FormatOptions{TruncateLength: 2}}).printMessage(&b, img, 0, enc, nil); err != nil {
		t.Fatal(err)
	}
	if want := "  frame_id: ca...\nheight: 1\nwidth: 3\nencoding: mo...\nis_bigendian: 0\nstep: 3\ndata:\n- 7\n- 8\n- '... 1 more'\n---\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("Image:\n%s\nwant the end to be\n%s", b.String(), want)
	}
	b.Reset()
	if err := (echoFormat{flow: true}).printMessage(&b, img, 0, enc, nil); err != nil || !strings.HasSuffix(b.String(), "data: [7, 8, 9]}\n---\n") {
		t.Errorf("flow style: %q, %v", b.String(), err)
	}
	// a message published with a device loan: the other fields in the meta
	// block, the data in the payload (the rmw's split layout)
	v.Values[len(v.Values)-1] = []byte{}
	rest, _ := schema.Encode(img, v)
	meta := append([]byte{'R', 'G', 'D', 'M', 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}, rest...)
	var split strings.Builder
	if err := (echoFormat{flow: true}).printMessage(&split, img, 0, []byte{7, 8, 9}, meta); err != nil || !strings.HasSuffix(split.String(), "data: [7, 8, 9]}\n---\n") {
		t.Errorf("split message: %q, %v", split.String(), err)
	}
	meta[8] = 3 // encoding: a string, not a uint8[]
	if err := (echoFormat{}).printMessage(&split, img, 0, []byte{7}, meta); err == nil {
		t.Error("a meta block naming a string field decoded")
	}
	// bytes that are not this type: an error, nothing printed
	b.Reset()
	if err := (echoFormat{}).printMessage(&b, img, 0, []byte{0, 1, 0, 0, 1}, nil); err == nil || b.Len() != 0 {
		t.Errorf("malformed Image: printed %q, %v", b.String(), err)
	}
}

// TestTopicPlainLayout: plain types' messages are written and read as the
// rmw library lays them out, [4 reserved][CDR header][body]; the others
// as bare CDR.
func TestTopicPlainLayout(t *testing.T) {
	for name, want := range map[string]int{
		"std_msgs/msg/Int32":            plainPrefix,
		"geometry_msgs/msg/Twist":       plainPrefix,
		"builtin_interfaces/msg/Time":   plainPrefix,
		"std_msgs/msg/String":           0,
		"std_msgs/msg/Header":           0,
		"geometry_msgs/msg/PoseStamped": 0,
	} {
		if got := payloadPrefix(mustType(t, name)); got != want {
			t.Errorf("payloadPrefix(%s) = %d, want %d", name, got, want)
		}
	}

	i32 := mustType(t, "std_msgs/msg/Int32")
	v, err := parseValues(i32, "-2")
	if err != nil {
		t.Fatal(err)
	}
	prefix := payloadPrefix(i32)
	n, err := payloadSize(v, prefix)
	if err != nil || n != 12 {
		t.Fatalf("payloadSize(Int32) = %d, %v; want 12", n, err)
	}
	b := bytes.Repeat([]byte{0xee}, n) // a loan holds what it held before
	if err := encodeInto(b, v, prefix); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 0, 0, 1, 0, 0, 0xfe, 0xff, 0xff, 0xff}; !bytes.Equal(b, want) {
		t.Errorf("Int32 -2: % x, want % x", b, want)
	}
	if err := encodeInto(make([]byte, 8), v, prefix); err == nil {
		t.Error("encodeInto without room for the body: no error")
	}

	var out bytes.Buffer
	b[0] = 1 // the reserved bytes are not read
	if err := (echoFormat{}).printMessage(&out, i32, prefix, b, nil); err != nil || out.String() != "data: -2\n---\n" {
		t.Errorf("echo of a plain Int32: %q, %v", out.String(), err)
	}
	// bare CDR on a plain type's topic is not what rmw nodes send: refused
	out.Reset()
	if err := (echoFormat{}).printMessage(&out, i32, prefix, b[prefix:], nil); err == nil || out.Len() != 0 {
		t.Errorf("bare CDR as a plain Int32: printed %q, %v", out.String(), err)
	}
	if err := (echoFormat{}).printMessage(&out, i32, prefix, b[:3], nil); err == nil || !strings.Contains(err.Error(), "prefix") || out.Len() != 0 {
		t.Errorf("3 bytes as a plain Int32: printed %q, %v", out.String(), err)
	}
}

func TestTopicSummaryLine(t *testing.T) {
	b := make([]byte, 40)
	for i := range b {
		b[i] = byte(i)
	}
	if got, want := summaryLine(7, b), "seq=7 size=40 bytes first=000102030405060708090a0b0c0d0e0f"; got != want {
		t.Errorf("summaryLine = %q, want %q", got, want)
	}
	if got, want := summaryLine(1, []byte{0xab}), "seq=1 size=1 bytes first=ab"; got != want {
		t.Errorf("summaryLine = %q, want %q", got, want)
	}
}

func TestTopicSizeAndDomainFlags(t *testing.T) {
	var s sizeFlag
	for in, want := range map[string]int64{"4096": 4096, "64K": 64 << 10, "4MiB": 4 << 20, "1G": 1 << 30} {
		if err := s.Set(in); err != nil || int64(s) != want {
			t.Errorf("size %q = %d, %v; want %d", in, s, err, want)
		}
	}
	for _, in := range []string{"", "-1", "4X", "M"} {
		if err := s.Set(in); err == nil {
			t.Errorf("size %q accepted", in)
		}
	}
	for n, want := range map[int64]string{0: "0", 100: "100", 4096: "4KiB", 4 << 20: "4MiB", 3 << 30: "3GiB", 1025: "1025"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
	var d domainFlag
	if d.String() != "" || d.options(zerocopy.Config{}).Domain != nil {
		t.Error("an unset domain flag is not empty")
	}
	if err := d.Set("42"); err != nil || *d.options(zerocopy.Config{}).Domain != 42 {
		t.Errorf("domain 42: %v", err)
	}
	for _, in := range []string{"-1", "x", "4294967296"} {
		if err := d.Set(in); err == nil {
			t.Errorf("domain %q accepted", in)
		}
	}
}

// isUsage tells errors that make main exit 2.
func isUsage(err error) bool { return errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) }

func TestTopicParsePub(t *testing.T) {
	o, err := parsePub([]string{"chatter", "-rate", "20", "-times", "3", "data: hi"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.topic != "/chatter" || o.typ != typeString || o.values != "data: hi" || o.msg == nil || o.rate != 20 || o.times != 3 || o.wait != time.Second {
		t.Errorf("parsed %+v", o)
	}
	if o.qos != qos.Default() {
		t.Errorf("default QoS is %v", o.qos)
	}
	o, err = parsePub([]string{"-size", "4MiB", "/big", "-qos", "sensor_data", "-domain", "7", "-once", "-wait", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.typ != typeBytes || o.size != 4<<20 || o.qos != qos.SensorData() || o.times != 1 || o.wait != 0 || !o.domain.set || o.domain.id != 7 {
		t.Errorf("parsed %+v", o)
	}
	o, err = parsePub([]string{"/t", "std_msgs/String", "{data: 'x y'}"}, io.Discard)
	if err != nil || o.typ != typeString || o.values != "{data: 'x y'}" {
		t.Errorf("ros2 form: %+v, %v", o, err)
	}
	o, err = parsePub([]string{"/t", "geometry_msgs/msg/Twist"}, io.Discard)
	if err != nil || o.typ != "geometry_msgs/msg/Twist" || o.values != "" || o.msg == nil {
		t.Errorf("type alone: %+v, %v", o, err)
	}
	o, err = parsePub([]string{"/t", "-type", "foo/msg/Raw", "-raw", "--", "-5"}, io.Discard)
	if err != nil || o.typ != "foo/msg/Raw" || o.values != "-5" || !o.raw || o.msg != nil {
		t.Errorf("raw data after --: %+v, %v", o, err)
	}
	o, err = parsePub([]string{"/t", "-size", "1K", "-type", "sensor_msgs/msg/Image"}, io.Discard)
	if err != nil || o.size != 1024 || o.msg != nil {
		t.Errorf("-size of any type: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{},
		{"-h"},
		{"/t", "-nosuchflag"},
		{"/bad name", "x"},
		{"1abc"},
		{"/t/", "x"},
		{"/t", "-rate", "-1", "x"},
		{"/t", "-rate", "NaN", "x"},
		{"/t", "-times", "-2", "x"},
		{"/t", "-wait", "-1", "x"},
		{"/t", "-qos", "fastest", "x"},
		{"/t", "-type", "foo/msg/Raw"},
		{"/t", "-type", "foo/msg/Raw", "x"},
		{"/t", "-raw"},
		{"/t", "-raw", "-size", "1K", "x"},
		{"/t", "std_msgs/msg/Int32", "{data: lots}"},
		{"/t", "geometry_msgs/msg/Twist", "{linear: {w: 1}}"},
		{"/t", "std_msgs/msg/String", "{data: x"},
		{"/t", "-size", "0"},
		{"/t", "-size", "1K", "-type", "foo/msg/Raw", "data"},
		{"/t", "-type", "a b", "x"},
		{"/t", "a/msg/B", "x", "-type", "c/msg/D"},
		{"/t", "a", "b", "c"},
		{"/t", "a\x00b"},
		{"/t", "-size", "lots"},
	} {
		if _, err := parsePub(args, io.Discard); !isUsage(err) {
			t.Errorf("pub %q: %v, want a usage error", args, err)
		}
	}
}

func TestTopicParseEchoHzInfoList(t *testing.T) {
	e, err := parseEcho([]string{"/t", "-n", "3"}, io.Discard)
	if err != nil || e.topic != "/t" || e.n != 3 || e.typ != "" || e.qosName != "" {
		t.Errorf("echo: %+v, %v", e, err)
	}
	e, err = parseEcho([]string{"-raw", "ns/t", "std_msgs/msg/String", "-qos", "sensor_data"}, io.Discard)
	if err != nil || e.topic != "/ns/t" || e.typ != typeString || !e.raw || e.qosName != "sensor_data" {
		t.Errorf("echo: %+v, %v", e, err)
	}
	e, err = parseEcho([]string{"/t", "nope_msgs/msg/X", "-raw", "-no-arr", "-truncate-length", "0"}, io.Discard)
	if err != nil || e.typ != "nope_msgs/msg/X" || !e.raw || !e.format.opt.NoArr || e.format.opt.TruncateLength != 0 {
		t.Errorf("echo -raw of an unknown type: %+v, %v", e, err)
	}
	e, err = parseEcho([]string{"/t", "std_msgs/Int32"}, io.Discard)
	if err != nil || e.typ != "std_msgs/msg/Int32" || e.format.opt.TruncateLength != 128 {
		t.Errorf("echo of a short type name: %+v, %v", e, err)
	}
	h, err := parseHz([]string{"/t", "-window", "50"}, io.Discard)
	if err != nil || h.topic != "/t" || h.window != 50 {
		t.Errorf("hz: %+v, %v", h, err)
	}
	i, err := parseInfo([]string{"-v", "/a/b"}, io.Discard)
	if err != nil || i.topic != "/a/b" || !i.verbose {
		t.Errorf("info: %+v, %v", i, err)
	}
	l, err := parseList([]string{"-t", "-domain", "3"}, io.Discard)
	if err != nil || !l.types || l.domain.id != 3 {
		t.Errorf("list: %+v, %v", l, err)
	}
	bad := map[string][][]string{
		"echo": {{}, {"/t", "-n", "-1"}, {"/t", "-qos", "nope"}, {"/t", "a/msg/B", "-type", "c/msg/D"}, {"/t", "a", "b"}, {"//t"},
			{"/t", "nope_msgs/msg/X"}, {"/t", "-truncate-length", "-1"}},
		"hz":   {{}, {"/t", "-window", "1"}, {"/t", "-window", "x"}, {"/t", "-qos", "nope"}},
		"info": {{}, {"/a", "/b"}, {"/a b"}, {"/t", "-domain", "-3"}},
		"list": {{"extra"}, {"-x"}},
	}
	for verb, cases := range bad {
		for _, args := range cases {
			var err error
			switch verb {
			case "echo":
				_, err = parseEcho(args, io.Discard)
			case "hz":
				_, err = parseHz(args, io.Discard)
			case "info":
				_, err = parseInfo(args, io.Discard)
			case "list":
				_, err = parseList(args, io.Discard)
			}
			if !isUsage(err) {
				t.Errorf("%s %q: %v, want a usage error", verb, args, err)
			}
		}
	}
}

func TestTopicHzWindow(t *testing.T) {
	w := newHzWindow(4)
	if _, ok := w.stats(); ok {
		t.Fatal("stats of an empty window")
	}
	t0 := time.Unix(1000, 0)
	w.add(t0, 100)
	if _, ok := w.stats(); ok {
		t.Fatal("stats of one message")
	}
	// Periods 10, 20, 30, 40 ms; the window keeps the last 4 messages, so
	// the 10 ms period falls out.
	at := t0
	for i, p := range []time.Duration{10, 20, 30, 40} {
		at = at.Add(p * time.Millisecond)
		w.add(at, 1000*(i+1))
	}
	st, ok := w.stats()
	if !ok {
		t.Fatal("no stats")
	}
	if st.window != 4 || st.min != 20*time.Millisecond || st.max != 40*time.Millisecond || st.mean != 30*time.Millisecond {
		t.Errorf("stats %+v", st)
	}
	if st.rate < 33.3 || st.rate > 33.4 {
		t.Errorf("rate %v, want 33.3", st.rate)
	}
	// 2000+3000+4000 bytes after the first message, over 90 ms.
	if want := 9000 / 0.09; st.bandwidth < want*0.999 || st.bandwidth > want*1.001 {
		t.Errorf("bandwidth %v, want %v", st.bandwidth, want)
	}
	if d := st.stddev - 8164966*time.Nanosecond; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("std dev %v, want 8.165ms", st.stddev)
	}
	if !strings.Contains(st.String(), "average rate: 33.333 msgs/s") {
		t.Errorf("line %q", st.String())
	}
	// Messages with the same timestamp give no rate, not a division by zero.
	z := newHzWindow(3)
	z.add(t0, 1)
	z.add(t0, 1)
	if _, ok := z.stats(); ok {
		t.Error("rate of simultaneous messages")
	}
	for bps, want := range map[float64]string{12: "12 B/s", 1500: "1.500 KB/s", 2.5e6: "2.500 MB/s", 3e9: "3.000 GB/s"} {
		if got := bandwidth(bps); got != want {
			t.Errorf("bandwidth(%v) = %q, want %q", bps, got, want)
		}
	}
}

func TestTopicHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 4 << 20: "4.0 MiB", 3 << 30: "3.0 GiB", 5 << 40: "5120.0 GiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

func TestTopicCDRStringEncode(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []byte
	}{
		{"hello", []byte{0, 1, 0, 0, 6, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0}},
		{"", []byte{0, 1, 0, 0, 1, 0, 0, 0, 0}},
		{"é", []byte{0, 1, 0, 0, 3, 0, 0, 0, 0xc3, 0xa9, 0}},
	} {
		got := encodeCDRString(c.in)
		if !bytes.Equal(got, c.want) {
			t.Errorf("encodeCDRString(%q) = % x, want % x", c.in, got, c.want)
		}
		if len(got) != cdrStringSize(c.in) {
			t.Errorf("cdrStringSize(%q) = %d, encoded %d bytes", c.in, cdrStringSize(c.in), len(got))
		}
	}
}

func TestTopicCDRStringRoundTrip(t *testing.T) {
	for _, s := range []string{"", "a", "hello world", "Hello World: 1", strings.Repeat("x", 70000), "日本語\ttab"} {
		got, err := decodeCDRString(encodeCDRString(s))
		if err != nil || got != s {
			t.Errorf("round trip of %.20q: got %.20q, %v", s, got, err)
		}
	}
}

func TestTopicCDRStringDecode(t *testing.T) {
	ok := []struct {
		name string
		in   []byte
		want string
	}{
		{"big endian", []byte{0, 0, 0, 0, 0, 0, 0, 3, 'h', 'i', 0}, "hi"},
		{"padding to 4 bytes", []byte{0, 1, 0, 0, 3, 0, 0, 0, 'h', 'i', 0, 0}, "hi"},
		{"three padding bytes", []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}, ""},
		{"length 0", []byte{0, 1, 0, 0, 0, 0, 0, 0}, ""},
		{"options set", []byte{0, 1, 0, 3, 2, 0, 0, 0, 'x', 0}, "x"},
	}
	for _, c := range ok {
		got, err := decodeCDRString(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	bad := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"short header", []byte{0, 1, 0, 0, 1, 0}},
		{"parameter list CDR", []byte{0, 3, 0, 0, 1, 0, 0, 0, 0}},
		{"not CDR", []byte{'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 0}},
		{"length past the end", []byte{0, 1, 0, 0, 9, 0, 0, 0, 'h', 'i', 0}},
		{"huge length", []byte{0, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 'h', 0}},
		{"no NUL", []byte{0, 1, 0, 0, 2, 0, 0, 0, 'h', 'i'}},
		{"trailing data", []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4}},
	}
	for _, c := range bad {
		if got, err := decodeCDRString(c.in); err == nil {
			t.Errorf("%s: decoded %q, want an error", c.name, got)
		}
	}
}

func TestTopicStringData(t *testing.T) {
	for in, want := range map[string]string{
		"hello":                 "hello",
		"data: hello":           "hello",
		"data:hello world":      "hello world",
		"{data: hello}":         "hello",
		"{data: 'it''s'}":       "it's",
		`data: "a\tb"`:          "a\tb",
		"{}":                    "",
		"":                      "",
		"{other: 1}":            "{other: 1}",
		"metadata: x":           "metadata: x",
		"  data:  spaced  ":     "spaced",
		"data: 'unterminated":   "'unterminated",
		`data: "bad \q escape"`: `"bad \q escape"`,
	} {
		if got := stringData(in); got != want {
			t.Errorf("stringData(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTopicEchoLines(t *testing.T) {
	for in, want := range map[string]string{
		"hello":       "data: hello",
		"":            "data: ''",
		" padded":     `data: " padded"`,
		"two\nlines":  `data: "two\nlines"`,
		"héllo wörld": "data: héllo wörld",
	} {
		if got := stringLine(in); got != want {
			t.Errorf("stringLine(%q) = %q, want %q", in, got, want)
		}
	}
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
	if d.String() != "" || d.options(rgaps.EngineConfig{}).Domain != nil {
		t.Error("an unset domain flag is not empty")
	}
	if err := d.Set("42"); err != nil || *d.options(rgaps.EngineConfig{}).Domain != 42 {
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
	if o.topic != "/chatter" || o.typ != typeString || o.text != "hi" || o.rate != 20 || o.times != 3 || o.wait != time.Second {
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
	o, err = parsePub([]string{"/t", "std_msgs/msg/String", "{data: 'x y'}"}, io.Discard)
	if err != nil || o.typ != typeString || o.text != "x y" {
		t.Errorf("ros2 form: %+v, %v", o, err)
	}
	o, err = parsePub([]string{"/t", "-type", "foo/msg/Raw", "--", "-5"}, io.Discard)
	if err != nil || o.typ != "foo/msg/Raw" || o.text != "-5" {
		t.Errorf("raw data after --: %+v, %v", o, err)
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
		{"/t", "-size", "1K", "-type", typeString},
		{"/t", "-type", "foo/msg/Raw"},
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
		"echo": {{}, {"/t", "-n", "-1"}, {"/t", "-qos", "nope"}, {"/t", "a/msg/B", "-type", "c/msg/D"}, {"/t", "a", "b"}, {"//t"}},
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

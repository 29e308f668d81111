package benchutil

import "testing"

// From bench/local's TestParseAndFormat.
func TestParseAndFormat(t *testing.T) {
	got, err := ParseSizes("64, 4K,1MiB,4MB,64M")
	if err != nil {
		t.Fatal(err)
	}
	want := []int{64, 4 << 10, 1 << 20, 4 << 20, 64 << 20}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ParseSizes: %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"", "x", "0", "-1"} {
		if _, err := ParseSizes(bad); err == nil {
			t.Errorf("ParseSizes(%q) succeeded", bad)
		}
	}
	if n, err := ParseInts("1,2,8"); err != nil || len(n) != 3 || n[2] != 8 {
		t.Fatalf("ParseInts: %v %v", n, err)
	}
	if _, err := ParseInts("1,0"); err == nil {
		t.Error("ParseInts accepted 0")
	}
	for n, s := range map[int]string{64: "64 B", 4096: "4 KiB", 1 << 20: "1 MiB", 64 << 20: "64 MiB", 1000: "1000 B"} {
		if FormatSize(n) != s {
			t.Errorf("FormatSize(%d) = %q, want %q", n, FormatSize(n), s)
		}
	}
}

// From bench/gpu's TestFormat.
func TestFormat(t *testing.T) {
	for ns, want := range map[int64]string{0: "0.00", 1234: "1.23", 12345: "12.3", 1234567: "1,235", -1500: "-1.50", -123456789: "-123,457", 43677000: "43,677"} {
		if got := US(ns); got != want {
			t.Errorf("US(%d) = %q, want %q", ns, got, want)
		}
	}
	if got := Times(13.54); got != "13.5×" {
		t.Errorf("Times %q", got)
	}
}

package names

import "testing"

func TestFullNodeNameRoundTrip(t *testing.T) {
	for _, c := range []struct{ name, ns, fq string }{
		{"talker", "/", "/talker"},
		{"talker", "", "/talker"},
		{"cam", "/robot", "/robot/cam"},
		{"cam", "/a/b", "/a/b/cam"},
	} {
		if got := FullNodeName(c.name, c.ns); got != c.fq {
			t.Errorf("FullNodeName(%q, %q) = %q, want %q", c.name, c.ns, got, c.fq)
		}
		ns := c.ns
		if ns == "" {
			ns = "/"
		}
		if n, s := SplitFullNodeName(c.fq); n != c.name || s != ns {
			t.Errorf("SplitFullNodeName(%q) = %q, %q, want %q, %q", c.fq, n, s, c.name, ns)
		}
	}
}

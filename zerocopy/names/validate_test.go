package names

import (
	"errors"
	"strings"
	"testing"
)

// nameCase is one validation case; index < 0 means the name is valid.
type nameCase struct {
	name   string
	index  int
	reason string // substring of Reason; ignored for valid names
}

func runCases(t *testing.T, fn func(string) error, kind string, cases []nameCase) {
	t.Helper()
	for _, tt := range cases {
		err := fn(tt.name)
		if tt.index < 0 {
			if err != nil {
				t.Errorf("%q: unexpected error: %v", short(tt.name), err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%q: error = %v, want *Error", short(tt.name), err)
			continue
		}
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("%q: error does not match ErrInvalidName", short(tt.name))
		}
		if e.Kind != kind || e.Name != tt.name || e.Index != tt.index || !strings.Contains(e.Reason, tt.reason) {
			t.Errorf("%q: got {%s, index %d, %q}, want {%s, index %d, ~%q}",
				short(tt.name), e.Kind, e.Index, e.Reason, kind, tt.index, tt.reason)
		}
	}
}

func short(s string) string {
	if len(s) > 40 {
		return s[:20] + "..." + s[len(s)-10:]
	}
	return s
}

func TestConstants(t *testing.T) {
	if MaxTopicNameLength != 247 || MaxNamespaceLength != 245 || MaxNodeNameLength != 255 || MaxShmSafeLength != 246 {
		t.Fatalf("limits = %d %d %d %d", MaxTopicNameLength, MaxNamespaceLength, MaxNodeNameLength, MaxShmSafeLength)
	}
}

func TestErrorMessage(t *testing.T) {
	err := ValidateFullTopicName("/a//b")
	want := `invalid topic name "/a//b": must not contain repeated '/' (at index 3)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if errors.Is(err, errors.New("names: invalid name")) {
		t.Fatal("Is matches an unrelated error")
	}
}

func TestValidateFullTopicName(t *testing.T) {
	maxName := "/" + strings.Repeat("a", MaxTopicNameLength-1)
	runCases(t, ValidateFullTopicName, "topic name", []nameCase{
		{"/chatter", -1, ""},
		{"/a", -1, ""},
		{"/_", -1, ""},
		{"/ns/chatter", -1, ""},
		{"/ns_1/Chatter_2/x9", -1, ""},
		{"/_hidden/topic", -1, ""},
		{"/a/_b/__c", -1, ""},
		{"/rt/a", -1, ""},
		{maxName, -1, ""},

		{"", 0, "must not be empty"},
		{"chatter", 0, "must be absolute"},
		{"~/chatter", 0, "must be absolute"},
		{"/", 0, "must not end with '/'"},
		{"/ns/", 3, "must not end with '/'"},
		{"ns/", 0, "must be absolute"}, // absolute checked before trailing '/'
		{"/a b", 2, "not ' '"},
		{"/a-b", 2, "not '-'"},
		{"/a.b", 2, "not '.'"},
		{"/{node}", 1, "not '{'"},
		{"/~", 1, "not '~'"},
		{"/caf\xc3\xa9", 4, "not '\\xc3'"}, // bytes, not runes
		{"/a\x00b", 2, "not '\\x00'"},
		{"/a'b", 2, `not '\''`},
		{"/a\\b", 2, `not '\\'`},
		{"//a/b", 1, "repeated '/'"},
		{"/a//b", 3, "repeated '/'"},
		{"/a//1", 3, "repeated '/'"}, // first problem from the left wins
		{"/1a", 1, "starts with a digit"},
		{"/a/9", 3, "starts with a digit"},
		{"/a/b2/3c", 6, "starts with a digit"},
		{"/a//b/", 5, "must not end with '/'"}, // trailing '/' checked before '//'
		{"/a.b//c", 2, "not '.'"},              // characters checked before '//'
		{maxName + "a", MaxTopicNameLength - 1, "longer than 247"},
		{"/" + strings.Repeat("a", 300), MaxTopicNameLength - 1, "longer than 247"},
		{"/" + strings.Repeat("a", 300) + "/", 301, "must not end"}, // length checked last
	})
}

func TestValidateNamespace(t *testing.T) {
	maxNS := "/" + strings.Repeat("n", MaxNamespaceLength-1)
	runCases(t, ValidateNamespace, "namespace", []nameCase{
		{"/", -1, ""},
		{"/ns", -1, ""},
		{"/a/b/c", -1, ""},
		{"/_private", -1, ""},
		{maxNS, -1, ""},

		{"", 0, "must not be empty"},
		{"ns", 0, "must be absolute"},
		{"/ns/", 3, "must not end with '/'"},
		{"//", 1, "must not end with '/'"},
		{"/a//b", 3, "repeated '/'"},
		{"/a/1", 3, "starts with a digit"},
		{"/a-b", 2, "not '-'"},
		{maxNS + "n", MaxNamespaceLength - 1, "longer than 245"},
		{maxNS + "nn", MaxNamespaceLength - 1, "longer than 245"},
	})
}

func TestValidateNodeName(t *testing.T) {
	maxNode := strings.Repeat("n", MaxNodeNameLength)
	runCases(t, ValidateNodeName, "node name", []nameCase{
		{"talker", -1, ""},
		{"_talker", -1, ""},
		{"T2_", -1, ""},
		{"a", -1, ""},
		{maxNode, -1, ""},

		{"", 0, "must not be empty"},
		{"1talker", 0, "must not start with a digit"},
		{"9", 0, "must not start with a digit"},
		{"/talker", 0, "not '/'"},
		{"talk er", 4, "not ' '"},
		{"talker~", 6, "not '~'"},
		{"1-a", 1, "not '-'"}, // characters checked before the leading digit
		{"ns/talker", 2, "not '/'"},
		{maxNode + "n", MaxNodeNameLength - 1, "longer than 255"},
	})
}

func TestValidateTopicName(t *testing.T) {
	runCases(t, ValidateTopicName, "topic name", []nameCase{
		{"chatter", -1, ""},
		{"/chatter", -1, ""},
		{"ns/chatter", -1, ""},
		{"~", -1, ""},
		{"~/chatter", -1, ""},
		{"{node}", -1, ""},
		{"{node}/chatter", -1, ""},
		{"/{ns}/a{node}b", -1, ""},
		{"{sub_1}", -1, ""},
		{"{}", -1, ""},   // empty substitution: caught by expansion
		{"a//b", -1, ""}, // '//' is caught after expansion
		{"_a", -1, ""},

		{"", 0, "must not be empty"},
		{"1abc", 0, "starts with a digit"},
		{"1abc/", 0, "starts with a digit"}, // digit checked before trailing '/'
		{"abc/", 3, "must not end with '/'"},
		{"/", 0, "must not end with '/'"},
		{"~/", 1, "must not end with '/'"},
		{"a b", 1, "not ' '"},
		{"a.b", 1, "not '.'"},
		{"a/~", 2, "'~' except as the first"},
		{"~~", 1, "'~' except as the first"},
		{"{a/b}", 2, "substitution must contain only"},
		{"{a-b}", 2, "substitution must contain only"},
		{"{a{b}}", 2, "must not be nested"},
		{"a}", 1, "unmatched '}'"},
		{"{a}}", 3, "unmatched '}'"},
		{"a/{b", 2, "unmatched '{'"},
		{"{1a}", 1, "substitution must not start with a digit"},
		{"{a1}", -1, ""},
		{"a/1b", 2, "starts with a digit"},
		{"~a", 1, "'~' must be followed by '/'"},
		{"~a/1", 1, "'~' must be followed by '/'"},
		{"~/1", 2, "starts with a digit"},
	})
}

func TestIsHidden(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"/chatter", false},
		{"/a/b", false},
		{"/a_b/c_", false},
		{"/_chatter", true},
		{"/ns/_chatter", true},
		{"/_ns/chatter", true},
		{"_relative", true},
		{"~/_private", true},
		{"", false},
		{"/", false},
	}
	for _, tt := range tests {
		if got := IsHidden(tt.name); got != tt.want {
			t.Errorf("IsHidden(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzValidateFullTopicName(f *testing.F) {
	for _, s := range []string{
		"", "/", "/a", "/a/b", "//", "/a//b", "/1", "/a/1b", "/_x", "a", "/a b", "/a\xff",
		"/" + strings.Repeat("x", MaxTopicNameLength), "/" + strings.Repeat("x/", 130) + "x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := ValidateFullTopicName(name)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrInvalidName) {
				t.Fatalf("error %v is not a *Error matching ErrInvalidName", err)
			}
			if e.Name != name || e.Index < 0 || (e.Index >= len(name) && len(name) > 0) {
				t.Fatalf("bad error fields %+v for %q", e, name)
			}
			if _, err := ShmSafe(name); err == nil {
				t.Fatalf("ShmSafe accepted invalid %q", name)
			}
			return
		}
		// Independent restatement of the rules for valid names.
		if len(name) < 2 || len(name) > MaxTopicNameLength || name[0] != '/' || name[len(name)-1] == '/' {
			t.Fatalf("accepted %q with bad shape", name)
		}
		for _, tok := range strings.Split(name[1:], "/") {
			if tok == "" || isDigit(tok[0]) {
				t.Fatalf("accepted %q with bad token %q", name, tok)
			}
			for i := range len(tok) {
				if !isAlnum(tok[i]) && tok[i] != '_' {
					t.Fatalf("accepted %q with byte %q", name, tok[i])
				}
			}
		}
		// Valid names are valid namespaces if short enough, and round-trip
		// through the shm-safe form.
		if len(name) <= MaxNamespaceLength {
			if err := ValidateNamespace(name); err != nil {
				t.Fatalf("valid topic %q is not a valid namespace: %v", name, err)
			}
		}
		s, err := ShmSafe(name)
		if err != nil {
			t.Fatalf("ShmSafe(%q): %v", name, err)
		}
		back, err := FromShmSafe(s)
		if err != nil || back != name {
			t.Fatalf("FromShmSafe(%q) = %q, %v; want %q", s, back, err, name)
		}
		if ex, err := ExpandTopicName(name, "node", "/ns"); err != nil || ex != name {
			t.Fatalf("ExpandTopicName(%q) = %q, %v", name, ex, err)
		}
	})
}

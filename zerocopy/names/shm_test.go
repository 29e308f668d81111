package names

import (
	"errors"
	"strings"
	"testing"
)

func TestShmSafeRoundTrip(t *testing.T) {
	long := "/" + strings.Repeat("a", MaxTopicNameLength-1)
	tests := []struct{ topic, safe string }{
		{"/chatter", "chatter"},
		{"/ns/chatter", "ns.chatter"},
		{"/a/b/c", "a.b.c"},
		{"/_hidden/_x", "_hidden._x"},
		{"/A9_/b", "A9_.b"},
		{long, long[1:]},
	}
	for _, tt := range tests {
		got, err := ShmSafe(tt.topic)
		if err != nil || got != tt.safe {
			t.Errorf("ShmSafe(%q) = %q, %v; want %q", short(tt.topic), short(got), err, short(tt.safe))
			continue
		}
		if len(got) > MaxShmSafeLength {
			t.Errorf("ShmSafe(%q) longer than MaxShmSafeLength", short(tt.topic))
		}
		for i := range len(got) {
			if c := got[i]; !isAlnum(c) && c != '_' && c != '.' {
				t.Errorf("ShmSafe(%q) contains %q", tt.topic, c)
			}
		}
		back, err := FromShmSafe(got)
		if err != nil || back != tt.topic {
			t.Errorf("FromShmSafe(%q) = %q, %v; want %q", short(got), short(back), err, short(tt.topic))
		}
	}
}

func TestShmSafeRejectsInvalidTopic(t *testing.T) {
	for _, topic := range []string{"", "/", "chatter", "/a//b", "/a.b", "/1", "/" + strings.Repeat("a", MaxTopicNameLength)} {
		got, err := ShmSafe(topic)
		var e *Error
		if !errors.As(err, &e) || e.Kind != "topic name" || got != "" {
			t.Errorf("ShmSafe(%q) = %q, %v; want topic name error", short(topic), got, err)
		}
	}
}

func TestFromShmSafeErrors(t *testing.T) {
	runCases(t, func(s string) error { _, err := FromShmSafe(s); return err }, "shm-safe topic name", []nameCase{
		{"a", -1, ""},
		{"a.b", -1, ""},
		{"", 0, "must not be empty"},
		{"a/b", 1, "not '/'"},
		{"/a", 0, "not '/'"},
		{"a-b", 1, "not '-'"},
		{".a", 0, `maps to "//a", which must not contain repeated '/'`},
		{"a.", 1, "must not end with '/'"},
		{".", 0, "must not end with '/'"},
		{"a..b", 2, "repeated '/'"},
		{"1a", 0, "starts with a digit"},
		{"a.2", 2, "starts with a digit"},
		{strings.Repeat("a", MaxShmSafeLength), -1, ""},
		{strings.Repeat("a", MaxShmSafeLength+1), MaxShmSafeLength - 1, "longer than 247"},
	})
}

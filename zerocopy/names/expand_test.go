package names

import (
	"errors"
	"strings"
	"testing"
)

func TestExpandTopicName(t *testing.T) {
	tests := []struct {
		name, node, ns string
		want           string
	}{
		// Absolute names pass through.
		{"/chatter", "talker", "/", "/chatter"},
		{"/chatter", "talker", "/ns", "/chatter"},
		{"/a/b", "talker", "/ns", "/a/b"},
		// Relative names get the namespace.
		{"chatter", "talker", "/", "/chatter"},
		{"chatter", "talker", "/ns", "/ns/chatter"},
		{"a/b", "talker", "/ns/sub", "/ns/sub/a/b"},
		{"_hidden", "talker", "/ns", "/ns/_hidden"},
		// Private names.
		{"~", "talker", "/", "/talker"},
		{"~", "talker", "/ns", "/ns/talker"},
		{"~/chatter", "talker", "/", "/talker/chatter"},
		{"~/chatter", "talker", "/ns/sub", "/ns/sub/talker/chatter"},
		// Substitutions.
		{"{node}", "talker", "/", "/talker"},
		{"{node}", "talker", "/ns", "/ns/talker"},
		{"{node}/chatter", "talker", "/ns", "/ns/talker/chatter"},
		{"/{node}/chatter", "talker", "/ns", "/talker/chatter"},
		{"{ns}/chatter", "talker", "/ns", "/ns/chatter"},
		{"{namespace}/chatter", "talker", "/ns", "/ns/chatter"},
		{"{ns}/{node}/{node}", "n", "/a/b", "/a/b/n/n"},
		{"x{node}y", "talker", "/", "/xtalkery"},
		{"~/{node}", "talker", "/ns", "/ns/talker/talker"},
		{"{ns}{node}", "talker", "/ns", "/nstalker"},
	}
	for _, tt := range tests {
		got, err := ExpandTopicName(tt.name, tt.node, tt.ns)
		if err != nil || got != tt.want {
			t.Errorf("ExpandTopicName(%q, %q, %q) = %q, %v; want %q", tt.name, tt.node, tt.ns, got, err, tt.want)
		}
	}
}

func TestExpandTopicNameErrors(t *testing.T) {
	tests := []struct {
		name, node, ns string
		kind, errName  string
		index          int
		reason         string
	}{
		{"", "n", "/", "topic name", "", 0, "must not be empty"},
		{"~a", "n", "/", "topic name", "~a", 1, "'~' must be followed by '/'"},
		{"a/{b", "n", "/", "topic name", "a/{b", 2, "unmatched '{'"},
		{"chatter", "", "/", "node name", "", 0, "must not be empty"},
		{"chatter", "1n", "/", "node name", "1n", 0, "start with a digit"},
		{"chatter", "n", "", "namespace", "", 0, "must not be empty"},
		{"chatter", "n", "ns", "namespace", "ns", 0, "must be absolute"},
		{"chatter", "n", "/ns/", "namespace", "/ns/", 3, "must not end"},
		{"{foo}/x", "n", "/", "topic name", "{foo}/x", 0, `unknown substitution "{foo}"`},
		{"a/{node}/{bar}", "n", "/", "topic name", "a/{node}/{bar}", 9, `unknown substitution "{bar}"`},
		{"{}", "n", "/", "topic name", "{}", 0, `unknown substitution "{}"`},
		// Problems that only show after expansion are reported on the result.
		{"{ns}/x", "n", "/", "topic name", "//x", 1, "repeated '/'"},
		{"a//b", "n", "/ns", "topic name", "/ns/a//b", 6, "repeated '/'"},
		{"{ns}", "n", "/", "topic name", "/", 0, "must not end"},
		{strings.Repeat("a", 250), "n", "/", "topic name", "/" + strings.Repeat("a", 250), MaxTopicNameLength - 1, "longer than"},
	}
	for _, tt := range tests {
		got, err := ExpandTopicName(tt.name, tt.node, tt.ns)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidName) {
			t.Errorf("ExpandTopicName(%q, %q, %q) = %q, %v; want *Error", tt.name, tt.node, tt.ns, got, err)
			continue
		}
		if got != "" {
			t.Errorf("ExpandTopicName(%q) returned %q with an error", tt.name, got)
		}
		if e.Kind != tt.kind || e.Name != tt.errName || e.Index != tt.index || !strings.Contains(e.Reason, tt.reason) {
			t.Errorf("ExpandTopicName(%q, %q, %q): got {%s %q %d %q}, want {%s %q %d ~%q}",
				tt.name, tt.node, tt.ns, e.Kind, short(e.Name), e.Index, e.Reason, tt.kind, short(tt.errName), tt.index, tt.reason)
		}
	}
}

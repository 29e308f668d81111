package subcmd

import (
	"strings"
	"testing"
)

func TestUsageListsPublicCommands(t *testing.T) {
	s := &Set{Prog: "tool", Noun: "command", Width: 6, Tail: "see the README"}
	s.Register("run", "runs it", func([]string) error { return nil })
	s.Register("child", "(internal) a re-executed role", func([]string) error { return nil })
	var b strings.Builder
	s.Usage(&b)
	out := b.String()
	for _, want := range []string{"usage: tool <command> [arguments]", "commands:", "  run    runs it", "see the README"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "child") {
		t.Errorf("usage lists an internal command:\n%s", out)
	}
}

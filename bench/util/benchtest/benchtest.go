// Package benchtest holds what the tests of bench/local and
// bench/gpu share. It is imported only by tests.
package benchtest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// ChildCmd returns an Options.Child that starts the test binary itself in
// role (see testutil.Role).
func ChildCmd(t testing.TB, role string) func() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return func() *exec.Cmd {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), testutil.ChildEnv+"="+role)
		return cmd
	}
}

// NoSegments fails t for every segment of prefix left in /dev/shm.
func NoSegments(t testing.TB, prefix string) {
	t.Helper()
	if prefix == "" {
		t.Fatal("no prefix")
	}
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"_") {
			t.Errorf("segment left behind: /dev/shm/%s", e.Name())
		}
	}
}

// SyncBuffer is a Progress writer safe for concurrent use. Hook, unless
// nil, sees every write (outside the lock).
type SyncBuffer struct {
	Hook func(line string)

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.b.Write(p)
	s.mu.Unlock()
	if s.Hook != nil {
		s.Hook(string(p))
	}
	return len(p), nil
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var sepCell = regexp.MustCompile(`^:?-{3,}:?$`)

// MarkdownTables parses every table of a Markdown document, checking that
// each has a header, a separator and rows of as many cells, none empty; it
// returns the rows (without header and separator) of each.
func MarkdownTables(t testing.TB, doc string) [][][]string {
	t.Helper()
	var tables [][][]string
	lines := strings.Split(doc, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "|") {
			j++
		}
		block := lines[i:j]
		i = j
		cells := func(l string) []string {
			if !strings.HasSuffix(l, "|") {
				t.Errorf("table line does not end with |: %q", l)
			}
			parts := strings.Split(strings.Trim(l, "|"), "|")
			for k := range parts {
				parts[k] = strings.TrimSpace(parts[k])
			}
			return parts
		}
		if len(block) < 2 {
			t.Errorf("table without separator: %q", block)
			continue
		}
		head := cells(block[0])
		for _, c := range cells(block[1]) {
			if !sepCell.MatchString(c) {
				t.Errorf("bad separator cell %q in %q", c, block[1])
			}
		}
		if n := len(cells(block[1])); n != len(head) {
			t.Errorf("separator has %d cells, header %d", n, len(head))
		}
		var rows [][]string
		for _, l := range block[2:] {
			r := cells(l)
			if len(r) != len(head) {
				t.Errorf("row has %d cells, header %d: %q", len(r), len(head), l)
			}
			for _, c := range r {
				if c == "" {
					t.Errorf("empty cell in %q", l)
				}
			}
			rows = append(rows, r)
		}
		tables = append(tables, rows)
	}
	return tables
}

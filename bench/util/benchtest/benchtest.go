// Package benchtest holds what the tests of the benchmarks share. It is
// imported only by tests.
package benchtest

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
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

// CheckPlot checks base.png (a PNG image of at least 100 × 100 pixels)
// and base.svg (an svg document with drawing in it), as
// benchutil.LinePlot.Save writes them.
func CheckPlot(t testing.TB, base string) {
	t.Helper()
	b, err := os.ReadFile(base + ".png")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("%s.png is no PNG (%d bytes)", base, len(b))
	} else if img, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Errorf("%s.png: %v", base, err)
	} else if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
		t.Errorf("%s.png is %v", base, r)
	}
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	CheckSVG(t, svg)
}

// CheckSVG parses svg as XML and checks that it is an svg document with
// drawing in it.
func CheckSVG(t testing.TB, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	root, elems := "", 0
	for {
		tok, err := d.Token()
		if err != nil {
			if err != io.EOF {
				t.Errorf("svg: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			elems++
		}
	}
	if root != "svg" || elems < 10 {
		t.Errorf("svg: root %q, %d elements", root, elems)
	}
}

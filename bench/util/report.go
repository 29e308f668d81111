package benchutil

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// Table writes a Markdown table.
type Table struct {
	Head  []string
	Align string // 'l' or 'r' per column (missing: 'l')
	Rows  [][]string
}

// Write writes the header, the separator and the rows.
func (t *Table) Write(w io.Writer) {
	line := func(cells []string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }
	line(t.Head)
	sep := make([]string, len(t.Head))
	for i := range sep {
		sep[i] = "---"
		if i < len(t.Align) && t.Align[i] == 'r' {
			sep[i] = "---:"
		}
	}
	line(sep)
	for _, r := range t.Rows {
		line(r)
	}
}

// FormatSize writes 64 B, 4 KiB, 1 MiB, ...
func FormatSize(n int) string {
	for _, u := range []struct {
		s string
		v int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d %s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// US writes ns as µs with a precision that suits the magnitude.
func US(ns int64) string {
	v := float64(ns) / 1e3
	switch a := max(ns, -ns); {
	case a < 10_000:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100_000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	if ns < 0 {
		return "-" + Thousands(int64(-v+0.5))
	}
	return Thousands(int64(v + 0.5))
}

// Thousands writes n with a comma between groups of three digits.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Times writes a ratio: 1.5×, 13.2×, 1,234×.
func Times(r float64) string {
	if r >= 100 {
		return Thousands(int64(r+0.5)) + "×"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "×"
}

// MetWord is a goal's verdict.
func MetWord(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// Seconds is a duration written in JSON as seconds.
type Seconds time.Duration

func (s Seconds) MarshalJSON() ([]byte, error) {
	return []byte(strconv.FormatFloat(time.Duration(s).Seconds(), 'f', 3, 64)), nil
}

func (s *Seconds) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return err
	}
	*s = Seconds(v * 1e9)
	return nil
}

// WriteJSON writes v to path as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Output writes a command's Markdown report to stdout and, when jsonPath
// is set, its raw results v there (WriteJSON).
func Output(stdout io.Writer, md, jsonPath string, v any) error {
	if _, err := io.WriteString(stdout, md); err != nil {
		return err
	}
	if jsonPath == "" {
		return nil
	}
	return WriteJSON(jsonPath, v)
}

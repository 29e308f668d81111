package schema

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// FormatOptions controls Format.
type FormatOptions struct {
	// TruncateLength cuts arrays and strings longer than this many
	// elements or bytes, noting how much was left out (as `ros2 topic echo
	// --truncate-length`); 0 prints everything.
	TruncateLength int
}

// String returns s in the YAML form `ros2 topic echo` prints, arrays and
// strings truncated to 128 elements or bytes.
func (s *Struct) String() string {
	var b strings.Builder
	_ = Format(&b, s, FormatOptions{TruncateLength: 128})
	return b.String()
}

// Format writes s as YAML, one field per line, nested messages indented by
// two spaces and array elements as "- " items, like `ros2 topic echo`.
func Format(w io.Writer, s *Struct, opt FormatOptions) error {
	var b strings.Builder
	formatStruct(&b, s, 0, opt)
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(b *strings.Builder, n int) {
	for range n {
		b.WriteString("  ")
	}
}

func formatStruct(b *strings.Builder, s *Struct, depth int, opt FormatOptions) {
	if s == nil || s.Type == nil {
		indent(b, depth)
		b.WriteString("null\n")
		return
	}
	for i, v := range s.Values {
		if i >= len(s.Type.Fields) {
			break
		}
		indent(b, depth)
		b.WriteString(s.Type.Fields[i].Name)
		b.WriteString(":")
		formatValue(b, v, depth, opt)
	}
}

// formatValue writes what follows "name:" — " scalar\n" or a nested block.
func formatValue(b *strings.Builder, v any, depth int, opt FormatOptions) {
	switch x := v.(type) {
	case *Struct:
		b.WriteString("\n")
		formatStruct(b, x, depth+1, opt)
		return
	case []*Struct:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		n := len(x)
		if opt.TruncateLength > 0 && n > opt.TruncateLength {
			n = opt.TruncateLength
		}
		for _, e := range x[:n] {
			indent(b, depth)
			b.WriteString("- ")
			// the first field goes on the "- " line, the others below it
			var sub strings.Builder
			formatStruct(&sub, e, depth+1, opt)
			b.WriteString(strings.TrimLeft(sub.String(), " "))
		}
		if n < len(x) {
			indent(b, depth)
			fmt.Fprintf(b, "- '... %d more'\n", len(x)-n)
		}
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		if rv.Len() == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		n := rv.Len()
		if opt.TruncateLength > 0 && n > opt.TruncateLength {
			n = opt.TruncateLength
		}
		for i := 0; i < n; i++ {
			indent(b, depth)
			b.WriteString("- ")
			b.WriteString(scalarString(rv.Index(i).Interface(), opt))
			b.WriteString("\n")
		}
		if n < rv.Len() {
			indent(b, depth)
			fmt.Fprintf(b, "- '... %d more'\n", rv.Len()-n)
		}
		return
	}
	b.WriteString(" ")
	b.WriteString(scalarString(v, opt))
	b.WriteString("\n")
}

func scalarString(v any, opt FormatOptions) string {
	switch x := v.(type) {
	case string:
		if opt.TruncateLength > 0 && len(x) > opt.TruncateLength {
			x = x[:opt.TruncateLength] + "..."
		}
		x = strings.ToValidUTF8(x, "\uFFFD")
		if strings.ContainsFunc(x, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return strconv.Quote(x) // YAML double-quoted escapes
		}
		return "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case float32:
		return formatFloat(float64(x), 32)
	case float64:
		return formatFloat(x, 64)
	case cdr.LongDouble:
		return formatFloat(x.Float64X87(), 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !strings.ContainsAny(s, ".eEn") {
		s += ".0"
	}
	return s
}

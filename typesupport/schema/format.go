package schema

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// FormatOptions controls Format.
type FormatOptions struct {
	// TruncateLength cuts arrays and strings longer than this many
	// elements or bytes, noting how much was left out (as `ros2 topic echo
	// --truncate-length`); 0 prints everything.
	TruncateLength int
	// NoArr prints every array and sequence as a one-line summary of its
	// type and length ('<sequence type: uint8, length: 640>', '<array
	// type: float64[9]>') instead of its elements (`ros2 topic echo
	// --no-arr`).
	NoArr bool
	// NoStr prints every string as '<string length: N>' (`--no-str`).
	NoStr bool
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
// Strings are written plain when YAML would read them back as the same
// string, in single quotes otherwise, and in double quotes with escapes
// when they hold control characters; floats as Python writes them (1.0,
// 1.0e-05, .nan), except that a float32 is written with its own shortest
// digits rather than those of the float64 it widens to.
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
		formatValue(b, &s.Type.Fields[i], v, depth, opt)
	}
}

// formatValue writes what follows "name:" — " scalar\n" or a nested block.
func formatValue(b *strings.Builder, f *Field, v any, depth int, opt FormatOptions) {
	if opt.NoArr && f.IsArray {
		elem := *f
		elem.IsArray, elem.ArraySize, elem.IsUpperBound = false, 0, false
		if f.IsFixedArray() {
			fmt.Fprintf(b, " '<array type: %s>'\n", f.TypeString())
		} else {
			fmt.Fprintf(b, " '<sequence type: %s, length: %d>'\n", elem.TypeString(), reflect.ValueOf(v).Len())
		}
		return
	}
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
		if opt.NoStr {
			return fmt.Sprintf("'<string length: %d>'", len(x))
		}
		if opt.TruncateLength > 0 && len(x) > opt.TruncateLength {
			x = x[:opt.TruncateLength] + "..."
		}
		return yamlString(x)
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

// formatFloat writes f as PyYAML writes a Python float: the shortest
// digits that read back as f, positional for exponents -4 to 15 and
// scientific outside, always with a '.' in the mantissa.
func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return ".nan"
	case math.IsInf(f, 1):
		return ".inf"
	case math.IsInf(f, -1):
		return "-.inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, exp)
}

// yamlString writes s as a YAML scalar that reads back as the string s:
// plain when that is unambiguous, else single-quoted, else (control
// characters, invalid UTF-8) double-quoted with escapes.
func yamlString(s string) string {
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0xfeff
	}) {
		return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD")) // YAML double-quoted escapes
	}
	if plainSafe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// plainSafe reports whether s can be written as a plain YAML scalar in
// block context and be read back as this string (not a number, bool or
// null, no indicator where YAML would see one).
func plainSafe(s string) bool {
	if s == "" || s != strings.TrimSpace(s) || strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", "-.inf", "+.inf", ".nan":
		return false
	}
	if _, ok := parseFloat(s); ok {
		return false
	}
	// YAML 1.1 sexagesimal (1:20) and underscored numbers (1_000)
	if strings.Trim(s, "0123456789:._+-") == "" {
		return false
	}
	return true
}

// FlowString returns s on one line in the flow syntax Parse reads
// ("{data: hello}", "{x: 1.0, y: 2.0}"), arrays and strings truncated to
// truncate elements or bytes when it is positive (then the text no longer
// reads back as s: it says how much was left out).
func FlowString(s *Struct, truncate int) string {
	var b strings.Builder
	flowStruct(&b, s, FormatOptions{TruncateLength: truncate})
	return b.String()
}

func flowStruct(b *strings.Builder, s *Struct, opt FormatOptions) {
	b.WriteByte('{')
	if s != nil && s.Type != nil {
		for i, v := range s.Values {
			if i >= len(s.Type.Fields) {
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.Type.Fields[i].Name)
			b.WriteString(": ")
			flowValue(b, v, opt)
		}
	}
	b.WriteByte('}')
}

func flowValue(b *strings.Builder, v any, opt FormatOptions) {
	if x, ok := v.(*Struct); ok {
		flowStruct(b, x, opt)
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		s := scalarString(v, opt)
		if strings.ContainsAny(s, ",[]{}") && s[0] != '\'' && s[0] != '"' {
			s = "'" + strings.ReplaceAll(s, "'", "''") + "'" // flow indicators need quotes
		}
		b.WriteString(s)
		return
	}
	b.WriteByte('[')
	n := rv.Len()
	if opt.TruncateLength > 0 && n > opt.TruncateLength {
		n = opt.TruncateLength
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		flowValue(b, rv.Index(i).Interface(), opt)
	}
	if n < rv.Len() {
		fmt.Fprintf(b, ", '... %d more'", rv.Len()-n)
	}
	b.WriteByte(']')
}

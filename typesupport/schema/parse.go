package schema

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// This file reads message values written as `ros2 topic pub` takes them: a
// small, strict subset of YAML.
//
//	value    = mapping | sequence | scalar
//	mapping  = "{" [ key ":" value { "," key ":" value } [","] ] "}"
//	sequence = "[" [ value { "," value } [","] ] "]"
//	key      = a field name ([A-Za-z_][A-Za-z0-9_]*); the ':' is followed
//	           by a space, a line end or one of { [ ' "
//	scalar   = 'single quoted' ('' is a quote)
//	         | "double quoted" (\\ \" \/ \b \f \n \r \t \0 \xHH \uHHHH \UHHHHHHHH)
//	         | plain: everything up to , ] } or the line's end, trimmed
//
// The top level may leave out the braces of its mapping ("data: hi"), with
// one "key: value" per line (block style, one level deep: a nested value is
// written in flow style). Anchors, tags, comments, multi-line scalars and
// block sequences are not YAML this reads.

// SyntaxError is text that is not the flow syntax Parse reads. Offset is
// the byte offset of the problem in the text.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("schema: syntax error at offset %d: %s", e.Offset, e.Msg)
}

type nodeKind uint8

const (
	scalarNode nodeKind = iota
	mapNode
	seqNode
)

// node is one parsed value, before the schema gives it a type.
type node struct {
	kind   nodeKind
	off    int
	text   string // scalar
	quoted bool   // scalar: was quoted (never a number or a bool)
	keys   []string
	vals   []*node // mapNode: values of keys; seqNode: the items
}

// Parse reads a value of m from text in the YAML flow syntax `ros2 topic
// pub` takes, e.g. "{header: {frame_id: cam}, height: 2, data: [1, 2]}".
// Fields not named keep their defaults (New). Empty text is the default
// message. Errors name the field: an unknown field, a value of the wrong
// kind, a number out of the field's range, a fixed array of the wrong
// length, a bound exceeded, or a NUL in a string.
//
// Two keywords follow ros2: "now" as the value of a builtin_interfaces/Time
// field is the current time, and "auto" as the value of a std_msgs/Header
// field is a header stamped now with an empty frame_id.
func Parse(m *Message, text string) (*Struct, error) {
	p := &flowParser{src: text}
	p.skipSpace(true)
	var n *node
	var err error
	switch {
	case p.eof():
		return New(m), nil
	case p.peek() == '{':
		if n, err = p.value(); err == nil {
			p.skipSpace(true)
			if !p.eof() {
				err = p.errf("text after the closing '}'")
			}
		}
	default:
		n, err = p.block()
	}
	if err != nil {
		return nil, err
	}
	if n.kind != mapNode {
		return nil, &SyntaxError{Offset: n.off, Msg: fmt.Sprintf("want a mapping of %s's fields ({name: value, ...})", m.FullName())}
	}
	v, err := structFrom(m, n)
	if err != nil {
		return nil, topError(m, err)
	}
	return v, nil
}

// IsMapping reports whether text is written as a mapping ("{...}" or a
// "key: value" line) rather than as a lone scalar or sequence, so that a
// tool can give a one-field message's value bare ("hello" for
// std_msgs/String) without guessing at YAML it would misread.
func IsMapping(text string) bool {
	p := &flowParser{src: text}
	p.skipSpace(true)
	if p.eof() || p.peek() == '{' {
		return true
	}
	_, ok := p.key()
	return ok
}

type flowParser struct {
	src string
	pos int
}

func (p *flowParser) eof() bool  { return p.pos >= len(p.src) }
func (p *flowParser) peek() byte { return p.src[p.pos] }

func (p *flowParser) errf(format string, a ...any) error {
	return &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, a...)}
}

// skipSpace skips blanks, and line ends when newlines is set (inside flow
// collections a value may span lines).
func (p *flowParser) skipSpace(newlines bool) {
	for !p.eof() {
		switch p.peek() {
		case ' ', '\t':
		case '\n', '\r':
			if !newlines {
				return
			}
		default:
			return
		}
		p.pos++
	}
}

func isKeyStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isKeyByte(c byte) bool { return isKeyStart(c) || (c >= '0' && c <= '9') }

// key reads "name:" (and the blanks after it) when that is what comes
// next; otherwise it leaves the position alone and returns false.
func (p *flowParser) key() (string, bool) {
	start := p.pos
	i := start
	if i >= len(p.src) || !isKeyStart(p.src[i]) {
		return "", false
	}
	for i < len(p.src) && isKeyByte(p.src[i]) {
		i++
	}
	j := i
	for j < len(p.src) && (p.src[j] == ' ' || p.src[j] == '\t') {
		j++
	}
	if j >= len(p.src) || p.src[j] != ':' {
		return "", false
	}
	// YAML: a ':' is a key's only when a blank or the end follows it
	// ("http://x" is a scalar); flow indicators and quotes are let
	// through too ({a:[1]} is unambiguous here).
	if j+1 < len(p.src) && !strings.ContainsRune(" \t\r\n{[\"',}]", rune(p.src[j+1])) {
		return "", false
	}
	p.pos = j + 1
	return p.src[start:i], true
}

// block reads the top level without braces: "key: value" lines.
func (p *flowParser) block() (*node, error) {
	n := &node{kind: mapNode, off: p.pos}
	for {
		p.skipSpace(true)
		if p.eof() {
			return n, nil
		}
		off := p.pos
		k, ok := p.key()
		if !ok {
			if len(n.keys) == 0 {
				return p.value() // a lone scalar or sequence: Parse says what it wanted
			}
			return nil, p.errf("want 'name: value' on each line")
		}
		if err := n.add(k, off); err != nil {
			return nil, err
		}
		p.skipSpace(false)
		var v *node
		var err error
		switch {
		case p.eof() || p.peek() == '\n' || p.peek() == '\r':
			return nil, p.errf("no value for %q", k)
		case strings.IndexByte("{['\"", p.peek()) >= 0:
			v, err = p.value()
		default: // a plain scalar runs to the end of the line
			start := p.pos
			for !p.eof() && p.peek() != '\n' && p.peek() != '\r' {
				p.pos++
			}
			s := strings.TrimSpace(p.src[start:p.pos])
			if i := strings.Index(s, ": "); i >= 0 {
				return nil, &SyntaxError{Offset: start + i, Msg: fmt.Sprintf("value of %q contains ': ' (quote it, or use {...} for a nested message)", k)}
			}
			v = &node{kind: scalarNode, off: start, text: s}
		}
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		p.skipSpace(false)
		if !p.eof() && p.peek() != '\n' && p.peek() != '\r' {
			return nil, p.errf("text after the value of %q (one 'name: value' per line, or put it all in {...})", k)
		}
	}
}

func (n *node) add(k string, off int) error {
	for _, have := range n.keys {
		if have == k {
			return &SyntaxError{Offset: off, Msg: fmt.Sprintf("field %q given twice", k)}
		}
	}
	n.keys = append(n.keys, k)
	return nil
}

// value reads one flow value at the position.
func (p *flowParser) value() (*node, error) {
	p.skipSpace(true)
	if p.eof() {
		return nil, p.errf("missing value")
	}
	off := p.pos
	switch c := p.peek(); c {
	case '{':
		p.pos++
		n := &node{kind: mapNode, off: off}
		for {
			p.skipSpace(true)
			if p.eof() {
				return nil, &SyntaxError{Offset: off, Msg: "'{' is never closed"}
			}
			if p.peek() == '}' {
				p.pos++
				return n, nil
			}
			koff := p.pos
			k, ok := p.key()
			if !ok {
				return nil, p.errf("want 'name: value' (a field name, a colon and a space)")
			}
			if err := n.add(k, koff); err != nil {
				return nil, err
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
			if err := p.separator('}'); err != nil {
				return nil, err
			}
		}
	case '[':
		p.pos++
		n := &node{kind: seqNode, off: off}
		for {
			p.skipSpace(true)
			if p.eof() {
				return nil, &SyntaxError{Offset: off, Msg: "'[' is never closed"}
			}
			if p.peek() == ']' {
				p.pos++
				return n, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
			if err := p.separator(']'); err != nil {
				return nil, err
			}
		}
	case '\'':
		return p.singleQuoted()
	case '"':
		return p.doubleQuoted()
	case ',', ']', '}':
		return nil, p.errf("missing value before %q", c)
	case '#', '&', '*', '!', '|', '>', '%', '@', '`':
		return nil, p.errf("%q cannot start a value (quote the text)", c)
	}
	start := p.pos
	for !p.eof() && strings.IndexByte(",]}\n\r", p.peek()) < 0 {
		if p.peek() == ':' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == ' ' || p.src[p.pos+1] == '\t') {
			return nil, p.errf("': ' inside a value (quote it, or use {...} for a nested message)")
		}
		if p.peek() == '{' || p.peek() == '[' {
			return nil, p.errf("%q inside a plain value (quote the text)", p.peek())
		}
		p.pos++
	}
	return &node{kind: scalarNode, off: start, text: strings.TrimSpace(p.src[start:p.pos])}, nil
}

// separator reads what follows an item of a collection closed by end: a
// ',' (the next item, or the end after a trailing comma) or end itself.
func (p *flowParser) separator(end byte) error {
	p.skipSpace(true)
	switch {
	case p.eof():
		return p.errf("missing %q", end)
	case p.peek() == ',':
		p.pos++
		return nil
	case p.peek() == end:
		return nil
	}
	return p.errf("want ',' or %q, found %q", end, p.peek())
}

func (p *flowParser) singleQuoted() (*node, error) {
	off := p.pos
	p.pos++
	var b strings.Builder
	for {
		i := strings.IndexByte(p.src[p.pos:], '\'')
		if i < 0 {
			return nil, &SyntaxError{Offset: off, Msg: "unterminated quoted string"}
		}
		b.WriteString(p.src[p.pos : p.pos+i])
		p.pos += i + 1
		if p.pos < len(p.src) && p.src[p.pos] == '\'' {
			b.WriteByte('\'')
			p.pos++
			continue
		}
		return &node{kind: scalarNode, off: off, text: b.String(), quoted: true}, nil
	}
}

func (p *flowParser) doubleQuoted() (*node, error) {
	off := p.pos
	p.pos++
	var b strings.Builder
	for {
		if p.eof() {
			return nil, &SyntaxError{Offset: off, Msg: "unterminated quoted string"}
		}
		c := p.peek()
		switch c {
		case '"':
			p.pos++
			return &node{kind: scalarNode, off: off, text: b.String(), quoted: true}, nil
		case '\\':
			if p.pos+1 >= len(p.src) {
				return nil, &SyntaxError{Offset: off, Msg: "unterminated quoted string"}
			}
			e := p.src[p.pos+1]
			p.pos += 2
			if r, ok := map[byte]string{'\\': "\\", '"': "\"", '/': "/", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t", '0': "\x00", ' ': " "}[e]; ok {
				b.WriteString(r)
				continue
			}
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if digits == 0 || p.pos+digits > len(p.src) {
				return nil, &SyntaxError{Offset: p.pos - 2, Msg: fmt.Sprintf("unknown escape \\%c", e)}
			}
			v, err := strconv.ParseUint(p.src[p.pos:p.pos+digits], 16, 32)
			if err != nil {
				return nil, &SyntaxError{Offset: p.pos - 2, Msg: fmt.Sprintf("bad escape \\%c%s", e, p.src[p.pos:p.pos+digits])}
			}
			p.pos += digits
			if e == 'x' {
				b.WriteByte(byte(v))
			} else if !utf8.ValidRune(rune(v)) {
				return nil, &SyntaxError{Offset: p.pos - digits - 2, Msg: fmt.Sprintf("\\%c%X is not a character", e, v)}
			} else {
				b.WriteRune(rune(v))
			}
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// ---- from nodes to values --------------------------------------------------

func describe(n *node) string {
	switch n.kind {
	case mapNode:
		return "a mapping {...}"
	case seqNode:
		return "a sequence [...]"
	}
	if n.quoted {
		return strconv.Quote(n.text)
	}
	return "'" + n.text + "'"
}

func structFrom(m *Message, n *node) (*Struct, error) {
	if n.kind != mapNode {
		return nil, valueErr("want a %s as a mapping {name: value, ...}, got %s", m.FullName(), describe(n))
	}
	s := New(m)
	for i, k := range n.keys {
		fi := m.FieldIndex(k)
		if fi < 0 {
			names := make([]string, len(m.Fields))
			for j := range m.Fields {
				names[j] = m.Fields[j].Name
			}
			return nil, valueErr("%s has no field %q (it has %s)", m.FullName(), k, strings.Join(names, ", "))
		}
		f := &m.Fields[fi]
		v, err := fieldFrom(f, n.vals[i])
		if err != nil {
			return nil, inField(f.Name, -1, err)
		}
		s.Values[fi] = v
	}
	return s, nil
}

func fieldFrom(f *Field, n *node) (any, error) {
	if !f.IsArray {
		return scalarFrom(f, n)
	}
	if n.kind != seqNode {
		return nil, valueErr("want a sequence [...] for %s, got %s", f.TypeString(), describe(n))
	}
	switch {
	case f.IsFixedArray() && len(n.vals) != f.ArraySize:
		return nil, valueErr("%s takes exactly %d elements, got %d", f.TypeString(), f.ArraySize, len(n.vals))
	case f.IsUpperBound && len(n.vals) > f.ArraySize:
		return nil, valueErr("%s takes at most %d elements, got %d", f.TypeString(), f.ArraySize, len(n.vals))
	}
	out := makeSlice(f, len(n.vals))
	setElem := sliceSetter(out)
	for i, e := range n.vals {
		v, err := scalarFrom(f, e)
		if err != nil {
			return nil, inField("", i, err)
		}
		setElem(i, v)
	}
	return out, nil
}

// sliceSetter returns a function storing element i of the slice s (one of
// the types makeSlice returns) without reflection.
func sliceSetter(s any) func(int, any) {
	switch x := s.(type) {
	case []bool:
		return func(i int, v any) { x[i] = v.(bool) }
	case []uint8:
		return func(i int, v any) { x[i] = v.(uint8) }
	case []int8:
		return func(i int, v any) { x[i] = v.(int8) }
	case []uint16:
		return func(i int, v any) { x[i] = v.(uint16) }
	case []int16:
		return func(i int, v any) { x[i] = v.(int16) }
	case []uint32:
		return func(i int, v any) { x[i] = v.(uint32) }
	case []int32:
		return func(i int, v any) { x[i] = v.(int32) }
	case []uint64:
		return func(i int, v any) { x[i] = v.(uint64) }
	case []int64:
		return func(i int, v any) { x[i] = v.(int64) }
	case []float32:
		return func(i int, v any) { x[i] = v.(float32) }
	case []float64:
		return func(i int, v any) { x[i] = v.(float64) }
	case []cdr.LongDouble:
		return func(i int, v any) { x[i] = v.(cdr.LongDouble) }
	case []string:
		return func(i int, v any) { x[i] = v.(string) }
	case []*Struct:
		return func(i int, v any) { x[i] = v.(*Struct) }
	}
	panic(fmt.Sprintf("schema: no setter for %T", s))
}

// scalarFrom converts one element (or the value of a non-array field).
func scalarFrom(f *Field, n *node) (any, error) {
	if f.Type == TypeMessage {
		if n.kind == scalarNode && !n.quoted {
			if v, ok := keywordValue(f.Message, n.text); ok {
				return v, nil
			}
		}
		return structFrom(f.Message, n)
	}
	if n.kind != scalarNode {
		return nil, valueErr("want a %s, got %s", f.Type, describe(n))
	}
	t := n.text
	switch f.Type {
	case TypeString, TypeWString:
		if strings.IndexByte(t, 0) >= 0 {
			return nil, valueErr("a string cannot hold NUL (C and C++ subscribers would see it end there)")
		}
		if err := checkStringBound(f, t); err != nil {
			return nil, err
		}
		return t, nil
	case TypeBoolean:
		switch t {
		case "true", "True", "TRUE":
			if !n.quoted {
				return true, nil
			}
		case "false", "False", "FALSE":
			if !n.quoted {
				return false, nil
			}
		}
		return nil, valueErr("%s is not a bool (true or false)", describe(n))
	case TypeFloat, TypeDouble, TypeLongDouble:
		x, ok := parseFloat(t)
		if !ok || n.quoted {
			return nil, valueErr("%s is not a number", describe(n))
		}
		switch f.Type {
		case TypeFloat:
			if !math.IsInf(x, 0) && math.Abs(x) > math.MaxFloat32 {
				return nil, valueErr("%s is out of range for float32", t)
			}
			return float32(x), nil
		case TypeLongDouble:
			return cdr.LongDoubleFromFloat64(x), nil
		}
		return x, nil
	case TypeChar:
		// IDL char: one character, or its code
		if utf8.RuneCountInString(t) == 1 && len(t) == 1 && (n.quoted || t[0] < '0' || t[0] > '9') {
			return t[0], nil
		}
	}
	if n.quoted {
		return nil, valueErr("%s is not a %s (numbers are not quoted)", describe(n), f.Type)
	}
	bits := map[TypeID]int{TypeChar: 8, TypeOctet: 8, TypeUint8: 8, TypeInt8: 8, TypeUint16: 16, TypeInt16: 16,
		TypeWchar: 16, TypeUint32: 32, TypeInt32: 32, TypeUint64: 64, TypeInt64: 64}[f.Type]
	signed := f.Type == TypeInt8 || f.Type == TypeInt16 || f.Type == TypeInt32 || f.Type == TypeInt64
	if signed {
		x, err := strconv.ParseInt(trimPlus(t), 0, bits)
		if err != nil || strings.Contains(t, "_") {
			return nil, intErr(t, f.Type, err)
		}
		switch bits {
		case 8:
			return int8(x), nil
		case 16:
			return int16(x), nil
		case 32:
			return int32(x), nil
		}
		return x, nil
	}
	x, err := strconv.ParseUint(trimPlus(t), 0, bits)
	if err != nil || strings.Contains(t, "_") {
		if strings.HasPrefix(t, "-") {
			if _, serr := strconv.ParseInt(t, 0, 64); serr == nil {
				return nil, valueErr("%s is out of range for %s", t, f.Type)
			}
		}
		return nil, intErr(t, f.Type, err)
	}
	switch bits {
	case 8:
		return uint8(x), nil
	case 16:
		return uint16(x), nil
	case 32:
		return uint32(x), nil
	}
	return x, nil
}

// trimPlus drops a leading '+', which YAML allows and strconv does not.
func trimPlus(s string) string {
	if strings.HasPrefix(s, "+") && !strings.HasPrefix(s, "+-") {
		return s[1:]
	}
	return s
}

func intErr(t string, typ TypeID, err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return valueErr("%s is out of range for %s", t, typ)
	}
	return valueErr("'%s' is not an integer (%s)", t, typ)
}

// parseFloat reads a YAML number: decimal, exponent, an integer in any
// base strconv reads, or .inf, -.inf, .nan.
func parseFloat(s string) (float64, bool) {
	switch strings.ToLower(strings.TrimPrefix(s, "+")) {
	case ".inf":
		return math.Inf(1), true
	case "-.inf":
		return math.Inf(-1), true
	case ".nan":
		return math.NaN(), true
	}
	l := strings.ToLower(s)
	if strings.Contains(l, "inf") || strings.Contains(l, "nan") || strings.Contains(s, "_") {
		return 0, false // Go spellings YAML does not have
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil {
		return x, true
	}
	if x, err := strconv.ParseInt(trimPlus(s), 0, 64); err == nil {
		return float64(x), true
	}
	if x, err := strconv.ParseUint(trimPlus(s), 0, 64); err == nil {
		return float64(x), true
	}
	return 0, false
}

// keywordValue is ros2's "now" for a builtin_interfaces/Time and "auto"
// for a std_msgs/Header.
func keywordValue(m *Message, word string) (*Struct, bool) {
	switch {
	case word == "now" && m.Package == "builtin_interfaces" && m.Name == "Time":
		return timeNow(m), true
	case word == "auto" && m.Package == "std_msgs" && m.Name == "Header":
		h := New(m)
		if i := m.FieldIndex("stamp"); i >= 0 && m.Fields[i].Type == TypeMessage && !m.Fields[i].IsArray {
			h.Values[i] = timeNow(m.Fields[i].Message)
		}
		return h, true
	}
	return nil, false
}

func timeNow(m *Message) *Struct {
	t := New(m)
	now := time.Now()
	if i := m.FieldIndex("sec"); i >= 0 && m.Fields[i].Type == TypeInt32 {
		t.Values[i] = int32(now.Unix())
	}
	if i := m.FieldIndex("nanosec"); i >= 0 && m.Fields[i].Type == TypeUint32 {
		t.Values[i] = uint32(now.Nanosecond())
	}
	return t
}

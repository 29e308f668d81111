package msgparse

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// EmptyStructMember is the member rosidl adds to a message without fields
// (a DDS structure needs at least one member): uint8
// structure_needs_at_least_one_member.
const EmptyStructMember = "structure_needs_at_least_one_member"

// Resolver finds the schema of a nested message type named in a field, as
// package and message name (e.g. "std_msgs", "Header").
type Resolver interface {
	ResolveMessage(pkg, name string) (*schema.Message, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(pkg, name string) (*schema.Message, error)

// ResolveMessage calls f.
func (f ResolverFunc) ResolveMessage(pkg, name string) (*schema.Message, error) { return f(pkg, name) }

// ErrUnknownType is wrapped by the error a Resolver returns for a type it
// does not know (Registry does so).
var ErrUnknownType = errors.New("unknown message type")

// Error is a parse error: the file (as "pkg/msg/Name.msg"), the 1-based
// line (0 when the error concerns the whole file) and what is wrong.
type Error struct {
	File string
	Line int
	Msg  string
	Err  error // the underlying error, e.g. the resolver's, or nil
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// ParseMessage parses the text of a .msg file defining pkg/msg/name.
// Nested types are looked up through r (nil: a definition with nested
// types is an error).
func ParseMessage(pkg, name, src string, r Resolver) (*schema.Message, error) {
	file := pkg + "/msg/" + name + ".msg"
	if err := checkTypeName(pkg, name); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	p := &parser{file: file, pkg: pkg, resolver: r}
	return p.message("msg", name, splitLines(src), 1)
}

// ParseService parses the text of a .srv file defining pkg/srv/name: a
// request definition, a line "---", a response definition. The messages
// are named name_Request and name_Response, of kind "srv".
func ParseService(pkg, name, src string, r Resolver) (*schema.Service, error) {
	file := pkg + "/srv/" + name + ".srv"
	if err := checkTypeName(pkg, name); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	lines := splitLines(src)
	sep := -1
	for i, l := range lines {
		if strings.TrimRight(l, " \t") == "---" {
			if sep >= 0 {
				return nil, &Error{File: file, Line: i + 1, Msg: fmt.Sprintf("second '---' separator (the first is on line %d)", sep+1)}
			}
			sep = i
		}
	}
	if sep < 0 {
		return nil, &Error{File: file, Msg: "no '---' line separating request and response"}
	}
	p := &parser{file: file, pkg: pkg, resolver: r}
	req, err := p.message("srv", name+"_Request", lines[:sep], 1)
	if err != nil {
		return nil, err
	}
	resp, err := p.message("srv", name+"_Response", lines[sep+1:], sep+2)
	if err != nil {
		return nil, err
	}
	return &schema.Service{Package: pkg, Name: name, Request: req, Response: resp}, nil
}

func splitLines(src string) []string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	lines := strings.Split(src, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

type parser struct {
	file     string
	pkg      string
	resolver Resolver
}

func (p *parser) errf(line int, format string, args ...any) error {
	return &Error{File: p.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// message parses lines (the first being line number first) into a message
// of the given kind and name.
func (p *parser) message(kind, name string, lines []string, first int) (*schema.Message, error) {
	m := &schema.Message{Package: p.pkg, Kind: kind, Name: name}
	fieldLine := map[string]int{}
	constLine := map[string]int{}
	for i, raw := range lines {
		ln := first + i
		line := strings.TrimSpace(stripComment(strings.ReplaceAll(raw, "\t", " ")))
		if line == "" {
			continue
		}
		if line == "---" {
			return nil, p.errf(ln, "unexpected '---' separator in a message definition")
		}
		typeTok, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if rest == "" {
			return nil, p.errf(ln, "%q: a field needs a type and a name", line)
		}
		if cname, value, ok := splitConstant(rest); ok {
			c, err := p.constant(typeTok, cname, value)
			if err != nil {
				return nil, p.errf(ln, "constant %s: %v", cname, err)
			}
			if prev, dup := constLine[c.Name]; dup {
				return nil, p.errf(ln, "constant %s already declared on line %d", c.Name, prev)
			}
			constLine[c.Name] = ln
			m.Constants = append(m.Constants, c)
			continue
		}
		fname, def, _ := strings.Cut(rest, " ")
		def = strings.TrimSpace(def)
		f, err := p.field(typeTok, fname, def, ln)
		if err != nil {
			return nil, err
		}
		if prev, dup := fieldLine[f.Name]; dup {
			return nil, p.errf(ln, "field %s already declared on line %d", f.Name, prev)
		}
		fieldLine[f.Name] = ln
		m.Fields = append(m.Fields, f)
	}
	if len(m.Fields) == 0 {
		m.Fields = []schema.Field{{Name: EmptyStructMember, Type: schema.TypeUint8}}
	}
	return m, nil
}

// stripComment cuts the line at the first '#' that is not inside a quoted
// string value. A quote opens a string only at the start of a token, so
// an apostrophe inside an unquoted word does not hide a comment.
func stripComment(line string) string {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '#':
			return line[:i]
		case (c == '"' || c == '\'') && (i == 0 || strings.IndexByte(" [,=", line[i-1]) >= 0):
			quote = c
		}
	}
	return line
}

// splitConstant recognises "NAME=VALUE" (spaces allowed around '='): the
// text before the first '=' must be a single word, so that a field whose
// default value contains '=' stays a field.
func splitConstant(rest string) (name, value string, ok bool) {
	before, after, found := strings.Cut(rest, "=")
	if !found {
		return "", "", false
	}
	before = strings.TrimSpace(before)
	if before == "" || strings.ContainsAny(before, " \"'") {
		return "", "", false
	}
	return before, strings.TrimSpace(after), true
}

// typeRef is a parsed type token.
type typeRef struct {
	id           schema.TypeID
	strBound     int
	pkg, msgName string // for TypeMessage
	isArray      bool
	arraySize    int
	isUpperBound bool
}

var primitives = map[string]schema.TypeID{
	"bool":    schema.TypeBoolean,
	"byte":    schema.TypeOctet,
	"char":    schema.TypeUint8, // rosidl maps .msg char to uint8
	"float32": schema.TypeFloat,
	"float64": schema.TypeDouble,
	"int8":    schema.TypeInt8,
	"uint8":   schema.TypeUint8,
	"int16":   schema.TypeInt16,
	"uint16":  schema.TypeUint16,
	"int32":   schema.TypeInt32,
	"uint32":  schema.TypeUint32,
	"int64":   schema.TypeInt64,
	"uint64":  schema.TypeUint64,
	"string":  schema.TypeString,
	"wstring": schema.TypeWString,
}

// compatTypes are ROS 1 primitive names rosidl's .msg grammar still lists;
// they stand for the builtin_interfaces messages.
var compatTypes = map[string]string{"time": "Time", "duration": "Duration"}

func (p *parser) parseType(tok string) (typeRef, error) {
	var t typeRef
	base := tok
	if strings.HasSuffix(tok, "]") {
		open := strings.LastIndexByte(tok, '[')
		if open < 0 {
			return t, fmt.Errorf("type %q ends with ']' but has no '['", tok)
		}
		base = tok[:open]
		inner := tok[open+1 : len(tok)-1]
		t.isArray = true
		if inner != "" {
			num := inner
			if b, ok := strings.CutPrefix(inner, "<="); ok {
				t.isUpperBound = true
				num = b
			}
			n, err := strconv.Atoi(num)
			if err != nil || n <= 0 {
				return t, fmt.Errorf("array size in %q must be an integer > 0, optionally after '<='", tok)
			}
			t.arraySize = n
		}
		if base == "" {
			return t, fmt.Errorf("type %q has no element type", tok)
		}
	} else if strings.ContainsAny(tok, "[]") {
		return t, fmt.Errorf("malformed type %q", tok)
	}
	if id, ok := primitives[base]; ok {
		t.id = id
		return t, nil
	}
	for _, s := range []string{"string", "wstring"} {
		if b, ok := strings.CutPrefix(base, s+"<="); ok {
			n, err := strconv.Atoi(b)
			if err != nil || n <= 0 {
				return t, fmt.Errorf("the bound of %q must be an integer > 0", base)
			}
			t.id = primitives[s]
			t.strBound = n
			return t, nil
		}
	}
	if name, ok := compatTypes[base]; ok {
		t.id, t.pkg, t.msgName = schema.TypeMessage, "builtin_interfaces", name
		return t, nil
	}
	parts := strings.Split(base, "/")
	switch {
	case len(parts) == 1:
		t.pkg, t.msgName = p.pkg, parts[0]
	case len(parts) == 2:
		t.pkg, t.msgName = parts[0], parts[1]
	case len(parts) == 3 && parts[1] == "msg":
		t.pkg, t.msgName = parts[0], parts[2]
	default:
		return t, fmt.Errorf("unknown type %q (want a primitive, pkg/Type or Type)", base)
	}
	if err := checkTypeName(t.pkg, t.msgName); err != nil {
		if len(parts) == 1 && !strings.ContainsAny(base, "<>=") && strings.ToLower(base) == base {
			return t, fmt.Errorf("unknown type %q", base)
		}
		return t, fmt.Errorf("type %q: %v", base, err)
	}
	t.id = schema.TypeMessage
	return t, nil
}

func (p *parser) field(typeTok, name, def string, ln int) (schema.Field, error) {
	t, err := p.parseType(typeTok)
	if err != nil {
		return schema.Field{}, p.errf(ln, "%v", err)
	}
	if !validFieldName(name) {
		return schema.Field{}, p.errf(ln, "invalid field name %q (lower case letters, digits and single underscores, starting with a letter, not ending with '_')", name)
	}
	f := schema.Field{
		Name:             name,
		Type:             t.id,
		StringUpperBound: t.strBound,
		IsArray:          t.isArray,
		ArraySize:        t.arraySize,
		IsUpperBound:     t.isUpperBound,
	}
	if t.id == schema.TypeMessage {
		if p.resolver == nil {
			return f, &Error{File: p.file, Line: ln, Msg: fmt.Sprintf("field %s: type %s/%s: no resolver for nested types", name, t.pkg, t.msgName)}
		}
		sub, err := p.resolver.ResolveMessage(t.pkg, t.msgName)
		if err != nil {
			return f, &Error{File: p.file, Line: ln, Msg: fmt.Sprintf("field %s: type %s/%s: %v", name, t.pkg, t.msgName, err), Err: err}
		}
		if sub == nil {
			return f, p.errf(ln, "field %s: resolver returned no schema for %s/%s", name, t.pkg, t.msgName)
		}
		f.Message = sub
		if def != "" {
			return f, p.errf(ln, "field %s: a field of message type %s/%s cannot have a default value", name, t.pkg, t.msgName)
		}
		return f, nil
	}
	if def != "" {
		v, err := parseDefault(&f, def)
		if err != nil {
			return f, p.errf(ln, "field %s: default value %s: %v", name, def, err)
		}
		f.Default = v
	}
	return f, nil
}

func (p *parser) constant(typeTok, name, value string) (schema.Constant, error) {
	id, ok := primitives[typeTok]
	if !ok {
		return schema.Constant{}, fmt.Errorf("type %q: constants must have a primitive, non-array, unbounded type", typeTok)
	}
	if !validConstantName(name) {
		return schema.Constant{}, fmt.Errorf("invalid constant name (upper case letters, digits and single underscores, starting with a letter, not ending with '_')")
	}
	if value == "" {
		return schema.Constant{}, fmt.Errorf("missing value")
	}
	f := schema.Field{Name: name, Type: id}
	v, err := parseScalar(&f, value)
	if err != nil {
		return schema.Constant{}, fmt.Errorf("value %s: %v", value, err)
	}
	return schema.Constant{Name: name, Type: id, Value: v}, nil
}

func lowerWord(s string, alnum func(byte) bool) bool {
	if s == "" || strings.Contains(s, "__") || strings.HasSuffix(s, "_") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 0 && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') {
			return false
		}
		if !alnum(c) && c != '_' {
			return false
		}
	}
	return true
}

func isLowerAlnum(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') }
func isUpperAlnum(c byte) bool { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') }

// validFieldName: ^[a-z][a-z0-9_]*$, no "__", no trailing '_' (rosidl's
// VALID_FIELD_NAME_PATTERN).
func validFieldName(s string) bool { return lowerWord(s, isLowerAlnum) }

// validPackageName: the same pattern as field names.
func validPackageName(s string) bool { return lowerWord(s, isLowerAlnum) }

// validConstantName: ^[A-Z]([A-Z0-9_]?[A-Z0-9]+)*$, i.e. upper case,
// digits and single underscores, starting with a letter, not ending with
// '_'.
func validConstantName(s string) bool { return lowerWord(s, isUpperAlnum) }

// validMessageName: ^[A-Z][A-Za-z0-9]*$.
func validMessageName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func checkTypeName(pkg, name string) error {
	if !validPackageName(pkg) {
		return fmt.Errorf("invalid package name %q (lower case letters, digits and single underscores, starting with a letter)", pkg)
	}
	if !validMessageName(name) {
		return fmt.Errorf("invalid type name %q (CamelCase letters and digits, starting with an upper case letter)", name)
	}
	return nil
}

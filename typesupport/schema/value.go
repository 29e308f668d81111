package schema

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// Struct is a dynamic message value: one Go value per field of Type, in
// field order.
//
// The Go type of a scalar depends on the field's TypeID:
//
//	TypeFloat float32        TypeDouble float64      TypeLongDouble cdr.LongDouble
//	TypeChar uint8           TypeWchar uint16        TypeBoolean bool
//	TypeOctet uint8          TypeUint8 uint8         TypeInt8 int8
//	TypeUint16 uint16        TypeInt16 int16         TypeUint32 uint32
//	TypeInt32 int32          TypeUint64 uint64       TypeInt64 int64
//	TypeString string        TypeWString string (UTF-8; converted to UTF-16 on the wire)
//	TypeMessage *Struct
//
// An array or sequence field holds a slice of that type ([]float64,
// []uint8, []string, []*Struct, ...); a fixed array's slice has exactly
// ArraySize elements.
type Struct struct {
	Type   *Message
	Values []any
}

// New returns a value of m with every field at its default: the default
// from the definition when there is one, otherwise zero, "" or an empty
// sequence; nested messages and fixed arrays are filled recursively.
func New(m *Message) *Struct {
	s := &Struct{Type: m, Values: make([]any, len(m.Fields))}
	for i := range m.Fields {
		s.Values[i] = fieldDefault(&m.Fields[i])
	}
	return s
}

func fieldDefault(f *Field) any {
	if f.Default != nil {
		return cloneValue(f.Default)
	}
	if !f.IsArray {
		return zeroScalar(f)
	}
	n := 0
	if f.IsFixedArray() {
		n = f.ArraySize
	}
	return makeSlice(f, n)
}

func zeroScalar(f *Field) any {
	switch f.Type {
	case TypeFloat:
		return float32(0)
	case TypeDouble:
		return float64(0)
	case TypeLongDouble:
		return cdr.LongDouble{}
	case TypeChar, TypeOctet, TypeUint8:
		return uint8(0)
	case TypeWchar, TypeUint16:
		return uint16(0)
	case TypeBoolean:
		return false
	case TypeInt8:
		return int8(0)
	case TypeInt16:
		return int16(0)
	case TypeUint32:
		return uint32(0)
	case TypeInt32:
		return int32(0)
	case TypeUint64:
		return uint64(0)
	case TypeInt64:
		return int64(0)
	case TypeString, TypeWString:
		return ""
	case TypeMessage:
		return New(f.Message)
	}
	return nil
}

// makeSlice returns a slice of n default elements for an array field.
func makeSlice(f *Field, n int) any {
	switch f.Type {
	case TypeFloat:
		return make([]float32, n)
	case TypeDouble:
		return make([]float64, n)
	case TypeLongDouble:
		return make([]cdr.LongDouble, n)
	case TypeChar, TypeOctet, TypeUint8:
		return make([]uint8, n)
	case TypeWchar, TypeUint16:
		return make([]uint16, n)
	case TypeBoolean:
		return make([]bool, n)
	case TypeInt8:
		return make([]int8, n)
	case TypeInt16:
		return make([]int16, n)
	case TypeUint32:
		return make([]uint32, n)
	case TypeInt32:
		return make([]int32, n)
	case TypeUint64:
		return make([]uint64, n)
	case TypeInt64:
		return make([]int64, n)
	case TypeString, TypeWString:
		return make([]string, n)
	case TypeMessage:
		s := make([]*Struct, n)
		for i := range s {
			s[i] = New(f.Message)
		}
		return s
	}
	return nil
}

// cloneValue deep-copies a value so that defaults are never shared.
func cloneValue(v any) any {
	switch x := v.(type) {
	case *Struct:
		return x.Clone()
	case []*Struct:
		c := make([]*Struct, len(x))
		for i, e := range x {
			c[i] = e.Clone()
		}
		return c
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		c := reflect.MakeSlice(rv.Type(), rv.Len(), rv.Len())
		reflect.Copy(c, rv)
		return c.Interface()
	}
	return v
}

// Clone returns a deep copy of s.
func (s *Struct) Clone() *Struct {
	if s == nil {
		return nil
	}
	c := &Struct{Type: s.Type, Values: make([]any, len(s.Values))}
	for i, v := range s.Values {
		c.Values[i] = cloneValue(v)
	}
	return c
}

// Get returns the value of the named field. A dotted path ("header.stamp.sec")
// descends into nested messages.
func (s *Struct) Get(path string) (any, bool) {
	cur := s
	for {
		name, rest, more := strings.Cut(path, ".")
		if cur == nil || cur.Type == nil {
			return nil, false
		}
		i := cur.Type.FieldIndex(name)
		if i < 0 || i >= len(cur.Values) {
			return nil, false
		}
		if !more {
			return cur.Values[i], true
		}
		next, ok := cur.Values[i].(*Struct)
		if !ok {
			return nil, false
		}
		cur, path = next, rest
	}
}

// Set stores v in the named field (a dotted path descends into nested
// messages) after checking that v has the field's Go type, length and
// bounds.
func (s *Struct) Set(path string, v any) error {
	name, rest, more := strings.Cut(path, ".")
	if s == nil || s.Type == nil {
		return fmt.Errorf("schema: Set %q on a nil struct", path)
	}
	i := s.Type.FieldIndex(name)
	if i < 0 || i >= len(s.Values) {
		return fmt.Errorf("schema: %s has no field %q", s.Type.FullName(), name)
	}
	if more {
		next, ok := s.Values[i].(*Struct)
		if !ok {
			return fmt.Errorf("schema: %s.%s is not a message", s.Type.FullName(), name)
		}
		return next.Set(rest, v)
	}
	if err := checkValue(&s.Type.Fields[i], v); err != nil {
		return fmt.Errorf("schema: %s.%s: %v", s.Type.FullName(), name, err)
	}
	s.Values[i] = v
	return nil
}

// checkValue checks the Go type, the array length and the string bounds of
// v for field f (not recursively into nested messages).
func checkValue(f *Field, v any) error {
	if !f.IsArray {
		return checkScalar(f, v)
	}
	n, err := sliceLen(f, v)
	if err != nil {
		return err
	}
	if err := checkCount(f, n); err != nil {
		return err
	}
	switch x := v.(type) {
	case []string:
		for i, e := range x {
			if err := checkStringBound(f, e); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
	case []*Struct:
		for i, e := range x {
			if err := checkStruct(f, e); err != nil {
				return fmt.Errorf("element %d: %v", i, err)
			}
		}
	}
	return nil
}

func checkCount(f *Field, n int) error {
	switch {
	case f.IsFixedArray() && n != f.ArraySize:
		return fmt.Errorf("array %s needs %d elements, has %d", f.TypeString(), f.ArraySize, n)
	case f.IsUpperBound && n > f.ArraySize:
		return fmt.Errorf("sequence %s holds at most %d elements, has %d", f.TypeString(), f.ArraySize, n)
	}
	return nil
}

func checkScalar(f *Field, v any) error {
	ok := false
	switch f.Type {
	case TypeFloat:
		_, ok = v.(float32)
	case TypeDouble:
		_, ok = v.(float64)
	case TypeLongDouble:
		_, ok = v.(cdr.LongDouble)
	case TypeChar, TypeOctet, TypeUint8:
		_, ok = v.(uint8)
	case TypeWchar, TypeUint16:
		_, ok = v.(uint16)
	case TypeBoolean:
		_, ok = v.(bool)
	case TypeInt8:
		_, ok = v.(int8)
	case TypeInt16:
		_, ok = v.(int16)
	case TypeUint32:
		_, ok = v.(uint32)
	case TypeInt32:
		_, ok = v.(int32)
	case TypeUint64:
		_, ok = v.(uint64)
	case TypeInt64:
		_, ok = v.(int64)
	case TypeString, TypeWString:
		s, isStr := v.(string)
		if !isStr {
			break
		}
		return checkStringBound(f, s)
	case TypeMessage:
		s, isStruct := v.(*Struct)
		if !isStruct {
			break
		}
		return checkStruct(f, s)
	}
	if !ok {
		return fmt.Errorf("want %s, got %T", goTypeName(f), v)
	}
	return nil
}

func checkStruct(f *Field, s *Struct) error {
	if s == nil {
		return fmt.Errorf("nil %s", f.Message.FullName())
	}
	if s.Type != f.Message && (s.Type == nil || s.Type.FullName() != f.Message.FullName()) {
		name := "<nil type>"
		if s.Type != nil {
			name = s.Type.FullName()
		}
		return fmt.Errorf("want %s, got %s", f.Message.FullName(), name)
	}
	if len(s.Values) != len(f.Message.Fields) {
		return fmt.Errorf("%s value has %d fields, type has %d", f.Message.FullName(), len(s.Values), len(f.Message.Fields))
	}
	return nil
}

func checkStringBound(f *Field, s string) error {
	if f.StringUpperBound == 0 {
		return nil
	}
	n := len(s)
	unit := "bytes"
	if f.Type == TypeWString {
		n = utf16Len(s)
		unit = "UTF-16 units"
	}
	if n > f.StringUpperBound {
		return fmt.Errorf("%s holds at most %d %s, has %d", f.TypeString(), f.StringUpperBound, unit, n)
	}
	return nil
}

// utf16Len returns the number of UTF-16 code units of the UTF-8 string s
// (invalid bytes count as U+FFFD, one unit each).
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func sliceLen(f *Field, v any) (int, error) {
	ok := false
	n := 0
	switch f.Type {
	case TypeFloat:
		var s []float32
		s, ok = v.([]float32)
		n = len(s)
	case TypeDouble:
		var s []float64
		s, ok = v.([]float64)
		n = len(s)
	case TypeLongDouble:
		var s []cdr.LongDouble
		s, ok = v.([]cdr.LongDouble)
		n = len(s)
	case TypeChar, TypeOctet, TypeUint8:
		var s []uint8
		s, ok = v.([]uint8)
		n = len(s)
	case TypeWchar, TypeUint16:
		var s []uint16
		s, ok = v.([]uint16)
		n = len(s)
	case TypeBoolean:
		var s []bool
		s, ok = v.([]bool)
		n = len(s)
	case TypeInt8:
		var s []int8
		s, ok = v.([]int8)
		n = len(s)
	case TypeInt16:
		var s []int16
		s, ok = v.([]int16)
		n = len(s)
	case TypeUint32:
		var s []uint32
		s, ok = v.([]uint32)
		n = len(s)
	case TypeInt32:
		var s []int32
		s, ok = v.([]int32)
		n = len(s)
	case TypeUint64:
		var s []uint64
		s, ok = v.([]uint64)
		n = len(s)
	case TypeInt64:
		var s []int64
		s, ok = v.([]int64)
		n = len(s)
	case TypeString, TypeWString:
		var s []string
		s, ok = v.([]string)
		n = len(s)
	case TypeMessage:
		var s []*Struct
		s, ok = v.([]*Struct)
		n = len(s)
	}
	if !ok {
		return 0, fmt.Errorf("want []%s, got %T", goTypeName(f), v)
	}
	return n, nil
}

func goTypeName(f *Field) string {
	switch f.Type {
	case TypeFloat:
		return "float32"
	case TypeDouble:
		return "float64"
	case TypeLongDouble:
		return "cdr.LongDouble"
	case TypeChar, TypeOctet, TypeUint8:
		return "uint8"
	case TypeWchar, TypeUint16:
		return "uint16"
	case TypeBoolean:
		return "bool"
	case TypeString, TypeWString:
		return "string"
	case TypeMessage:
		return "*schema.Struct"
	}
	return f.Type.String()
}

// Equal reports whether a and b hold the same type and values. Floats are
// compared by their bits, so NaN equals the same NaN, and nil and empty
// slices are equal.
func Equal(a, b *Struct) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Type != b.Type && (a.Type == nil || b.Type == nil || a.Type.FullName() != b.Type.FullName()) {
		return false
	}
	if len(a.Values) != len(b.Values) {
		return false
	}
	for i := range a.Values {
		if !valueEqual(a.Values[i], b.Values[i]) {
			return false
		}
	}
	return true
}

func valueEqual(a, b any) bool {
	switch x := a.(type) {
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case *Struct:
		y, ok := b.(*Struct)
		return ok && Equal(x, y)
	case []float32:
		y, ok := b.([]float32)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				return false
			}
		}
		return true
	case []float64:
		y, ok := b.([]float64)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
				return false
			}
		}
		return true
	case []*Struct:
		y, ok := b.([]*Struct)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	ra, rb := reflect.ValueOf(a), reflect.ValueOf(b)
	if ra.Kind() == reflect.Slice && rb.Kind() == reflect.Slice && ra.Type() == rb.Type() {
		if ra.Len() != rb.Len() {
			return false
		}
		if ra.Len() == 0 {
			return true
		}
	}
	return reflect.DeepEqual(a, b)
}

// Map returns s as nested maps keyed by field name: nested messages become
// map[string]any, sequences of messages []map[string]any, everything else
// keeps its Go type (so encoding/json writes a []uint8 as base64).
func (s *Struct) Map() map[string]any {
	if s == nil || s.Type == nil {
		return nil
	}
	out := make(map[string]any, len(s.Values))
	for i, v := range s.Values {
		if i >= len(s.Type.Fields) {
			break
		}
		switch x := v.(type) {
		case *Struct:
			out[s.Type.Fields[i].Name] = x.Map()
		case []*Struct:
			l := make([]map[string]any, len(x))
			for j, e := range x {
				l[j] = e.Map()
			}
			out[s.Type.Fields[i].Name] = l
		default:
			out[s.Type.Fields[i].Name] = cloneValue(v)
		}
	}
	return out
}

// FromMap builds a value of m from nested maps such as a JSON or YAML
// document decodes to: fields absent from in keep their defaults; numbers
// of any Go numeric type (JSON's float64 included) convert when they fit
// the field exactly; arrays come as []any or as a typed slice; nested
// messages as map[string]any or *Struct. Unknown field names are errors.
func FromMap(m *Message, in map[string]any) (*Struct, error) {
	s := New(m)
	for k, v := range in {
		i := m.FieldIndex(k)
		if i < 0 {
			return nil, fmt.Errorf("schema: %s has no field %q", m.FullName(), k)
		}
		f := &m.Fields[i]
		cv, err := convertField(f, v)
		if err != nil {
			return nil, fmt.Errorf("schema: %s.%s: %w", m.FullName(), k, err)
		}
		if err := checkValue(f, cv); err != nil {
			return nil, fmt.Errorf("schema: %s.%s: %w", m.FullName(), k, err)
		}
		s.Values[i] = cv
	}
	return s, nil
}

func convertField(f *Field, v any) (any, error) {
	if !f.IsArray {
		if checkScalar(f, v) == nil { // already the right Go type
			return v, nil
		}
		return convertScalar(f, v)
	}
	if checkValue(f, v) == nil {
		return cloneValue(v), nil
	}
	rv := reflect.ValueOf(v)
	if f.Type == TypeUint8 || f.Type == TypeOctet || f.Type == TypeChar {
		if s, ok := v.(string); ok { // a byte string
			return []uint8(s), nil
		}
	}
	if !rv.IsValid() || rv.Kind() != reflect.Slice {
		return nil, fmt.Errorf("want an array, got %T", v)
	}
	out := reflect.ValueOf(makeSlice(f, rv.Len()))
	for i := 0; i < rv.Len(); i++ {
		x := rv.Index(i).Interface()
		var e any
		var err error
		if checkScalar(f, x) == nil {
			e = x
		} else {
			e, err = convertScalar(f, x)
		}
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out.Index(i).Set(reflect.ValueOf(e))
	}
	return out.Interface(), nil
}

func convertScalar(f *Field, v any) (any, error) {
	switch f.Type {
	case TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, fmt.Errorf("want bool, got %T", v)
	case TypeString, TypeWString:
		if s, ok := v.(string); ok {
			return s, nil
		}
		return nil, fmt.Errorf("want string, got %T", v)
	case TypeMessage:
		switch x := v.(type) {
		case *Struct:
			return x, nil
		case map[string]any:
			return FromMap(f.Message, x)
		}
		return nil, fmt.Errorf("want a %s (map), got %T", f.Message.FullName(), v)
	case TypeLongDouble:
		if ld, ok := v.(cdr.LongDouble); ok {
			return ld, nil
		}
		x, err := toFloat(v)
		if err != nil {
			return nil, err
		}
		return cdr.LongDoubleFromFloat64(x), nil
	case TypeFloat:
		x, err := toFloat(v)
		if err != nil {
			return nil, err
		}
		return float32(x), nil
	case TypeDouble:
		return toFloat(v)
	case TypeChar, TypeOctet, TypeUint8, TypeUint16, TypeWchar, TypeUint32, TypeUint64:
		if s, ok := v.(string); ok && f.Type == TypeChar && utf8.RuneCountInString(s) == 1 && len(s) == 1 {
			return s[0], nil
		}
		bits := map[TypeID]uint{TypeChar: 8, TypeOctet: 8, TypeUint8: 8, TypeUint16: 16, TypeWchar: 16, TypeUint32: 32, TypeUint64: 64}[f.Type]
		u, err := toUint(v, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return uint8(u), nil
		case 16:
			return uint16(u), nil
		case 32:
			return uint32(u), nil
		}
		return u, nil
	case TypeInt8, TypeInt16, TypeInt32, TypeInt64:
		bits := map[TypeID]uint{TypeInt8: 8, TypeInt16: 16, TypeInt32: 32, TypeInt64: 64}[f.Type]
		n, err := toInt(v, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	}
	return nil, fmt.Errorf("unsupported type %s", f.Type)
}

func toFloat(v any) (float64, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), nil
	}
	return 0, fmt.Errorf("want a number, got %T", v)
}

func toInt(v any, bits uint) (int64, error) {
	lo, hi := -int64(1)<<(bits-1), int64(1)<<(bits-1)-1
	rv := reflect.ValueOf(v)
	var n int64
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = rv.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if rv.Uint() > uint64(hi) {
			return 0, fmt.Errorf("%v out of range for int%d", v, bits)
		}
		n = int64(rv.Uint())
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if f != math.Trunc(f) || f < float64(lo) || f >= -float64(lo) {
			return 0, fmt.Errorf("%v is not an int%d", v, bits)
		}
		n = int64(f)
	default:
		return 0, fmt.Errorf("want an integer, got %T", v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%v out of range for int%d", v, bits)
	}
	return n, nil
}

func toUint(v any, bits uint) (uint64, error) {
	hi := uint64(math.MaxUint64) >> (64 - bits)
	rv := reflect.ValueOf(v)
	var u uint64
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if rv.Int() < 0 {
			return 0, fmt.Errorf("%v out of range for uint%d", v, bits)
		}
		u = uint64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u = rv.Uint()
	case reflect.Float32, reflect.Float64:
		f := rv.Float()
		if f != math.Trunc(f) || f < 0 || f >= math.Ldexp(1, int(bits)) {
			return 0, fmt.Errorf("%v is not a uint%d", v, bits)
		}
		u = uint64(f)
	default:
		return 0, fmt.Errorf("want an unsigned integer, got %T", v)
	}
	if u > hi {
		return 0, fmt.Errorf("%v out of range for uint%d", v, bits)
	}
	return u, nil
}

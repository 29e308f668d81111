package schema

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// FieldError locates a codec error inside a message: Path is the dotted
// field path ("header.stamp.sec", "points[3].x").
type FieldError struct {
	Type string // full name of the top-level message
	Path string
	Err  error
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("schema: %s field %s: %v", e.Type, e.Path, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// ErrValue is wrapped by errors about values that do not match the schema
// (wrong Go type, wrong array length, bound exceeded).
var ErrValue = errors.New("value does not match the schema")

// inField prefixes a field name to the path of err.
func inField(name string, idx int, err error) error {
	seg := name
	if idx >= 0 {
		seg += "[" + strconv.Itoa(idx) + "]"
	}
	var fe *FieldError
	if errors.As(err, &fe) && fe.Type == "" {
		fe.Path = joinPath(seg, fe.Path)
		return fe
	}
	return &FieldError{Path: seg, Err: err}
}

func joinPath(a, b string) string {
	if b == "" {
		return a
	}
	if strings.HasPrefix(b, "[") {
		return a + b
	}
	return a + "." + b
}

func topError(m *Message, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) && fe.Type == "" {
		fe.Type = m.FullName()
		return fe
	}
	return fmt.Errorf("schema: %s: %w", m.FullName(), err)
}

func valueErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrValue, fmt.Sprintf(format, args...))
}

// sink is what the encoder walk writes to: *cdr.Encoder, or a sizer that
// only counts.
type sink interface {
	Offset() int
	WriteBool(bool)
	WriteOctet(byte)
	WriteInt8(int8)
	WriteUint16(uint16)
	WriteInt16(int16)
	WriteUint32(uint32)
	WriteInt32(int32)
	WriteUint64(uint64)
	WriteInt64(int64)
	WriteFloat32(float32)
	WriteFloat64(float64)
	WriteLongDouble(cdr.LongDouble)
	WriteLength(int)
	WriteString(string)
	WriteWString([]uint16)
	WriteOctets([]byte)
}

// Encode serializes v, a value of m, as a complete CDR_LE message:
// encapsulation header then payload.
func Encode(m *Message, v *Struct) ([]byte, error) {
	n, err := SerializedSize(m, v)
	if err != nil {
		return nil, err
	}
	e := cdr.NewEncoder(make([]byte, 0, n))
	if err := EncodeTo(e, m, v); err != nil {
		return nil, err
	}
	return e.Bytes(), nil
}

// EncodeTo appends the payload of v, a value of m, to e.
func EncodeTo(e *cdr.Encoder, m *Message, v *Struct) error {
	if err := encodeStruct(e, m, v); err != nil {
		return topError(m, err)
	}
	return e.Err()
}

// SerializedSize returns the size Encode(m, v) produces, header included.
func SerializedSize(m *Message, v *Struct) (int, error) {
	var s sizer
	if err := encodeStruct(&s, m, v); err != nil {
		return 0, topError(m, err)
	}
	return cdr.HeaderSize + s.off, nil
}

// PayloadSize returns the size of v's payload when it starts at payload
// offset off (alignment depends on it): what EncodeTo appends there.
func PayloadSize(m *Message, v *Struct, off int) (int, error) {
	s := sizer{off: off}
	if err := encodeStruct(&s, m, v); err != nil {
		return 0, topError(m, err)
	}
	return s.off - off, nil
}

func encodeStruct(w sink, m *Message, v *Struct) error {
	if v == nil {
		return valueErr("nil %s", m.FullName())
	}
	if v.Type != m && (v.Type == nil || v.Type.FullName() != m.FullName()) {
		name := "<nil type>"
		if v.Type != nil {
			name = v.Type.FullName()
		}
		return valueErr("value of %s given for %s", name, m.FullName())
	}
	if len(v.Values) != len(m.Fields) {
		return valueErr("%s value has %d fields, type has %d", m.FullName(), len(v.Values), len(m.Fields))
	}
	for i := range m.Fields {
		if err := encodeField(w, &m.Fields[i], v.Values[i]); err != nil {
			return inField(m.Fields[i].Name, -1, err)
		}
	}
	return nil
}

func encodeField(w sink, f *Field, v any) error {
	if !f.IsArray {
		return encodeScalar(w, f, v)
	}
	switch f.Type {
	case TypeFloat:
		return encSlice(w, f, v, w.WriteFloat32)
	case TypeDouble:
		return encSlice(w, f, v, w.WriteFloat64)
	case TypeLongDouble:
		return encSlice(w, f, v, w.WriteLongDouble)
	case TypeChar, TypeOctet, TypeUint8:
		s, ok := v.([]uint8)
		if !ok {
			return valueErr("want []uint8, got %T", v)
		}
		if err := countPrefix(w, f, len(s)); err != nil {
			return err
		}
		w.WriteOctets(s)
		return nil
	case TypeWchar, TypeUint16:
		return encSlice(w, f, v, w.WriteUint16)
	case TypeBoolean:
		return encSlice(w, f, v, w.WriteBool)
	case TypeInt8:
		return encSlice(w, f, v, w.WriteInt8)
	case TypeInt16:
		return encSlice(w, f, v, w.WriteInt16)
	case TypeUint32:
		return encSlice(w, f, v, w.WriteUint32)
	case TypeInt32:
		return encSlice(w, f, v, w.WriteInt32)
	case TypeUint64:
		return encSlice(w, f, v, w.WriteUint64)
	case TypeInt64:
		return encSlice(w, f, v, w.WriteInt64)
	case TypeString, TypeWString:
		s, ok := v.([]string)
		if !ok {
			return valueErr("want []string, got %T", v)
		}
		if err := countPrefix(w, f, len(s)); err != nil {
			return err
		}
		for i, e := range s {
			if err := encodeString(w, f, e); err != nil {
				return inField("", i, err)
			}
		}
		return nil
	case TypeMessage:
		s, ok := v.([]*Struct)
		if !ok {
			return valueErr("want []*schema.Struct, got %T", v)
		}
		if err := countPrefix(w, f, len(s)); err != nil {
			return err
		}
		for i, e := range s {
			if err := encodeStruct(w, f.Message, e); err != nil {
				return inField("", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("invalid type id %d", f.Type)
}

// countPrefix checks the element count against the field and writes the
// sequence count when the field is a sequence.
func countPrefix(w sink, f *Field, n int) error {
	if err := checkCount(f, n); err != nil {
		return fmt.Errorf("%w: %v", ErrValue, err)
	}
	if f.IsSequence() {
		w.WriteLength(n)
	}
	return nil
}

func encSlice[T any](w sink, f *Field, v any, write func(T)) error {
	s, ok := v.([]T)
	if !ok {
		var zero T
		return valueErr("want []%T, got %T", zero, v)
	}
	if err := countPrefix(w, f, len(s)); err != nil {
		return err
	}
	for _, e := range s {
		write(e)
	}
	return nil
}

func encScalar[T any](v any, write func(T)) error {
	x, ok := v.(T)
	if !ok {
		var zero T
		return valueErr("want %T, got %T", zero, v)
	}
	write(x)
	return nil
}

func encodeScalar(w sink, f *Field, v any) error {
	switch f.Type {
	case TypeFloat:
		return encScalar(v, w.WriteFloat32)
	case TypeDouble:
		return encScalar(v, w.WriteFloat64)
	case TypeLongDouble:
		return encScalar(v, w.WriteLongDouble)
	case TypeChar, TypeOctet, TypeUint8:
		return encScalar(v, w.WriteOctet)
	case TypeWchar, TypeUint16:
		return encScalar(v, w.WriteUint16)
	case TypeBoolean:
		return encScalar(v, w.WriteBool)
	case TypeInt8:
		return encScalar(v, w.WriteInt8)
	case TypeInt16:
		return encScalar(v, w.WriteInt16)
	case TypeUint32:
		return encScalar(v, w.WriteUint32)
	case TypeInt32:
		return encScalar(v, w.WriteInt32)
	case TypeUint64:
		return encScalar(v, w.WriteUint64)
	case TypeInt64:
		return encScalar(v, w.WriteInt64)
	case TypeString, TypeWString:
		s, ok := v.(string)
		if !ok {
			return valueErr("want string, got %T", v)
		}
		return encodeString(w, f, s)
	case TypeMessage:
		s, ok := v.(*Struct)
		if !ok {
			return valueErr("want *schema.Struct, got %T", v)
		}
		return encodeStruct(w, f.Message, s)
	}
	return fmt.Errorf("invalid type id %d", f.Type)
}

func encodeString(w sink, f *Field, s string) error {
	if err := checkStringBound(f, s); err != nil {
		return fmt.Errorf("%w: %v", ErrValue, err)
	}
	if f.Type == TypeWString {
		w.WriteWString(utf16.Encode([]rune(s)))
		return nil
	}
	w.WriteString(s)
	return nil
}

// sizer counts what an Encoder would write.
type sizer struct{ off int }

func (s *sizer) Offset() int                    { return s.off }
func (s *sizer) add(align, n int)               { s.off = cdr.Align(s.off, align) + n }
func (s *sizer) WriteBool(bool)                 { s.off++ }
func (s *sizer) WriteOctet(byte)                { s.off++ }
func (s *sizer) WriteInt8(int8)                 { s.off++ }
func (s *sizer) WriteUint16(uint16)             { s.add(2, 2) }
func (s *sizer) WriteInt16(int16)               { s.add(2, 2) }
func (s *sizer) WriteUint32(uint32)             { s.add(4, 4) }
func (s *sizer) WriteInt32(int32)               { s.add(4, 4) }
func (s *sizer) WriteUint64(uint64)             { s.add(8, 8) }
func (s *sizer) WriteInt64(int64)               { s.add(8, 8) }
func (s *sizer) WriteFloat32(float32)           { s.add(4, 4) }
func (s *sizer) WriteFloat64(float64)           { s.add(8, 8) }
func (s *sizer) WriteLongDouble(cdr.LongDouble) { s.add(8, 16) }
func (s *sizer) WriteLength(int)                { s.add(4, 4) }
func (s *sizer) WriteString(v string)           { s.add(4, 4+len(v)+1) }
func (s *sizer) WriteWString(u []uint16)        { s.add(4, 4+4*len(u)) }
func (s *sizer) WriteOctets(b []byte)           { s.off += len(b) }

// Decode parses a complete message (encapsulation header, CDR_LE or
// CDR_BE, then payload) as a value of m. Bytes after the last field are
// ignored (writers pad payloads to a multiple of 4).
func Decode(m *Message, data []byte) (*Struct, error) {
	d, err := cdr.NewDecoder(data)
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", m.FullName(), err)
	}
	return DecodeFrom(d, m)
}

// DecodeFrom reads one value of m from d.
func DecodeFrom(d *cdr.Decoder, m *Message) (*Struct, error) {
	v, err := decodeStruct(d, m)
	if err != nil {
		return nil, topError(m, err)
	}
	return v, nil
}

func decodeStruct(d *cdr.Decoder, m *Message) (*Struct, error) {
	v := &Struct{Type: m, Values: make([]any, len(m.Fields))}
	for i := range m.Fields {
		x, err := decodeField(d, &m.Fields[i])
		if err != nil {
			return nil, inField(m.Fields[i].Name, -1, err)
		}
		v.Values[i] = x
	}
	return v, nil
}

// elemCount returns the number of elements of an array field, reading the
// count of a sequence, and checks before any allocation that the input can
// hold that many elements.
func elemCount(d *cdr.Decoder, f *Field) (int, error) {
	minSize := elemMinSize(f)
	if f.IsFixedArray() {
		if uint64(f.ArraySize)*uint64(max(minSize, 1)) > uint64(d.Remaining()) {
			return 0, &cdr.Error{Offset: d.Offset(), Op: "array " + f.TypeString(), Err: cdr.ErrTruncated,
				Detail: fmt.Sprintf("%d elements of at least %d bytes, %d bytes left", f.ArraySize, minSize, d.Remaining())}
		}
		return f.ArraySize, nil
	}
	at := d.Offset()
	n, err := d.ReadLength(minSize)
	if err != nil {
		return 0, err
	}
	if f.IsUpperBound && n > f.ArraySize {
		return 0, &cdr.Error{Offset: at, Op: "sequence " + f.TypeString(), Err: cdr.ErrTooLong,
			Detail: fmt.Sprintf("%d elements, bound %d", n, f.ArraySize)}
	}
	return n, nil
}

func decSlice[T any](d *cdr.Decoder, f *Field, read func() (T, error)) (any, error) {
	n, err := elemCount(d, f)
	if err != nil {
		return nil, err
	}
	s := make([]T, n)
	for i := range s {
		if s[i], err = read(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func decodeField(d *cdr.Decoder, f *Field) (any, error) {
	if !f.IsArray {
		return decodeScalar(d, f)
	}
	switch f.Type {
	case TypeFloat:
		return decSlice(d, f, d.ReadFloat32)
	case TypeDouble:
		return decSlice(d, f, d.ReadFloat64)
	case TypeLongDouble:
		return decSlice(d, f, d.ReadLongDouble)
	case TypeChar, TypeOctet, TypeUint8:
		n, err := elemCount(d, f)
		if err != nil {
			return nil, err
		}
		return d.ReadOctets(n)
	case TypeWchar, TypeUint16:
		return decSlice(d, f, d.ReadUint16)
	case TypeBoolean:
		return decSlice(d, f, d.ReadBool)
	case TypeInt8:
		return decSlice(d, f, d.ReadInt8)
	case TypeInt16:
		return decSlice(d, f, d.ReadInt16)
	case TypeUint32:
		return decSlice(d, f, d.ReadUint32)
	case TypeInt32:
		return decSlice(d, f, d.ReadInt32)
	case TypeUint64:
		return decSlice(d, f, d.ReadUint64)
	case TypeInt64:
		return decSlice(d, f, d.ReadInt64)
	case TypeString, TypeWString:
		n, err := elemCount(d, f)
		if err != nil {
			return nil, err
		}
		s := make([]string, n)
		for i := range s {
			if s[i], err = decodeString(d, f); err != nil {
				return nil, inField("", i, err)
			}
		}
		return s, nil
	case TypeMessage:
		n, err := elemCount(d, f)
		if err != nil {
			return nil, err
		}
		s := make([]*Struct, n)
		for i := range s {
			if s[i], err = decodeStruct(d, f.Message); err != nil {
				return nil, inField("", i, err)
			}
		}
		return s, nil
	}
	return nil, fmt.Errorf("invalid type id %d", f.Type)
}

func decodeScalar(d *cdr.Decoder, f *Field) (any, error) {
	switch f.Type {
	case TypeFloat:
		return d.ReadFloat32()
	case TypeDouble:
		return d.ReadFloat64()
	case TypeLongDouble:
		return d.ReadLongDouble()
	case TypeChar, TypeOctet, TypeUint8:
		return d.ReadOctet()
	case TypeWchar, TypeUint16:
		return d.ReadUint16()
	case TypeBoolean:
		return d.ReadBool()
	case TypeInt8:
		return d.ReadInt8()
	case TypeInt16:
		return d.ReadInt16()
	case TypeUint32:
		return d.ReadUint32()
	case TypeInt32:
		return d.ReadInt32()
	case TypeUint64:
		return d.ReadUint64()
	case TypeInt64:
		return d.ReadInt64()
	case TypeString, TypeWString:
		return decodeString(d, f)
	case TypeMessage:
		return decodeStruct(d, f.Message)
	}
	return nil, fmt.Errorf("invalid type id %d", f.Type)
}

func decodeString(d *cdr.Decoder, f *Field) (string, error) {
	at := d.Offset()
	var s string
	var n int
	if f.Type == TypeWString {
		u, err := d.ReadWString()
		if err != nil {
			return "", err
		}
		s, n = string(utf16.Decode(u)), len(u)
	} else {
		var err error
		if s, err = d.ReadString(); err != nil {
			return "", err
		}
		n = len(s)
	}
	if f.StringUpperBound > 0 && n > f.StringUpperBound {
		return "", &cdr.Error{Offset: at, Op: f.TypeString(), Err: cdr.ErrTooLong,
			Detail: fmt.Sprintf("length %d, bound %d", n, f.StringUpperBound)}
	}
	return s, nil
}

// elemMinSize is the smallest wire size one element of f can have.
func elemMinSize(f *Field) int {
	switch f.Type {
	case TypeString, TypeWString:
		return cdr.SizeLength
	case TypeMessage:
		return MinPayloadSize(f.Message)
	}
	return f.Type.WireSize()
}

// MinPayloadSize is a lower bound of the payload size of any value of m,
// padding not counted: what the decoder uses to refuse counts the input
// cannot hold. It is at least 1 for any valid message.
func MinPayloadSize(m *Message) int {
	n := 0
	for i := range m.Fields {
		f := &m.Fields[i]
		switch {
		case f.IsSequence():
			n += cdr.SizeLength
		case f.IsFixedArray():
			n += f.ArraySize * elemMinSize(f)
		default:
			n += elemMinSize(f)
		}
	}
	return n
}

// MaxSerializedSize returns the largest size, header included, a value of
// m can serialize to, and whether there is one: bounded is false when m
// contains (at any depth) an unbounded string, wstring or sequence, and
// size is then meaningless.
func MaxSerializedSize(m *Message) (size int, bounded bool) {
	off, ok := maxOffset(m, 0)
	return cdr.HeaderSize + off, ok
}

// FixedSize reports whether every value of m has the same serialized size
// (no strings, wstrings or sequences at any depth), and that size, header
// included. Such types are the candidates for loans whose memory layout
// is their wire layout.
func FixedSize(m *Message) (size int, fixed bool) {
	if !isFixed(m) {
		return 0, false
	}
	s, _ := MaxSerializedSize(m)
	return s, true
}

func isFixed(m *Message) bool {
	for i := range m.Fields {
		f := &m.Fields[i]
		switch {
		case f.IsSequence(), f.Type == TypeString, f.Type == TypeWString:
			return false
		case f.Type == TypeMessage && !isFixed(f.Message):
			return false
		}
	}
	return true
}

// maxOffset returns the payload offset after the largest value of m that
// starts at off.
func maxOffset(m *Message, off int) (int, bool) {
	bounded := true
	for i := range m.Fields {
		f := &m.Fields[i]
		n := 1
		if f.IsArray {
			if f.IsSequence() {
				off = cdr.Align(off, 4) + cdr.SizeLength
				if !f.IsUpperBound {
					bounded = false
					n = 0 // an unbounded sequence: size meaningless, count none
				}
			}
			if f.ArraySize > 0 {
				n = f.ArraySize
			}
		}
		if n == 0 {
			continue
		}
		switch f.Type {
		case TypeString, TypeWString:
			if f.StringUpperBound == 0 {
				bounded = false
			}
			per := cdr.SizeLength + f.StringUpperBound + 1
			if f.Type == TypeWString {
				per = cdr.SizeLength + cdr.SizeWcharInStr*f.StringUpperBound
			}
			off = repeatOffset(n, off, func(o int) int { return cdr.Align(o, 4) + per })
		case TypeMessage:
			if _, ok := maxOffset(f.Message, off); !ok {
				bounded = false
			}
			off = repeatOffset(n, off, func(o int) int {
				o, _ = maxOffset(f.Message, o)
				return o
			})
		default:
			off = cdr.Align(off, f.Type.WireAlign()) + n*f.Type.WireSize()
		}
	}
	return off, bounded
}

// repeatOffset applies step n times starting at off. What step adds depends
// only on off modulo 8 (alignment never exceeds 8), so after at most 8 steps
// the residues cycle and the rest is computed by multiplication: a fixed
// array of a million structs costs a handful of steps.
func repeatOffset(n, off int, step func(int) int) int {
	seenAt := map[int]int{} // off%8 -> step index
	offAt := []int{}
	for i := 0; i < n; i++ {
		r := off % cdr.MaxAlign
		if j, ok := seenAt[r]; ok {
			cycleLen := i - j
			cycleAdv := off - offAt[j]
			left := n - i
			off += (left / cycleLen) * cycleAdv
			for range left % cycleLen {
				off = step(off)
			}
			return off
		}
		seenAt[r] = i
		offAt = append(offAt, off)
		off = step(off)
	}
	return off
}

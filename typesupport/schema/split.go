package schema

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// Split messages (docs/ARCHITECTURE.md §3.12). A message with a large byte
// field (a sensor_msgs/Image's data) can travel as two parts: the field's
// bytes (a block of a topic's GPU pool) and the rest, a meta block holding
// the message's CDR with that field written empty. These functions do in Go
// what the rmw's walkers do in C (rgaps_ts_byte_member,
// rgaps_ts_serialize_detached, rgaps_ts_deserialize_detached): find the
// field, read and write the meta block's header, and cut a whole message's
// CDR into the two parts and put them together again, byte for byte what
// Encode writes for the whole message.

// The meta block's header: "RGDM", the version, 3 zero bytes, the byte
// field's index among the type's fields (u32 LE), 4 zero bytes; the rest
// CDR (its encapsulation header first) follows.
const (
	MetaMagic      = "RGDM"
	MetaVersion    = 1
	MetaHeaderSize = 16
)

// ErrNoByteField is wrapped by ByteField's errors: the type has no byte
// field the rule picks.
var ErrNoByteField = errors.New("no byte field")

// IsByteSequence reports whether f is a sequence (bounded or not) of uint8,
// byte or char: a field that can be detached from its message. int8 and
// bool sequences, fixed arrays and fields of nested messages cannot.
func (f *Field) IsByteSequence() bool {
	return f.IsSequence() && (f.Type == TypeUint8 || f.Type == TypeOctet || f.Type == TypeChar)
}

// ByteField is the index in m.Fields of its byte field by the rmw's rule:
// name non-empty, the field of that name, which must be a byte sequence;
// name empty, the field named "data" if it is a byte sequence, else the only
// byte sequence of m. Otherwise the error wraps ErrNoByteField and names
// m's byte sequences.
func ByteField(m *Message, name string) (int, error) {
	want := name
	if want == "" {
		want = "data"
	}
	var cands []string
	only, named := -1, false
	for i := range m.Fields {
		f := &m.Fields[i]
		byteSeq := f.IsByteSequence()
		if f.Name == want {
			if byteSeq {
				return i, nil
			}
			named = true
		}
		if byteSeq {
			only = i
			cands = append(cands, f.Name)
		}
	}
	if name == "" && len(cands) == 1 {
		return only, nil
	}
	why := "none named data and more than one"
	switch {
	case name != "" && named:
		why = "not a sequence of uint8, byte or char"
	case name != "":
		why = "no such field"
	case len(cands) == 0:
		why = "none"
	}
	if name == "" {
		name = "(default)"
	}
	if len(cands) == 0 {
		return -1, fmt.Errorf("schema: %s: byte field %s: %s: %w (the type has no sequence of uint8, byte or char)", m.FullName(), name, why, ErrNoByteField)
	}
	return -1, fmt.Errorf("schema: %s: byte field %s: %s: %w (its byte sequences are %s)", m.FullName(), name, why, ErrNoByteField, strings.Join(cands, ", "))
}

// AppendMetaHeader appends the meta block header naming byte field field to
// dst; the rest CDR goes after it.
func AppendMetaHeader(dst []byte, field int) []byte {
	dst = append(dst, MetaMagic...)
	dst = append(dst, MetaVersion, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(field))
	return append(dst, 0, 0, 0, 0)
}

// ParseMeta checks a meta block's header and returns the byte field it
// names and the rest CDR after it (a view of meta). A block without the
// header, of another version, or with no CDR header after it is an error.
func ParseMeta(meta []byte) (field int, rest []byte, err error) {
	if len(meta) < MetaHeaderSize+cdr.HeaderSize || string(meta[:4]) != MetaMagic {
		return 0, nil, fmt.Errorf("schema: a meta block of %d bytes without the %s header", len(meta), MetaMagic)
	}
	if meta[4] != MetaVersion {
		return 0, nil, fmt.Errorf("schema: meta block version %d (this rgaps reads %d)", meta[4], MetaVersion)
	}
	return int(binary.LittleEndian.Uint32(meta[8:])), meta[MetaHeaderSize:], nil
}

// byteField checks that field is a byte sequence of m.
func byteField(m *Message, field int) (*Field, error) {
	if field < 0 || field >= len(m.Fields) {
		return nil, fmt.Errorf("schema: %s has %d fields, no field %d", m.FullName(), len(m.Fields), field)
	}
	f := &m.Fields[field]
	if !f.IsByteSequence() {
		return nil, fmt.Errorf("schema: %s.%s (%s) is not a sequence of uint8, byte or char", m.FullName(), f.Name, f.TypeString())
	}
	return f, nil
}

// Detach cuts msg, the CDR of a whole message of m (encapsulation header
// first, CDR_LE or CDR_BE), around its byte field field: rest is the CDR_LE
// of the message with that field empty (what Encode writes for it, and what
// a meta block holds after its header), data the field's bytes, a view of
// msg (no copy).
func Detach(m *Message, field int, msg []byte) (rest, data []byte, err error) {
	f, err := byteField(m, field)
	if err != nil {
		return nil, nil, err
	}
	d, err := cdr.NewDecoder(msg)
	if err != nil {
		return nil, nil, fmt.Errorf("schema: %s: %w", m.FullName(), err)
	}
	v := &Struct{Type: m, Values: make([]any, len(m.Fields))}
	for i := range m.Fields {
		if i != field {
			if v.Values[i], err = decodeField(d, &m.Fields[i]); err != nil {
				return nil, nil, topError(m, inField(m.Fields[i].Name, -1, err))
			}
			continue
		}
		n, err := elemCount(d, f)
		if err == nil {
			data, err = d.ReadOctetsView(n)
		}
		if err != nil {
			return nil, nil, topError(m, inField(f.Name, -1, err))
		}
		v.Values[i] = []byte{}
	}
	rest, err = Encode(m, v)
	return rest, data, err
}

// Attach is Detach's inverse: given rest, the CDR of a message of m whose
// byte field field is empty (a meta block's after its header; what the
// field holds there is ignored), and n, the length of the field's bytes, it
// returns what surrounds those bytes in the whole message's CDR_LE: head
// (encapsulation header, the fields before, the field's count n) and tail
// (the fields after, aligned for where they land). head, the n bytes, tail
// is what Encode writes for the whole message.
func Attach(m *Message, field int, rest []byte, n int) (head, tail []byte, err error) {
	f, err := byteField(m, field)
	if err != nil {
		return nil, nil, err
	}
	if err := checkCount(f, n); err != nil {
		return nil, nil, topError(m, inField(f.Name, -1, fmt.Errorf("%w: %v", ErrValue, err)))
	}
	v, err := Decode(m, rest)
	if err != nil {
		return nil, nil, err
	}
	e := cdr.NewEncoder(make([]byte, 0, len(rest)+cdr.SizeLength))
	for i := range field {
		if err := encodeField(e, &m.Fields[i], v.Values[i]); err != nil {
			return nil, nil, topError(m, inField(m.Fields[i].Name, -1, err))
		}
	}
	e.WriteLength(n)
	if err := e.Err(); err != nil {
		return nil, nil, topError(m, inField(f.Name, -1, err))
	}
	// The tail starts at payload offset e.Offset()+n; alignment depends on
	// that offset modulo MaxAlign only, so the tail is encoded after that
	// many bytes of padding, which are then cut off.
	pad := (e.Offset() + n) % cdr.MaxAlign
	t := cdr.NewPayloadEncoder(make([]byte, 0, len(rest)), cdr.LittleEndian)
	for range pad {
		t.WriteOctet(0)
	}
	for i := field + 1; i < len(m.Fields); i++ {
		if err := encodeField(t, &m.Fields[i], v.Values[i]); err != nil {
			return nil, nil, topError(m, inField(m.Fields[i].Name, -1, err))
		}
	}
	if err := t.Err(); err != nil {
		return nil, nil, topError(m, err)
	}
	return e.Bytes(), t.Bytes()[pad:], nil
}

// Join puts a split message together: the CDR_LE of the whole message of m
// whose byte field field holds data and whose other fields rest holds
// (Attach, then the three parts in one new slice).
func Join(m *Message, field int, rest, data []byte) ([]byte, error) {
	head, tail, err := Attach(m, field, rest, len(data))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(head)+len(data)+len(tail))
	return append(append(append(out, head...), data...), tail...), nil
}

package schema

import (
	"fmt"
	"strings"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
)

// TypeID is a rosidl introspection field type id
// (rosidl_typesupport_introspection_c/field_types.h; the same numbers in the
// C and C++ type supports).
type TypeID uint8

// The field type ids. ".msg" types map onto them as rosidl does: float32 →
// TypeFloat, float64 → TypeDouble, bool → TypeBoolean, byte → TypeOctet,
// char → TypeUint8 (a .msg char is an unsigned byte; TypeChar is IDL's
// char), string → TypeString, wstring → TypeWString.
const (
	TypeFloat      TypeID = 1
	TypeDouble     TypeID = 2
	TypeLongDouble TypeID = 3
	TypeChar       TypeID = 4
	TypeWchar      TypeID = 5
	TypeBoolean    TypeID = 6
	TypeOctet      TypeID = 7
	TypeUint8      TypeID = 8
	TypeInt8       TypeID = 9
	TypeUint16     TypeID = 10
	TypeInt16      TypeID = 11
	TypeUint32     TypeID = 12
	TypeInt32      TypeID = 13
	TypeUint64     TypeID = 14
	TypeInt64      TypeID = 15
	TypeString     TypeID = 16
	TypeWString    TypeID = 17
	TypeMessage    TypeID = 18
)

var typeNames = [...]string{
	TypeFloat:      "float32",
	TypeDouble:     "float64",
	TypeLongDouble: "long double",
	TypeChar:       "char",
	TypeWchar:      "wchar",
	TypeBoolean:    "bool",
	TypeOctet:      "byte",
	TypeUint8:      "uint8",
	TypeInt8:       "int8",
	TypeUint16:     "uint16",
	TypeInt16:      "int16",
	TypeUint32:     "uint32",
	TypeInt32:      "int32",
	TypeUint64:     "uint64",
	TypeInt64:      "int64",
	TypeString:     "string",
	TypeWString:    "wstring",
	TypeMessage:    "message",
}

// Valid reports whether t is one of the 18 type ids.
func (t TypeID) Valid() bool { return t >= TypeFloat && t <= TypeMessage }

// String returns the .msg spelling of the type (IDL's for long double,
// char and wchar, which .msg files cannot name).
func (t TypeID) String() string {
	if t.Valid() {
		return typeNames[t]
	}
	return fmt.Sprintf("TypeID(%d)", uint8(t))
}

// IsPrimitive reports whether t has a fixed wire size (everything except
// strings, wstrings and messages).
func (t TypeID) IsPrimitive() bool { return t.Valid() && t < TypeString }

// WireSize returns the CDR size of one value of a primitive type, 0 for
// strings, wstrings and messages.
func (t TypeID) WireSize() int {
	switch t {
	case TypeBoolean, TypeOctet, TypeUint8, TypeInt8, TypeChar:
		return 1
	case TypeUint16, TypeInt16, TypeWchar:
		return 2
	case TypeUint32, TypeInt32, TypeFloat:
		return 4
	case TypeUint64, TypeInt64, TypeDouble:
		return 8
	case TypeLongDouble:
		return cdr.SizeLongDouble
	}
	return 0
}

// WireAlign returns the CDR alignment of a primitive type (its size, at
// most 8), 4 for strings and wstrings (their length prefix), 1 for
// messages (a structure has no alignment of its own).
func (t TypeID) WireAlign() int {
	switch t {
	case TypeString, TypeWString:
		return 4
	case TypeMessage:
		return 1
	}
	return min(t.WireSize(), cdr.MaxAlign)
}

// Field mirrors rosidl_typesupport_introspection_c__MessageMember, minus
// what only describes C memory (offset, size and accessor functions).
type Field struct {
	Name string
	Type TypeID
	// StringUpperBound is N for string<=N and wstring<=N (bytes for
	// string, UTF-16 units for wstring), 0 when unbounded.
	StringUpperBound int
	// Message describes the nested type when Type is TypeMessage
	// (introspection's members_).
	Message *Message
	// IsArray is true for T[N], T[] and T[<=N].
	IsArray bool
	// ArraySize is N for T[N] and T[<=N], 0 for T[].
	ArraySize int
	// IsUpperBound is true for T[<=N].
	IsUpperBound bool
	// IsKey mirrors introspection's is_key_ (an IDL @key annotation; .msg
	// files cannot set it). It does not change the CDR of the data.
	IsKey bool
	// Default is the default value from the definition, nil when none.
	// It holds the same Go type as a value of the field (see Struct).
	Default any
}

// IsSequence reports whether the field is a sequence (T[] or T[<=N]),
// which carries a count on the wire.
func (f *Field) IsSequence() bool { return f.IsArray && (f.ArraySize == 0 || f.IsUpperBound) }

// IsFixedArray reports whether the field is a fixed-size array T[N].
func (f *Field) IsFixedArray() bool { return f.IsArray && f.ArraySize > 0 && !f.IsUpperBound }

// TypeString returns the field's type in .msg syntax, e.g. "uint8[]",
// "string<=10[<=3]" or "std_msgs/Header".
func (f *Field) TypeString() string {
	var b strings.Builder
	if f.Type == TypeMessage && f.Message != nil {
		b.WriteString(f.Message.Package + "/" + f.Message.Name)
	} else {
		b.WriteString(f.Type.String())
		if f.StringUpperBound > 0 {
			fmt.Fprintf(&b, "<=%d", f.StringUpperBound)
		}
	}
	if f.IsArray {
		switch {
		case f.IsUpperBound:
			fmt.Fprintf(&b, "[<=%d]", f.ArraySize)
		case f.ArraySize > 0:
			fmt.Fprintf(&b, "[%d]", f.ArraySize)
		default:
			b.WriteString("[]")
		}
	}
	return b.String()
}

// Constant is a constant declared in a definition (TYPE NAME=VALUE). Value
// has the Go type of a scalar of Type.
type Constant struct {
	Name  string
	Type  TypeID
	Value any
}

// Message mirrors rosidl_typesupport_introspection_c__MessageMembers: a
// message type and its fields in wire order.
type Message struct {
	Package string // e.g. "std_msgs"
	// Kind is the interface folder: "msg", "srv" (service request and
	// response types) or "action".
	Kind      string
	Name      string // e.g. "Header", "AddTwoInts_Request"
	Fields    []Field
	Constants []Constant
}

// FullName returns "package/kind/Name", e.g. "std_msgs/msg/Header" (the
// ROS 2 type name as graph queries report it).
func (m *Message) FullName() string { return m.Package + "/" + m.kind() + "/" + m.Name }

// Namespace returns the introspection message_namespace_, e.g.
// "std_msgs__msg".
func (m *Message) Namespace() string { return m.Package + "__" + m.kind() }

// DDSTypeName returns the type name ROS 2's DDS middlewares register, e.g.
// "std_msgs::msg::dds_::Header_".
func (m *Message) DDSTypeName() string {
	return m.Package + "::" + m.kind() + "::dds_::" + m.Name + "_"
}

func (m *Message) kind() string {
	if m.Kind == "" {
		return "msg"
	}
	return m.Kind
}

// FieldIndex returns the index of the named field, -1 if there is none.
func (m *Message) FieldIndex(name string) int {
	for i := range m.Fields {
		if m.Fields[i].Name == name {
			return i
		}
	}
	return -1
}

// Constant returns the named constant.
func (m *Message) Constant(name string) (Constant, bool) {
	for _, c := range m.Constants {
		if c.Name == name {
			return c, true
		}
	}
	return Constant{}, false
}

// Validate checks that the description is one the codec can use: valid
// type ids, nested messages present (and only on message fields), unique
// non-empty field names, sane array sizes and bounds, default values of
// the right Go type, and no type containing itself.
func (m *Message) Validate() error {
	return m.validate(map[*Message]bool{})
}

func (m *Message) validate(onPath map[*Message]bool) error {
	if m == nil {
		return fmt.Errorf("schema: nil message")
	}
	if onPath[m] {
		return fmt.Errorf("schema: %s contains itself", m.FullName())
	}
	onPath[m] = true
	defer delete(onPath, m)
	if len(m.Fields) == 0 {
		return fmt.Errorf("schema: %s has no fields (rosidl gives an empty message a uint8 structure_needs_at_least_one_member)", m.FullName())
	}
	seen := map[string]bool{}
	for i := range m.Fields {
		f := &m.Fields[i]
		where := fmt.Sprintf("schema: %s field %d (%q)", m.FullName(), i, f.Name)
		switch {
		case f.Name == "":
			return fmt.Errorf("%s: empty name", where)
		case seen[f.Name]:
			return fmt.Errorf("%s: duplicate name", where)
		case !f.Type.Valid():
			return fmt.Errorf("%s: invalid type id %d", where, f.Type)
		case f.Type == TypeMessage && f.Message == nil:
			return fmt.Errorf("%s: message field without a nested message", where)
		case f.Type != TypeMessage && f.Message != nil:
			return fmt.Errorf("%s: nested message on a %s field", where, f.Type)
		case f.StringUpperBound < 0 || (f.StringUpperBound > 0 && f.Type != TypeString && f.Type != TypeWString):
			return fmt.Errorf("%s: string bound %d on a %s field", where, f.StringUpperBound, f.Type)
		case f.ArraySize < 0 || (!f.IsArray && (f.ArraySize != 0 || f.IsUpperBound)):
			return fmt.Errorf("%s: inconsistent array description", where)
		case f.IsUpperBound && f.ArraySize == 0:
			return fmt.Errorf("%s: bounded sequence with bound 0", where)
		}
		seen[f.Name] = true
		if f.Default != nil {
			if err := checkValue(f, f.Default); err != nil {
				return fmt.Errorf("%s: default value: %v", where, err)
			}
		}
		if f.Type == TypeMessage {
			if err := f.Message.validate(onPath); err != nil {
				return err
			}
		}
	}
	return nil
}

// Service is a service type: a request and a response message.
type Service struct {
	Package  string
	Name     string
	Request  *Message // Kind "srv", Name "<Name>_Request"
	Response *Message // Kind "srv", Name "<Name>_Response"
}

// FullName returns "package/srv/Name".
func (s *Service) FullName() string { return s.Package + "/srv/" + s.Name }

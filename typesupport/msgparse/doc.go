// Package msgparse parses ROS 2 interface definitions in the .msg and .srv
// formats into schema.Message and schema.Service values.
//
// The grammar is rosidl's (rosidl_adapter/parser.py), one declaration per
// line:
//
//	# a comment, alone or after a declaration
//	int32 count              # field: TYPE name
//	float64 ratio 0.5        # field with a default value
//	string name "it's"       # string default, quoted (' or ") or bare
//	int32[3] rgb [1, 2, 3]   # array default
//	uint8 RED=1              # constant: TYPE NAME=VALUE
//	string GREETING="hi"
//
// Types: the primitives bool, byte, char, int8…int64, uint8…uint64,
// float32, float64, string, wstring; bounded strings string<=N and
// wstring<=N; nested messages as pkg/Type, or Type for one of the same
// package (pkg/msg/Type is accepted too); time and duration, the ROS 1
// names rosidl still lists, stand for builtin_interfaces/Time and
// Duration. Any type may carry an array suffix: [N] (fixed size), [] (an
// unbounded sequence) or [<=N] (a bounded sequence). The type ids follow
// rosidl: byte is OCTET, char is UINT8 (not IDL's CHAR), float32 is FLOAT,
// float64 is DOUBLE.
//
// Names follow rosidl's patterns: fields and packages are lower case
// letters, digits and single underscores, starting with a letter and not
// ending with '_'; constants the same in upper case; types CamelCase.
// Values follow rosidl's rules too: bool is true/false/1/0, integers are
// decimal or 0x/0o/0b-prefixed and must fit the type, strings must respect
// their bound, arrays must have exactly N elements (T[N]) or at most N
// (T[<=N]); a message-typed field cannot have a default; constants must have
// a primitive, non-array type.
//
// A message without fields gets the member rosidl gives it,
// uint8 structure_needs_at_least_one_member, so its schema matches the
// introspection tables of the generated code.
//
// A .srv file holds a request definition, a line "---" and a response
// definition; they become messages pkg/srv/Name_Request and
// pkg/srv/Name_Response.
//
// Two deliberate leniencies over rosidl: a '#' inside a quoted default
// value does not start a comment, and a default string value containing
// '=' does not turn its field into a constant (rosidl's parser cuts or
// misreads both).
//
// Nested types are looked up through a Resolver. A Registry holds
// definition texts (added one by one or from an fs.FS laid out as
// <pkg>/msg/<Name>.msg, such as an install prefix's share directory),
// parses them on demand, caches the schemas, and reports definitions that
// contain themselves. A registry can also look definitions up when they are
// first needed (SetLookup), such as in an installation's share directories.
//
// Every error is an *Error naming the file ("pkg/msg/Name.msg") and the
// 1-based line.
package msgparse

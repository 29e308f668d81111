package main

// What `rgaps topic pub` and `echo` know of message types: where the
// definitions come from (typesupport/interfaces: RGAPS_INTERFACE_PATH,
// AMENT_PREFIX_PATH's share directories, the embedded ones), values given
// in ros2's YAML flow syntax, and messages printed as ros2 prints them.
// The codec is typesupport/schema's; nothing here writes CDR by hand.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// interfacesEnv names the directories searched first for definitions.
const interfacesEnv = interfaces.PathEnv

// searchPath and messageTypes are read once per process.
var (
	searchPath   = sync.OnceValue(func() []string { return interfaces.SearchPath(os.Getenv) })
	messageTypes = sync.OnceValue(func() *msgparse.Registry { return interfaces.Search(searchPath()) })
)

// errUnknownType is a type whose definition is nowhere on the search path.
var errUnknownType = errors.New("unknown message type")

// resolveMessage returns the schema of a message type named pkg/msg/Name
// or pkg/Name. An unknown type is errUnknownType, saying where it looked.
func resolveMessage(name string) (*schema.Message, error) {
	if !typeNameRE.MatchString(name) {
		return nil, fmt.Errorf("%w %q: not a message type name (pkg/msg/Name)", errUnknownType, name)
	}
	m, err := messageTypes().Message(name)
	switch {
	case errors.Is(err, msgparse.ErrUnknownType):
		return nil, fmt.Errorf("%w %s: no definition in %s", errUnknownType, name, interfaces.DescribeSearch(searchPath()))
	case err != nil:
		return nil, fmt.Errorf("reading the definition of %s: %w", name, err)
	}
	return m, nil
}

// typeNameRE is what a message type name looks like (pkg/msg/Name or
// pkg/Name): pub's second positional argument is a type when it matches,
// else the values of a std_msgs/msg/String.
var typeNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*/(msg/)?[A-Z][A-Za-z0-9]*$`)

// parseValues reads pub's values for m: the YAML flow syntax of `ros2
// topic pub` ("{data: hello}", "data: hello", "" for the defaults), or, for
// a message of one field, that field's value alone ("hello" for
// std_msgs/msg/String, "5" for std_msgs/msg/Int32). A lone value of a
// string field is taken as it is written, quotes and all.
func parseValues(m *schema.Message, text string) (*schema.Struct, error) {
	if len(m.Fields) == 1 && !schema.IsMapping(text) {
		f := &m.Fields[0]
		if (f.Type == schema.TypeString || f.Type == schema.TypeWString) && !f.IsArray {
			if strings.IndexByte(text, 0) >= 0 {
				return nil, fmt.Errorf("%s: a string cannot hold NUL", f.Name)
			}
			v := schema.New(m)
			v.Values[0] = text
			if _, err := schema.SerializedSize(m, v); err != nil { // bounds
				return nil, err
			}
			return v, nil
		}
		text = "{" + f.Name + ": " + text + "}"
	}
	return schema.Parse(m, text)
}

// plainPrefix is the number of reserved bytes before the CDR header in the
// payloads of plain types (docs/ARCHITECTURE.md §3.10, rmw_impl.h's
// RGAPS_MSG_PREFIX): version 1 writes them as zero and ignores them on
// reading.
const plainPrefix = 4

// payloadPrefix returns how many bytes precede the CDR header in the
// payloads of m's topics: plainPrefix for plain types (schema.PlainSize,
// the rmw library's rgaps_ts_is_plain), which rmw nodes carry in the
// plain layout, 0 for the others.
func payloadPrefix(m *schema.Message) int {
	if _, plain := schema.PlainSize(m); plain {
		return plainPrefix
	}
	return 0
}

// payloadSize is the size of v's payload with prefix reserved bytes
// before its CDR.
func payloadSize(v *schema.Struct, prefix int) (int, error) {
	n, err := schema.SerializedSize(v.Type, v)
	return prefix + n, err
}

// encodeInto writes prefix zero bytes and the CDR of v (header included)
// into b, which has exactly payloadSize bytes: a loan, so the message is
// built in place.
func encodeInto(b []byte, v *schema.Struct, prefix int) error {
	if len(b) <= prefix {
		return fmt.Errorf("a %d-byte loan for a message with a %d-byte prefix", len(b), prefix)
	}
	clear(b[:prefix])
	body := b[prefix:]
	e := cdr.NewEncoder(body[:0:len(body)])
	if err := schema.EncodeTo(e, v.Type, v); err != nil {
		return err
	}
	if out := e.Bytes(); len(out) != len(body) || &out[0] != &body[0] {
		return fmt.Errorf("encoded %d bytes for a %d-byte loan", prefix+len(out), len(b))
	}
	return nil
}

// echoFormat is how echo prints decoded messages.
type echoFormat struct {
	opt  schema.FormatOptions
	flow bool // one line per message in flow syntax instead of block YAML
}

// printMessage decodes one message of m, whose CDR follows prefix bytes
// (payloadPrefix), or, with a meta block, a message published with a
// device loan (decodeSplit), and writes it as `ros2 topic echo` does: block
// YAML and a "---" line. A message that does not decode is an error for the
// caller to report; nothing is written then.
func (f echoFormat) printMessage(w io.Writer, m *schema.Message, prefix int, b, meta []byte) error {
	var v *schema.Struct
	var err error
	switch {
	case meta != nil:
		v, err = decodeSplit(m, b, meta)
	case len(b) < prefix:
		err = fmt.Errorf("%d bytes, shorter than the %d-byte prefix of a plain type's payload", len(b), prefix)
	default:
		v, err = schema.Decode(m, b[prefix:])
	}
	if err != nil {
		return err
	}
	if f.flow {
		_, err = fmt.Fprintf(w, "%s\n---\n", schema.FlowString(v, f.opt.TruncateLength))
		return err
	}
	var sb strings.Builder
	if err := schema.Format(&sb, v, f.opt); err != nil {
		return err
	}
	sb.WriteString("---\n")
	_, err = io.WriteString(w, sb.String())
	return err
}

// decodeSplit decodes a message published with a device loan (the rmw's
// split layout, docs/ARCHITECTURE.md §3.12): the fields from the meta
// block, the byte field it names from the payload's bytes.
func decodeSplit(m *schema.Message, payload, meta []byte) (*schema.Struct, error) {
	i, rest, err := schema.ParseMeta(meta)
	if err != nil {
		return nil, err
	}
	if i >= len(m.Fields) {
		return nil, fmt.Errorf("the meta block names field %d of %d", i, len(m.Fields))
	}
	if !m.Fields[i].IsByteSequence() {
		return nil, fmt.Errorf("the meta block names field %s, which is not a uint8[]", m.Fields[i].Name)
	}
	v, err := schema.Decode(m, rest)
	if err != nil {
		return nil, err
	}
	v.Values[i] = payload
	return v, nil
}

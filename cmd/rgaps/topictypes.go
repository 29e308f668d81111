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

// encodeInto writes the CDR of v (header included) into b, which has
// exactly schema.SerializedSize bytes: a loan, so the message is built in
// place.
func encodeInto(b []byte, v *schema.Struct) error {
	e := cdr.NewEncoder(b[:0:len(b)])
	if err := schema.EncodeTo(e, v.Type, v); err != nil {
		return err
	}
	if out := e.Bytes(); len(out) != len(b) || &out[0] != &b[0] {
		return fmt.Errorf("encoded %d bytes for a %d-byte loan", len(out), len(b))
	}
	return nil
}

// echoFormat is how echo prints decoded messages.
type echoFormat struct {
	opt  schema.FormatOptions
	flow bool // one line per message in flow syntax instead of block YAML
}

// printMessage decodes one message of m and writes it as `ros2 topic echo`
// does: block YAML and a "---" line. A message that does not decode is an
// error for the caller to report; nothing is written then.
func (f echoFormat) printMessage(w io.Writer, m *schema.Message, b []byte) error {
	v, err := schema.Decode(m, b)
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

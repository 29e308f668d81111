package gateway

import (
	"os"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/interfaces"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/msgparse"
	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
)

// plainPrefix is the number of reserved bytes before the CDR header in the
// rmw's payloads of plain types (docs/ARCHITECTURE.md §3.10).
const plainPrefix = 4

// plainness answers, per type, whether the rmw carries it in the plain
// layout, and what its definition is (for split messages), from the
// type's definition (typesupport/interfaces: the installed ones on
// RGAPS_INTERFACE_PATH and AMENT_PREFIX_PATH, then the embedded ones), as
// the CLI decides it.
type plainness struct {
	reg   func() *msgparse.Registry
	mu    sync.Mutex
	known map[string]bool
	defs  map[string]*schema.Message
}

func newPlainness() *plainness {
	return &plainness{known: map[string]bool{}, defs: map[string]*schema.Message{}, reg: sync.OnceValue(func() *msgparse.Registry {
		return interfaces.Search(interfaces.SearchPath(os.Getenv))
	})}
}

// message is typ's definition; nil when it is nowhere.
func (p *plainness) message(typ string) *schema.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.defs[typ]; ok {
		return m
	}
	m, err := p.reg().Message(typ)
	if err != nil {
		return nil
	}
	p.defs[typ] = m
	return m
}

// byteField is the index of typ's byte field by the rmw's rule (the
// device field of split messages, docs/ARCHITECTURE.md §3.12) and its
// definition; -1 when the type has none or its definition is unknown.
func (p *plainness) byteField(typ string) (*schema.Message, int) {
	m := p.message(typ)
	if m == nil {
		return nil, -1
	}
	i, err := schema.ByteField(m, "")
	if err != nil {
		return m, -1
	}
	return m, i
}

// prefix is how many bytes precede the CDR header in the rgaps payloads
// of type typ: plainPrefix for plain types, 0 for the others. found is
// false when the definition is nowhere: the type is taken as CDR.
func (p *plainness) prefix(typ string) (n int, found bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	plain, ok := p.known[typ]
	if !ok {
		m, err := p.reg().Message(typ)
		if err != nil {
			return 0, false
		}
		_, plain = schema.PlainSize(m)
		p.known[typ] = plain
		p.defs[typ] = m
	}
	if plain {
		return plainPrefix, true
	}
	return 0, true
}

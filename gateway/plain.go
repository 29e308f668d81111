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
// layout, from the type's definition (typesupport/interfaces: the
// installed ones on RGAPS_INTERFACE_PATH and AMENT_PREFIX_PATH, then the
// embedded ones), as the CLI decides it.
type plainness struct {
	reg   func() *msgparse.Registry
	mu    sync.Mutex
	known map[string]bool
}

func newPlainness() *plainness {
	return &plainness{known: map[string]bool{}, reg: sync.OnceValue(func() *msgparse.Registry {
		return interfaces.Search(interfaces.SearchPath(os.Getenv))
	})}
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
	}
	if plain {
		return plainPrefix, true
	}
	return 0, true
}

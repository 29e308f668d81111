package schema

// Plain types: the rule of rgaps_ts_is_plain (typesupport/introspection,
// ts_cdr.c, plain_at) computed from a description alone. The rmw library
// decides it from the introspection tables' member offsets and sizes; here
// the C memory layout is the one rosidl_generator_c gives a message on the
// LP64 targets the project builds for (x86-64, aarch64).

import "github.com/rmw-rgaps/rmw_rgaps/typesupport/cdr"

const (
	// plainMaxDepth is ts_cdr.c's MAX_DEPTH: plain_at gives up on
	// messages nested deeper.
	plainMaxDepth = 32
	// plainProbe is ts_cdr.c's PLAIN_PROBE: the elements of an array of
	// messages checked one by one before the rest is extrapolated.
	plainProbe = 17
	// cSeqSize is the size of rosidl_runtime_c__String, U16String and
	// every C sequence ({data, size, capacity}), aligned to a pointer.
	cSeqSize, cSeqAlign = 24, 8
	// cLongDouble is long double's size and alignment on x86-64 and
	// aarch64 LP64.
	cLongDouble = 16
)

// PlainSize reports whether m is a plain type, one whose C memory layout is
// its CDR layout, and the size of its CDR body then (what
// rgaps_ts_is_plain and rgaps_ts_plain_size of the rmw library's walkers
// return for the type's C introspection type support). The rmw library
// carries plain types' messages as [4 reserved bytes][CDR header][body]
// instead of [CDR header][body] (docs/ARCHITECTURE.md §3.10).
//
// The rule, as ts_cdr.c applies it: no sequence, string, wstring or long
// double at any depth; every primitive field's CDR offset (the body's
// cursor, starting at 0, aligned to the field's wire size up to 8) equals
// its offset in the C struct, through nested messages and fixed arrays of
// them; the cursor after the last field is at most the struct's size, and
// is the plain size. The C layout aligns each primitive to its size (wchar
// is a uint16_t), lays fixed arrays out element after element, and aligns
// a nested message to its largest member alignment, its size padded to a
// multiple of it.
func PlainSize(m *Message) (size int, plain bool) {
	if m == nil {
		return 0, false
	}
	lay := layouts{}
	l, ok := lay.of(m, 0)
	if !ok {
		return 0, false
	}
	end, ok := lay.plainAt(m, 0, 0, 0)
	if !ok || end > l.size {
		return 0, false
	}
	return end, true
}

// cLayout is a message's C memory layout: its fields' offsets, its size
// (sizeof) and its alignment.
type cLayout struct {
	offsets     []int
	size, align int
}

// layouts memoizes the layouts of the message types of one computation.
type layouts map[*Message]*cLayout

// of returns m's layout; false for a description it cannot lay out (a
// message field without its message, nesting beyond plainMaxDepth).
func (ls layouts) of(m *Message, depth int) (*cLayout, bool) {
	if l, ok := ls[m]; ok {
		return l, true
	}
	if depth > plainMaxDepth {
		return nil, false
	}
	l := &cLayout{offsets: make([]int, len(m.Fields)), align: 1}
	off := 0
	for i := range m.Fields {
		f := &m.Fields[i]
		size, align := 0, 0
		switch {
		case f.IsSequence(), f.Type == TypeString, f.Type == TypeWString:
			size, align = cSeqSize, cSeqAlign
		case f.Type == TypeMessage:
			if f.Message == nil {
				return nil, false
			}
			nl, ok := ls.of(f.Message, depth+1)
			if !ok {
				return nil, false
			}
			size, align = nl.size, nl.align
		case f.Type == TypeLongDouble:
			size, align = cLongDouble, cLongDouble
		default:
			size = f.Type.WireSize()
			align = size
		}
		if size == 0 {
			return nil, false // not a valid type id
		}
		if f.IsFixedArray() {
			size *= f.ArraySize
		}
		off = cdr.Align(off, align)
		l.offsets[i] = off
		off += size
		l.align = max(l.align, align)
	}
	l.size = cdr.Align(off, l.align)
	ls[m] = l
	return l, true
}

// plainAt is ts_cdr.c's plain_at: whether the fields of m, lying at memory
// offset mem of the outermost message, have CDR body offsets equal to
// their memory offsets when the cursor before m is cur; it returns the
// cursor after m. An array of messages longer than plainProbe is decided
// by its first plainProbe elements, the rest following with the same
// stride, as the walker decides it.
func (ls layouts) plainAt(m *Message, mem, cur, depth int) (int, bool) {
	if depth > plainMaxDepth {
		return 0, false
	}
	l, ok := ls.of(m, depth)
	if !ok {
		return 0, false
	}
	for i := range m.Fields {
		f := &m.Fields[i]
		if f.IsSequence() || f.Type == TypeString || f.Type == TypeWString || f.Type == TypeLongDouble {
			return 0, false
		}
		n := 1
		if f.IsFixedArray() {
			n = f.ArraySize
		}
		at := mem + l.offsets[i]
		if f.Type == TypeMessage {
			nl, ok := ls.of(f.Message, depth+1)
			if !ok {
				return 0, false
			}
			probe := min(n, plainProbe)
			for k := range probe {
				if cur, ok = ls.plainAt(f.Message, at+k*nl.size, cur, depth+1); !ok {
					return 0, false
				}
			}
			if n > probe {
				lastStart := at + (probe-1)*nl.size
				if cur < lastStart {
					return 0, false
				}
				cur = at + (n-1)*nl.size + (cur - lastStart)
			}
			continue
		}
		a := cdr.Align(cur, f.Type.WireAlign())
		if a != at {
			return 0, false
		}
		cur = a + n*f.Type.WireSize()
	}
	return cur, true
}

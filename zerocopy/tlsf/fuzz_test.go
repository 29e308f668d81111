package tlsf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzAllocator decodes its input as a sequence of operations and runs it
// against the shadow model, with Check after every operation:
//
//	op%4 == 0,1: Alloc; next three bytes: uint16 size mantissa m, align byte
//	             a. size = m << (op>>5); align = a&0x7f if a&0x80 (often
//	             invalid), else 1<<(a%18).
//	op%4 == 2:   Free the live block chosen by the next byte.
//	op%4 == 3:   Free the raw index next byte - 4 (often invalid).
//
// The pool (256 KiB, 48 descriptors) is small so that ErrNoSpace and
// ErrNoDescriptors are both reached.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0x00, 0x04, 0, 2, 0, 1, 0xff, 0xff, 10, 3, 5})
	f.Add([]byte{0xE0, 0xff, 0xff, 0, 0xE0, 0x01, 0x00, 0x80, 0, 0x00, 0x00, 0x83})
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		b := make([]byte, 160)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newShadow(t, 256<<10, 48, 64)
		for ops := 0; len(data) > 0 && ops < 2000; ops++ {
			op := data[0]
			data = data[1:]
			switch op % 4 {
			case 0, 1:
				m, al := uint64(op), byte(0)
				if len(data) >= 3 {
					m, al = uint64(le.Uint16(data)), data[2]
					data = data[3:]
				} else {
					data = nil
				}
				align := uint64(1) << (al % 18)
				if al&0x80 != 0 {
					align = uint64(al & 0x7f)
				}
				s.alloc(m<<(op>>5), align)
			case 2:
				if len(data) == 0 || len(s.live) == 0 {
					continue
				}
				live := liveIndices(s)
				s.free(live[int(data[0])%len(live)])
				data = data[1:]
			case 3:
				if len(data) == 0 {
					continue
				}
				s.free(uint32(data[0]) - 4)
				data = data[1:]
			}
		}
		s.freeAll()
	})
}

// attachTemplate returns valid metadata with some used and free blocks.
func attachTemplate(tb testing.TB) []byte {
	meta := make([]byte, MetaSize(16))
	a, err := Init(meta, 64<<10, 16, 64)
	if err != nil {
		tb.Fatal(err)
	}
	var idx []uint32
	for i := range 8 {
		b, err := a.Alloc(uint64(500*i+1), uint64(64)<<(i%4))
		if err != nil {
			tb.Fatal(err)
		}
		idx = append(idx, b.Index)
	}
	for i := 0; i < len(idx); i += 3 {
		if err := a.Free(idx[i]); err != nil {
			tb.Fatal(err)
		}
	}
	return meta
}

// exercise calls every method on a possibly corrupt allocator. Nothing may
// panic or hang, and a successful Rebuild must leave a working allocator.
func exercise(t *testing.T, a *Allocator) {
	_ = a.Check()
	_ = a.Stats()
	_ = a.Dirty()
	a.ForEachUsed(func(Block) bool { return true })
	for i := range 6 {
		_, _ = a.Alloc(uint64(64)<<(2*i), 0)
		_, _ = a.Alloc(100, 4096<<i)
	}
	for i := uint32(0); i <= a.maxBlocks+1 && i < 64; i++ {
		_, _ = a.Lookup(i)
		_ = a.Free(i)
	}
	if err := a.Rebuild(); err != nil {
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Rebuild = %v, want nil or ErrCorrupt", err)
		}
		return
	}
	if err := a.Check(); err != nil {
		t.Fatalf("Check after a successful Rebuild: %v", err)
	}
	var got []uint32
	for i := range 10 {
		if b, err := a.Alloc(uint64(64*i+1), 0); err == nil {
			got = append(got, b.Index)
		}
	}
	for _, i := range got {
		if err := a.Free(i); err != nil {
			t.Fatalf("Free(%d) after Rebuild: %v", i, err)
		}
	}
	if err := a.Check(); err != nil {
		t.Fatalf("Check after Rebuild and use: %v", err)
	}
}

// FuzzAttach feeds arbitrary bytes to Attach, and also XORs them into the
// mutable part of valid metadata (so that Attach succeeds and the corrupt
// state reaches Check, Alloc, Free and Rebuild). Nothing may panic.
func FuzzAttach(f *testing.F) {
	tmpl := attachTemplate(f)
	f.Add(tmpl)
	f.Add(tmpl[:hChecksum+8])
	f.Add(tmpl[:headerSize])
	f.Add([]byte{})
	f.Add([]byte("RGAPTLSF\x01\x00\x00\x00"))
	f.Add([]byte{0x40, 0x00, 0x07, 0x38, 0x01, 0xff, 0x50, 0x20, 0x11})
	f.Fuzz(func(t *testing.T, data []byte) {
		if a, err := Attach(data); err == nil {
			exercise(t, a)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
			t.Fatalf("Attach = %v, want ErrCorrupt or ErrVersion", err)
		}

		meta := bytes.Clone(tmpl)
		mut := meta[hFreeBytes:]
		for i := 0; i+2 < len(data); i += 3 {
			mut[int(le.Uint16(data[i:]))%len(mut)] ^= data[i+2]
		}
		a, err := Attach(meta)
		if err != nil {
			t.Fatalf("Attach with an intact header: %v", err)
		}
		exercise(t, a)
	})
}

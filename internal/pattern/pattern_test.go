package pattern

import "testing"

func TestPattern(t *testing.T) {
	for size := 0; size <= 41; size++ {
		b := make([]byte, size)
		Fill(b, 3)
		if off := Check(b, 3); off != -1 {
			t.Fatalf("size %d: fresh pattern fails at %d", size, off)
		}
		for i := range b {
			b[i] ^= 0x10
			if off := Check(b, 3); off != i {
				t.Fatalf("size %d: byte %d flipped, Check says %d", size, i, off)
			}
			b[i] ^= 0x10
		}
		if size >= 8 && Check(b, 4) == -1 {
			t.Fatalf("size %d: message 3's pattern passes as message 4's", size)
		}
	}
	// A block shifted by a word, as a wrong offset would give, fails.
	b := make([]byte, 4096)
	Fill(b, 9)
	if Check(b[8:], 9) == -1 {
		t.Fatal("a shifted block passes")
	}
}

package gateway

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func id(b byte) [16]byte { return [16]byte{b, 1, 2, 3} }

// The ledger remembers per source the highest sequence delivered, in a
// file that a later gateway reads back; a second gateway cannot use the
// file while the first has it.
func TestLedgerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	l, err := openLedger(path)
	must(t, err)
	l.record(srcDDS, id(1), 10)
	l.record(srcDDS, id(1), 7) // never moves back
	l.record(srcRgaps, id(1), 3)
	l.record(srcDDS, id(2), 0) // unknown sequence: nothing recorded
	for _, c := range []struct {
		kind uint32
		id   [16]byte
		seq  uint64
		want bool
	}{
		{srcDDS, id(1), 10, true}, {srcDDS, id(1), 1, true}, {srcDDS, id(1), 11, false},
		{srcRgaps, id(1), 3, true}, {srcRgaps, id(1), 4, false},
		{srcDDS, id(2), 1, false}, {srcDDS, id(1), 0, false},
	} {
		if got := l.delivered(c.kind, c.id, c.seq); got != c.want {
			t.Errorf("delivered(%d, %x, %d) = %v, want %v", c.kind, c.id[0], c.seq, got, c.want)
		}
	}
	if _, err := openLedger(path); err == nil || !strings.Contains(err.Error(), "another DDS gateway") {
		t.Errorf("a second gateway on the ledger: %v", err)
	}
	must(t, l.close())

	l, err = openLedger(path)
	must(t, err)
	if s, ok := l.last(srcDDS, id(1)); !ok || s != 10 {
		t.Errorf("after reopening: %d %v, want 10", s, ok)
	}
	if s, ok := l.last(srcRgaps, id(1)); !ok || s != 3 {
		t.Errorf("after reopening: %d %v, want 3", s, ok)
	}
	must(t, l.close())
}

// A record torn by a death between two stores is ignored (its source's
// messages are delivered again, never skipped); a file of another version
// starts afresh; a file that is no ledger, or one this user must not
// trust, is refused.
func TestLedgerDamage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger")
	l, err := openLedger(path)
	must(t, err)
	l.record(srcDDS, id(1), 5)
	l.record(srcDDS, id(2), 6)
	must(t, l.close())
	b, err := os.ReadFile(path)
	must(t, err)
	binary.LittleEndian.PutUint64(b[ledgerHeader+24:], 99) // record 0's sequence, checksum not updated
	must(t, os.WriteFile(path, b, 0o600))
	l, err = openLedger(path)
	must(t, err)
	if _, ok := l.last(srcDDS, id(1)); ok {
		t.Error("a torn record was believed")
	}
	if s, _ := l.last(srcDDS, id(2)); s != 6 {
		t.Errorf("the sound record: %d, want 6", s)
	}
	must(t, l.close())

	binary.LittleEndian.PutUint32(b[8:], ledgerVersion+1)
	must(t, os.WriteFile(path, b, 0o600))
	l, err = openLedger(path)
	must(t, err)
	if _, ok := l.last(srcDDS, id(2)); ok {
		t.Error("a record of another ledger version was kept")
	}
	must(t, l.close())

	other := filepath.Join(dir, "other")
	must(t, os.WriteFile(other, []byte("some file of someone's"), 0o600))
	if _, err := openLedger(other); err == nil || !strings.Contains(err.Error(), "not a delivery ledger") {
		t.Errorf("a file that is no ledger: %v", err)
	}
	if b, _ := os.ReadFile(other); string(b) != "some file of someone's" {
		t.Error("a file that is no ledger was changed")
	}
	must(t, os.Chmod(other, 0o644))
	if _, err := openLedger(other); err == nil || !strings.Contains(err.Error(), "wider than 0600") {
		t.Errorf("a ledger others may write: %v", err)
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(path, link))
	if _, err := openLedger(link); err == nil {
		t.Error("a symbolic link was followed")
	}
}

// When every record is in use, the least recently updated source is
// forgotten for a new one.
func TestLedgerFull(t *testing.T) {
	l, err := openLedger("")
	must(t, err)
	defer l.close()
	for i := range ledgerRecords {
		var k [16]byte
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		l.record(srcRgaps, k, 1)
	}
	for i := 1; i < ledgerRecords; i++ { // every source but the first updated since
		var k [16]byte
		binary.LittleEndian.PutUint32(k[:], uint32(i))
		l.record(srcRgaps, k, 2)
	}
	var first, newer [16]byte
	binary.LittleEndian.PutUint32(newer[:], ledgerRecords)
	l.record(srcRgaps, newer, 1)
	if _, ok := l.last(srcRgaps, first); ok {
		t.Error("the oldest source was not forgotten")
	}
	if s, ok := l.last(srcRgaps, newer); !ok || s != 1 {
		t.Error("the new source was not recorded")
	}
	if len(l.idx) != ledgerRecords {
		t.Errorf("%d sources indexed, want %d", len(l.idx), ledgerRecords)
	}
}

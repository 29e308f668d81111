package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"syscall"
	"time"
)

// The delivery ledger (docs/ARCHITECTURE.md §3.13, "Restarts"): for each
// message source, the sequence number of the last message the gateway
// delivered from it, so that a mirror made again (the gateway restarted,
// or a mirror remade) skips what a transient-local source sends again. A
// source is a DDS writer (key: its GUID, sequence: DDSI's writer sequence
// number) or an rgaps publisher (key: its GID, sequence: its own).
//
// The ledger is a file mapped shared (Options.Ledger), so what a store
// wrote survives the process being killed; without a file it lives in the
// process's memory only. Format version 1, little endian:
//
//	header (64 bytes): [8]byte "RGAPSGWL", u32 version, u32 record size
//	(48), u32 record count, 44 bytes zero
//	record (48 bytes): u32 kind (0 free, 1 a DDS writer, 2 an rgaps
//	publisher), u32 CRC-32C of bytes 8..40 and the kind, [16]byte source,
//	u64 sequence, i64 last update (Unix ns), 8 bytes zero
//
// A record whose checksum does not match (the process died between two
// of its stores) is ignored: that source's messages are then delivered
// again, never skipped. When every record is in use, the least recently
// updated one is reused.
const (
	ledgerMagic   = "RGAPSGWL"
	ledgerVersion = 1
	ledgerHeader  = 64
	ledgerRecord  = 48
	ledgerRecords = 4096
	ledgerSize    = ledgerHeader + ledgerRecords*ledgerRecord
)

// Kinds of ledger sources.
const (
	srcDDS   = 1 // a DDS writer: messages carried in
	srcRgaps = 2 // an rgaps publisher: messages carried out
)

var ledgerCRC = crc32.MakeTable(crc32.Castagnoli)

type ledgerKey struct {
	kind uint32
	id   [16]byte
}

// ledger is the delivery ledger. Its methods are safe for concurrent use.
type ledger struct {
	path string
	f    *os.File // nil: in memory only

	mu  sync.Mutex
	mem []byte            // the mapping (or plain memory), ledgerSize bytes
	idx map[ledgerKey]int // record number of each source
}

// openLedger opens (creating it if needed) the ledger file at path, or an
// in-memory ledger for "". The file must be a regular file of this user
// with no permission bits beyond 0600 and one link, not a symbolic link;
// it is locked for the life of the gateway, so a second gateway on it
// fails. A file of another ledger version is started afresh (what it held
// only suppressed duplicates); a file that is no ledger is refused.
func openLedger(path string) (*ledger, error) {
	l := &ledger{path: path, idx: map[ledgerKey]int{}}
	if path == "" {
		l.mem = make([]byte, ledgerSize)
		l.init()
		return l, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: opening the delivery ledger: %w", err)
	}
	if err := l.adopt(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("gateway: delivery ledger %s: %w", path, err)
	}
	return l, nil
}

// adopt checks, locks and maps f.
func (l *ledger) adopt(f *os.File) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		return errors.New("not a regular file")
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("owned by uid %d, not by uid %d", st.Uid, os.Geteuid())
	case st.Mode&0o777&^0o600 != 0:
		return fmt.Errorf("mode %04o is wider than 0600", st.Mode&0o777)
	case st.Nlink != 1:
		return fmt.Errorf("%d links", st.Nlink)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errors.New("in use by another DDS gateway of this domain")
		}
		return fmt.Errorf("locking: %w", err)
	}
	fresh := st.Size == 0
	if !fresh {
		head := make([]byte, ledgerHeader)
		if _, err := f.ReadAt(head, 0); err != nil || string(head[:8]) != ledgerMagic {
			return errors.New("not a delivery ledger (remove it if it is not needed)")
		}
		fresh = binary.LittleEndian.Uint32(head[8:]) != ledgerVersion || st.Size != ledgerSize ||
			binary.LittleEndian.Uint32(head[12:]) != ledgerRecord || binary.LittleEndian.Uint32(head[16:]) != ledgerRecords
	}
	if fresh {
		if err := f.Truncate(0); err != nil {
			return err
		}
		if err := f.Truncate(ledgerSize); err != nil {
			return err
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, ledgerSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping: %w", err)
	}
	l.f, l.mem = f, mem
	if fresh {
		l.init()
	} else {
		l.load()
	}
	return nil
}

// init writes an empty ledger's header.
func (l *ledger) init() {
	clear(l.mem)
	copy(l.mem, ledgerMagic)
	binary.LittleEndian.PutUint32(l.mem[8:], ledgerVersion)
	binary.LittleEndian.PutUint32(l.mem[12:], ledgerRecord)
	binary.LittleEndian.PutUint32(l.mem[16:], ledgerRecords)
}

// load indexes the sound records of an existing ledger.
func (l *ledger) load() {
	for i := range ledgerRecords {
		r := l.rec(i)
		kind := binary.LittleEndian.Uint32(r)
		if kind == 0 || binary.LittleEndian.Uint32(r[4:]) != recordCRC(r) {
			continue
		}
		l.idx[ledgerKey{kind, [16]byte(r[8:24])}] = i
	}
}

func (l *ledger) rec(i int) []byte {
	off := ledgerHeader + i*ledgerRecord
	return l.mem[off : off+ledgerRecord]
}

func recordCRC(r []byte) uint32 {
	c := crc32.Update(0, ledgerCRC, r[8:40])
	return crc32.Update(c, ledgerCRC, r[0:4])
}

// delivered reports whether the message seq of source (kind, id) was
// delivered already: the ledger holds that source at seq or later.
// Sequence 0 (unknown) is never delivered already.
func (l *ledger) delivered(kind uint32, id [16]byte, seq uint64) bool {
	if seq == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.idx[ledgerKey{kind, id}]
	return ok && seq <= binary.LittleEndian.Uint64(l.rec(i)[24:])
}

// last is the sequence number recorded for a source (false: none).
func (l *ledger) last(kind uint32, id [16]byte) (uint64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, ok := l.idx[ledgerKey{kind, id}]
	if !ok {
		return 0, false
	}
	return binary.LittleEndian.Uint64(l.rec(i)[24:]), true
}

// record notes that message seq of source (kind, id) was delivered; a
// lower sequence than the one held does not move it back.
func (l *ledger) record(kind uint32, id [16]byte, seq uint64) {
	if seq == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	k := ledgerKey{kind, id}
	i, ok := l.idx[k]
	if ok {
		if seq <= binary.LittleEndian.Uint64(l.rec(i)[24:]) {
			return
		}
	} else {
		i = l.free()
		l.idx[k] = i
	}
	r := l.rec(i)
	binary.LittleEndian.PutUint32(r, kind)
	copy(r[8:24], id[:])
	binary.LittleEndian.PutUint64(r[24:], seq)
	binary.LittleEndian.PutUint64(r[32:], uint64(time.Now().UnixNano()))
	binary.LittleEndian.PutUint32(r[4:], recordCRC(r))
}

// free is a record to use for a new source: an unused one, else the
// least recently updated (whose source is forgotten). Must hold l.mu.
func (l *ledger) free() int {
	if len(l.idx) < ledgerRecords {
		used := make([]bool, ledgerRecords)
		for _, i := range l.idx {
			used[i] = true
		}
		for i, u := range used {
			if !u {
				return i
			}
		}
	}
	var oldest ledgerKey
	when := int64(1<<63 - 1)
	for k, i := range l.idx {
		if t := int64(binary.LittleEndian.Uint64(l.rec(i)[32:])); t < when {
			oldest, when = k, t
		}
	}
	i := l.idx[oldest]
	delete(l.idx, oldest)
	clear(l.rec(i))
	return i
}

// close unmaps and closes the file (releasing its lock).
func (l *ledger) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := errors.Join(syscall.Munmap(l.mem), l.f.Close())
	l.f, l.mem = nil, nil
	return err
}

package zerocopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/tlsf"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// layout is a pure function of a topic's parameters: validating a segment
// recomputes it and compares, so offsets read from shared memory are never
// trusted on their own.
type layout struct {
	poolKind                                    PoolKind
	maxEndpoints, queueCap, heldCap, maxSamples uint32
	poolSize, granule                           uint64
	devPoolSize, devGranule                     uint64
	endpointsOff, endpointStride, samplesOff    uint64
	tlsfOff, tlsfSize, devTLSFOff, devTLSFSize  uint64
	poolOff, total, maxBlocks                   uint64
}

// devGranule aligns device blocks for any vectorised kernel access.
const devGranuleDefault = 256

// pageSize is the commit unit the layout aligns regions to (the page size
// of every Linux target that matters; a larger page only makes commits
// coarser).
const pageSize = 4096

func computeLayout(kind PoolKind, maxEndpoints, queueCap, heldCap, maxSamples uint32, poolSize, granule, devPoolSize, devGranule uint64) layout {
	l := layout{poolKind: kind, maxEndpoints: maxEndpoints, queueCap: queueCap, heldCap: heldCap, maxSamples: maxSamples, granule: granule}
	l.poolSize = poolSize &^ (granule - 1)
	l.endpointStride = align(eRing+4*uint64(queueCap)+4*uint64(heldCap), 64)
	l.endpointsOff = headerSize
	l.samplesOff = align(l.endpointsOff+uint64(maxEndpoints)*l.endpointStride, pageSize)
	l.tlsfOff = align(l.samplesOff+uint64(maxSamples)*sampleStride, pageSize)
	// Every live block belongs to a sample, and free blocks never touch, so
	// 2*maxSamples+1 descriptors always suffice (per pool).
	l.maxBlocks = 2*uint64(maxSamples) + 2
	l.tlsfSize = align(uint64(tlsf.MetaSize(uint32(l.maxBlocks))), 64)
	end := l.tlsfOff + l.tlsfSize
	if kind == PoolGPU {
		l.devGranule = devGranule
		l.devPoolSize = devPoolSize &^ (devGranule - 1)
		l.devTLSFOff = align(end, pageSize)
		l.devTLSFSize = l.tlsfSize
		end = l.devTLSFOff + l.devTLSFSize
	}
	l.poolOff = align(end, max(pageSize, granule))
	l.total = l.poolOff + l.poolSize
	return l
}

func layoutFor(cfg Config, kind PoolKind) layout {
	host, dev := cfg.PoolSize, uint64(0)
	if kind == PoolGPU {
		host, dev = cfg.StagingSize, cfg.PoolSize
	}
	return computeLayout(kind, cfg.MaxEndpoints, cfg.QueueCap, cfg.HeldCap, cfg.MaxSamples, host, defaultGranule, dev, devGranuleDefault)
}

// Topic is one process's mapping of a topic segment. It is shared by every
// endpoint of that topic in the process (Domain keeps one per name) and
// reference counted by them.
type Topic struct {
	d        *Domain
	name     string // fully qualified ROS topic name
	typ      string
	seg      *shm.Segment
	lk       shm.Lock
	lay      layout
	alloc    *tlsf.Allocator
	dalloc   *tlsf.Allocator // GPU topics: the device pool's allocator
	pool     []byte          // the host pool's bytes
	rpool    []byte          // the same bytes mapped read-only, for taken samples
	gpuMu    sync.Mutex      // guards the GPU state below
	devBase  DevicePtr       // GPU topics: the device pool in this process
	devMap   closer          // its mapping (gpupool.Mapping)
	hostReg  bool            // host pool registered with CUDA in this process
	hostDev  DevicePtr       // the host pool's device address once registered
	created  bool            // this process created the segment
	instance uint64          // the header's instance tag

	pubSeq, pubWaiters     *atomic.Uint32
	spaceSeq, spaceWaiters *atomic.Uint32
	generation, state      *atomic.Uint32

	// broken, once set, is the error every call on the topic fails with in
	// this process: its file was truncated or replaced (fault.go).
	broken atomic.Pointer[error]

	refs int // endpoints of this process using the topic; guarded by d.mu
	// mu guards the process-local endpoint list and caches below.
	mu        sync.Mutex
	endpoints map[uint32]endpointLocal // slot → local handle, for status updates
	deadlines int                      // of them, those with a deadline

	// The janitor's own (only its goroutine touches them): the generation
	// at which it last ticked every local endpoint, and the topic's turn
	// among the audits (janitorAudits).
	tickedGen uint32
	auditTurn uint32
}

// endpointLocal is what the janitor needs from a local endpoint.
type endpointLocal interface {
	tick()
	typeClash([]EndpointInfo)
}

// segName maps a topic and its message type to a segment name:
// "<prefix>_d<domain>_t<topic with / as .>@<8 hex digits of SHA-256(type)>".
// Every type of a topic has a segment of its own, so endpoints that disagree
// on the type never match (as in DDS) and each keeps working. Names that
// would pass the 255-byte limit of a file name use a hash of the topic
// instead (the topic itself is in the header, so listing still shows it).
func segName(cfg Config, topic, typ string) (string, error) {
	base, err := segTopicPrefix(cfg, topic)
	if err != nil {
		return "", err
	}
	return base + typeTag(typ), nil
}

// segTopicPrefix is what the segment names of every type of topic start with.
func segTopicPrefix(cfg Config, topic string) (string, error) {
	safe, err := names.ShmSafe(topic)
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("%s_d%d_t%s@", cfg.Prefix, cfg.Domain, safe)
	if len(name)+typeTagLen > shm.MaxNameLen {
		sum := sha256.Sum256([]byte(topic))
		name = fmt.Sprintf("%s_d%d_t~%x@", cfg.Prefix, cfg.Domain, sum[:16])
	}
	return name, nil
}

// segPrefix is what every topic segment name of the domain starts with.
func segPrefix(cfg Config) string { return fmt.Sprintf("%s_d%d_t", cfg.Prefix, cfg.Domain) }

const typeTagLen = 8

func typeTag(typ string) string {
	sum := sha256.Sum256([]byte(typ))
	return fmt.Sprintf("%x", sum[:typeTagLen/2])
}

// openTopic maps the topic's segment, creating it when absent ("first arrival
// creates", as the thesis does). A segment that exists with another type,
// another version or a damaged header is refused.
func openTopic(d *Domain, topic, typ string, kind PoolKind) (*Topic, error) {
	if err := names.ValidateFullTopicName(topic); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if typ == "" || len(typ) >= nameMax {
		return nil, fmt.Errorf("%w: type name %q must have 1 to %d bytes", ErrInvalid, typ, nameMax-1)
	}
	name, err := segName(d.cfg, topic, typ)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for attempt := 0; attempt < 100; attempt++ {
		seg, err := shm.Open(name, headerSize, d.cfg.access())
		created := false
		if errors.Is(err, shm.ErrNotExist) {
			seg, err = createSegment(d.cfg, name, topic, typ, kind)
			if errors.Is(err, shm.ErrExist) {
				continue
			}
			created = true
		}
		if err != nil {
			return nil, fmt.Errorf("topic %s: %w", topic, err)
		}
		t, err := attachTopic(d, seg, topic)
		if err != nil {
			seg.Close()
			if errors.Is(err, ErrVersion) {
				// Left by another build (an upgrade): replaced when no
				// process maps it any more, else the error names its users.
				if err = removeUnused(d.cfg, name, err); err == nil {
					continue
				}
			}
			return nil, fmt.Errorf("topic %s: %w", topic, err)
		}
		t.created = created
		if t.typ != typ {
			// Only a SHA-256 collision of the type tags, or a hostile
			// segment, gets here.
			seg.Close()
			return nil, fmt.Errorf("topic %s: %w: segment %s has type %q, not %q", topic, ErrTypeMismatch, name, t.typ, typ)
		}
		if topicState(t.state.Load()) == topicRemoved {
			// The last user removed it between our open and now: open again.
			seg.Close()
			continue
		}
		if err := t.check(); err != nil {
			seg.Close()
			return nil, err
		}
		if err := t.mapReadOnly(); err != nil {
			seg.Close()
			return nil, fmt.Errorf("topic %s: %w", topic, err)
		}
		return t, nil
	}
	return nil, fmt.Errorf("topic %s: segment keeps disappearing while opening", topic)
}

func createSegment(cfg Config, name, topic, typ string, kind PoolKind) (*shm.Segment, error) {
	l := layoutFor(cfg, kind)
	seg, err := shm.Create(name, int64(l.total), cfg.Perm, cfg.Group)
	if err != nil {
		return nil, err
	}
	if err := seg.Commit(0, headerSize); err != nil {
		seg.Close()
		return nil, err
	}
	h := seg.Bytes(0, headerSize)
	le := binary.LittleEndian
	copy(h[hMagic:], topicMagic)
	le.PutUint32(h[hVersion:], TopicVersion)
	le.PutUint32(h[hPoolKind:], uint32(l.poolKind))
	le.PutUint64(h[hTotalSize:], l.total)
	le.PutUint32(h[hMaxEndpoints:], l.maxEndpoints)
	le.PutUint32(h[hQueueCap:], l.queueCap)
	le.PutUint32(h[hHeldCap:], l.heldCap)
	le.PutUint32(h[hMaxSamples:], l.maxSamples)
	le.PutUint64(h[hEndpointsOff:], l.endpointsOff)
	le.PutUint64(h[hEndpointStride:], l.endpointStride)
	le.PutUint64(h[hSamplesOff:], l.samplesOff)
	le.PutUint64(h[hTLSFOff:], l.tlsfOff)
	le.PutUint64(h[hTLSFSize:], l.tlsfSize)
	le.PutUint64(h[hPoolOff:], l.poolOff)
	le.PutUint64(h[hPoolSize:], l.poolSize)
	le.PutUint64(h[hGranule:], l.granule)
	le.PutUint32(h[hDomain:], cfg.Domain)
	copy(h[hTopic:hTopic+nameMax-1], topic)
	copy(h[hType:hType+nameMax-1], typ)
	le.PutUint64(h[hDevPoolSize:], l.devPoolSize)
	le.PutUint64(h[hDevTLSFOff:], l.devTLSFOff)
	le.PutUint64(h[hDevTLSFSize:], l.devTLSFSize)
	le.PutUint64(h[hDevGranule:], l.devGranule)
	le.PutUint64(h[hInstance:], rand.Uint64()|1)
	le.PutUint32(h[hCRC:], crc32.Checksum(h[:hStaticEnd], castagnoli))
	// What Init writes of the allocators' metadata (tlsf.MetaSize(1): the
	// header and descriptors 0 and 1) is all that is committed besides the
	// header: slots, sample records and pool bytes come with their first use.
	metaInit := align(uint64(tlsf.MetaSize(1)), pageSize)
	if err := seg.Commit(l.tlsfOff, metaInit); err != nil {
		seg.Close()
		return nil, err
	}
	if _, err := tlsf.Init(seg.Bytes(l.tlsfOff, l.tlsfSize), l.poolSize, uint32(l.maxBlocks), l.granule); err != nil {
		seg.Close()
		return nil, fmt.Errorf("formatting pool allocator: %w", err)
	}
	le.PutUint64(h[hMetaCommitted:], metaInit)
	if kind == PoolGPU {
		if err := seg.Commit(l.devTLSFOff, metaInit); err != nil {
			seg.Close()
			return nil, err
		}
		if _, err := tlsf.Init(seg.Bytes(l.devTLSFOff, l.devTLSFSize), l.devPoolSize, uint32(l.maxBlocks), l.devGranule); err != nil {
			seg.Close()
			return nil, fmt.Errorf("formatting device pool allocator: %w", err)
		}
		le.PutUint64(h[hDevMetaCommitted:], metaInit)
	}
	// No sample record exists yet (hSamplesMade 0, empty free list).
	if err := seg.Publish(); err != nil {
		seg.Close()
		return nil, err
	}
	return seg, nil
}

// readHeader validates a mapped segment's header and returns its layout.
// It never trusts a size it has not checked against the mapping.
func readHeader(seg *shm.Segment) (layout, string, string, error) {
	var l layout
	h := seg.Bytes(0, headerSize)
	le := binary.LittleEndian
	if string(h[hMagic:hMagic+8]) != topicMagic {
		return l, "", "", fmt.Errorf("%w: %s: bad magic %q", ErrCorrupt, seg.Name(), h[hMagic:hMagic+8])
	}
	if v := le.Uint32(h[hVersion:]); v != TopicVersion {
		return l, "", "", fmt.Errorf("%w: %s has layout version %d, this build reads %d", ErrVersion, seg.Name(), v, TopicVersion)
	}
	var tmp [hStaticEnd]byte
	copy(tmp[:], h[:hStaticEnd])
	clear(tmp[hCRC : hCRC+4])
	if got, want := crc32.Checksum(tmp[:], castagnoli), le.Uint32(h[hCRC:]); got != want {
		return l, "", "", fmt.Errorf("%w: %s: header checksum %08x, expected %08x", ErrCorrupt, seg.Name(), got, want)
	}
	kind := PoolKind(le.Uint32(h[hPoolKind:]))
	qc, hc, me, ms := le.Uint32(h[hQueueCap:]), le.Uint32(h[hHeldCap:]), le.Uint32(h[hMaxEndpoints:]), le.Uint32(h[hMaxSamples:])
	gran, psize := le.Uint64(h[hGranule:]), le.Uint64(h[hPoolSize:])
	dgran, dsize := le.Uint64(h[hDevGranule:]), le.Uint64(h[hDevPoolSize:])
	if (kind != PoolHost && kind != PoolGPU) || qc == 0 || qc&(qc-1) != 0 || qc > 1<<20 || hc == 0 || hc > 1<<16 || me == 0 || me > 1<<12 ||
		ms == 0 || ms > 1<<24 || gran < tlsf.MinGranule || gran&(gran-1) != 0 || gran > 1<<30 || psize > 1<<40 ||
		(kind == PoolGPU && (dgran < tlsf.MinGranule || dgran&(dgran-1) != 0 || dgran > 1<<30 || dsize > 1<<40)) {
		return l, "", "", fmt.Errorf("%w: %s: impossible parameters in header", ErrCorrupt, seg.Name())
	}
	l = computeLayout(kind, me, qc, hc, ms, psize, gran, dsize, dgran)
	if l.endpointsOff != le.Uint64(h[hEndpointsOff:]) || l.endpointStride != le.Uint64(h[hEndpointStride:]) ||
		l.samplesOff != le.Uint64(h[hSamplesOff:]) || l.tlsfOff != le.Uint64(h[hTLSFOff:]) ||
		l.tlsfSize != le.Uint64(h[hTLSFSize:]) || l.poolOff != le.Uint64(h[hPoolOff:]) || l.total != le.Uint64(h[hTotalSize:]) ||
		l.devTLSFOff != le.Uint64(h[hDevTLSFOff:]) || l.devTLSFSize != le.Uint64(h[hDevTLSFSize:]) || l.devPoolSize != dsize {
		return l, "", "", fmt.Errorf("%w: %s: header offsets disagree with its parameters", ErrCorrupt, seg.Name())
	}
	if uint64(seg.Size()) != l.total {
		return l, "", "", fmt.Errorf("%w: %s: segment is %d bytes, header says %d (truncated?)", ErrCorrupt, seg.Name(), seg.Size(), l.total)
	}
	cstr := func(b []byte) string {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[:i]
		}
		return string(b)
	}
	return l, cstr(h[hTopic : hTopic+nameMax]), cstr(h[hType : hType+nameMax]), nil
}

func attachTopic(d *Domain, seg *shm.Segment, topic string) (_ *Topic, err error) {
	// Nothing of the segment is trusted yet: a fault (the file shrank since
	// it was mapped) or a failed index check is damage, not a crash.
	prev := guard()
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			fe, ok := r.(interface{ Addr() uintptr })
			if (ok && !seg.Contains(fe.Addr())) || (!ok && !boundsPanic(r)) {
				panic(r)
			}
			err = fmt.Errorf("%w: %s: %v while reading it (%v)", ErrCorrupt, seg.Name(), r, seg.Health())
		}
	}()
	l, name, typ, err := readHeader(seg)
	if err != nil {
		return nil, err
	}
	if topic != "" && name != topic {
		return nil, fmt.Errorf("%w: %s holds topic %q", ErrCorrupt, seg.Name(), name)
	}
	alloc, err := tlsf.Attach(seg.Bytes(l.tlsfOff, l.tlsfSize))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: pool allocator: %v", ErrCorrupt, seg.Name(), err)
	}
	if s := alloc.Stats(); s.PoolSize != l.poolSize {
		return nil, fmt.Errorf("%w: %s: allocator manages %d bytes, header says %d", ErrCorrupt, seg.Name(), s.PoolSize, l.poolSize)
	}
	var dalloc *tlsf.Allocator
	if l.poolKind == PoolGPU {
		if dalloc, err = tlsf.Attach(seg.Bytes(l.devTLSFOff, l.devTLSFSize)); err != nil {
			return nil, fmt.Errorf("%w: %s: device pool allocator: %v", ErrCorrupt, seg.Name(), err)
		}
		if s := dalloc.Stats(); s.PoolSize != l.devPoolSize {
			return nil, fmt.Errorf("%w: %s: device allocator manages %d bytes, header says %d", ErrCorrupt, seg.Name(), s.PoolSize, l.devPoolSize)
		}
	}
	t := &Topic{
		d: d, name: name, typ: typ, seg: seg, lay: l, alloc: alloc, dalloc: dalloc,
		lk:           shm.LockAt(seg, hLock),
		pubSeq:       seg.Uint32(hPubSeq),
		pubWaiters:   seg.Uint32(hPubWaiters),
		spaceSeq:     seg.Uint32(hSpaceSeq),
		spaceWaiters: seg.Uint32(hSpaceWaiters),
		generation:   seg.Uint32(hGeneration),
		instance:     binary.LittleEndian.Uint64(seg.Bytes(hInstance, 8)),
		state:        seg.Uint32(hState),
		endpoints:    map[uint32]endpointLocal{},
	}
	t.pool = seg.Bytes(l.poolOff, l.poolSize)
	h := fnv.New32a()
	h.Write([]byte(seg.Name()))
	t.auditTurn = h.Sum32()
	t.tickedGen = t.generation.Load() - 1
	return t, nil
}

// mapReadOnly adds the read-only view of the pool that taken samples use.
func (t *Topic) mapReadOnly() error {
	if t.rpool != nil || t.lay.poolSize == 0 {
		return nil
	}
	b, err := t.seg.ReadOnlyView(t.lay.poolOff, t.lay.poolSize)
	if err != nil {
		return err
	}
	t.rpool = b
	return nil
}

// unmap releases every mapping of the topic in this process.
func (t *Topic) unmap() {
	t.releaseGPU()
	shm.Unmap(t.rpool)
	t.rpool = nil
	t.seg.Close()
}

// Name is the fully qualified topic name.
func (t *Topic) Name() string { return t.name }

// Type is the topic's message type name.
func (t *Topic) Type() string { return t.typ }

// PoolKind tells where the payloads live.
func (t *Topic) PoolKind() PoolKind { return t.lay.poolKind }

// ---- locked access --------------------------------------------------------

// lock takes the topic lock. When the previous holder died holding it, the
// structures are repaired first; a topic beyond repair is marked corrupt.
// It fails with ErrCorrupt on a corrupt or broken topic (also while
// waiting: the wait re-checks every shm.DeadCheck), and with an error
// wrapping shm.ErrLockTimeout naming the holder when a live process that
// maps the topic keeps the lock longer than Config.LockTimeout.
func (t *Topic) lock() error {
	if err := t.check(); err != nil {
		return err
	}
	recovered, err := t.lk.LockWith(t.d.cfg.LockTimeout, t.check)
	if err != nil {
		if errors.Is(err, shm.ErrLockTimeout) {
			return fmt.Errorf("topic %s: %w", t.name, err)
		}
		return err
	}
	if recovered {
		if err := t.repair(); err != nil {
			t.markCorrupt("%v", err)
			t.lk.Unlock()
			return err
		}
	}
	if err := t.check(); err != nil {
		t.lk.Unlock()
		return err
	}
	return nil
}

func (t *Topic) unlock() { t.lk.Unlock() }

func (t *Topic) u32(off uint64) *atomic.Uint32 { return t.seg.Uint32(off) }
func (t *Topic) u64(off uint64) *atomic.Uint64 { return t.seg.Uint64(off) }

// set32 and set64 write a word with a plain store (shm.Segment.Set32): for
// the words only holders of the topic lock write that nobody reads without
// the lock while they change, i.e. a sample record's fields, the free
// sample list and the sample count; readers without the lock (a lock-free
// take) read a record only once a ring entry, stored atomically after it
// was written, hands them a reference. Everything read without the lock
// while it may change (rings, held entries and counts, futex words, state
// and commit words) keeps atomic stores.
func (t *Topic) set32(off uint64, v uint32) { t.seg.Set32(off, v) }
func (t *Topic) set64(off uint64, v uint64) { t.seg.Set64(off, v) }

// slotCount is the number of committed endpoint slots: scans of the slots
// stop there (the commit rule in layout.go).
func (t *Topic) slotCount() uint32 { return min(t.u32(hSlots).Load(), t.lay.maxEndpoints) }

// samplesMade is the number of committed sample records.
func (t *Topic) samplesMade() uint32 { return min(t.u32(hSamplesMade).Load(), t.lay.maxSamples) }

// commitWord commits the bytes [0, want) of the region at base whose
// committed length is in w, and raises w (to a maximum: racing committers
// need no lock). want is rounded up to a page, but not past limit, the
// region's size.
func (t *Topic) commitWord(w *atomic.Uint64, base, want, limit uint64) error {
	have := w.Load()
	if want <= have {
		return nil
	}
	want = min(align(want, pageSize), limit)
	if err := t.seg.Commit(base+have, want-have); err != nil {
		return fmt.Errorf("topic %s: %w", t.name, err)
	}
	for {
		cur := w.Load()
		if cur >= want || w.CompareAndSwap(cur, want) {
			return nil
		}
	}
}

// commitMeta commits what the next Alloc of the host (or device) pool's
// allocator may touch of its metadata.
func (t *Topic) commitMeta(dev bool) error {
	a, word, base := t.alloc, uint64(hMetaCommitted), t.lay.tlsfOff
	if dev {
		a, word, base = t.dalloc, hDevMetaCommitted, t.lay.devTLSFOff
	}
	need := uint64(a.MetaBytes(2))
	w := t.u64(word)
	if need <= w.Load() {
		return nil // the hot path: no system call
	}
	// A page more than needed: a page holds about a hundred descriptors.
	return t.commitWord(w, base, need+pageSize, t.lay.tlsfSize)
}

// commitPool makes the host pool's first end bytes usable. It grows the
// committed prefix by a quarter more than asked, so a pool filling up costs
// a logarithmic number of system calls, and then exactly as asked when
// /dev/shm cannot give the extra.
func (t *Topic) commitPool(end uint64) error {
	w := t.u64(hPoolCommitted)
	if end <= w.Load() {
		return nil // the hot path: no system call
	}
	if err := t.commitWord(w, t.lay.poolOff, end+end/4, t.lay.poolSize); err == nil {
		return nil
	}
	return t.commitWord(w, t.lay.poolOff, end, t.lay.poolSize)
}

// poolCommitted is how many bytes from the start of the host pool may be
// touched.
func (t *Topic) poolCommitted() uint64 { return min(t.u64(hPoolCommitted).Load(), t.lay.poolSize) }

// ShmUsage is the /dev/shm memory the topic's segment uses now, in bytes
// (what is committed, not the cap).
func (t *Topic) ShmUsage() uint64 {
	u, _ := t.seg.Usage()
	return u
}

func (t *Topic) slotOff(slot uint32) uint64 {
	return t.lay.endpointsOff + uint64(slot)*t.lay.endpointStride
}
func (t *Topic) sampleOff(n uint32) uint64 { return t.lay.samplesOff + uint64(n-1)*sampleStride }

// ring entry i (absolute position) of slot; heldEntry j of slot.
func (t *Topic) ringWord(slot uint32, pos uint64) *atomic.Uint32 {
	return t.u32(t.slotOff(slot) + eRing + 4*(pos&uint64(t.lay.queueCap-1)))
}
func (t *Topic) heldWord(slot, j uint32) *atomic.Uint32 {
	return t.u32(t.slotOff(slot) + eRing + 4*uint64(t.lay.queueCap) + 4*uint64(j))
}

// wakeSpace tells waiting publishers that room was freed. They count
// themselves in spaceWaiters before they check for room (waitSpace), so
// with nobody counted there is nobody to tell, and the shared futex word
// is left alone (it is on a cache line every process writes otherwise).
func (t *Topic) wakeSpace() {
	if t.spaceWaiters.Load() != 0 {
		t.spaceSeq.Add(1)
		shm.WakeAll(t.spaceSeq)
	}
}

// wakeSubscribers moves pubSeq and wakes the subscribers blocked on it, if
// any (it reports whether there were).
func (t *Topic) wakeSubscribers() bool {
	t.pubSeq.Add(1)
	if t.pubWaiters.Load() != 0 {
		shm.WakeAll(t.pubSeq)
		return true
	}
	return false
}

// Waiting is the number of subscriber waits (Subscription.Wait, TakeWait,
// wait sets) blocked on the topic now, in every process: what the next
// publish wakes. A benchmark that times a publish to sleeping subscribers
// waits for it to reach their number first. A process that died while
// waiting stays counted until the topic is removed.
func (t *Topic) Waiting() int {
	defer t.unguard(guard(), nil)
	return int(t.pubWaiters.Load())
}

// notifyChange tells everyone about an endpoint change whose generation
// increment was made under the topic lock (so that a publisher holding the
// lock sees a generation that matches the slots it reads).
func (t *Topic) notifyChange() {
	t.d.graphChanged()
	// Publishers blocked on a subscription that just went away must re-check.
	t.wakeSpace()
	t.wakeSubscribers()
}

package zerocopy

// Shared-memory formats owned by this package. Every number here is part of
// the on-disk (in-/dev/shm) format: changing one changes TopicVersion or
// GraphVersion. docs/ARCHITECTURE.md reproduces these tables.
//
// Topic segment, version 4 ("<prefix>_d<domain>_t<topic with / as .>@<type
// tag>", see segName):
//
//	[0, 4096)            header (static part covered by a CRC-32C, then dynamic words)
//	[endpointsOff, ...)  maxEndpoints endpoint slots of endpointStride bytes
//	[samplesOff, ...)    maxSamples sample records of sampleStride bytes
//	[tlsfOff, ...)       TLSF metadata of the host pool (package tlsf, its own version)
//	[devTLSFOff, ...)    TLSF metadata of the device pool (GPU topics only)
//	[poolOff, ...)       the host pool: the payload pool of a host topic, the
//	                     staging pool (host copies) of a GPU topic. A GPU
//	                     topic's device pool lives in device memory owned by
//	                     the daemon (package gpupool).
//
// Every region starts on a page. Everything in the segment is an offset; no
// address is ever stored.
//
// Commit rule (version 2). The segment is a sparse file whose size is the
// cap (every region at its maximum); a page uses /dev/shm only once
// committed (fallocate, shm.Segment.Commit). Touching a page that is not
// committed, even to read it, is forbidden: it would allocate the page
// behind the engine's back, and kill the process with SIGBUS when /dev/shm
// is full. Each region grows from its start, and a header word says how far
// it is committed; the word is raised only after the commit succeeded, so a
// reader that loads the word may touch everything below it:
//
//	header              committed at creation
//	endpoint slots      [0, hSlots) committed and formatted; a new slot is
//	                    committed when no slot below hSlots is free
//	sample records      [1, hSamplesMade] committed; records past it are
//	                    free without being on the free list: newSample takes
//	                    record hSamplesMade+1 when the free list is empty
//	TLSF metadata       [0, hMetaCommitted) bytes (hDevMetaCommitted for the
//	                    device pool's); the allocator touches only
//	                    MetaBytes(0), and an Alloc MetaBytes(2), which is
//	                    committed before the Alloc
//	host pool           [0, hPoolCommitted) bytes; a block the allocator
//	                    hands out past it is committed before it is lent.
//	                    TLSF carves blocks from the front of its big free
//	                    block, so the committed prefix follows the bytes
//	                    really in use at once, not the cap
//
// Committing is idempotent, so the words are raised by compare-and-swap to
// a maximum and racing committers need no lock; a process dying between a
// commit and the raise leaves committed pages that the next raise counts.
// A commit that finds /dev/shm full fails that one operation with an error
// wrapping ErrNoSpace (and ErrPoolExhausted for a loan or publish).
const (
	// TopicVersion 4 lets a subscription take from its own ring without
	// the topic lock (take.go): the ring head's takingBit and the slot's
	// eTakeN say which sample a take has moved out of the ring but not yet
	// into a held entry. A version 3 process would take under the lock
	// without knowing the bit (and evict with a plain increment), so
	// version 3 segments are refused (ErrVersion), as older ones are.
	// Version 3 added the sample's meta block (sMetaBlock...).
	TopicVersion = 4
	topicMagic   = "RGAPSTPC"
	headerSize   = 4096

	// static header (covered by the CRC, written once by the creator)
	hMagic          = 0   // [8]byte
	hVersion        = 8   // u32
	hPoolKind       = 12  // u32 PoolKind
	hTotalSize      = 16  // u64
	hCRC            = 24  // u32 CRC-32C of [0, hStaticEnd) with this field zero
	hMaxEndpoints   = 32  // u32
	hQueueCap       = 36  // u32, power of two
	hHeldCap        = 40  // u32
	hMaxSamples     = 44  // u32
	hEndpointsOff   = 48  // u64
	hEndpointStride = 56  // u64
	hSamplesOff     = 64  // u64
	hTLSFOff        = 72  // u64
	hTLSFSize       = 80  // u64
	hPoolOff        = 88  // u64
	hPoolSize       = 96  // u64
	hGranule        = 104 // u64
	hDomain         = 112 // u32
	hTopic          = 120 // [256]byte, NUL padded
	hType           = 376 // [256]byte, NUL padded
	hDevPoolSize    = 632 // u64 device pool bytes (GPU topics; 0 otherwise)
	hDevTLSFOff     = 640 // u64
	hDevTLSFSize    = 648 // u64
	hDevGranule     = 656 // u64
	hInstance       = 664 // u64 random, non-zero: tells this segment from a later one of the same name
	hStaticEnd      = 672

	// dynamic header words (each group on its own cache line)
	hLock         = 704 // shm.Lock (16 bytes)
	hPubSeq       = 768 // u32 futex: +1 on every publish
	hPubWaiters   = 772 // u32 blocked subscribers (publishers wake only if > 0)
	hSpaceSeq     = 832 // u32 futex: +1 whenever a sample, queue slot or block frees
	hSpaceWaiters = 836 // u32
	hGeneration   = 896 // u32: +1 on every endpoint change (create, close, reclaim)
	hState        = 900 // u32 topicState
	hFreeSample   = 904 // u32 head of the free sample list (1-based, 0 = none)
	hUsedSamples  = 908 // u32
	hDrops        = 912 // u64 samples dropped by best-effort publishers (pool full)
	hDeadPubs     = 920 // u32 publishers reclaimed after their process died
	hDeadSubs     = 924 // u32 subscribers reclaimed after their process died
	hRepairs      = 928 // u32 repairs run after a lock holder died

	// commit words (see the commit rule above)
	hSlots            = 960 // u32 endpoint slots committed
	hSamplesMade      = 964 // u32 sample records committed (numbers 1..hSamplesMade)
	hPoolCommitted    = 968 // u64 host pool bytes committed, from its start
	hMetaCommitted    = 976 // u64 host TLSF metadata bytes committed
	hDevMetaCommitted = 984 // u64 device TLSF metadata bytes committed

	nameMax = 256
)

// Endpoint slot, endpointStride bytes each (512 + 4*queueCap + 4*heldCap,
// rounded up to 64).
const (
	eState = 0   // u32 slotState
	eKind  = 4   // u32 Kind
	ePid   = 8   // u32 owner pid
	eHeld  = 12  // u32 number of used entries in the held array
	eStart = 16  // u64 owner start time
	eGID   = 24  // [16]byte
	eSeq   = 40  // u64 publisher: last sequence number assigned
	eHead  = 48  // u64 ring read position (subscription queue, or publisher history); bit 63: takingBit
	eTail  = 56  // u64 ring write position; entries are ring[pos % queueCap]
	eLost  = 64  // u64 subscription: samples lost to it; publisher: samples it dropped
	eCap   = 72  // u32 effective ring capacity (depth) for this endpoint
	eFlags = 76  // u32 endpointFlags
	eQoS   = 80  // [48]byte qos.Profile encoding
	eNode  = 128 // [256]byte fully qualified node name, NUL padded
	eHash  = 384 // [33]byte type hash: version byte (0 = unknown), 32 bytes (ROS 2's RIHS01)
	// eMalformed: subscription: messages a front end took and could not
	// decode, dropped (Subscription.DropMalformed).
	eMalformed = 424 // u64
	// eTakeN: subscription: the sample its latest lock-free take moved out
	// of the ring (version 4). It names a reference only while eHead has
	// takingBit set and no held entry names the sample (take.go).
	eTakeN = 432 // u32
	eRing  = 512 // [queueCap]u32 sample numbers (1-based), then [heldCap]u32 held
	// samples: loaned (publisher) or taken (subscription), 0 = empty entry.
)

// Sample record, sampleStride bytes each. Samples are numbered from 1 so that
// 0 can mean "none" in rings, held arrays and the free list.
// A sample has a host block, a device block, or both (a GPU topic's sample
// that host subscribers read too); block index 0 means none.
const (
	sampleStride = 128
	sState       = 0  // u32 sampleState
	sRefs        = 4  // u32 queue + history + held references
	sBlock       = 8  // u32 host-pool TLSF block index (0 = none)
	sNext        = 12 // u32 free-list link while free
	sOffset      = 16 // u64 payload offset in the host pool
	sSize        = 24 // u64 payload size as published
	sSeq         = 32 // u64 publication sequence number
	sStamp       = 40 // i64 source timestamp, ns since the Unix epoch
	sGID         = 48 // [16]byte publisher GID
	sExpires     = 64 // i64 lifespan expiry in ns since the epoch (0 = never)
	sPubSlot     = 72 // u32 publishing endpoint slot
	sDevBlock    = 76 // u32 device-pool TLSF block index (0 = none)
	sDevOffset   = 80 // u64 payload offset in the device pool
	// The meta block (version 3): a small side block of the host pool
	// that travels with the payload (Loan.SetMeta, Sample.Meta).
	sMetaBlock  = 88 // u32 host-pool TLSF block index of the meta (0 = none)
	sMetaSize   = 92 // u32 meta bytes (1 … MaxMeta; 0 when there is none)
	sMetaOffset = 96 // u64 meta offset in the host pool
)

// endpointFlags say which forms of a sample an endpoint reads, so that a
// publisher makes each form once per host, for all readers.
type endpointFlags uint32

const (
	flagWantsHost   endpointFlags = 1 << 0
	flagWantsDevice endpointFlags = 1 << 1
	// flagRepublish marks republishing endpoints (EndpointSpec.Republish;
	// the bit was named for the bridge before, with the same meaning): a
	// republishing publisher never delivers to a republishing
	// subscription, so what one relay brings in is never sent back out.
	flagRepublish endpointFlags = 1 << 2
)

type slotState uint32

const (
	slotFree slotState = iota
	slotActive
	// slotReclaiming: the owner died and a reclaimer has counted the death
	// and is clearing the slot. A reclaimer that dies here leaves it for the
	// next one, which finishes the clearing without counting again.
	slotReclaiming
)

type sampleState uint32

const (
	sampleFree sampleState = iota
	sampleLoaned
	samplePublished
)

type topicState uint32

const (
	topicLive topicState = iota
	// topicRemoved: the last endpoint left and the name was unlinked; a
	// process that mapped it just before must open (or create) it again.
	topicRemoved
	// topicCorrupt: a repair after a holder's death found damage it could not
	// undo. Every operation fails with ErrCorrupt; remove the topic.
	topicCorrupt
)

// Kind tells publishers from subscriptions.
type Kind uint32

const (
	KindPublisher    Kind = 1
	KindSubscription Kind = 2
)

func (k Kind) String() string {
	switch k {
	case KindPublisher:
		return "publisher"
	case KindSubscription:
		return "subscription"
	}
	return "unknown"
}

// PoolKind tells where a topic's payload bytes live.
type PoolKind uint32

const (
	// PoolHost: POSIX shared memory. Processes that use a GPU register it
	// with CUDA (pinned, mapped), so GPU subscribers read it in place.
	PoolHost PoolKind = 0
	// PoolGPU: device memory owned by the daemon, plus a host staging pool
	// for host readers.
	PoolGPU PoolKind = 2
)

// Path is the data path an endpoint reports (DESIGN.md §8).
func (p PoolKind) Path() string {
	if p == PoolGPU {
		return "gpu-pool"
	}
	return "host-shm"
}

func align(n, a uint64) uint64 { return (n + a - 1) &^ (a - 1) }

package zerocopy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"sort"
	"sync/atomic"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/names"
)

// Graph segment, version 2 ("<prefix>_d<domain>_graph"): the nodes of the
// domain on this host and a generation word that changes with every node or
// endpoint change. Endpoints themselves live in their topic segments.
//
//	@0    [8]byte magic "RGAPSGRF"
//	@8    u32 version
//	@12   u32 maxNodes
//	@16   u64 total size
//	@24   u32 CRC-32C of [0,32) with this field zero
//	@64   shm.Lock
//	@128  u32 generation (futex word)
//	@4096 maxNodes node slots of 1024 bytes:
//	      @0 u32 state (0 free, 1 in use), @4 u32 pid, @8 u64 start time,
//	      @16 [16]byte GID, @32 u32 CRC-32C of [4,1024) with this field zero,
//	      @64 [256]byte name, @320 [256]byte namespace, @576 [256]byte enclave
//
// The graph holds nothing that its processes do not also know: each knows
// its own nodes. So damage is repaired by replacement, not by guessing: a
// process that finds the segment damaged (a static header that fails its
// checks, a slot whose state is neither 0 nor 1 or whose checksum fails, a
// fault on its pages: truncated) stops using it, removes it (if the name
// still names it), makes a new one and registers its own nodes in it again;
// every other process finds the name replaced in its next graph operation
// or janitor pass (at most JanitorPeriod later) and does the same. The call
// that found the damage fails with ErrCorrupt; later calls work on the new
// segment.
const (
	GraphVersion = 2
	graphMagic   = "RGAPSGRF"
	gMaxNodes    = 12
	gTotal       = 16
	gCRC         = 24
	gStaticEnd   = 32
	gLock        = 64
	gGeneration  = 128
	gNodesOff    = 4096
	nodeStride   = 1024
	nState, nPid = 0, 4
	nStart, nGID = 8, 16
	nCRC         = 32
	nName, nNS   = 64, 320
	nEnclave     = 576
	// defaultNodeCap is the node slots of a graph segment this build
	// makes (1 MiB): the nodes of every process of the host (a ROS
	// process has at least one; 256 subscriber processes and their
	// publisher need 257). The number is in the header, so segments of
	// another capacity (256, made by earlier builds, kept until removed)
	// are used as they are.
	defaultNodeCap = 1024
)

// graph is one mapping of the domain's graph segment. A Domain uses one at
// a time (Domain.graph) and keeps the ones it left mapped until it closes,
// since words of them may still be in use (GraphWord, waits).
type graph struct {
	cfg      Config
	seg      *shm.Segment
	lk       shm.Lock
	gen      *atomic.Uint32
	maxNodes uint32 // from the validated header: every loop over slots stops here
	// broken, once set, is why this process no longer uses the mapping:
	// damage, truncation or replacement.
	broken atomic.Pointer[error]
}

func graphName(cfg Config) string { return fmt.Sprintf("%s_d%d_graph", cfg.Prefix, cfg.Domain) }

// openGraph maps the domain's graph segment, creating it when absent. A
// segment that is damaged (ErrCorrupt, or shorter than its header) is
// removed and made again, whoever maps it: its users find it replaced and
// register their nodes in the new one (see the format comment).
func openGraph(cfg Config) (*graph, error) {
	name := graphName(cfg)
	for attempt := 0; attempt < 100; attempt++ {
		seg, err := shm.Open(name, gNodesOff, cfg.access())
		if errors.Is(err, shm.ErrTruncated) {
			if dev, ino, size, ierr := shm.Inspect(name, cfg.access()); ierr == nil && size < gNodesOff {
				removeDamagedGraph(cfg, name, dev, ino, err)
			}
			continue
		}
		if errors.Is(err, shm.ErrNotExist) {
			size := int64(gNodesOff + defaultNodeCap*nodeStride)
			seg, err = shm.Create(name, size, cfg.Perm, cfg.Group)
			if err != nil {
				return nil, fmt.Errorf("creating graph segment: %w", err)
			}
			// One per domain and host, 1 MiB: committed whole, so that
			// no node registration can fault on a full /dev/shm.
			if err = seg.Commit(0, uint64(size)); err != nil {
				seg.Close()
				return nil, fmt.Errorf("creating graph segment: %w", err)
			}
			h := seg.Bytes(0, gStaticEnd)
			copy(h, graphMagic)
			binary.LittleEndian.PutUint32(h[8:], GraphVersion)
			binary.LittleEndian.PutUint32(h[gMaxNodes:], defaultNodeCap)
			binary.LittleEndian.PutUint64(h[gTotal:], uint64(size))
			binary.LittleEndian.PutUint32(h[gCRC:], crc32.Checksum(h, castagnoli))
			if err = seg.Publish(); errors.Is(err, shm.ErrExist) {
				seg.Close()
				continue
			}
		}
		if err != nil {
			return nil, fmt.Errorf("opening graph segment: %w", err)
		}
		g, err := attachGraph(cfg, seg)
		if err != nil {
			dev, ino := seg.Identity()
			seg.Close()
			if errors.Is(err, ErrCorrupt) {
				removeDamagedGraph(cfg, name, dev, ino, err)
				continue
			}
			if errors.Is(err, ErrVersion) {
				// Left by another build (an upgrade): replaced when no
				// process maps it any more, else the error names its users.
				if err = removeUnused(cfg, name, err); err == nil {
					continue
				}
			}
			return nil, err
		}
		return g, nil
	}
	return nil, fmt.Errorf("graph segment %s keeps disappearing", name)
}

// removeDamagedGraph removes the damaged graph segment (dev, ino) if the
// name still names it, and says so.
func removeDamagedGraph(cfg Config, name string, dev, ino uint64, cause error) {
	if shm.RemoveIf(name, dev, ino) != nil {
		return // gone or replaced meanwhile
	}
	if lg := cfg.Logger; lg != nil {
		lg.Error("graph segment damaged: removed it; a new one is made and every process registers its nodes in it again",
			"segment", name, "cause", cause.Error())
	}
}

// segPanic reports whether r, recovered while working on seg, is a fault on
// seg's mapping or an index check that values read from it defeated.
func segPanic(seg *shm.Segment, r any) bool {
	if fe, ok := r.(interface{ Addr() uintptr }); ok {
		return seg.Contains(fe.Addr())
	}
	return boundsPanic(r)
}

func attachGraph(cfg Config, seg *shm.Segment) (_ *graph, err error) {
	// Nothing of the segment is trusted yet, and its file may shrink
	// under the mapping: a fault is damage, not a crash.
	prev := guard()
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			if !segPanic(seg, r) {
				panic(r)
			}
			err = fmt.Errorf("%w: %s: %v while reading it (%v)", ErrCorrupt, seg.Name(), r, seg.Health())
		}
	}()
	maxNodes, err := checkGraphHeader(seg)
	if err != nil {
		return nil, err
	}
	return &graph{cfg: cfg, seg: seg, lk: shm.LockAt(seg, gLock), gen: seg.Uint32(gGeneration), maxNodes: maxNodes}, nil
}

// checkGraphHeader validates the static header against the mapping and
// returns the number of node slots.
func checkGraphHeader(seg *shm.Segment) (uint32, error) {
	h := seg.Bytes(0, gStaticEnd)
	if string(h[:8]) != graphMagic {
		return 0, fmt.Errorf("%w: %s: bad magic", ErrCorrupt, seg.Name())
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != GraphVersion {
		return 0, fmt.Errorf("%w: %s has layout version %d, this build reads %d", ErrVersion, seg.Name(), v, GraphVersion)
	}
	var tmp [gStaticEnd]byte
	copy(tmp[:], h)
	clear(tmp[gCRC : gCRC+4])
	if crc32.Checksum(tmp[:], castagnoli) != binary.LittleEndian.Uint32(h[gCRC:]) {
		return 0, fmt.Errorf("%w: %s: header checksum mismatch", ErrCorrupt, seg.Name())
	}
	maxNodes := binary.LittleEndian.Uint32(h[gMaxNodes:])
	if maxNodes == 0 || maxNodes > 1<<16 || uint64(seg.Size()) != binary.LittleEndian.Uint64(h[gTotal:]) ||
		uint64(seg.Size()) != gNodesOff+uint64(maxNodes)*nodeStride {
		return 0, fmt.Errorf("%w: %s: sizes disagree (truncated?)", ErrCorrupt, seg.Name())
	}
	return maxNodes, nil
}

func (g *graph) close() { g.seg.Close() }

// run runs fn with faults on g's mapping and failed index checks turned
// into g's damage (ErrCorrupt). It fails at once once g is broken.
func (g *graph) run(fn func() error) (err error) {
	if b := g.broken.Load(); b != nil {
		return *b
	}
	return g.guarded(fn)
}

// guarded is run without the check that g is still in use.
func (g *graph) guarded(fn func() error) (err error) {
	prev := guard()
	defer func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			if !segPanic(g.seg, r) {
				panic(r)
			}
			err = g.fail(fmt.Errorf("%v", r))
		}
	}()
	return fn()
}

// fail makes this process stop using g because of cause (the first cause
// wins) and returns the error operations on g fail with. A mapping whose
// file shrank is fenced, so that words of it still in use (GraphWord, a
// wait) read zeros instead of faulting.
func (g *graph) fail(cause error) error {
	e := cause
	if !errors.Is(cause, ErrCorrupt) && !errors.Is(cause, shm.ErrReplaced) {
		e = fmt.Errorf("%w: graph segment %s: %v", ErrCorrupt, g.seg.Name(), cause)
	}
	if g.broken.CompareAndSwap(nil, &e) && errors.Is(g.seg.Health(), shm.ErrTruncated) {
		g.seg.Fence()
	}
	return *g.broken.Load()
}

// audit checks that g's file still backs the mapping under its name and
// that the static header is intact. Call it inside run.
func (g *graph) audit() error {
	switch herr := g.seg.Health(); {
	case errors.Is(herr, shm.ErrTruncated):
		return g.fail(herr)
	case errors.Is(herr, shm.ErrReplaced):
		return g.fail(herr) // another process replaced it: follow (Domain.graphDo)
	}
	n, err := checkGraphHeader(g.seg)
	if err == nil && n != g.maxNodes {
		err = fmt.Errorf("%w: %s: the header changed since it was opened", ErrCorrupt, g.seg.Name())
	}
	if err != nil {
		return g.fail(err)
	}
	return nil
}

// lock takes the graph lock (the takeover rules of shm.Lock, limited to
// Config.LockTimeout). A holder that died left at worst a slot written but
// not yet marked in use, which is free, or one freed: nothing to repair.
func (g *graph) lock() error {
	_, err := g.lk.LockWith(g.cfg.LockTimeout, func() error {
		if b := g.broken.Load(); b != nil {
			return *b
		}
		return nil
	})
	if errors.Is(err, shm.ErrLockTimeout) {
		return fmt.Errorf("graph segment %s: %w", g.seg.Name(), err)
	}
	return err
}

// changed bumps the generation and wakes its waiters. It never faults.
func (g *graph) changed() {
	g.run(func() error {
		g.gen.Add(1)
		shm.WakeAll(g.gen)
		return nil
	})
}

// generation reads the generation word (0 once the mapping is unusable).
func (g *graph) generation() (v uint32) {
	g.run(func() error {
		v = g.gen.Load()
		return nil
	})
	return v
}

func (g *graph) slotOff(i uint32) uint64 { return gNodesOff + uint64(i)*nodeStride }

// slotSum is the checksum of node slot so: CRC-32C of [4, nodeStride)
// with the checksum field zero.
func (g *graph) slotSum(so uint64) uint32 {
	var zero [4]byte
	b := g.seg.Bytes(so, nodeStride)
	c := crc32.Update(0, castagnoli, b[nPid:nCRC])
	c = crc32.Update(c, castagnoli, zero[:])
	return crc32.Update(c, castagnoli, b[nCRC+4:])
}

// slotUsed reports whether node slot i holds a node; a slot that cannot be
// in a state the engine writes breaks g. Must hold the graph lock (a slot
// is written under it).
func (g *graph) slotUsed(i uint32) (bool, error) {
	so := g.slotOff(i)
	switch st := g.seg.Uint32(so + nState).Load(); st {
	case 0:
		return false, nil
	case 1:
		if g.slotSum(so) != g.seg.Uint32(so+nCRC).Load() {
			return false, g.fail(fmt.Errorf("node slot %d: checksum mismatch", i))
		}
		return true, nil
	default:
		return false, g.fail(fmt.Errorf("node slot %d: state %d", i, st))
	}
}

func (g *graph) slotOwner(so uint64) shm.Owner {
	return shm.Owner{Pid: g.seg.Uint32(so + nPid).Load(), Start: g.seg.Uint64(so + nStart).Load()}
}

// insert writes info into a free node slot and returns its number.
func (g *graph) insert(info NodeInfo) (uint32, error) {
	if err := g.lock(); err != nil {
		return 0, err
	}
	defer g.lk.Unlock()
	for i := uint32(0); i < g.maxNodes; i++ {
		used, err := g.slotUsed(i)
		if err != nil {
			return 0, err
		}
		if used {
			continue
		}
		so := g.slotOff(i)
		me := shm.Self()
		clear(g.seg.Bytes(so, nodeStride))
		g.seg.Uint32(so + nPid).Store(me.Pid)
		g.seg.Uint64(so + nStart).Store(me.Start)
		copy(g.seg.Bytes(so+nGID, 16), info.GID[:])
		copy(g.seg.Bytes(so+nName, nameMax-1), info.Name)
		copy(g.seg.Bytes(so+nNS, nameMax-1), info.Namespace)
		copy(g.seg.Bytes(so+nEnclave, nameMax-1), info.Enclave)
		g.seg.Uint32(so + nCRC).Store(g.slotSum(so))
		g.seg.Uint32(so + nState).Store(1) // last: the slot is complete
		g.changed()
		return i, nil
	}
	return 0, fmt.Errorf("%w: domain %d: all %d node slots of the graph segment are in use (the nodes of every process of this host)",
		ErrTooManyNodes, g.cfg.Domain, g.maxNodes)
}

// reclaimDead frees the slots of nodes whose process died.
func (g *graph) reclaimDead() error {
	dead := false
	for i := uint32(0); i < g.maxNodes && !dead; i++ {
		so := g.slotOff(i)
		switch g.seg.Uint32(so + nState).Load() {
		case 0:
		case 1:
			dead = !shm.Alive(g.slotOwner(so))
		default:
			dead = true // damage: the locked pass below judges it
		}
	}
	if !dead {
		return nil
	}
	if err := g.lock(); err != nil {
		return err
	}
	defer g.lk.Unlock()
	n := 0
	for i := uint32(0); i < g.maxNodes; i++ {
		used, err := g.slotUsed(i)
		if err != nil {
			return err
		}
		if so := g.slotOff(i); used && !shm.Alive(g.slotOwner(so)) {
			g.seg.Uint32(so + nState).Store(0)
			n++
		}
	}
	if n > 0 {
		g.changed()
	}
	return nil
}

// graphDo runs fn on the domain's graph segment, serialised with this
// process's other graph operations. A segment that another process
// replaced is followed first. Damage found (ErrCorrupt) replaces the
// segment and is returned: the next call works on the new one.
func (d *Domain) graphDo(fn func(g *graph) error) error {
	d.graphMu.Lock()
	defer d.graphMu.Unlock()
	for try := 0; ; try++ {
		g := d.graph.Load()
		err := g.run(func() error {
			if err := g.audit(); err != nil {
				return err
			}
			return fn(g)
		})
		if errors.Is(err, shm.ErrReplaced) && try < 3 {
			if rerr := d.replaceGraph(g, err); rerr != nil {
				return rerr
			}
			continue
		}
		if errors.Is(err, shm.ErrReplaced) {
			return fmt.Errorf("%w: graph segment %s keeps being replaced", ErrCorrupt, g.seg.Name())
		}
		if errors.Is(err, ErrCorrupt) {
			if rerr := d.replaceGraph(g, err); rerr != nil {
				return fmt.Errorf("%w (making a new graph segment: %v)", err, rerr)
			}
		}
		return err
	}
}

// replaceGraph moves this process off old, which is broken (cause): a
// damaged segment is removed if its name still names it, the segment under
// the name is opened (or made), and this process's nodes are registered in
// it again. Must hold graphMu.
func (d *Domain) replaceGraph(old *graph, cause error) error {
	if d.graph.Load() != old {
		return nil
	}
	old.fail(cause)
	lg := d.cfg.Logger
	if errors.Is(cause, shm.ErrReplaced) {
		if lg != nil {
			lg.Warn("graph segment replaced by another process: registering this process's nodes in the new one", "segment", old.seg.Name())
		}
	} else {
		dev, ino := old.seg.Identity()
		removeDamagedGraph(d.cfg, old.seg.Name(), dev, ino, cause)
	}
	ng, err := openGraph(d.cfg)
	if err != nil {
		if lg != nil {
			lg.Error("graph segment damaged and no new one could be opened", "segment", old.seg.Name(), "err", err.Error())
		}
		return err
	}
	for h := range d.nodes {
		var slot uint32
		err := ng.run(func() (err error) {
			slot, err = ng.insert(h.info)
			return err
		})
		if err != nil {
			if lg != nil {
				lg.Error("node lost from the graph: registering it in the new graph segment failed", "node", h.info.FullName(), "err", err.Error())
			}
			h.g = nil
			continue
		}
		h.g, h.slot = ng, slot
	}
	d.oldGraphs = append(d.oldGraphs, old)
	d.graph.Store(ng)
	// Waits of this process on the old word wake and take the new one;
	// then the old pages are swapped for private zero pages, so that the
	// old file's memory goes once every process left it, while a word of
	// it still held somewhere reads harmlessly.
	old.guarded(func() error { old.gen.Add(1); shm.WakeAll(old.gen); return nil })
	old.seg.Fence()
	ng.changed()
	return nil
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// NodeInfo describes a node in the graph.
type NodeInfo struct {
	Name, Namespace, Enclave string
	GID                      GID
	Pid                      uint32
}

// FullName is namespace + "/" + name.
func (n NodeInfo) FullName() string { return names.FullNodeName(n.Name, n.Namespace) }

// NodeHandle is a node registered in the domain graph.
type NodeHandle struct {
	d    *Domain
	info NodeInfo
	done atomic.Bool
	// g and slot are where the node is registered (nil g: in no segment,
	// after a replacement failed to register it again); guarded by
	// d.graphMu.
	g    *graph
	slot uint32
}

// RegisterNode adds a node to the domain graph. Names are validated with
// ROS 2's rules; two nodes may share a name (ROS 2 warns, it does not fail).
// It fails with ErrCorrupt when it finds the graph segment damaged (which
// is then replaced: a retry works).
func (d *Domain) RegisterNode(name, namespace, enclave string) (*NodeHandle, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	if err := names.ValidateNodeName(name); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := names.ValidateNamespace(namespace); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if len(enclave) >= nameMax {
		return nil, fmt.Errorf("%w: enclave too long", ErrInvalid)
	}
	h := &NodeHandle{d: d, info: NodeInfo{Name: name, Namespace: namespace, Enclave: enclave, GID: newGID(), Pid: shm.Self().Pid}}
	err := d.graphDo(func(g *graph) error {
		if err := g.reclaimDead(); err != nil {
			return err
		}
		slot, err := g.insert(h.info)
		if err != nil {
			return err
		}
		h.g, h.slot = g, slot
		d.nodes[h] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Info describes the node.
func (n *NodeHandle) Info() NodeInfo { return n.info }

// Close removes the node from the graph.
func (n *NodeHandle) Close() error {
	if !n.done.CompareAndSwap(false, true) {
		return ErrClosed
	}
	d := n.d
	if d.closed.Load() {
		return ErrClosed
	}
	d.graphMu.Lock()
	delete(d.nodes, n)
	g, slot := n.g, n.slot
	n.g = nil
	d.graphMu.Unlock()
	err := d.graphDo(func(cur *graph) error {
		if cur != g {
			return nil // registered in a segment this process left: nothing to clear
		}
		if err := g.lock(); err != nil {
			return err
		}
		g.seg.Uint32(g.slotOff(slot) + nState).Store(0)
		g.lk.Unlock()
		g.changed()
		return nil
	})
	if errors.Is(err, ErrCorrupt) {
		return nil // the segment was replaced without the node: it is gone
	}
	return err
}

// Nodes lists the live nodes of the domain on this host. It fails with
// ErrCorrupt when it finds the graph segment damaged (which is then
// replaced: a retry works), and with an error wrapping shm.ErrLockTimeout
// when a live process keeps the graph lock longer than Config.LockTimeout.
func (d *Domain) Nodes() ([]NodeInfo, error) {
	if d.closed.Load() {
		return nil, ErrClosed
	}
	var out []NodeInfo
	err := d.graphDo(func(g *graph) error {
		out = out[:0]
		if err := g.lock(); err != nil {
			return err
		}
		defer g.lk.Unlock()
		for i := uint32(0); i < g.maxNodes; i++ {
			used, err := g.slotUsed(i)
			if err != nil {
				return err
			}
			so := g.slotOff(i)
			if !used {
				continue
			}
			o := g.slotOwner(so)
			if !shm.Alive(o) {
				continue
			}
			n := NodeInfo{Name: cstr(g.seg.Bytes(so+nName, nameMax)), Namespace: cstr(g.seg.Bytes(so+nNS, nameMax)),
				Enclave: cstr(g.seg.Bytes(so+nEnclave, nameMax)), Pid: o.Pid}
			copy(n.GID[:], g.seg.Bytes(so+nGID, 16))
			out = append(out, n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullName() < out[j].FullName() })
	return out, nil
}

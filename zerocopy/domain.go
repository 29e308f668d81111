package zerocopy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Domain is one process's handle on a ROS domain on this host: the topics
// it has open, the domain's graph segment, and the janitor that reclaims
// what dead processes left behind. Its methods are safe for concurrent use.
//
// Lock order (docs/ARCHITECTURE.md): Domain.mu → Topic.mu → endpoint.mu →
// topic lock (shared memory) ; graph lock (shared memory) is taken alone.
type Domain struct {
	cfg    Config
	graph  atomic.Pointer[graph] // the graph segment in use (graph.go: replaced on damage)
	closed atomic.Bool

	// graphMu serialises this process's graph operations (graphDo) and
	// guards nodes, oldGraphs and every NodeHandle's g and slot. Taken
	// before the graph lock, never while holding mu or a topic lock.
	graphMu   sync.Mutex
	nodes     map[*NodeHandle]struct{} // this process's registered nodes
	oldGraphs []*graph                 // graph segments left after damage, unmapped at Close

	// mu guards topics and the word pool.
	mu     sync.Mutex
	topics map[string]*Topic // by segment name (one per topic and type)
	words  []*atomic.Uint32  // free local futex words

	stop chan struct{}
	done chan struct{}

	gpuState gpuState
	gpuMu    sync.Mutex // guards gpuState.client, copiers, formCopier and streamEvents
	copiers  map[*Copier]bool
	// streamEvents are events kept for reuse by waitStream (Loan.WritesOn).
	streamEvents []*cuda.Event
	// formCopier is the engine's own copier, for the copies between a GPU
	// sample's two forms (copyForm); made on first need.
	formCopier *Copier
}

// Open joins the domain cfg.Domain on this host. Nothing is started that
// other processes depend on: a domain is daemonless for host topics.
func Open(cfg Config) (*Domain, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Domain{cfg: cfg, topics: map[string]*Topic{}, nodes: map[*NodeHandle]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	g, err := openGraph(cfg)
	if err != nil {
		return nil, err
	}
	d.graph.Store(g)
	if !cfg.SkipStaleClean {
		if removed, _ := d.CleanStale(); len(removed) > 0 && cfg.Logger != nil {
			cfg.Logger.Info("removed shared memory left by crashed processes", "segments", removed)
		}
	}
	go d.janitor(segPrefix(cfg))
	return d, nil
}

// Config is the configuration in force (defaults filled in).
func (d *Domain) Config() Config { return d.cfg }

// Close stops the janitor and unmaps everything. Endpoints must be closed
// first; Close returns an error naming the topics still in use.
func (d *Domain) Close() error {
	if !d.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	close(d.stop)
	<-d.done
	d.mu.Lock()
	var open []string
	for name, t := range d.topics {
		open = append(open, name)
		t.unmap()
	}
	d.topics = nil
	d.mu.Unlock()
	d.graphMu.Lock()
	d.graph.Load().close()
	for _, g := range d.oldGraphs {
		g.close()
	}
	d.oldGraphs = nil
	d.graphMu.Unlock()
	d.closeCopiers()
	d.closeStreamEvents()
	d.closeGPU()
	if len(open) > 0 {
		return fmt.Errorf("domain closed with endpoints still open on %v", open)
	}
	return nil
}

// acquireTopic opens a topic of type typ, creating it with a pool of kind
// when absent.
func (d *Domain) acquireTopic(name, typ string, kind PoolKind) (*Topic, error) {
	seg, err := segName(d.cfg, name, typ)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.topics == nil {
		return nil, ErrClosed
	}
	if t, ok := d.topics[seg]; ok && (t.unusable() || topicState(t.state.Load()) == topicRemoved) {
		// Removed by its last user elsewhere, or damaged: whoever still
		// holds this mapping keeps it; new users get the segment made after
		// it, or the error that explains why there is none.
		delete(d.topics, seg)
	} else if ok {
		t.refs++
		return t, nil
	}
	t, err := openTopic(d, name, typ, kind)
	if err != nil {
		return nil, err
	}
	t.refs = 1
	d.topics[seg] = t
	return t, nil
}

// releaseTopic drops a local reference; the last one unmaps the topic, and
// removes its name from /dev/shm when no endpoint of any process is left.
func (d *Domain) releaseTopic(t *Topic) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t.refs--
	if t.refs > 0 {
		return
	}
	if d.topics[t.seg.Name()] == t {
		delete(d.topics, t.seg.Name())
	}
	func() {
		defer t.unguard(guard(), nil)
		if t.check() != nil {
			return
		}
		t.reclaimDead() // endpoints of dead processes must not keep the topic alive
		t.removeIfUnused()
	}()
	t.unmap()
}

// removeIfUnused unlinks the segment when no slot is active. Openers check
// the state under the lock after mapping, so none can start using a segment
// that is being removed (see openTopic).
func (t *Topic) removeIfUnused() {
	if t.lock() != nil {
		return
	}
	defer t.unlock()
	if topicState(t.state.Load()) == topicRemoved {
		return // unlinked already: the name may belong to a newer segment
	}
	for s := uint32(0); s < t.slotCount(); s++ {
		if slotState(t.u32(t.slotOff(s)+eState).Load()) == slotActive {
			return
		}
	}
	t.state.Store(uint32(topicRemoved))
	shm.Unlink(t.seg.Name())
	t.d.graphChanged()
}

// word hands out a process-local futex word.
func (d *Domain) word() *atomic.Uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.words) == 0 {
		ws, err := shm.LocalWords(1024)
		if err != nil {
			// Out of address space: fall back to the Go heap; futexes on
			// private memory work the same within one process.
			return new(atomic.Uint32)
		}
		d.words = ws
	}
	w := d.words[len(d.words)-1]
	d.words = d.words[:len(d.words)-1]
	return w
}

func (d *Domain) putWord(w *atomic.Uint32) {
	d.mu.Lock()
	d.words = append(d.words, w)
	d.mu.Unlock()
}

func (d *Domain) graphChanged() { d.graph.Load().changed() }

// NotifyGraphChanged wakes every graph condition of the domain on this
// host (and the rmw's graph guard conditions) as a local node or endpoint
// change would. The bridge daemon calls it when another host's graph
// changes, so that waits for matches and services across hosts wake up.
func (d *Domain) NotifyGraphChanged() { d.graph.Load().changed() }

// GraphWord is a futex word that changes whenever a node or endpoint of the
// domain appears or goes (the rmw graph guard condition waits on it). A
// damaged graph segment is replaced (graph.go): the word of the old one
// stays mapped, is bumped once at the replacement and never again, so
// call GraphWord again after each wake.
func (d *Domain) GraphWord() *atomic.Uint32 { return d.graph.Load().gen }

// janitorAudits is about how many open topics one janitor pass audits
// (file checks, reclamation of dead processes' endpoints): all of them up
// to this many; beyond, each topic has its turn every ⌈n/janitorAudits⌉
// passes, so that a process with a thousand topics open makes a bounded
// number of system calls per period.
const janitorAudits = 64

// janitor reclaims endpoints of dead processes on the topics this process
// has open, dead nodes in the graph, and drives deadline status. Each pass
// audits the topics whose turn it is and ticks the local endpoints of
// every topic whose endpoints changed (none while the graph generation
// stands still) or that has a deadline to watch.
func (d *Domain) janitor(prefix string) {
	defer close(d.done)
	tick := time.NewTicker(d.cfg.JanitorPeriod)
	defer tick.Stop()
	clashGen := d.graph.Load().generation() - 1
	tickGen := clashGen // the graph generation the last ticks saw
	var topics []*Topic
	for pass := uint32(0); ; pass++ {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		// Every endpoint change on this host moves the graph generation:
		// while it stands still, only topics with deadlines need ticks.
		gen := d.graph.Load().generation()
		moved := gen != tickGen
		tickGen = gen
		topics = d.holdTopicsInto(topics[:0]) // one slice for every pass: an idle pass allocates nothing for it
		turns := uint32(max(1, (len(topics)+janitorAudits-1)/janitorAudits))
		alive := map[shm.Owner]bool{} // processes judged in this pass
		for _, t := range topics {
			func() {
				defer t.unguard(guard(), nil)
				if t.auditTurn%turns == pass%turns && t.audit() == nil {
					t.reclaimDeadWith(alive)
				}
				t.mu.Lock()
				quiet := t.deadlines == 0
				t.mu.Unlock()
				if quiet && !moved {
					return
				}
				gen := t.generation.Load()
				if quiet && gen == t.tickedGen {
					return
				}
				for _, e := range t.localEndpoints() {
					e.tick()
				}
				t.tickedGen = gen
			}()
			d.releaseTopic(t)
		}
		clear(topics) // keeps no topic reachable between passes
		// Also the graph's audit: damage or a replacement by another
		// process is acted on here at the latest.
		d.graphDo(func(g *graph) error { return g.reclaimDead() })
		clashGen = d.checkTypeClashes(prefix, clashGen)
	}
}

// localEndpoints lists this process's endpoints on t.
func (t *Topic) localEndpoints() []endpointLocal {
	t.mu.Lock()
	defer t.mu.Unlock()
	eps := make([]endpointLocal, 0, len(t.endpoints))
	for _, e := range t.endpoints {
		eps = append(eps, e)
	}
	return eps
}

// Reclaim runs one reclamation pass now over the topics this process has
// open (the janitor does it every JanitorPeriod) and returns how many
// endpoints of dead processes it freed.
func (d *Domain) Reclaim() int {
	n := 0
	for _, t := range d.holdTopics() {
		func() {
			defer t.unguard(guard(), nil)
			k, _ := t.reclaimDead()
			n += k
		}()
		d.releaseTopic(t)
	}
	return n
}

// holdTopics returns the open topics, each with a reference the caller
// must release, so that none is unmapped while the caller works on it.
func (d *Domain) holdTopics() []*Topic { return d.holdTopicsInto(nil) }

// holdTopicsInto is holdTopics appending to topics.
func (d *Domain) holdTopicsInto(topics []*Topic) []*Topic {
	d.mu.Lock()
	defer d.mu.Unlock()
	topics = slices.Grow(topics, len(d.topics))
	for _, t := range d.topics {
		t.refs++
		topics = append(topics, t)
	}
	return topics
}

// CleanEntry is one thing Clean found in /dev/shm: a segment it removed, or
// one it kept, and why.
type CleanEntry struct {
	Name    string
	Removed bool
	Reason  string
}

// CleanStale removes what crashed processes left in /dev/shm for this
// domain (see Clean) and returns the names removed. Open runs it once.
func (d *Domain) CleanStale() ([]string, error) {
	ents, err := d.Clean()
	var removed []string
	for _, e := range ents {
		if e.Removed {
			removed = append(removed, e.Name)
		}
	}
	return removed, err
}

// Clean removes what crashed processes and damage left in /dev/shm for
// this domain, and reports what it kept:
//   - topic segments whose endpoints all belonged to dead processes (their
//     endpoints are reclaimed first): removed;
//   - segments that are corrupt (marked so, or failing the checks of
//     opening: a damaged header or allocator, a truncated file): removed when
//     no other process maps the file, kept and named with their users
//     otherwise;
//   - half-created segments whose creator died before publishing them:
//     removed;
//   - segments this user must not trust (another owner, a wider mode, more
//     links): kept, with their owner (they are not this user's to judge);
//   - segments in use by live endpoints: kept.
//
// Topics this process has open are skipped. `rgaps shm clean` prints the
// result.
func (d *Domain) Clean() ([]CleanEntry, error) {
	names, err := shm.List(segPrefix(d.cfg))
	if err != nil {
		return nil, err
	}
	var out []CleanEntry
	for _, name := range names {
		d.mu.Lock()
		_, open := d.topics[name]
		d.mu.Unlock()
		if open {
			continue
		}
		if e, ok := d.cleanTopic(name); ok {
			out = append(out, e)
		}
	}
	tmps, _ := os.ReadDir(shm.Dir)
	for _, e := range tmps {
		n := e.Name()
		i := strings.Index(n, ".tmp")
		if !strings.HasPrefix(n, segPrefix(d.cfg)) && !strings.HasPrefix(n, graphName(d.cfg)) || i < 0 {
			continue
		}
		var pid uint32
		if _, err := fmt.Sscanf(n[i+4:], "%d_", &pid); err != nil || shm.Alive(shm.Owner{Pid: pid}) {
			continue
		}
		if os.Remove(filepath.Join(shm.Dir, n)) == nil {
			out = append(out, CleanEntry{Name: n, Removed: true, Reason: fmt.Sprintf("half-created by pid %d, which died", pid)})
		}
	}
	return out, nil
}

// cleanTopic judges one topic segment for Clean (ok false: nothing to say,
// e.g. it vanished meanwhile).
func (d *Domain) cleanTopic(name string) (ent CleanEntry, ok bool) {
	ent.Name = name
	seg, err := shm.Open(name, headerSize, d.cfg.access())
	switch {
	case errors.Is(err, shm.ErrNotExist):
		return ent, false
	case errors.Is(err, shm.ErrTruncated):
		return d.removeDamaged(name, err), true
	case err != nil:
		ent.Reason = err.Error()
		return ent, true
	}
	defer seg.Close()
	t, err := attachTopic(d, seg, "")
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrVersion) {
		// Another version's segment is only ours to remove once nobody
		// maps it (left by an older build: an upgrade).
		return d.removeDamaged(name, err), true
	}
	if err != nil {
		ent.Reason = err.Error()
		return ent, true
	}
	var terr error
	func() {
		defer t.unguard(guard(), &terr)
		if terr = t.check(); terr != nil {
			return
		}
		var reclaimed int
		if reclaimed, terr = t.reclaimDead(); terr != nil {
			return
		}
		if reclaimed == 0 && youngSegment(name) {
			// Its creator published it a moment ago and is claiming its
			// first endpoint slot: removing it now would send the creator
			// round again (and many processes starting at once, each
			// cleaning at Open, could keep it from ever settling).
			ent.Reason = "new, its first endpoint is being created"
			return
		}
		before := topicState(t.state.Load())
		t.removeIfUnused()
		if before == topicLive && topicState(t.state.Load()) == topicRemoved {
			ent.Removed, ent.Reason = true, "every endpoint belonged to a dead process"
		} else {
			ent.Reason = "in use by live endpoints"
		}
	}()
	if errors.Is(terr, ErrCorrupt) {
		seg.Close()
		return d.removeDamaged(name, terr), true
	}
	if terr != nil {
		ent.Reason = terr.Error()
	}
	return ent, true
}

// cleanGrace is how long a topic segment without endpoints is left alone by
// Clean unless a dead process's endpoint was just reclaimed from it.
const cleanGrace = 10 * time.Second

// youngSegment reports whether segment name was created (or last grew)
// within cleanGrace.
func youngSegment(name string) bool {
	st, err := os.Stat(filepath.Join(shm.Dir, name))
	return err == nil && time.Since(st.ModTime()) < cleanGrace
}

// removeDamaged removes the damaged segment name (refused with cause) when
// no other process maps it.
func (d *Domain) removeDamaged(name string, cause error) CleanEntry {
	ent := CleanEntry{Name: name, Reason: cause.Error()}
	if err := removeUnused(d.cfg, name, cause); err != nil {
		ent.Reason = err.Error()
		return ent
	}
	ent.Removed = true
	return ent
}

// removeUnused unlinks the unusable segment name (refused with cause) if
// no process other than this one maps it, and returns an error naming its
// users otherwise. Whatever its contents say, the file's mappings in /proc
// tell who still uses it.
func removeUnused(cfg Config, name string, cause error) error {
	dev, ino, _, err := shm.Inspect(name, cfg.access())
	if err != nil {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	if users := shm.Users(dev, ino); len(users) > 0 {
		var who []string
		for _, p := range users {
			who = append(who, fmt.Sprintf("%d (%s)", p, shm.Comm(p)))
		}
		return fmt.Errorf("%w; in use by pid %s: remove it once they are gone", cause, strings.Join(who, ", "))
	}
	if err := shm.RemoveIf(name, dev, ino); err != nil {
		return fmt.Errorf("%w (removing it: %v)", cause, err)
	}
	if lg := cfg.Logger; lg != nil {
		lg.Warn("removed an unusable shared-memory segment nobody used", "segment", name, "cause", cause.Error())
	}
	return nil
}

// liveEndpoints reports, without the lock, whether a live process owns an
// endpoint slot.
func (t *Topic) liveEndpoints() bool {
	for s := uint32(0); s < t.slotCount(); s++ {
		so := t.slotOff(s)
		if slotState(t.u32(so+eState).Load()) != slotFree &&
			shm.Alive(shm.Owner{Pid: t.u32(so + ePid).Load(), Start: t.u64(so + eStart).Load()}) {
			return true
		}
	}
	return false
}

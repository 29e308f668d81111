package main

/*
#include "rmw_impl.h"
#include "sig.h"
*/
import "C"

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ---- endpoint status and rmw events --------------------------------------------

// statusEndpoint is what publishers and subscriptions share for events.
type statusEndpoint interface {
	TakeStatus() zerocopy.Status
	StatusCondition() *zerocopy.StatusCondition
}

const nEvents = int(C.RMW_EVENT_INVALID)

// status keeps an endpoint's event counters for rmw: the engine's
// TakeStatus resets every change counter at once, while rmw takes each
// event type separately, so the changes are accumulated here per type and
// cleared only by take_event of that type.
type status struct {
	ep statusEndpoint
	d  *zerocopy.Domain // the endpoint's: its graph word moves with every endpoint change

	mu   sync.Mutex
	last zerocopy.Status
	pend [nEvents][2]int // accumulated changes per event type
	// events counts the changes of each type since creation (a poll that
	// finds two new matches counts two); announced is how many of them the
	// type's callback was told about.
	events, announced [nEvents]int
	cbs               [nEvents]*callback
}

func newStatus(ep statusEndpoint, d *zerocopy.Domain) *status {
	return &status{ep: ep, d: d} // changes since creation (a match at creation) are events too
}

// poll folds the engine's changes into the per-type counters. Must hold mu.
func (st *status) poll() {
	s := st.ep.TakeStatus()
	st.last = s
	add := func(t C.rmw_event_type_t, a, b int) {
		st.pend[t][0] += a
		st.pend[t][1] += b
		st.events[t] += max(abs(a), abs(b))
	}
	add(C.RMW_EVENT_LIVELINESS_CHANGED, s.AliveChange, s.NotAliveChange)
	add(C.RMW_EVENT_REQUESTED_DEADLINE_MISSED, s.DeadlineChange, 0)
	add(C.RMW_EVENT_OFFERED_DEADLINE_MISSED, s.DeadlineChange, 0)
	add(C.RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE, s.IncompatChg, 0)
	add(C.RMW_EVENT_OFFERED_QOS_INCOMPATIBLE, s.IncompatChg, 0)
	add(C.RMW_EVENT_MESSAGE_LOST, s.LostChange, 0)
	add(C.RMW_EVENT_SUBSCRIPTION_MATCHED, s.MatchedTotalChg, s.MatchedChange)
	add(C.RMW_EVENT_PUBLICATION_MATCHED, s.MatchedTotalChg, s.MatchedChange)
	add(C.RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE, s.IncompatTypeChg, 0)
	add(C.RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE, s.IncompatTypeChg, 0)
}

// ready reports whether event type t has changes not taken yet.
func (st *status) ready(t int) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.poll()
	return st.pend[t] != [2]int{}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func (st *status) stop() {
	for t := range st.cbs {
		st.setCallback(t, nil)
	}
}

// eventSupported says which event types each kind of endpoint has.
func eventSupported(pub bool, t int) bool {
	switch C.rmw_event_type_t(t) {
	case C.RMW_EVENT_LIVELINESS_LOST, C.RMW_EVENT_OFFERED_DEADLINE_MISSED,
		C.RMW_EVENT_OFFERED_QOS_INCOMPATIBLE, C.RMW_EVENT_PUBLICATION_MATCHED,
		C.RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE:
		return pub
	case C.RMW_EVENT_LIVELINESS_CHANGED, C.RMW_EVENT_REQUESTED_DEADLINE_MISSED,
		C.RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE, C.RMW_EVENT_MESSAGE_LOST,
		C.RMW_EVENT_SUBSCRIPTION_MATCHED, C.RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE:
		return !pub
	}
	return false
}

//export rgapsgo_event_supported
func rgapsgo_event_supported(pub C.int, t C.int) C.int {
	if eventSupported(pub != 0, int(t)) {
		return 1
	}
	return 0
}

// statusOf finds the status of the endpoint an rmw_event_t's data names.
func statusOf(data unsafe.Pointer) *status {
	if data == nil {
		return nil
	}
	switch *(*C.uint32_t)(data) {
	case C.RGAPS_MAGIC_PUB:
		if p := get[*publisher]((*C.rgaps_pub)(data)._go); p != nil {
			return p.st
		}
	case C.RGAPS_MAGIC_SUB:
		if s := get[*subscription]((*C.rgaps_sub)(data)._go); s != nil {
			return s.st
		}
	}
	return nil
}

func clampInt32(v int) C.int32_t {
	if v > 1<<31-1 {
		return 1<<31 - 1
	}
	if v < -1<<31 {
		return -1 << 31
	}
	return C.int32_t(v)
}

//export rgapsgo_take_event
func rgapsgo_take_event(ev *C.rmw_event_t, info unsafe.Pointer, taken *C.bool) (rc C.int) {
	defer recoverTo(&rc)
	st := statusOf(ev.data)
	if st == nil {
		return fail(retError, "the event's endpoint was destroyed")
	}
	t := int(ev.event_type)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.poll()
	s, p := st.last, st.pend[t]
	switch C.rmw_event_type_t(t) {
	case C.RMW_EVENT_LIVELINESS_CHANGED:
		o := (*C.rmw_liveliness_changed_status_t)(info)
		o.alive_count, o.not_alive_count = clampInt32(s.AliveCount), clampInt32(s.NotAliveCount)
		o.alive_count_change, o.not_alive_count_change = clampInt32(p[0]), clampInt32(p[1])
	case C.RMW_EVENT_REQUESTED_DEADLINE_MISSED:
		o := (*C.rmw_requested_deadline_missed_status_t)(info)
		o.total_count, o.total_count_change = clampInt32(s.DeadlineMissed), clampInt32(p[0])
	case C.RMW_EVENT_OFFERED_DEADLINE_MISSED:
		o := (*C.rmw_offered_deadline_missed_status_t)(info)
		o.total_count, o.total_count_change = clampInt32(s.DeadlineMissed), clampInt32(p[0])
	case C.RMW_EVENT_REQUESTED_QOS_INCOMPATIBLE, C.RMW_EVENT_OFFERED_QOS_INCOMPATIBLE:
		o := (*C.rmw_qos_incompatible_event_status_t)(info)
		o.total_count, o.total_count_change = clampInt32(s.IncompatibleQoS), clampInt32(p[0])
		o.last_policy_kind = C.rmw_qos_policy_kind_t(s.LastIncompatiblePolicy)
	case C.RMW_EVENT_MESSAGE_LOST:
		o := (*C.rmw_message_lost_status_t)(info)
		o.total_count, o.total_count_change = C.size_t(s.Lost), C.size_t(max(p[0], 0))
	case C.RMW_EVENT_SUBSCRIPTION_MATCHED, C.RMW_EVENT_PUBLICATION_MATCHED:
		o := (*C.rmw_matched_status_t)(info)
		o.total_count, o.total_count_change = C.size_t(s.MatchedTotal), C.size_t(max(p[0], 0))
		o.current_count, o.current_count_change = C.size_t(s.Matched), clampInt32(p[1])
	case C.RMW_EVENT_SUBSCRIPTION_INCOMPATIBLE_TYPE, C.RMW_EVENT_PUBLISHER_INCOMPATIBLE_TYPE:
		// Endpoints of the topic with another type (they never match).
		o := (*C.rmw_incompatible_type_status_t)(info)
		o.total_count, o.total_count_change = clampInt32(s.IncompatibleType), clampInt32(p[0])
	case C.RMW_EVENT_LIVELINESS_LOST:
		// Automatic liveliness: a live process's publishers are never lost.
		o := (*C.rmw_liveliness_lost_status_t)(info)
		o.total_count, o.total_count_change = 0, 0
	default:
		*taken = false
		return fail(retUnsupported, "event type %d is not supported", t)
	}
	st.pend[t] = [2]int{}
	*taken = true
	return retOK
}

// ---- new-data and event callbacks ------------------------------------------------

// callback is a C function (and its user data) that a goroutine calls
// through the C trampoline rgaps_call_event_callback (Go cannot call C
// function pointers).
type callback struct {
	fn, user C.uintptr_t
	stop     chan struct{}
	done     chan struct{}
}

func (c *callback) call(n int) { C.rgaps_call_event_callback(c.fn, c.user, C.size_t(n)) }

func (c *callback) halt() {
	if c != nil {
		close(c.stop)
		<-c.done
	}
}

// pollEvery bounds how long a callback goroutine sleeps before it checks
// whether it was stopped.
const pollEvery = 100 * time.Millisecond

// setCallback installs (fn != nil) or removes the new-message callback. A
// goroutine calls it with 1 whenever a message is queued, then waits for a
// take before calling again: every message is announced by at least one
// call still pending when it is taken.
func (s *subscription) setCallback(cb *callback) {
	s.mu.Lock()
	old := s.cb
	s.cb = cb
	s.mu.Unlock()
	old.halt()
	if cb == nil {
		return
	}
	go func() {
		defer close(cb.done)
		for {
			select {
			case <-cb.stop:
				return
			default:
			}
			if !s.s.Ready() {
				err := s.s.Wait(pollEvery)
				if errors.Is(err, zerocopy.ErrClosed) {
					<-cb.stop
					return
				}
				continue
			}
			cb.call(1)
			select {
			case <-cb.stop:
				return
			case <-s.takeEvent:
			case <-time.After(pollEvery):
			}
		}
	}()
}

// setCallback installs or removes the callback of event type t. Changes not
// taken yet are announced at once; after that every change is announced, as
// DDS listeners do: two matches make two calls (or one call with 2 when
// they come together).
func (st *status) setCallback(t int, cb *callback) {
	st.mu.Lock()
	old := st.cbs[t]
	st.cbs[t] = cb
	st.poll()
	st.announced[t] = st.events[t] - max(abs(st.pend[t][0]), abs(st.pend[t][1]))
	st.mu.Unlock()
	old.halt()
	if cb == nil {
		return
	}
	go func() {
		defer close(cb.done)
		// An endpoint's status words move when someone refreshes its
		// matches; the graph word moves at once with any endpoint change,
		// so a new match is announced without waiting for the janitor.
		graph := st.d.NewGraphCondition()
		ready := []bool{false, false}
		for {
			cond := st.ep.StatusCondition()
			graph.Reset()
			st.mu.Lock()
			st.poll()
			n := st.events[t] - st.announced[t]
			st.announced[t] = st.events[t]
			st.mu.Unlock()
			if n > 0 {
				cb.call(n)
			}
			select {
			case <-cb.stop:
				return
			default:
			}
			if err := zerocopy.Wait([]zerocopy.Waitable{cond, graph}, ready, pollEvery, 0); errors.Is(err, zerocopy.ErrClosed) {
				<-cb.stop // the endpoint is going: wait to be stopped, do not spin
				return
			}
		}
	}()
}

//export rgapsgo_set_message_callback
func rgapsgo_set_message_callback(h C.uintptr_t, fn, user C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	s := get[*subscription](h)
	if s == nil {
		return fail(retError, "subscription destroyed")
	}
	var cb *callback
	if fn != 0 {
		cb = &callback{fn: fn, user: user, stop: make(chan struct{}), done: make(chan struct{})}
	}
	s.setCallback(cb)
	return retOK
}

//export rgapsgo_set_event_callback
func rgapsgo_set_event_callback(ev *C.rmw_event_t, fn, user C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	st := statusOf(ev.data)
	if st == nil {
		return fail(retError, "the event's endpoint was destroyed")
	}
	var cb *callback
	if fn != 0 {
		cb = &callback{fn: fn, user: user, stop: make(chan struct{}), done: make(chan struct{})}
	}
	st.setCallback(int(ev.event_type), cb)
	return retOK
}

// ---- rmw_wait ---------------------------------------------------------------------

// waitEntry is one non-NULL entry of rmw_wait's arrays.
type waitEntry struct {
	slot *unsafe.Pointer // the array element, set to NULL when not ready
	sub  *subscription
	gc   *C.rgaps_gc // a user guard condition: its words live in C (rmw_wait.c triggers it without Go)
	seq  uint32      // gc's trigger count when it was last found ready
	gr   *zerocopy.GraphCondition
	st   *status
	ev   int
}

func cword(p *C.uint32_t) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(p)) }

func (e *waitEntry) ready() bool {
	switch {
	case e.sub != nil:
		return e.sub.s.Ready()
	case e.gc != nil:
		e.seq = cword(&e.gc.seq).Load()
		return e.seq != cword(&e.gc.seen).Load()
	case e.gr != nil:
		return e.gr.Ready()
	case e.st != nil:
		return e.st.ready(e.ev)
	}
	return false
}

// waitable is what the engine sleeps on for the entry (nil: a guard
// condition, whose word is C's).
func (e *waitEntry) waitable() zerocopy.Waitable {
	switch {
	case e.sub != nil:
		return e.sub.s
	case e.gc != nil:
		return nil
	case e.gr != nil:
		return e.gr
	}
	return e.st.ep.StatusCondition()
}

func slots(arr *unsafe.Pointer, n C.size_t) []unsafe.Pointer {
	if arr == nil || n == 0 {
		return nil
	}
	return unsafe.Slice(arr, int(n))
}

// collect reads rmw_wait's arrays.
func collect(subs *C.rmw_subscriptions_t, gcs *C.rmw_guard_conditions_t, srvs *C.rmw_services_t, clis *C.rmw_clients_t, evs *C.rmw_events_t) ([]waitEntry, C.int) {
	var es []waitEntry
	subOf := func(h C.uintptr_t) *subscription { return get[*subscription](h) }
	if subs != nil {
		ss := slots(subs.subscribers, subs.subscriber_count)
		for i := range ss {
			if ss[i] == nil {
				continue
			}
			d := (*C.rgaps_sub)(ss[i])
			s := subOf(d._go)
			if d.magic != C.RGAPS_MAGIC_SUB || s == nil {
				return nil, fail(retInvalid, "rmw_wait: subscriptions[%d] is not a live rmw_rgaps subscription", i)
			}
			es = append(es, waitEntry{slot: &ss[i], sub: s})
		}
	}
	if gcs != nil {
		gs := slots(gcs.guard_conditions, gcs.guard_condition_count)
		for i := range gs {
			if gs[i] == nil {
				continue
			}
			d := (*C.rgaps_gc)(gs[i])
			e := waitEntry{slot: &gs[i]}
			if d.magic == C.RGAPS_MAGIC_GC && d.kind == C.RGAPS_GC_GRAPH {
				e.gr = get[*zerocopy.GraphCondition](d._go)
			} else if d.magic == C.RGAPS_MAGIC_GC && d.kind == C.RGAPS_GC_USER {
				e.gc = d
			}
			if e.gr == nil && e.gc == nil {
				return nil, fail(retInvalid, "rmw_wait: guard_conditions[%d] is not a live rmw_rgaps guard condition", i)
			}
			es = append(es, e)
		}
	}
	if srvs != nil {
		ss := slots(srvs.services, srvs.service_count)
		for i := range ss {
			if ss[i] == nil {
				continue
			}
			d := (*C.rgaps_svc)(ss[i])
			s := subOf(d.sub)
			if d.magic != C.RGAPS_MAGIC_SRV || s == nil {
				return nil, fail(retInvalid, "rmw_wait: services[%d] is not a live rmw_rgaps service", i)
			}
			es = append(es, waitEntry{slot: &ss[i], sub: s})
		}
	}
	if clis != nil {
		cs := slots(clis.clients, clis.client_count)
		for i := range cs {
			if cs[i] == nil {
				continue
			}
			d := (*C.rgaps_svc)(cs[i])
			s := subOf(d.sub)
			if d.magic != C.RGAPS_MAGIC_CLI || s == nil {
				return nil, fail(retInvalid, "rmw_wait: clients[%d] is not a live rmw_rgaps client", i)
			}
			es = append(es, waitEntry{slot: &cs[i], sub: s})
		}
	}
	if evs != nil {
		vs := slots(evs.events, evs.event_count)
		for i := range vs {
			if vs[i] == nil {
				continue
			}
			ev := (*C.rmw_event_t)(vs[i])
			st := statusOf(ev.data)
			if st == nil {
				return nil, fail(retInvalid, "rmw_wait: events[%d] is not a live rmw_rgaps event", i)
			}
			es = append(es, waitEntry{slot: &vs[i], st: st, ev: int(ev.event_type)})
		}
	}
	return es, retOK
}

// waiting is an rmw_wait between its calls into Go (sig.h: it sleeps in C,
// on the caller's stack, with the caller's signal mask). It lives in the
// registry while C sleeps.
type waiting struct {
	es       []waitEntry
	ready    []bool
	timed    bool
	deadline time.Time
	spinEnd  time.Time // RGAPS_BUSY_POLL: spin in Go until then before sleeping
	sleep    *zerocopy.Sleep
	items    []zerocopy.Waitable
	scratch  []bool
	words    []zerocopy.WaitWord
}

// spinSlice bounds one spell of busy polling inside Go, where signals are
// blocked: between spells C takes the caller's mask back.
const spinSlice = time.Millisecond

// rgapsgo_wait_begin is rmw_wait after the C half checked the wait set. It
// returns RMW_RET_OK (entries not ready set to NULL, ready guard
// conditions lowered: a trigger wakes one wait), RMW_RET_TIMEOUT (none
// ready), an error, or RGAPS_WAIT_SLEEP: C sleeps as plan says, then calls
// rgapsgo_wait_next. The timeout is ns (negative: none).
//
//export rgapsgo_wait_begin
func rgapsgo_wait_begin(subs *C.rmw_subscriptions_t, gcs *C.rmw_guard_conditions_t, srvs *C.rmw_services_t, clis *C.rmw_clients_t, evs *C.rmw_events_t, timeoutNs C.int64_t, plan *C.rgaps_wait_plan) (rc C.int) {
	defer recoverTo(&rc)
	plan._go = 0
	es, rc := collect(subs, gcs, srvs, clis, evs)
	if rc != retOK {
		return rc
	}
	w := &waiting{es: es, ready: make([]bool, len(es))}
	now := time.Now()
	if timeoutNs >= 0 {
		w.timed, w.deadline = true, now.Add(time.Duration(timeoutNs))
	}
	if bp := busyPoll(); bp > 0 {
		w.spinEnd = now.Add(bp)
	}
	rc = w.step(plan)
	if rc == C.RGAPS_WAIT_SLEEP {
		plan._go = put(w)
	}
	return rc
}

// rgapsgo_wait_next goes on with the wait of plan after C slept.
//
//export rgapsgo_wait_next
func rgapsgo_wait_next(plan *C.rgaps_wait_plan) (rc C.int) {
	h := plan._go
	w := get[*waiting](h)
	defer func() {
		if rc != C.RGAPS_WAIT_SLEEP {
			drop(h)
			if w != nil && w.sleep != nil {
				w.sleep.Done()
			}
		}
	}()
	defer recoverTo(&rc)
	if w == nil {
		return fail(retError, "rmw_wait: lost its state")
	}
	if w.sleep != nil {
		w.sleep.Done()
		w.sleep = nil
	}
	return w.step(plan)
}

// step checks the entries and finishes the wait, or plans C's next sleep.
func (w *waiting) step(plan *C.rgaps_wait_plan) C.int {
	for {
		// Words are read and conditions of events made before readiness
		// is checked, so a change after the check ends the sleep.
		w.items, w.words = w.items[:0], w.words[:0]
		for i := range w.es {
			e := &w.es[i]
			if e.gc != nil {
				w.words = append(w.words, zerocopy.WaitWord{Word: cword(&e.gc.seq), Val: cword(&e.gc.seq).Load()})
			} else {
				w.items = append(w.items, e.waitable())
			}
		}
		any := false
		for i := range w.es {
			w.ready[i] = w.es[i].ready()
			any = any || w.ready[i]
		}
		if any {
			return w.finish()
		}
		left := time.Duration(-1)
		if w.timed {
			if left = time.Until(w.deadline); left <= 0 {
				return w.finish()
			}
		}
		if time.Now().Before(w.spinEnd) {
			w.spin()
			plan.n, plan.ns = 0, 0 // back to C for the caller's mask, then here again
			return C.RGAPS_WAIT_SLEEP
		}
		w.scratch = append(w.scratch[:0], make([]bool, len(w.items))...)
		s, words, err := zerocopy.PrepareSleep(w.items, w.scratch, w.words)
		if err != nil {
			return report("rmw_wait", err)
		}
		if s == nil {
			continue // an item became ready: look again
		}
		w.sleep, w.words = s, words
		if len(words) > C.RGAPS_WAIT_WORDS {
			// More words than one futex_waitv takes: sleep briefly on the
			// first, then look at all again.
			words = words[:1]
			if left < 0 || left > 2*time.Millisecond {
				left = 2 * time.Millisecond
			}
		}
		plan.n = C.uint32_t(len(words))
		plan.ns = C.int64_t(left)
		if len(words) == 0 && left < 0 {
			plan.ns = -1
		}
		for i, ww := range words {
			plan.words[i] = C.rgaps_waitv{val: C.uint64_t(ww.Val), uaddr: C.uint64_t(uintptr(unsafe.Pointer(ww.Word))), flags: 2 /* FUTEX2_SIZE_U32 */}
		}
		return C.RGAPS_WAIT_SLEEP
	}
}

// spin polls the entries for at most spinSlice or until spinEnd.
func (w *waiting) spin() {
	end := time.Now().Add(spinSlice)
	if w.spinEnd.Before(end) {
		end = w.spinEnd
	}
	if w.timed && w.deadline.Before(end) {
		end = w.deadline
	}
	for i := 0; ; i++ {
		for j := range w.es {
			if w.es[j].ready() {
				return
			}
		}
		if i&15 == 15 {
			if !time.Now().Before(end) {
				return
			}
			runtime.Gosched()
		}
	}
}

// finish reports readiness in the arrays and lowers the guard conditions
// found ready.
func (w *waiting) finish() C.int {
	any := false
	for i := range w.es {
		e := &w.es[i]
		if !w.ready[i] {
			*e.slot = nil
			continue
		}
		any = true
		if e.gc != nil {
			cword(&e.gc.seen).Store(e.seq) // a trigger since the check stays pending
		}
		if e.gr != nil {
			e.gr.Reset()
		}
	}
	if !any {
		return retTimeout
	}
	return retOK
}

var busyPollOnce struct {
	sync.Once
	d time.Duration
}

// busyPoll is RGAPS_BUSY_POLL, as the engine reads it.
func busyPoll() time.Duration {
	busyPollOnce.Do(func() {
		cfg := zerocopy.Config{}
		if d, err := time.ParseDuration(os.Getenv("RGAPS_BUSY_POLL")); err == nil && d > 0 {
			cfg.BusyPoll = d
		}
		busyPollOnce.d = cfg.BusyPoll
	})
	return busyPollOnce.d
}

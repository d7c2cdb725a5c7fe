package aio

import (
	"runtime"
	"sync/atomic"
	"time"
	"weak"
)

// record is the part of a tracked handle that must outlive it: its cleanups,
// and the weak pointer through which Stop finds it. It never points back at
// the handle strongly, so the loop's list of records keeps no handle alive: a
// handle dropped by everyone (a promise nobody will resolve) is collected.
// If it had cleanups, runtime.AddCleanup then runs them on the loop at once;
// if not, the next sweep of the list (or Stop) finds its weak pointer dead and
// counts it as abandoned.
type record struct {
	loop     *Loop
	cleanups []func()           // owned by the loop; run LIFO
	weak     weak.Pointer[core] // the handle, while it lives
	claimed  atomic.Bool        // the cleanups were taken: by finish, Stop, a sweep or the collector
	gc       runtime.Cleanup    // the collector's hook, set with the first cleanup
	hasGC    bool               // gc is set; owned by the loop
	armed    bool               // weak is set and the record listed (see track); owned by the loop
	done     *chan struct{}     // the handle's Done channel, if one was made; closed on abandonment

	// The loop's list of records, intrusive so that tracking and untracking
	// cost two pointer writes and no hashing. Owned by the loop.
	prev, next *record
	listed     bool
}

// recordList is a loop's doubly linked list of records. Owned by the loop.
type recordList struct {
	head  *record
	n     int // records listed
	swept int // n after the last sweep: the next one comes when n doubles
}

// record returns c's record, creating it unarmed (holding cleanups only:
// see addCleanup) on first use. On the loop.
func (c *core) record() *record {
	x := c.rareFields()
	if x.rec == nil {
		x.rec = &record{loop: c.loop}
	}
	return x.rec
}

// track returns c's record, armed: its weak pointer made, the record listed
// for Stop, and the collector's hook registered if it holds cleanups. On
// the loop.
func (c *core) track() *record {
	c.loop.checkOnLoop()
	r := c.record()
	if r.armed {
		return r
	}
	r.armed = true
	r.weak = weak.Make(c)
	c.loop.listRecord(r)
	if len(r.cleanups) > 0 {
		r.watchCollection(c)
	}
	return r
}

// armRecord arms c's record if it has one unarmed (see addCleanup): what
// held c strongly (its armed timer) holds it no longer, and c may still
// need Stop, or the collector, to run its cleanups. On the loop.
func (c *core) armRecord() {
	if x := c.rare; x != nil && x.rec != nil && !x.rec.armed {
		c.track()
	}
}

// armIfCut arms r, the unarmed record of c, if c's terminal transition
// was cut short before it took the cleanups (see finishRest). On the loop.
func (r *record) armIfCut(c *core) {
	if !r.claimed.Load() {
		c.track()
	}
}

// timerHeld is a producer whose handle its armed timer holds strongly: the
// loop's timer heap keeps it from being collected, and Stop finds it there
// (cancelPending). It must arm its handle's record whenever the timer lets
// go of the handle before it ends: armRecord first thing when it is
// cancelled (a runtime.Goexit in an OnCancel callback may cut its terminal
// transition short, and teardown then needs to find it listed), and
// armUnlessEnded, deferred, when its timer fires or it stops the timer
// itself. Delay, Every, Within and AllSettledWithin are.
type timerHeld interface{ timerHolds() bool }

// armUnlessEnded arms c's record unless c ended (its finish may still be
// queued) or something holds it still (Every's timer armed again for the
// next run, a connection's scope). On the loop.
func (c *core) armUnlessEnded() {
	if pendingProducer(c) && !c.heldStrongly() {
		c.armRecord()
	}
}

// heldStrongly reports whether c's loop holds c until it ends: through an
// armed timer (timerHeld), or as a child of an open connection's scope
// (Scope.held). Its cleanups then need no weak tracking. On the loop.
func (c *core) heldStrongly() bool { return c.scopeHeld || c.heldByTimer() }

// heldByTimer reports whether c is held by an armed timer of its loop (see
// timerHeld). On the loop.
func (c *core) heldByTimer() bool {
	th, ok := c.prod.(timerHeld)
	return ok && th.timerHolds()
}

// watchCollection registers the collector's hook that runs the cleanups of a
// handle collected without finishing. Only handles with cleanups need it: it
// costs a runtime special per handle. On the loop.
func (r *record) watchCollection(c *core) {
	if !r.hasGC {
		r.hasGC = true
		r.gc = runtime.AddCleanup(c, (*record).collected, r)
	}
}

// listRecord puts r at the head of the loop's list, sweeping the list for
// collected handles whenever it has doubled since the last sweep (amortised
// constant time per record). On the loop.
func (l *Loop) listRecord(r *record) {
	rl := &l.records
	r.next = rl.head
	if rl.head != nil {
		rl.head.prev = r
	}
	rl.head, r.listed = r, true
	rl.n++
	if rl.n >= 2*rl.swept+1024 {
		l.sweepRecords()
	}
}

// unlistRecord takes r off the loop's list, if it is on it. On the loop.
func (l *Loop) unlistRecord(r *record) {
	if !r.listed {
		return
	}
	rl := &l.records
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		rl.head = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	}
	r.prev, r.next, r.listed = nil, nil, false
	rl.n--
}

// sweepRecords abandons the records whose handle was collected. On the loop.
func (l *Loop) sweepRecords() {
	for r := l.records.head; r != nil; {
		next := r.next
		if r.weak.Value() == nil {
			r.abandon()
		}
		r = next
	}
	l.records.swept = l.records.n
}

// finish runs the cleanups at the handle's terminal transition. On the loop.
func (r *record) finish() {
	if r.hasGC {
		r.gc.Stop()
	}
	r.loop.unlistRecord(r)
	if r.claimed.CompareAndSwap(false, true) {
		r.run()
	}
}

// run calls the cleanups last registered first, each once, and drops them.
func (r *record) run() {
	fns := r.cleanups
	r.cleanups = nil
	for i := len(fns) - 1; i >= 0; i-- {
		r.loop.call(fns[i])
	}
}

// collected runs on a runtime goroutine after the handle was garbage
// collected without finishing: its cleanups still run, on its loop.
func (r *record) collected() {
	r.loop.runLater(r.abandon)
}

// abandon ends the record of a handle collected without finishing: it counts
// it and runs its cleanups. On the loop.
func (r *record) abandon() {
	r.loop.unlistRecord(r)
	if r.claimed.CompareAndSwap(false, true) {
		r.loop.abandoned.Add(1)
		r.loop.handles.Add(-1)
		r.run()
		if r.done != nil {
			close(*r.done)
			r.done = nil
		}
	}
}

// trackYoung ages the producers created recently. Most of them finish within
// an iteration or two (a promise resolved in its own callback, a Do body's
// await answered by the next posted callback, a Work result): those are
// simply forgotten. The ones still pending after two iteration boundaries are
// tracked weakly. Tracking lazily keeps weak pointers off the fast path;
// holding the young ones strongly for two iterations only delays the
// collection of an abandoned one by as much. An idle loop must not hold them
// for as long as it sleeps: while any are held, the poll phase wakes after
// youngAging at the latest (pollTimeout), so the boundaries come within
// about that, work or no work.
//
// Its time goes to Stats.Time.Other when it tracks a producer or ages more
// than youngCompact of them; otherwise (a few finished producers let go, as
// in most iterations of a loop that makes some) it is a few pointer moves,
// less than the clock reading that would set them apart, and it counts with
// the phase before it. On the loop.
func (l *Loop) trackYoung() {
	// Keep youngToTrack in step with what this reads and resets.
	if len(l.young) > youngCompact {
		l.enter(phaseBook)
	}
	for i, c := range l.older {
		l.older[i] = nil
		if pendingProducer(c) {
			l.enter(phaseBook)
			c.track()
		}
	}
	l.older = l.older[:0]
	for i, c := range l.young {
		l.young[i] = nil
		if pendingProducer(c) {
			l.older = append(l.older, c)
		}
	}
	l.young = l.young[:0]
	l.youngCap = youngCompact
}

// youngToTrack reports whether trackYoung has anything to do: producers
// young or older to look at, or a compaction threshold to reset. The
// iteration tests it inline rather than call trackYoung for nothing. On
// the loop.
func (l *Loop) youngToTrack() bool {
	return len(l.young) > 0 || len(l.older) > 0 || l.youngCap != youngCompact
}

// youngAging bounds how long an idle loop sleeps while it holds young
// producers strongly: an abandoned one becomes collectable after about
// this long (trackYoung runs just before the poll, so one wake ages them).
// A loop with work passes its iteration boundaries sooner and never waits
// for it; a loop whose young producers all finish sleeps as long as it
// likes. It is long beside a request's round trip: a loop that pauses
// briefly between building handles and using them (a million promises
// built, then settled by the next post) must not pay for tracking them all
// weakly in the pause; the safety net only needs to come eventually.
const youngAging = time.Second

// pendingProducer reports whether c may still need Stop to cancel it. A
// terminal handle has its finish job queued already.
func pendingProducer(c *core) bool {
	return !c.finished && c.state.Load() < uint32(Completed)
}

// adoptProducer queues a producer handle for lazy tracking. On the loop.
func (l *Loop) adoptProducer(c *core) {
	l.checkOnLoop()
	if l == detached {
		// No Stop to track it for: its inputs' loops cancel them when
		// they stop, and that reaches it. (detached is dead from the
		// start, which the check below would take for a Stop.)
		return
	}
	if l.state.Load() == stateDead {
		// Raced with Stop (created before it, started after its last
		// cancelling pass): nothing would ever cancel it.
		c.cancel()
		return
	}
	if len(l.young) >= l.youngCap {
		// One callback creating producers without end (a long chain of
		// promises, each resolved by the last) must not keep every one of
		// them alive until the iteration ends: drop the finished ones.
		l.young = compactPending(l.young)
		l.youngCap = max(youngCompact, 2*len(l.young))
	}
	l.young = append(l.young, c)
}

// adoptSelf queues c for lazy tracking as a producer from any goroutine,
// at once on its loop, else posted; either way a handle already finished
// by then is skipped.
func (c *core) adoptSelf() { runInlineCall(c.loop, (*Loop).adoptPending, c.loop, c) }

// adoptPending adopts c as a producer unless it finished before the
// adoption reached the loop. On the loop.
func (l *Loop) adoptPending(c *core) {
	if !c.finished {
		l.adoptProducer(c)
	}
}

// youngCompact is the length at which the young list is first compacted
// within an iteration.
const youngCompact = 256

// compactPending keeps the producers still pending, in place.
func compactPending(cs []*core) []*core {
	keep := cs[:0]
	for _, c := range cs {
		if pendingProducer(c) {
			keep = append(keep, c)
		}
	}
	clear(cs[len(keep):])
	return keep
}

// cancelPending cancels every handle the loop knows to be pending: armed
// timers, young and tracked producers. Records whose handle was collected are
// abandoned. It reports whether it found anything to act on, and whether it
// found handles held (cancelled, their transition waiting for something
// they hold for, which no pass ends). On the loop, at Stop.
func (l *Loop) cancelPending() (found, held bool) {
	for _, t := range l.timers.all() {
		if _, ownsFD := t.owner.(ioHandler); ownsFD {
			// A connection's or listener's timer: closeFDs closes its
			// owner after the last pass, with every other socket, so that
			// cancel callbacks of this pass still find sockets open
			// whether or not they have a timeout.
			continue
		}
		found = true
		t.owner.base().cancel()
	}
	for _, h := range l.fds {
		// The children of an open connection's scope: the scope holds
		// them untracked (Scope.held), and some wait for nothing a pass
		// reaches (the connection itself). Cancelled here, their cancel
		// callbacks and cleanups find the sockets open, as those of
		// tracked handles do; closeFDs closes the connections after.
		if c, ok := h.(*Conn); ok {
			if s := c.scope.Load(); s.busy() && s.cancelChildren() {
				found = true
			}
		}
	}
	for _, gen := range [][]*core{l.young, l.older} {
		for _, c := range gen {
			found = true
			c.cancel()
		}
	}
	l.young, l.older = l.young[:0], l.older[:0]
	for r := l.records.head; r != nil; {
		next := r.next
		switch c := r.weak.Value(); {
		case c == nil:
			found = true
			r.abandon()
		case !c.finished:
			// finish takes the record off the list; a handle terminal but
			// not yet finished has its finish job queued already.
			found = true
			c.cancel()
		case c.rare != nil && c.rare.deferred:
			// Held (a Bracket's use, a scope's children): the rest of its
			// transition comes when they end.
			held = true
		default:
			// Finished but still listed: its terminal transition was cut
			// off (a callback's runtime.Goexit; see goexited). Nothing will
			// take it off the list, and counting it as found would make
			// teardown pass for ever: take it off and run what cleanups it
			// has left.
			r.finish()
		}
		r = next
	}
	if l.heldBare > 0 {
		held = true // held, with no record: see Loop.heldBare
	}
	return found, held
}

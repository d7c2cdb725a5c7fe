package aio

import (
	"runtime"
	"sync/atomic"
	"weak"
)

// record is the part of a tracked handle that must outlive it: its cleanups,
// and the weak pointer through which Stop finds it. It never points back at
// the handle strongly, so the loop's table of records keeps no handle alive;
// a handle dropped by everyone (a promise nobody will resolve) is collected,
// and runtime.AddCleanup then runs its record's cleanups on the loop.
type record struct {
	loop     *Loop
	cleanups []func()           // owned by the loop; run LIFO
	weak     weak.Pointer[core] // the handle, while it lives
	claimed  atomic.Bool        // the cleanups were taken: by finish, Stop or the collector
	gc       runtime.Cleanup    // the collector's hook, stopped when finish runs
}

// track returns c's record, creating it and entering it in the loop's table on
// first use. On the loop.
func (c *core) track() *record {
	c.loop.checkOnLoop()
	x := c.extra()
	if x.rec != nil {
		return x.rec
	}
	l := c.loop
	r := &record{loop: l, weak: weak.Make(c)}
	x.rec = r
	l.records[r] = struct{}{}
	r.gc = runtime.AddCleanup(c, (*record).collected, r)
	return r
}

// finish runs the cleanups at the handle's terminal transition. On the loop.
func (r *record) finish(c *core) {
	r.gc.Stop()
	delete(r.loop.records, r)
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
	r.loop.exec(r.abandon)
}

// abandon runs an abandoned handle's cleanups. On the loop.
func (r *record) abandon() {
	delete(r.loop.records, r)
	if r.claimed.CompareAndSwap(false, true) {
		r.loop.abandoned.Add(1)
		r.loop.handles.Add(-1)
		r.run()
	}
}

// trackYoung ages the producers created recently. Most of them finish within
// an iteration or two (a promise resolved in its own callback, a Do body's
// await answered by the next posted callback, a Work result): those are
// simply forgotten. The ones still pending after two iteration boundaries are
// tracked weakly. Tracking lazily keeps weak pointers and runtime cleanups
// off the fast path; holding the young ones strongly for two iterations only
// delays the collection of an abandoned one by as much. On the loop.
func (l *Loop) trackYoung() {
	for i, c := range l.older {
		l.older[i] = nil
		if pendingProducer(c) {
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
}

// pendingProducer reports whether c may still need Stop to cancel it. A
// terminal handle has its finish job queued already.
func pendingProducer(c *core) bool {
	return !c.finished && c.state.Load() < uint32(Completed)
}

// adoptProducer queues a producer handle for lazy tracking. On the loop.
func (l *Loop) adoptProducer(c *core) {
	l.checkOnLoop()
	if len(l.young) >= youngSweep {
		// One callback creating producers without end (a long chain of
		// promises, each resolved by the last) must not grow this list
		// without bound: age it now rather than at the iteration's end.
		l.trackYoung()
	}
	l.young = append(l.young, c)
}

// youngSweep is the length at which the young list is swept early.
const youngSweep = 256

// cancelPending cancels every handle the loop knows to be pending: armed
// timers, young and tracked producers. Records whose handle was collected run
// their cleanups. It reports whether it found anything. On the loop, at Stop.
func (l *Loop) cancelPending() bool {
	found := false
	for _, t := range l.timers.all() {
		found = true
		t.owner.base().cancel()
	}
	for _, gen := range [][]*core{l.young, l.older} {
		for _, c := range gen {
			found = true
			c.cancel()
		}
	}
	l.young, l.older = l.young[:0], l.older[:0]
	for r := range l.records {
		found = true
		if c := r.weak.Value(); c != nil && !c.finished {
			c.cancel()
			// finish deletes the record; a handle terminal but not yet
			// finished is in the job queue already.
			continue
		}
		if c := r.weak.Value(); c == nil {
			r.abandon()
		}
	}
	return found
}

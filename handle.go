package aio

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
)

// core is the untyped part of every handle: the status word, the graph links
// and the terminal transition. Handle[T] adds the value. Continuation nodes
// embed a Handle, so a Then link is one allocation.
type core struct {
	state atomic.Uint32 // Status, or a transient stCompleting/stFailing; any goroutine, CAS

	// Owned by the loop.
	interest  int32 // dependents that registered and have not withdrawn
	finished  bool  // the terminal transition ran
	stopped   bool  // prod.stop ran
	crossLoop bool  // adopted as a producer because an input lives on another loop
	scopeHeld bool  // a child of a scope its loop holds until it ends (see Scope.held)
	// uncancellable: only its producer ends it (Loop.Stop's handle, which
	// teardown completes: a stop cannot be taken back). Immutable.
	uncancellable bool
	// waits: rare.waitLoop is set (see there). Immutable, set before the
	// handle is shared; any goroutine reads it.
	waits bool
	// lingers: rare.over is set: a Work handle, which may end cancelled
	// while its fn runs on (see fnOver). Immutable like waits.
	lingers bool

	loop *Loop                         // immutable; detached for handles without a loop
	done atomic.Pointer[chan struct{}] // lazily made Done channel; closedDone once finished; any goroutine

	// Owned by the loop.
	dep0 dependent // first dependent, inline: most handles have one
	prod producer  // what to stop when cancelled; nil if nothing
	rare *coreRare // what few handles need, allocated on first use
}

// coreRare holds the fields most handles never use, allocated on first use,
// so that the common handle (and a Then link, one allocation) stays small.
// Owned by the loop.
type coreRare struct {
	deps     []dependent // dependents after the first
	onCancel []func()
	rec      *record // cleanups and weak tracking
	holds    int     // producers delaying the terminal transition (see hold)
	deferred bool    // finish stopped at the producer, waiting for holds
	bareHeld bool    // deferred without a record: counted in Loop.heldBare

	// What the handle's value holds that aio must release if every
	// dependent declines it (see releaseUnwanted): the connection a dial
	// completed with, or the input whose value a node passed on unchanged
	// (declining the value declines it there). Set on completion.
	relConn *Conn
	relFrom *core
	// kept: a dependent that withdrew still takes the value (Bracket's
	// acquire, see withdrawTaking), so it is never released.
	kept bool

	// waitLoop is the loop whose teardown completes this handle (Stop's
	// handle and the handles derived from it one input at a time, see
	// initAfter): waiting on it from that loop would deadlock. Set with
	// core.waits before the handle is shared, and then immutable (rare is
	// never replaced once made): any goroutine reads it, after waits.
	// Here rather than in core, which it would make a size class larger
	// (a promise 112 bytes instead of 96) for the few handles that have it.
	waitLoop *Loop

	// over tells when a Work job's fn is over (see fnOver). Set with
	// core.lingers before the handle is shared, and then immutable, as
	// waitLoop is: any goroutine reads it, after lingers.
	over *fnOver
}

// rareFields returns c's coreRare, allocating it on first use. On the loop
// (or before the handle is shared).
func (c *core) rareFields() *coreRare {
	if c.rare == nil {
		c.rare = &coreRare{}
	}
	return c.rare
}

// dependent is a handle waiting on another: its inputDone runs on the input's
// loop, once, after the input reached a terminal state (Then runs its function
// there and settles itself).
type dependent interface{ inputDone() }

// disarmer is a producer driven by a timer of its own, which an on-loop Cancel
// disarms at once.
type disarmer interface{ disarm() }

// producer is whatever makes a handle finish: a timer, a Work job, the inputs
// of a combinator. stop withdraws it when the handle is cancelled. On the loop.
type producer interface{ stop() }

// Handle is a promise pinned to a loop: a value of type T that arrives later,
// or an error, or a cancellation. Every method may be called from any
// goroutine; loop-only work is posted to the handle's loop, and every callback
// (continuations, OnCancel, OnCleanup) runs there.
//
// The status word is the linearization point: completion, failure and
// cancellation race by compare-and-swap and the winner decides the outcome.
// The loop then runs, in order: OnCancel callbacks (if cancelled), the
// continuations of dependents on the same loop, the resource cleanups last
// registered first, and finally closes Done.
type Handle[T any] struct {
	core
	val T     // written once by the settling winner before it publishes Completed
	err error // written once by the settling winner before it publishes Failed
}

var closedDone = func() *chan struct{} {
	c := make(chan struct{})
	close(c)
	return &c
}()

func (c *core) init(l *Loop) {
	c.loop = l
	l.handles.Add(1)
}

// initAfter is init for a node whose one input is in (Then, Catch,
// ThenAsync, Finally): on in's loop, and, since it cannot complete before in
// does, completed by the same teardown as in if in is Stop's handle or
// derived from it, so it takes in's waitLoop (see Wait). Sinks of several
// inputs do not (see link.init).
func (c *core) initAfter(in *core) {
	c.init(in.loop)
	if in.waits {
		c.setWaitLoop(in.rare.waitLoop)
	}
}

// setWaitLoop makes l the loop whose teardown completes c (see
// coreRare.waitLoop). Before c is shared.
func (c *core) setWaitLoop(l *Loop) {
	c.rareFields().waitLoop = l
	c.waits = true
}

// waitLoop returns the loop whose teardown completes c, or nil (see
// coreRare.waitLoop). Any goroutine.
func (c *core) waitLoop() *Loop {
	if !c.waits {
		return nil
	}
	return c.rare.waitLoop
}

// initFinished makes c a handle that is born terminal (Pure, Fail, a producer
// refused by a stopped loop): nothing will ever run on it except late
// registrations.
func (c *core) initFinished(l *Loop, st uint32) {
	c.loop = l
	c.state.Store(st)
	c.finished = true
	c.done.Store(closedDone)
}

// Status returns the handle's status: one atomic load.
func (h *Handle[T]) Status() Status { return statusOf(h.state.Load()) }

func statusOf(s uint32) Status {
	switch s {
	case stCompleting:
		return Completed
	case stFailing:
		return Failed
	}
	return Status(s)
}

// Cancelled reports whether the handle was cancelled: one atomic load.
func (h *Handle[T]) Cancelled() bool { return h.state.Load() == uint32(Cancelled) }

// Loop returns the loop the handle is pinned to, or nil for a handle with no
// loop (Loop.Stop's, All of nothing, Pure(nil, …)).
func (h *Handle[T]) Loop() *Loop {
	if h.loop == detached {
		return nil
	}
	return h.loop
}

// Cancel cancels the handle if it is not terminal yet, from any goroutine, and
// reports whether this call did it. A cancelled handle never runs success or
// error continuations; its OnCancel callbacks and cleanups run on its loop,
// and cancellation flows down to its producer: a timer is disarmed, Work's
// context is cancelled, and a combinator withdraws its interest in its inputs.
func (h *Handle[T]) Cancel() bool { return h.cancel() }

func (c *core) cancel() bool {
	if c.uncancellable {
		return false
	}
	for {
		s := c.state.Load()
		if s >= uint32(Completed) {
			return false
		}
		if c.state.CompareAndSwap(s, uint32(Cancelled)) {
			break
		}
	}
	c.schedFinish(true)
	return true
}

// settle is the completing or failing side of the terminal race.
func (h *Handle[T]) settle(v T, err error) bool {
	to, final := stCompleting, uint32(Completed)
	if err != nil {
		to, final = stFailing, uint32(Failed)
	}
	for {
		s := h.state.Load()
		if s >= uint32(Completed) {
			return false
		}
		if h.state.CompareAndSwap(s, to) {
			break
		}
	}
	if err != nil {
		h.err = err
	} else {
		h.val = v
	}
	h.state.Store(final)
	h.schedFinish(false)
	return true
}

// schedFinish queues the terminal transition on the handle's loop.
func (c *core) schedFinish(cancelled bool) {
	l := c.loop
	if l.OnLoop() {
		if cancelled { // not on the path of every settle: no type assertion there
			if d, ok := c.prod.(disarmer); ok {
				// Only the timer, at once (Stats.Timers drops in the same
				// callback). The rest of stopping, withdrawing from inputs
				// included, waits for finish: doing it here would recurse
				// along a chain of timed handles.
				d.disarm()
			}
		}
		l.jobs.push(job{c: c})
		return
	}
	l.runLater(c.finish)
}

func (c *core) stopProducer() {
	if !c.stopped && c.prod != nil {
		c.stopped = true
		c.prod.stop()
	}
}

// finish is the single terminal transition. On the loop; runs once.
func (c *core) finish() {
	c.loop.checkOnLoop()
	if c.finished {
		return
	}
	c.finished = true
	if c.state.Load() == uint32(Cancelled) {
		c.stopProducer()
	}
	if x := c.rare; x != nil && x.holds > 0 {
		// The producer must see something end before the rest (a Bracket
		// waits for its use to end to release, a scope for its children to
		// finish): resumed by unhold.
		x.deferred = true
		if x.rec == nil { // no record for teardown to see: counted instead
			x.bareHeld = true
			c.loop.heldBare++
		}
		return
	}
	c.finishRest()
}

// finishRest is the part of the terminal transition after the producer has
// stopped: OnCancel callbacks, dependents, cleanups, Done. On the loop.
func (c *core) finishRest() {
	l := c.loop
	l.checkOnLoop()
	x := c.rare
	if x != nil && x.rec != nil && !x.rec.armed {
		// Held strongly until now (see addCleanup), nothing lists it: a
		// runtime.Goexit in a callback below (an OnCancel, a continuation)
		// would cut the transition short of its cleanups, and teardown
		// then needs to find it listed.
		defer x.rec.armIfCut(c)
	}
	if x != nil && c.state.Load() == uint32(Cancelled) {
		for _, fn := range x.onCancel {
			l.call(fn)
		}
	}
	c.tellDependents()
	if x != nil {
		x.onCancel = nil
	}
	c.prod = nil
	if x != nil && x.rec != nil {
		x.rec.finish()
	}
	l.handles.Add(-1)
	if p := c.done.Swap(closedDone); p != nil && p != closedDone {
		close(*p)
	}
}

// tellDependents tells every dependent registered on c that c finished, in
// the order they registered, and forgets them. The lists are emptied before
// the first is told, so that one registering during the telling (c is
// finished by then) is kept for a job of its own (see addDep). On the loop.
func (c *core) tellDependents() {
	d0 := c.dep0
	c.dep0 = nil
	var ds []dependent
	if x := c.rare; x != nil {
		ds, x.deps = x.deps, nil
	}
	if d0 != nil {
		d0.inputDone()
	}
	for _, d := range ds {
		d.inputDone()
	}
}

// hold delays the rest of c's terminal transition, if it is cancelled, until
// unhold: the flag records that this holder holds. On the loop.
func (c *core) hold(flag *bool) {
	c.loop.checkOnLoop()
	if !*flag {
		*flag = true
		c.rareFields().holds++
	}
}

// unhold releases a hold and, with none left, queues the rest of a deferred
// terminal transition. On the loop.
//
// A job, not a call: unhold runs inside the notification of something that
// ended (a scope's last child, a Bracket's acquire or use), whose own end is
// not over yet. Finishing c there would run c's cleanups and close its Done
// before that child's cleanups (a scope's Done must wait for them), and
// recurse along a chain of such handles (a million nested scopes).
func (c *core) unhold(flag *bool) {
	c.loop.checkOnLoop()
	if !*flag {
		return
	}
	*flag = false
	x := c.rare
	if x.holds--; x.holds == 0 && x.deferred {
		x.deferred = false
		if x.bareHeld {
			x.bareHeld = false
			c.loop.heldBare--
		}
		c.loop.jobs.push(job{t: (*finishRestTask)(c)})
	}
}

// finishRestTask is a held terminal transition resumed as a job (unhold).
type finishRestTask core

func (f *finishRestTask) runTask(*Loop) { (*core)(f).finishRest() }

// addDep registers d to be told when c finishes. On c's loop. A dependent
// registered on a handle that already finished is told by a job, never inside
// the call that registers it. An interested dependent counts towards c's
// interest (see withdraw); a mere watcher (a scope tracking its children) does
// not.
func (c *core) addDep(d dependent, interested bool) {
	c.loop.checkOnLoop()
	if c.finished {
		// Told later by a job of c (tellDependents): one job for however
		// many register before it runs, and a job stays one pointer.
		if c.dep0 == nil && (c.rare == nil || len(c.rare.deps) == 0) {
			c.loop.jobs.push(job{c: c})
		}
	}
	if interested {
		// Counted even on a finished handle: a late dependent that
		// withdraws must not take back the interest of one that took the
		// value (see releaseUnwanted).
		c.interest++
	}
	if c.dep0 == nil {
		c.dep0 = d
	} else {
		x := c.rareFields()
		x.deps = append(x.deps, d)
	}
}

// register enters d as an interested dependent of c (addDep(d, true)) from
// any goroutine: at once on c's loop, else posted (see runInline).
func (c *core) register(d dependent) { runInlineCall(c.loop, (*core).addInterested, c, d) }

// watch enters d as a mere watcher of c (addDep(d, false)) from any
// goroutine: at once on c's loop, else posted (see runInline).
func (c *core) watch(d dependent) { runInlineCall(c.loop, (*core).addWatcher, c, d) }

func (c *core) addInterested(d dependent) { c.addDep(d, true) }

func (c *core) addWatcher(d dependent) { c.addDep(d, false) }

// unwatch takes back a watch registered with watch, if c has not told it
// yet, keeping the others in order (dep0 is empty only when deps is, which
// addDep relies on): a handle that lives long (a connection's Closed) must
// not collect the AfterFuncs of every context derived from it and cancelled
// since (see handleContext.AfterFunc). On c's loop.
func (c *core) unwatch(d dependent) {
	c.loop.checkOnLoop()
	x := c.rare
	if c.dep0 == d {
		c.dep0 = nil
		if x != nil && len(x.deps) > 0 {
			c.dep0 = x.deps[0]
			x.deps = slices.Delete(x.deps, 0, 1)
		}
		return
	}
	if x == nil {
		return
	}
	if i := slices.Index(x.deps, d); i >= 0 {
		x.deps = slices.Delete(x.deps, i, i+1)
	}
}

// withdraw takes back one dependent's interest in c; when none is left and c
// is still running, c is cancelled, and if c completed with a value aio must
// release, that value is released (see releaseUnwanted). On c's loop.
func (c *core) withdraw() {
	c.loop.checkOnLoop()
	c.interest--
	if c.interest <= 0 {
		c.cancel()
		c.releaseUnwanted()
	}
}

// dropIfUnwanted cancels c, or releases its value (see releaseUnwanted),
// unless a dependent has registered interest in it: a withdrawal by someone
// who never registered. Any goroutine.
func (c *core) dropIfUnwanted() {
	drop := func() {
		if c.interest <= 0 {
			c.cancel()
			c.releaseUnwanted()
		}
	}
	c.loop.runInline(drop)
}

// unregister takes back d's interest in c (see withdraw) from any
// goroutine: at once on c's loop, else posted (see runInline). It mirrors
// register(d); interest is a count, so d is not looked up.
func (c *core) unregister(d dependent) { runInlineCall(c.loop, (*core).withdrawFor, c, d) }

func (c *core) withdrawFor(dependent) { c.withdraw() }

// Done returns a channel closed once the handle is terminal and all its
// cleanups have run.
func (h *Handle[T]) Done() <-chan struct{} { return h.doneChan() }

// doneChan is Done, for any handle (Handle.Context's Done too).
func (c *core) doneChan() <-chan struct{} {
	p := c.done.Load()
	if p == nil {
		ch := make(chan struct{})
		if c.done.CompareAndSwap(nil, &ch) {
			c.keepDone(&ch)
			return ch
		}
		p = c.done.Load()
	}
	return *p
}

// keepDone gives the record of a pending handle its Done channel: a goroutine
// blocked on Done does not keep the handle alive, and if the handle is
// collected without finishing, abandoning its record closes the channel
// (after the cleanups), so the waiter is not stuck forever.
func (c *core) keepDone(ch *chan struct{}) {
	c.loop.runInline(func() {
		if c.finished {
			return
		}
		r := c.track()
		r.done = ch
		r.watchCollection(c)
	})
}

// Result returns the value and error of a terminal handle: (v, nil) when
// Completed, (zero, err) when Failed, (zero, ErrCancelled) when Cancelled, and
// (zero, ErrPending) when the handle is not terminal yet. After Done is closed
// it always returns the outcome.
func (h *Handle[T]) Result() (T, error) {
	for {
		switch s := h.state.Load(); s {
		case uint32(Completed):
			return h.val, nil
		case uint32(Failed):
			var zero T
			return zero, h.err
		case uint32(Cancelled):
			var zero T
			return zero, ErrCancelled
		case stCompleting, stFailing:
			// The winner is between its CAS and its publishing store: a few
			// instructions. Let it finish.
			runtime.Gosched()
		default:
			var zero T
			return zero, ErrPending
		}
	}
}

// Wait blocks until the handle is done and returns Result, or returns ctx's
// error if ctx ends first (a handle done by the time Wait sees ctx end
// gives its outcome instead). On the handle's own loop (and, for the handle of
// Loop.Stop and the Then, Catch, ThenAsync and Finally chains of it, on the
// loop being stopped) it cannot block (the loop would wait
// for itself): there it returns the outcome if the handle is already
// terminal, else ErrAwaitOnLoop at once. A nil ctx is an error wrapping
// ErrInvalidArgument, whatever the handle's state.
//
// Wait does not cancel the handle when ctx ends. For a handle whose value
// must be closed (a *Conn from Dial), a Wait that gives up leaves the
// value to nobody if the handle completes after all: either wait with a
// context that outlives the handle (DialContext's handle ends with its own
// ctx, so Wait(context.Background()) is enough), or after ctx's error call
// Cancel, and if it reports false (the handle ended first), take Result.
func (h *Handle[T]) Wait(ctx context.Context) (T, error) {
	if ctx == nil {
		var zero T
		return zero, errWaitNilContext
	}
	if h.loop.OnLoop() || h.waitLoop().OnLoop() {
		if statusOf(h.state.Load()).Terminal() {
			return h.Result()
		}
		var zero T
		return zero, ErrAwaitOnLoop
	}
	select {
	case <-h.Done():
		return h.Result()
	case <-ctx.Done():
		select {
		case <-h.Done(): // both ready: the outcome, not a lost value
			return h.Result()
		default:
		}
		var zero T
		return zero, ctx.Err()
	}
}

// errWaitNilContext is Wait's error for a nil context.
var errWaitNilContext = invalid("aio: Wait with a nil context")

// OnCancel registers fn to run on the handle's loop if and when the handle is
// cancelled, before its continuations and cleanups. On a handle that was
// already cancelled it runs soon after; on one that finished otherwise, never.
// It returns h.
func (h *Handle[T]) OnCancel(fn func()) *Handle[T] {
	if fn == nil {
		return h
	}
	c := &h.core
	c.loop.runInline(func() {
		if c.finished {
			if c.state.Load() == uint32(Cancelled) {
				c.loop.runLater(fn)
			}
			return
		}
		x := c.rareFields()
		x.onCancel = append(x.onCancel, fn)
	})
	return h
}

// OnCleanup registers a resource cleanup: fn runs once, on the handle's loop,
// at the terminal transition (completed, failed or cancelled alike), after the
// continuations, cleanups last registered first. On a handle that already
// finished it runs on the loop soon after. If the handle is garbage collected
// without ever reaching a terminal state, its cleanups still run, on its loop,
// and Stats.Abandoned counts it.
func (h *Handle[T]) OnCleanup(fn func()) {
	if fn == nil {
		return
	}
	runInlineCall(h.loop, (*core).addCleanup, &h.core, fn)
}

// addCleanup registers fn as a resource cleanup of c. On the loop.
func (c *core) addCleanup(fn func()) {
	c.loop.checkOnLoop()
	if c.finished {
		c.loop.runLater(fn)
		return
	}
	r := c.record()
	r.cleanups = append(r.cleanups, fn)
	switch {
	case r.armed:
		r.watchCollection(c)
	case !c.heldStrongly():
		c.track()
	}
	// Else c's armed timer holds it (a Delay, or a Within's deadline: a
	// request's reply, say), or an open connection's scope does (an HTTP
	// handler's reply): it cannot be abandoned, Stop cancels it through
	// the timer or through what it waits for, and a weak pointer and a
	// collector's hook (runtime specials, costly to add and remove) would
	// be made for nothing in the usual case, where c ends first. The
	// record is armed if the timer or the scope lets go first (see
	// timerHeld and Scope.held).
}

package aio

import (
	"context"
	"errors"
	"sync/atomic"
)

// ErrNotInBody is returned by Await (and yielded by Settling.Await, and the
// cause of the context Co.Context returns) called anywhere but in the body
// of the Do that co belongs to, while it runs.
var ErrNotInBody = errors.New("aio: Await outside its Do body")

// Co is the handle a Do body awaits through. It belongs to one body and is
// used only from it.
type Co struct {
	l     *Loop
	yield func(struct{}) bool // the coroutine's yield; body goroutine only
	g     atomic.Uintptr      // the body's goroutine from its start to its return (suspended too), else 0; read anywhere
	prev  uintptr             // the loop's owner before the body was resumed

	// Owned by the loop (the body runs as the loop while resumed).
	node interface{ resume() } // the Do handle, to resume it; immutable
	core *core                 // the Do handle's core; immutable

	cancelled bool         // the Do handle was cancelled: Await returns ErrCancelled
	waiting   pendingAwait // what the body is suspended on, to withdraw on cancel
	wake      bool         // the awaited handle ended (vs. resumed by cancellation)
	link      awaitLink    // the link of Await, reused by each (see awaitLink)

	ctx    context.Context         // Context, once the body asked for it
	endCtx context.CancelCauseFunc // cancels ctx: at cancellation, or when the body returns
	cause  error                   // why ctx ends before the body returns (see cancelContext); nil until then
}

// pendingAwait is an await in progress (an *awaitLink), seen untyped: all
// a cancelled Do handle needs of it is to withdraw.
type pendingAwait interface{ withdraw() }

// doNode is the handle of Do.
type doNode[T any] struct {
	Handle[T]
	co       Co
	body     func(*Co) (T, error)
	w        *coWorker // the coroutine running the body, until it returns; loop goroutine only
	bodyVal  T         // what the body returned, until the handle settles with it
	bodyErr  error     // likewise
	bodyDone bool      // the body returned (or called runtime.Goexit)
	goexit   bool      // the body called runtime.Goexit, which ended its worker
}

// Do runs body on the loop as a coroutine: plain sequential Go code that
// suspends at each Await without blocking the loop, and resumes, on the loop,
// when the awaited handle ends. The returned handle ends with body's result.
// Called on the loop, Do runs body up to its first Await before it returns;
// called elsewhere, or in another Do body (a body cannot run inside
// another), it posts it. A suspended body keeps what its stack holds, the
// Do handle and the awaited handle among them: one waiting on a promise
// nobody will resolve is not garbage collected (its goroutine stays until
// it is cancelled or the loop stops), unlike a Then on that promise.
// Cancelling it cancels (withdraws from) the handle the body is awaiting and
// resumes the body with ErrCancelled from that Await; every later Await
// returns ErrCancelled at once, and body's result is discarded. Only that
// handle: what the body started and is not awaiting (the other inputs of a
// Settled it ranges over, a handle it has not awaited yet) runs on until
// it ends by itself; adopt such handles into a Scope that the
// cancellation reaches (WithScope around the Do, or an httpd request's
// Scope) to have them cancelled with the body. The body runs
// as the loop: OnLoop is true in it, and it must not block (use Work for
// blocking calls). Stop cancels a suspended body like any pending handle, and
// waits for it to return. A panic in body fails the handle with a
// *PanicError; a runtime.Goexit in body (testing's FailNow) fails it with
// ErrGoexit and leaves the loop running.
func Do[T any](l *Loop, body func(co *Co) (T, error)) *Handle[T] {
	if err := checkProducer(l, body == nil); err != nil {
		return Fail[T](l, err)
	}
	n := &doNode[T]{body: body}
	n.co.l, n.co.node, n.co.core = l, n, &n.core
	n.co.link.co = &n.co
	n.init(l)
	n.prod = n
	// runInline, without the method value n.start on the loop (it
	// escapes, and Go allocates it on every path).
	if n.loop.OnLoop() {
		n.start()
	} else {
		n.loop.post(n.start)
	}
	return &n.Handle
}

// start takes a worker coroutine and runs the body on it to its first Await.
// On the loop goroutine: the runtime requires a coroutine to be created and
// resumed on the same locked thread.
func (n *doNode[T]) start() {
	if n.Handle.ended() {
		n.body = nil // never to run now: what it captured goes with it
		return
	}
	if !n.loop.onLoopThread() {
		if n.loop.state.Load() == stateDead || !n.loop.OnLoop() {
			// The loop goroutine is gone (Do raced with Stop): no thread
			// can host the coroutine.
			n.body = nil
			n.cancel()
			return
		}
		// Called from another Do body: start from the loop goroutine, as a
		// job after the current callback.
		n.loop.runLater(n.start)
		return
	}
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	n.loop.adoptProducer(&n.core)
	if n.Handle.ended() {
		n.body = nil
		return // adopted by a dying loop, and so cancelled
	}
	n.w = n.loop.takeWorker()
	n.w.task = n
	n.resume()
}

// runBody runs the body on its worker's coroutine (see coWorker.run), from
// the first resumption to its return.
func (n *doNode[T]) runBody() {
	co := &n.co
	body := n.body
	n.body = nil
	co.yield = n.w.yield
	co.enter()
	returned := false
	defer func() {
		co.leave()
		n.bodyDone = true
		if !returned {
			n.bodyErr = ErrGoexit
			n.goexit = true
			// The Goexit cannot be stopped, and iter.Pull would re-raise
			// it on the loop goroutine (in next), killing the loop. So
			// the body hands the loop back here, as a return would, with
			// its Goexit held: next returns as usual, and resume ends
			// the worker (endGoexited), whose stop makes this yield
			// report false. A panic started during Goexit and recovered
			// (by iter.Pull) lets the coroutine finish exiting, and
			// reaches stop as a panic, which endGoexited catches.
			co.yield(struct{}{})
			panic(goexitInBody{})
		}
	}()
	n.bodyVal, n.bodyErr = callValue(func() (T, error) { return body(co) })
	returned = true
}

// errAwaitSelf is Await's refusal of the body's own Do handle, which ends
// only when the body returns.
var errAwaitSelf = invalid("aio: Await of the body's own Do handle: it ends only when the body returns")

// ErrGoexit is the error of a Do handle whose body, or a Work handle whose
// fn, called runtime.Goexit (as testing's FailNow does): the body's or the
// pool worker's goroutine is gone (another worker takes its place), the
// loop is not.
var ErrGoexit = errors.New("aio: runtime.Goexit called in a Do body or Work fn")

// goexitInBody is the panic that carries a body's Goexit out of iter.Pull
// (see runBody).
type goexitInBody struct{}

// resume runs the body until it awaits again or returns. On the loop
// goroutine.
func (n *doNode[T]) resume() {
	if n.bodyDone || n.w == nil || !n.loop.onLoopThread() {
		return
	}
	// No deferred recover here, on the path of every Await: a body's
	// Goexit comes back as a return would (see runBody).
	n.w.next()
	if n.bodyDone {
		n.co.endContext(nil)
		if n.goexit {
			n.w.endGoexited()
		} else {
			n.loop.putWorker(n.w) // idle at its yield: ready for another body
		}
		n.w = nil
		v, err := n.bodyVal, n.bodyErr
		var zero T
		n.bodyVal, n.bodyErr = zero, nil
		if !n.settle(v, err) {
			n.releaseLost() // cancelled as the body returned
		}
	}
}

// stop runs when the Do handle is cancelled: withdraw from what the body
// awaits and let it run on with ErrCancelled.
func (n *doNode[T]) stop() {
	n.co.cancelled = true
	n.co.cancelContext(cancelCause(n.loop))
	if w := n.co.waiting; w != nil {
		n.co.waiting = nil
		w.withdraw()
	}
	n.resume()
}

// noticeCancel makes a cancel of the Do handle made while its body runs
// (by the body itself, or from another goroutine) count at once: the
// transition that tells the body (stop) is a job of the loop, which the
// body holds until it suspends, and an Await or a Context meanwhile must
// not go on as if nothing had happened. stop does the same again later.
// It reports whether the body is cancelled. One atomic load. In the body.
func (co *Co) noticeCancel() bool {
	if !co.cancelled && statusOf(co.core.state.Load()) == Cancelled {
		co.cancelled = true
		co.cancelContext(cancelCause(co.l))
	}
	return co.cancelled
}

// enter makes the body's goroutine the loop's owner while it runs, as
// the body starts.
func (co *Co) enter() {
	g := getg()
	co.g.Store(g)
	co.prev = co.l.ownerG.Swap(g)
}

// leave hands the loop back to the goroutine that resumed the body, as
// the body returns.
func (co *Co) leave() {
	co.l.ownerG.Store(co.prev)
	co.g.Store(0)
}

// suspend parks the body until resume. It reports false if the coroutine is
// being torn down. It hands the loop over as leave and enter do, but
// leaves co.g set: nothing runs on the body's goroutine while it is
// parked, so the tests against co.g (Await, Context) answer the same, and
// an Await round trip saves two atomic stores (a locked instruction each
// on amd64). The owner who resumes the body is blocked in the resumption
// meanwhile, so reading ownerG and then storing it is the swap enter makes.
func (co *Co) suspend() bool {
	o := &co.l.ownerG
	g := o.Load()
	o.Store(co.prev)
	ok := co.yield(struct{}{})
	co.prev = o.Load()
	o.Store(g)
	return ok
}

// Loop returns the loop the body runs on.
func (co *Co) Loop() *Loop { return co.l }

// awaitLink resumes a suspended body when the awaited handle ends. Each
// Co has one, which every Await of its body reuses, so that an await
// allocates nothing. Reuse is safe because a link that went into a
// handle's dependents is told at most once, and only a told link lets
// the body await again: the body resumes from an Await either woken by
// its link (the handle ended and told it), or cancelled (the link
// withdrew, done), after which no Await registers again. A telling
// that comes late, crossing from another loop after a cancellation,
// finds the link done.
type awaitLink struct {
	co   *Co   // the Co it belongs to; immutable
	in   *core // the awaited handle, set by each Await
	done bool  // the body was woken by this link or stopped waiting; co's loop
}

func (a *awaitLink) inputDone() {
	if a.co.l == a.in.loop {
		a.wakeBody()
		return
	}
	a.co.l.runLater(a.wakeBody)
}

// wakeBody resumes the body if it still waits on this link. On co's loop.
func (a *awaitLink) wakeBody() {
	a.co.l.checkOnLoop()
	if a.done || a.co.waiting != pendingAwait(a) {
		return
	}
	a.done = true
	a.co.waiting = nil
	a.co.wake = true
	if a.co.l.Stopping() && statusOf(a.in.state.Load()) == Cancelled {
		// Stop cancels what a body awaits (its timers first) before
		// the Do handle itself: the body, woken by that, learns of the
		// stop from its context before it goes on, as it would once
		// its own handle is cancelled.
		a.co.cancelContext(errCancelledByStop)
	}
	a.co.node.resume()
}

func (a *awaitLink) withdraw() {
	if a.done {
		return
	}
	a.done = true
	a.in.unregister(a)
}

// Await suspends the Do body that co belongs to until h ends, without blocking
// the loop, and returns h's outcome (as Result). An already terminal h on
// co's loop returns at once; one of another loop (or of none) that
// completed is taken through a report from its loop, so the body suspends
// for it and other callbacks may run meanwhile. When the Do handle is
// cancelled, h is withdrawn from (cancelled unless another dependent wants
// it) and Await returns ErrCancelled; after that (a cancel made while the
// body runs, by the body itself or from another goroutine, included)
// every Await cancels its h and returns ErrCancelled at once. h may live
// on any loop, but not be co's own Do handle (an ErrInvalidArgument: it
// would wait for itself). Called anywhere but in co's body, it returns
// ErrNotInBody.
func Await[T any](co *Co, h *Handle[T]) (T, error) {
	var zero T
	if co == nil || co.g.Load() != getg() {
		return zero, ErrNotInBody
	}
	if h == nil {
		return zero, ErrNilHandle
	}
	if co.noticeCancel() {
		// As if the body had awaited and withdrawn at once: h is cancelled
		// unless another dependent wants it.
		h.dropIfUnwanted()
		return zero, ErrCancelled
	}
	if &h.core == co.core {
		return zero, errAwaitSelf // it would wait for itself for ever
	}
	if st := statusOf(h.state.Load()); st.Terminal() && (st != Completed || h.loop == co.l) {
		if st == Completed {
			// The body takes the value: counted as a dependent that never
			// withdraws, so that others declining it cannot release it
			// (see releaseUnwanted). Across loops h's count is not ours to
			// touch: the body registers and waits for its report instead.
			h.interest++
		}
		return h.Result()
	}
	a := &co.link
	a.in, a.done = &h.core, false
	co.waiting = a
	co.wake = false
	if h.loop == co.l {
		h.addInterested(a) // register's on-loop half: the body runs as the loop
	} else {
		h.register(a)
		co.core.adoptCrossLoop()
	}
	if !co.suspend() || !co.wake {
		// Cancelled (stop withdrew the link), or torn down: the link may
		// still be among h's dependents, so no later Await may reuse it
		// (see awaitLink).
		co.waiting = nil
		co.cancelled = true
		return zero, ErrCancelled
	}
	return h.Result()
}

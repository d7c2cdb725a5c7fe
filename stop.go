package aio

import "errors"

// A loop's life ends here: Stop marks it stopping, the loop goroutine tears
// it down (cancelling what is pending until nothing is), turns it dead and
// gives its slot back. A callback's runtime.Goexit takes the same road
// (goexited). Once dead, the loop runs late work on goroutines of their own
// (runDead).

// Stop asks the loop to stop and returns a handle that completes after
// teardown, in this order: Post and new work fail with ErrStopped; the loop
// finishes its current iteration; every handle still pending on the loop
// (timers, promises, Work, Do bodies) is cancelled, so its OnCancel
// callbacks and cleanups run, and callbacks posted before Stop run, until
// nothing is left; every fd the loop owns is closed (a connection's Closed
// is cancelled) and then the poller; the Work pool waits for the functions
// still running (their contexts are cancelled) and its goroutines exit; the
// loop goroutine leaves its locked thread; the slab slot is released; then
// the handle completes.
//
// Stop is idempotent: every call returns the same handle. It may be called
// from any goroutine, the loop's own included (then the loop stops after the
// current callback). The handle has no loop (Loop() is nil): wait on it with
// Wait or Done. It cannot be cancelled (Cancel reports false, and a dependent
// giving it up, such as a Race won by another input, leaves it alone): a stop
// is not taken back.
func (l *Loop) Stop() *Handle[struct{}] {
	l.stopOnce.Do(func() {
		l.markStopping()
		// Woken outright: the poll phase looks at the state after it
		// announces its sleep, so a loop that saw it running before the
		// mark sleeps until this. The awake flag is the loop's own: were
		// it stored here, a teardown already parked in awaitPost (a
		// callback's Goexit starts one without Stop) would be hidden from
		// the enqueue that must signal it.
		_ = l.poller.Wake()
	})
	return l.stopH
}

// Stopping reports whether Stop has been called (or the loop stopped
// otherwise): Post and new work fail with ErrStopped from then on. Code
// that sees its handle cancelled can ask it to tell a stop from a cancel
// of its own. Any goroutine.
func (l *Loop) Stopping() bool { return l.state.Load() != stateRunning }

// markStopping turns a running loop to stopping: Post and new work are
// refused from here on.
func (l *Loop) markStopping() {
	l.postMu.Lock()
	if l.state.Load() == stateRunning {
		l.state.Store(stateStopping)
	}
	l.postMu.Unlock()
}

// errGoexit is what OnPanic is given when a callback called runtime.Goexit.
var errGoexit = errors.New("aio: runtime.Goexit in a loop callback: the loop stops")

// goexited is deferred by the loop goroutine, and does nothing once the loop
// has stopped. It acts when the goroutine is leaving other than by Stop: a
// callback called runtime.Goexit (testing's FailNow in a callback, say),
// which, unlike a panic, cannot be recovered. The goroutine is lost, but the
// loop is not left half alive: it is stopped as Stop would stop it, so that
// its handles end, its fds close, its slot comes back and Stop's handle
// completes, instead of everything waiting on it hanging; then the Goexit is
// reported as a panic. A further Goexit during that teardown (in an OnCancel
// callback, a cleanup, OnPanic) re-enters here and the teardown goes on where
// it was cut off. The thread stays locked and ends with the goroutine, which
// may have left it in any state. A Do body's Goexit does not come here (see
// doNode.pull).
func (l *Loop) goexited() {
	if l.stopped {
		return
	}
	if p := recover(); p != nil {
		panic(p) // not a Goexit: an internal panic must stay fatal
	}
	defer l.goexited() // a further Goexit below comes back here
	l.markStopping()
	if !l.tornDown {
		l.teardown()
		l.tornDown = true
	}
	l.stopped = true
	l.finishStop()
	l.reportPanic(errGoexit)
}

// teardown runs on the loop goroutine once Stop was called: it cancels what is
// pending until nothing is, closes the work pool and the poller, and turns the
// loop dead, running whatever was still queued.
func (l *Loop) teardown() {
	// Cancelling runs callbacks, and posted work (a producer adopted or a
	// timer armed from another goroutine just before Stop) can add pending
	// handles: repeat until a pass finds nothing to cancel and nothing to run.
	for {
		l.passes.Add(1)
		l.now.Store(int64(l.clock()))
		found, held := l.cancelPending()
		l.drain()
		// resume: a panic cut the last batch short, maybe in its last
		// callback, and the batch is not done (counted) until runBatch
		// takes it up again.
		for l.resume || l.readyPos < len(l.ready) || l.qlen.Load() > 0 {
			found = true
			l.runPosted()
		}
		l.runClosing()
		if !found && !l.hasWork() {
			if !held {
				break
			}
			// Only held handles are left (a Bracket waiting for a Work fn
			// that has not returned, a scope for a child on another loop):
			// a pass ends none of them, a post from elsewhere does. Wait
			// for one rather than pass again and again.
			l.awaitPost()
		}
	}
	l.stopIdleWorkers() // every Do body has returned by now
	l.closeFDs()
	_ = l.poller.Close()
	l.finalMetrics()

	// Dead from here on: whatever still arrives (a producer created just
	// before Stop and adopted just after the last pass, a Work result) runs
	// on a goroutine of its own under deadMu, and a producer adopted now is
	// cancelled on the spot (adoptProducer).
	l.turnDead()

	// Last, the work pool: every Work job is cancelled by now (a late one by
	// the pass above), so its function sees its context done and returns.
	l.pool.close()
}

// awaitPost blocks the teardown until something is posted to the loop:
// the loop announces a sleep as the poll phase does, and enqueue, finding
// it asleep while stopping, signals stopWake besides waking the poller
// (which teardown does not poll: the fds' events would be dropped, and one
// that stays ready would end every wait at once). On the loop, at Stop.
func (l *Loop) awaitPost() {
	l.awake.Store(false)
	if l.qlen.Load() == 0 { // see enqueue: one of the two sees the other
		<-l.stopWake
	}
	l.awake.Store(true)
}

// turnDead makes the loop dead and runs what was still queued. deadMu is
// released by a deferred call, and the queue is consumed from l.rest: a
// callback that calls runtime.Goexit unwinds through here without leaving
// deadMu locked, and the teardown that the loop goroutine's guard then runs
// again (see goexited) takes up the callbacks still left.
func (l *Loop) turnDead() {
	l.deadMu.Lock()
	defer l.deadMu.Unlock()
	l.postMu.Lock()
	l.state.Store(stateDead)
	// Posts made on the loop joined ready; the queue has what came after.
	l.rest = append(l.rest, l.ready[l.readyPos:]...)
	l.ready, l.readyPos = nil, 0
	l.rest = append(l.rest, l.postQ...)
	l.postQ = nil
	l.qlen.Store(0)
	l.postMu.Unlock()
	for len(l.rest) > 0 {
		fn := l.rest[0]
		l.rest[0] = nil
		l.rest = l.rest[1:]
		l.call(fn)
		l.drain()
	}
	l.rest = nil
	// The loop goroutine gives up ownership while it still holds deadMu, so
	// a dead-loop runner can never save and restore its identity.
	l.loopG.Store(0)
	l.ownerG.Store(0)
}

// closeFDs closes every fd still registered with the loop.
func (l *Loop) closeFDs() {
	for fd, h := range l.fds {
		if h == nil {
			continue
		}
		h.closeFD()
		if fd < len(l.fds) {
			l.fds[fd] = nil
		}
	}
}

// finishStop releases the slot and completes Stop's handle. It runs last on
// the loop goroutine, after the loop has left its thread.
func (l *Loop) finishStop() {
	if l.rt != nil {
		if s := l.rt.slab.Get(l.slot); s != nil {
			s.l.Store(nil)
		}
		_ = l.rt.slab.Release(l.slot)
	}
	l.stopH.settle(struct{}{}, nil)
}

// runDead runs fn and the jobs it queues on the calling goroutine, which
// becomes the loop's owner for that time. Used once the loop is dead.
func (l *Loop) runDead(fn func()) {
	l.deadMu.Lock()
	prev := l.ownerG.Swap(getg())
	defer func() { // deferred: a callback's runtime.Goexit must not wedge deadMu
		l.ownerG.Store(prev)
		l.deadMu.Unlock()
	}()
	l.call(fn)
	l.drain()
}

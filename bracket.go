package aio

// bracketNode is the handle of Bracket.
type bracketNode[R, T any] struct {
	Handle[T]
	acq      link[R]
	use      link[T]
	release  func(R)
	useFn    func(R) *Handle[T]
	res      R
	acquired bool    // acquire completed: release is owed
	over     *fnOver // use's handle is a Work job's: its fn may outlive a cancelled handle
	holdAcq  bool    // cancelled while acquiring: Done waits for acquire to end
	holdUse  bool    // cancelled while using: Done waits for use to end
}

// Bracket acquires a resource, uses it, and always releases it: once acquire
// completes with r, use(r) runs on the loop, and when the handle it returns
// ends in any way (completes, fails or is cancelled), release(r) runs, then
// the result ends as use's handle did.
//
// Cancelling the result withdraws from acquire or use, whichever runs (so it
// is cancelled unless another dependent wants it), and release runs once that
// handle has ended, even if it lives on another loop; if use returned a Work
// job's handle, cancelled while its fn ran, once that fn has returned too:
// never while use may still be using the resource. Only the handle use
// returns is waited for so: a Work job inside it (a Then of a Work, say) ends
// with it, and its fn may run on, so have use return the Work handle itself,
// or stop using the resource when its context ends. If acquire completes
// anyway, the resource is released as soon as it arrives. The result's Done
// closes only after that: release runs exactly once iff acquire completed,
// always on the loop, always before the result's Done closes. If acquire
// fails or is cancelled, use and release never run. A panic in use or
// release fails the result with a *PanicError (release still runs after a
// panic in use).
func Bracket[R, T any](acquire *Handle[R], release func(R), use func(R) *Handle[T]) *Handle[T] {
	if acquire == nil || release == nil || use == nil {
		return refusedAfter[R, T](acquire)
	}
	n := &bracketNode[R, T]{release: release, useFn: use}
	n.init(acquire.loop)
	n.prod = n
	n.acq.init(acquire, n, &n.core, 0)
	// Registered even if the bracket already ended: a resource that arrives
	// after a cancellation must still be released (acquireDone). If stop
	// already gave acquire up, withdraw at once; if the bracket is only
	// Cancelled, its stop is still to come and will hold the terminal
	// transition until acquire has ended, so that release runs before the
	// result's cleanups and Done.
	n.loop.runInline(func() {
		k := &n.acq
		gaveUp := k.done
		k.register(&n.core)
		if gaveUp {
			k.in.unregisterTaking(k)
		}
	})
	return &n.Handle
}

func (n *bracketNode[R, T]) onInput(idx int) {
	if idx == 0 {
		n.acquireDone()
		return
	}
	if o := n.over; o != nil {
		n.over = nil
		if n.use.in.state.Load() == uint32(Cancelled) && o.after(n.loop, func() { n.onInput(1) }) {
			return // a Work fn that may still use the resource: back here once it is over
		}
	}
	defer n.use.letGo() // use has ended: told once
	if n.holdUse {
		// Cancelled while using, and use has now ended: release, then let
		// the cancellation finish.
		_ = n.doRelease()
		n.unhold(&n.holdUse)
		return
	}
	if n.use.done {
		return
	}
	n.use.done = true
	if n.ended() {
		// Cancelled from another goroutine, its terminal transition still
		// queued: use has ended, so stop releases at once instead of
		// holding for a report that has come already.
		return
	}
	if err := n.doRelease(); err != nil {
		var zero T
		n.settle(zero, err)
		return
	}
	forward(&n.Handle, n.use.in)
}

func (n *bracketNode[R, T]) acquireDone() {
	in := n.acq.in
	defer n.acq.letGo() // the resource is n.res's until released
	completed := in.state.Load() == uint32(Completed)
	if completed {
		n.res, n.acquired = in.val, true
	}
	if n.ended() || n.acq.done {
		// Cancelled while acquiring: give back a resource that arrived
		// anyway. If the terminal transition is still queued (a Cancel
		// from another goroutine), the report marks acquire as consumed,
		// so that stop does not hold for a report that has come already.
		n.acq.done = true
		n.useFn = nil // never to run now: what it captured goes with it
		_ = n.doRelease()
		n.release = nil
		n.unhold(&n.holdAcq)
		return
	}
	n.acq.done = true
	if !completed {
		n.useFn, n.release = nil, nil // never to run: what they captured goes with them
		forwardFailure(&n.Handle, in)
		return
	}
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	useFn := n.useFn
	n.useFn = nil
	h, err := apply(func(r R) (*Handle[T], error) { return useFn(r), nil }, n.res)
	if err == nil && h == nil {
		err = ErrNilHandle
	}
	if err != nil {
		_ = n.doRelease()
		var zero T
		n.settle(zero, err)
		return
	}
	if h.lingers {
		n.over = h.rare.over
	}
	n.use.attach(h, n, &n.core, 1)
}

// doRelease runs release once if the resource was acquired.
func (n *bracketNode[R, T]) doRelease() error {
	if !n.acquired {
		return nil
	}
	n.acquired = false
	release, r := n.release, n.res
	n.release = nil
	var zero R
	n.res = zero
	return callErr(func() { release(r) })
}

// stop runs when the result is cancelled: withdraw from what runs and hold
// the terminal transition until it has ended (see onInput).
func (n *bracketNode[R, T]) stop() {
	if !n.acq.done {
		n.hold(&n.holdAcq)
		n.acq.withdrawTaking()
		return
	}
	if n.use.registered && !n.use.done {
		n.hold(&n.holdUse)
		n.use.withdrawWatching() // onInput looks at use's end
		return
	}
	_ = n.doRelease()
}

// forwardFailure settles h as the failed or cancelled input in ended.
func forwardFailure[T, U any](h *Handle[T], in *Handle[U]) {
	if in.state.Load() == uint32(Failed) {
		var zero T
		h.settle(zero, in.err)
		return
	}
	h.cancel()
}

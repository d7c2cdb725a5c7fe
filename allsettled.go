package aio

import "time"

// Outcome is how one input of AllSettled ended: its value if it completed,
// else its error. The error is the input's own for a failure, ErrCancelled
// for a cancellation and, for AllSettledWithin, an error matching ErrTimeout
// for an input still running at the deadline.
type Outcome[T any] struct {
	Value T     // the input's value if it completed, else the zero value
	Err   error // nil if it completed
}

// settledNode is the handle of AllSettled and AllSettledWithin.
type settledNode[T any] struct {
	Handle[[]Outcome[T]]
	links []link[T]
	outs  []Outcome[T] // by input; given to the result when it completes
	left  int          // inputs not yet ended
	exp   expiry       // armed by AllSettledWithin
}

// AllSettled returns a handle that completes with the outcome of every input,
// in input order, once each of hs has ended: completed, failed or cancelled
// alike. It never fails because an input did, so it gives partial results
// where All gives the first failure. Cancelling it withdraws its interest in
// every input still running (cancelling those nobody else wants), as All
// does, and declines the values it collected (a connection no other
// dependent took is closed, see Dial). The result is pinned to the first
// input's loop (or, if that loop has stopped, to that of the first input
// whose loop still runs or which has no loop); inputs may live on any loop.
// AllSettled of no inputs is completed with an empty slice and has no loop;
// a nil input fails it with ErrNilHandle.
//
// A deadline on the whole is AllSettledWithin, not Within(AllSettled(...)),
// which at the deadline discards the outcomes of the inputs that did end.
func AllSettled[T any](hs ...*Handle[T]) *Handle[[]Outcome[T]] {
	return allSettled(hs, false, 0)
}

// AllSettledWithin is AllSettled with a deadline: if some inputs are still
// running when d has passed (counted as in Delay), it withdraws its interest
// in them (cancelling those nobody else wants) and completes at once, with
// an error matching ErrTimeout as their outcome and the outcomes of the
// others as they ended. d <= 0 times out on the next iteration: only the
// inputs whose end has reached the result by then give their own outcomes.
// The deadline is the result loop's: an input on another loop (or on a
// stopped one) reaches the result through a post, so one that ends less
// than a cross-loop wake-up before the deadline is given ErrTimeout though
// its own handle completed (Result tells). With d <= 0 such an input times
// out even if it ended long before the call: its end reaches the result by
// a round trip of posts between the loops, which the next iteration does
// not wait for.
func AllSettledWithin[T any](d time.Duration, hs ...*Handle[T]) *Handle[[]Outcome[T]] {
	return allSettled(hs, true, d)
}

func allSettled[T any](hs []*Handle[T], timed bool, d time.Duration) *Handle[[]Outcome[T]] {
	if len(hs) == 0 {
		return Pure[[]Outcome[T]](nil, []Outcome[T]{})
	}
	if err := checkInputs(hs); err != nil {
		return Fail[[]Outcome[T]](nil, err)
	}
	n := &settledNode[T]{
		links: make([]link[T], len(hs)),
		outs:  make([]Outcome[T], len(hs)),
		left:  len(hs),
	}
	n.init(sinkLoop(hs))
	n.prod = n
	for i, h := range hs {
		n.links[i].init(h, n, &n.core, i)
	}
	if !timed {
		runInlineCall(n.loop, registerAll[T], &n.core, n.links)
		return &n.Handle
	}
	// Set after the links are (a Go timer may fire at once) and before the
	// node is shared; the loop timer is armed after the inputs are looked
	// at, in the same job (expiry.start).
	n.exp.arm(&n.core, n, d)
	if n.loop.OnLoop() {
		n.register()
	} else {
		n.loop.post(n.register)
	}
	return &n.Handle
}

// register registers with the inputs, then arms the deadline. On the loop.
func (n *settledNode[T]) register() {
	registerAll(&n.core, n.links)
	n.exp.start(&n.core)
}

func (n *settledNode[T]) onInput(i int) {
	k := &n.links[i]
	if n.ended() || k.done {
		return
	}
	k.done = true
	o := &n.outs[i]
	o.Value, o.Err = k.in.Result() // terminal: its own value or error, or ErrCancelled
	if n.left--; n.left == 0 {
		n.complete()
	}
}

// fire is the deadline: give up the inputs still running. On the loop.
func (n *settledNode[T]) fire() {
	defer n.armUnlessEnded() // the timer has let go (see timerHeld)
	if n.ended() {
		return
	}
	err := n.exp.err()
	for i := range n.links {
		if k := &n.links[i]; !k.done {
			k.withdraw()
			n.outs[i].Err = err
		}
	}
	n.complete()
}

func (n *settledNode[T]) complete() {
	defer n.armUnlessEnded() // the timer lets go (see timerHeld)
	n.disarm()
	outs := n.outs
	n.outs = nil
	if n.settle(outs, nil) {
		letGoAll(n.links) // else stop declines them
	}
}

func (n *settledNode[T]) base() *core { return &n.Handle.core }

func (n *settledNode[T]) disarm()          { n.exp.disarm(n.loop) }
func (n *settledNode[T]) timerHolds() bool { return n.exp.holds() }

// stop disarms the deadline of a cancelled handle, arming its record first
// (see timerHeld), and gives up the inputs.
func (n *settledNode[T]) stop() {
	n.armRecord()
	n.disarm()
	declineCollected(n.links)
	withdrawAll(n.loop, n.links)
}

package aio

import "time"

// withinNode is the handle of Within: the result, the input and the timer.
type withinNode[T any] struct {
	Handle[T]
	in  link[T]
	exp expiry
}

// Within returns a handle that ends as h does if h ends within d; otherwise
// it fails with an error matching ErrTimeout when d passes, and withdraws its
// interest in h (which is cancelled unless another dependent wants it). d
// counts as in Delay; d <= 0 times out on the next iteration unless h has
// already ended. For several inputs, AllSettledWithin keeps the outcomes of
// those that ended by the deadline.
func Within[T any](h *Handle[T], d time.Duration) *Handle[T] {
	if h == nil {
		return Fail[T](nil, ErrNilHandle)
	}
	l := h.loop
	if l == detached && statusOf(h.state.Load()).Terminal() {
		return Finally(h, func() {}) // it cannot time out any more
	}
	n := &withinNode[T]{}
	n.init(l)
	n.prod = n
	n.in.init(h, n, &n.core, 0)
	n.exp.arm(&n.core, n, d)
	// runInline, with the closure made only when it has to be posted (a
	// method expression of a generic type allocates too). One job: the
	// timer is armed after the input is looked at (expiry.start).
	if n.loop.OnLoop() {
		n.register()
	} else {
		n.loop.post(n.register)
	}
	return &n.Handle
}

// register registers with the input, then arms the deadline. On the loop.
func (n *withinNode[T]) register() {
	n.in.registerLive(&n.core)
	n.exp.start(&n.core)
}

func (n *withinNode[T]) onInput(int) {
	if n.ended() || n.in.done {
		return
	}
	n.in.done = true
	defer n.armUnlessEnded() // the timer lets go (see timerHeld)
	n.disarm()
	forward(&n.Handle, n.in.in)
	n.in.letGo()
}

func (n *withinNode[T]) base() *core { return &n.Handle.core }

func (n *withinNode[T]) fire() {
	defer n.armUnlessEnded() // the timer has let go (see timerHeld)
	if n.ended() {
		return
	}
	n.in.withdraw()
	var zero T
	n.settle(zero, n.exp.err())
}

func (n *withinNode[T]) disarm()          { n.exp.disarm(n.loop) }
func (n *withinNode[T]) timerHolds() bool { return n.exp.holds() }

// stop disarms the deadline of a cancelled handle, arming its record first
// (see timerHeld), and withdraws from the input.
func (n *withinNode[T]) stop() {
	n.armRecord()
	n.disarm()
	n.in.withdraw()
}

package aio

// tapNode is the handle of Tap: the result, its input and the function, in
// one allocation.
type tapNode[T any] struct {
	Handle[T]
	src *Handle[T] // nil once the input finished or was withdrawn
	fn  func(T)
}

// Tap returns a handle that ends as h does and, when h completes, first runs
// fn with its value on h's loop: a continuation for side effects (a log line,
// a metric, a cache fill) that needs no value of its own, where Then would
// have to return the value again. If h fails or is cancelled, fn does not
// run and the result ends the same way. fn never runs inside the call to Tap.
// Cancelling the result withdraws its interest in h, as Then does. A panic in
// fn fails the result with a *PanicError. A nil h or fn gives a failed handle
// (ErrNilHandle with no loop, ErrNilFunc on h's loop).
func Tap[T any](h *Handle[T], fn func(T)) *Handle[T] {
	if h == nil || fn == nil {
		return refusedAfter[T, T](h)
	}
	n := &tapNode[T]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *tapNode[T]) inputDone() {
	src, fn := n.src, n.fn
	n.src, n.fn = nil, nil // fn runs at most once: what it captured goes with it
	if src == nil || n.declines(&src.core) {
		return
	}
	if src.state.Load() != uint32(Completed) {
		forward(&n.Handle, src)
		return
	}
	// fn takes the value (a cache fill may keep it): the result passes it
	// on as a value of the program's, never released by aio (see
	// releaseUnwanted).
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	if err := callErr(func() { fn(src.val) }); err != nil {
		var zero T
		n.settle(zero, err)
		return
	}
	n.settle(src.val, nil)
}

func (n *tapNode[T]) stop() {
	n.fn = nil // never to run now
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
}

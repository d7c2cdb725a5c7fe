package aio

// finallyNode is the handle of Finally.
type finallyNode[T any] struct {
	Handle[T]
	src *Handle[T] // nil once the input finished or was withdrawn
	fn  func()     // nil once run
}

// Finally returns a handle with h's outcome that runs fn on h's loop when h
// ends in any way: completed, failed or cancelled, and also when the returned
// handle itself is cancelled first. fn runs once, and before the returned
// handle's Done closes. A panic in fn fails the result with a *PanicError
// (unless the result was cancelled).
func Finally[T any](h *Handle[T], fn func()) *Handle[T] {
	if h == nil || fn == nil {
		return refusedAfter[T, T](h)
	}
	n := &finallyNode[T]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

// runFn runs fn the first time it is called.
func (n *finallyNode[T]) runFn() error {
	fn := n.fn
	if fn == nil {
		return nil
	}
	n.fn = nil
	return callErr(fn)
}

func (n *finallyNode[T]) inputDone() {
	src := n.src
	n.src = nil
	if src == nil || n.declines(&src.core) {
		return
	}
	err := n.runFn()
	switch src.state.Load() {
	case uint32(Completed):
		if err != nil {
			var zero T
			n.settle(zero, err)
			src.withdraw() // the value goes nowhere: declined
			return
		}
		passOn(&n.Handle, src)
	case uint32(Failed):
		var zero T
		n.settle(zero, src.err)
	default:
		n.cancel()
	}
}

// stop runs when the result is cancelled before its input finished.
func (n *finallyNode[T]) stop() {
	_ = n.runFn()
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
}

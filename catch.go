package aio

// catchNode is the handle of Catch.
type catchNode[T any] struct {
	Handle[T]
	src *Handle[T] // nil once the input finished or was withdrawn
	fn  func(error) (T, error)
}

// Catch returns a handle that ends as h does, except that when h fails, fn
// runs on h's loop with the error and the handle completes or fails with
// fn's result. A cancelled h is not a failure: fn does not run and the result
// is cancelled. A panic in fn fails the result with a *PanicError.
func Catch[T any](h *Handle[T], fn func(error) (T, error)) *Handle[T] {
	if h == nil || fn == nil {
		return refusedAfter[T, T](h)
	}
	n := &catchNode[T]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *catchNode[T]) inputDone() {
	src, fn := n.src, n.fn
	n.src, n.fn = nil, nil // fn runs at most once: what it captured goes with it
	if src == nil || n.declines(&src.core) {
		return
	}
	if src.state.Load() == uint32(Failed) {
		v, err := apply(fn, src.err)
		n.settle(v, err)
		return
	}
	forward(&n.Handle, src)
}

func (n *catchNode[T]) stop() {
	n.fn = nil // never to run now
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
}

package aio

// thenNode is the handle of Then: the result handle, its input and the
// function, in one allocation.
type thenNode[T, U any] struct {
	Handle[U]
	src *Handle[T] // nil once the input finished
	fn  func(T) (U, error)
}

// Then returns a handle that completes with fn applied to h's value, on h's
// loop, once h completes. If h fails, the result fails with the same error and
// fn does not run; if h is cancelled, the result is cancelled and fn does not
// run. fn never runs inside the call to Then, even when h is already terminal.
// Cancelling the result withdraws its interest in h: h is cancelled once no
// dependent wants it, and a value h has already completed with but fn has
// not received is declined (a connection every dependent declines is
// closed, see Dial). A panic in fn fails the result with a *PanicError.
// For a side effect that makes no value of its own (a write, a log line),
// Tap saves returning struct{}{}: it passes h's value on.
func Then[T, U any](h *Handle[T], fn func(T) (U, error)) *Handle[U] {
	if h == nil || fn == nil {
		return refusedAfter[T, U](h)
	}
	n := &thenNode[T, U]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *thenNode[T, U]) inputDone() {
	src, fn := n.src, n.fn
	n.src, n.fn = nil, nil // fn runs at most once: what it captured goes with it
	if src == nil || n.declines(&src.core) {
		return
	}
	switch src.state.Load() {
	case uint32(Completed):
		n.state.CompareAndSwap(uint32(Pending), uint32(Running))
		v, err := apply(fn, src.val)
		n.settle(v, err)
	case uint32(Failed):
		var zero U
		n.settle(zero, src.err)
	default:
		n.cancel()
	}
}

func (n *thenNode[T, U]) stop() {
	n.fn = nil // never to run now
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
}

// apply calls fn(v), turning a panic into a *PanicError.
func apply[T, U any](fn func(T) (U, error), v T) (u U, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(p)
		}
	}()
	return fn(v)
}

// thenAsyncNode is the handle of ThenAsync: first a dependent of the input,
// then a sink of the handle fn returned.
type thenAsyncNode[T, U any] struct {
	Handle[U]
	src   *Handle[T] // nil once the input finished or was withdrawn
	fn    func(T) *Handle[U]
	inner link[U]
}

// ThenAsync returns a handle that, once h completes, runs fn with its value
// on h's loop and then ends as the handle fn returned does (the result is
// flattened). That inner handle may live on any loop. h failing or being
// cancelled passes through without calling fn. Cancelling the result
// withdraws its interest from h or from the inner handle, whichever it is
// waiting on. fn returning nil fails the result with ErrNilHandle; a panic in
// fn fails it with a *PanicError.
func ThenAsync[T, U any](h *Handle[T], fn func(T) *Handle[U]) *Handle[U] {
	if h == nil || fn == nil {
		return refusedAfter[T, U](h)
	}
	n := &thenAsyncNode[T, U]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *thenAsyncNode[T, U]) inputDone() {
	src, fn := n.src, n.fn
	n.src, n.fn = nil, nil // fn runs at most once: what it captured goes with it
	if src == nil || n.declines(&src.core) {
		return
	}
	switch src.state.Load() {
	case uint32(Completed):
		n.state.CompareAndSwap(uint32(Pending), uint32(Running))
		inner, err := apply(func(v T) (*Handle[U], error) { return fn(v), nil }, src.val)
		switch {
		case err != nil:
			var zero U
			n.settle(zero, err)
		case inner == nil:
			var zero U
			n.settle(zero, ErrNilHandle)
		default:
			n.inner.attach(inner, n, &n.core, 0)
		}
	case uint32(Failed):
		var zero U
		n.settle(zero, src.err)
	default:
		n.cancel()
	}
}

func (n *thenAsyncNode[T, U]) onInput(int) {
	if n.ended() || n.inner.done {
		return
	}
	n.inner.done = true
	forward(&n.Handle, n.inner.in)
	n.inner.letGo()
}

func (n *thenAsyncNode[T, U]) stop() {
	n.fn = nil // never to run now
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
	n.inner.withdraw()
}

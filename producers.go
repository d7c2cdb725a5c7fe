package aio

import "errors"

// errNilReject is the error of a handle rejected with a nil error.
var errNilReject = errors.New("aio: rejected with a nil error")

// checkProducer returns the error a producer gives instead of starting.
func checkProducer(l *Loop, nilFunc bool) error {
	switch {
	case l == nil:
		return ErrNilLoop
	case nilFunc:
		return ErrNilFunc
	case l.state.Load() != stateRunning:
		return ErrStopped
	}
	return nil
}

// refusedAfter is the failed handle a continuation of h returns instead of
// starting when h or its function is nil: ErrNilHandle (no loop) for a nil
// h, else ErrNilFunc on h's loop. Callers test for nil themselves, so that
// the common path makes no call.
func refusedAfter[T, U any](h *Handle[T]) *Handle[U] {
	if h == nil {
		return Fail[U](nil, ErrNilHandle)
	}
	return Fail[U](h.Loop(), ErrNilFunc)
}

// callValue runs a user function, turning a panic into a *PanicError.
func callValue[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(p)
		}
	}()
	return fn()
}

// callErr runs a user function without results, turning a panic into a
// *PanicError.
func callErr(fn func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(p)
		}
	}()
	fn()
	return nil
}

// loopOrDetached maps a nil loop to the detached pseudo-loop.
func loopOrDetached(l *Loop) *Loop {
	if l == nil {
		return detached
	}
	return l
}

// Pure returns a handle already Completed with v. A nil l gives a handle with
// no loop.
func Pure[T any](l *Loop, v T) *Handle[T] {
	h := &Handle[T]{val: v}
	h.initFinished(loopOrDetached(l), uint32(Completed))
	return h
}

// Fail returns a handle already Failed with err (a nil err is replaced by an
// error saying so). A nil l gives a handle with no loop.
func Fail[T any](l *Loop, err error) *Handle[T] {
	if err == nil {
		err = errNilReject
	}
	h := &Handle[T]{err: err}
	h.initFinished(loopOrDetached(l), uint32(Failed))
	return h
}

// newDetachedHandle returns a pending handle with no loop; whoever settles it
// runs its callbacks inline.
func newDetachedHandle[T any]() *Handle[T] {
	h := &Handle[T]{}
	h.init(detached)
	return h
}

// New returns a handle settled by a producer: start runs on the loop (at once
// when New is called on the loop, else posted) with resolve and reject, which
// may be called from any goroutine, at any time later; calls after the handle
// is terminal are no-ops (the first call wins, a Cancel may win before it).
// A panic in start rejects the handle with a *PanicError. rejecting with a nil
// error fails the handle anyway. nil l or start, or a stopping loop, give a
// failed handle.
func New[T any](l *Loop, start func(resolve func(T), reject func(error))) *Handle[T] {
	if err := checkProducer(l, start == nil); err != nil {
		return Fail[T](l, err)
	}
	h := &Handle[T]{}
	h.init(l)
	// runInline spelled out: runInlineCall would cost an allocation on the
	// loop, since the func value of a method of a generic type carries its
	// dictionary and is allocated when it escapes.
	if l.OnLoop() {
		h.start(start)
	} else {
		l.runLater(func() { h.start(start) })
	}
	return h
}

// start runs New's start function on the loop, unless the handle was
// cancelled before it got there.
func (h *Handle[T]) start(start func(resolve func(T), reject func(error))) {
	if !h.state.CompareAndSwap(uint32(Pending), uint32(Running)) {
		return
	}
	h.loop.adoptProducer(&h.core)
	defer func() {
		if p := recover(); p != nil {
			var zero T
			h.settle(zero, newPanicError(p))
		}
	}()
	start(func(v T) { h.settle(v, nil) }, func(err error) {
		if err == nil {
			err = errNilReject
		}
		var zero T
		h.settle(zero, err)
	})
}

// Promise is a handle settled by explicit calls, the one-allocation form of
// New for code that holds on to its producer side (a protocol state machine
// completing a request, say). Resolve and Reject may be called from any
// goroutine; the first settling call (or a Cancel before it) wins.
type Promise[T any] struct {
	h Handle[T]
}

// NewPromise returns a pending promise on l. A nil or stopping loop gives a
// promise whose handle has already failed.
func NewPromise[T any](l *Loop) *Promise[T] {
	p := &Promise[T]{}
	if err := checkProducer(l, false); err != nil {
		p.h.err = err
		p.h.initFinished(loopOrDetached(l), uint32(Failed))
		return p
	}
	p.h.init(l)
	p.h.state.Store(uint32(Running))
	if l.OnLoop() {
		// At once, without adoptSelf's indirection: nothing can
		// have finished p yet.
		l.adoptProducer(&p.h.core)
	} else {
		p.h.adoptSelf()
	}
	return p
}

// Handle returns the promise's handle.
func (p *Promise[T]) Handle() *Handle[T] { return &p.h }

// Resolve completes the promise with v and reports whether this call settled
// it.
func (p *Promise[T]) Resolve(v T) bool { return p.h.settle(v, nil) }

// Reject fails the promise with err (nil is replaced by an error saying so)
// and reports whether this call settled it.
func (p *Promise[T]) Reject(err error) bool {
	if err == nil {
		err = errNilReject
	}
	var zero T
	return p.h.settle(zero, err)
}

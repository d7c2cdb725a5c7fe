package aio

import "context"

// Bind ties h to ctx and returns h: when ctx ends before h does, h is
// cancelled, outright, as by Cancel (whatever its other dependents want, as
// a Scope does). A ctx that is already done cancels h at once; one that can
// never end (context.Background, or nil) ties nothing. The tie is a
// context.AfterFunc, which starts no goroutine for the context package's
// own contexts (and Handle.Context), and it is undone when h ends, so a
// long-lived ctx keeps nothing of a handle that is gone. Bind of a nil h is
// nil. Any goroutine; the cancellation crosses to h's loop as Cancel does.
func (h *Handle[T]) Bind(ctx context.Context) *Handle[T] {
	if h == nil || ctx == nil || ctx.Done() == nil {
		return h
	}
	if ctx.Err() != nil {
		h.Cancel()
		return h
	}
	if statusOf(h.state.Load()).Terminal() {
		return h
	}
	h.watch(stopAfter(context.AfterFunc(ctx, func() { h.Cancel() })))
	return h
}

// stopAfter is Bind's watch on its handle: when the handle ends, it stops
// the context.AfterFunc, which lets go of the handle.
type stopAfter func() bool

func (f stopAfter) inputDone() { f() }

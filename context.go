package aio

import (
	"context"
	"sync/atomic"
	"time"
)

// Context returns a context that ends when h does, for goroutine code that
// takes a context: its Done is h's Done (closed once h is terminal and its
// cleanups have run), its Err is then context.Canceled whatever the outcome
// (h.Result tells which), and it has no deadline and no values. It is h
// itself, seen as a context: it costs nothing until its Done is asked for,
// and then what Done costs, every call returns an equal context, and it
// keeps h reachable. Contexts derived from it (WithTimeout, AfterFunc, and
// Bind's ties) start no goroutine: the handle tells them when it ends, and
// one cancelled first stops being told. Any goroutine.
func (h *Handle[T]) Context() context.Context { return (*handleContext)(&h.core) }

// handleContext is a handle seen as a context.Context: nothing is stored
// beside the handle. Any goroutine.
type handleContext core

func (c *handleContext) core() *core { return (*core)(c) }

func (c *handleContext) Deadline() (time.Time, bool) { return time.Time{}, false }

func (c *handleContext) Done() <-chan struct{} { return c.core().doneChan() }

// Err reads Done without making it: a handle whose Done was never asked for
// has none until its terminal transition stores a closed one.
func (c *handleContext) Err() error {
	if p := c.core().done.Load(); p != nil {
		select {
		case <-*p:
			return context.Canceled
		default:
		}
	}
	return nil
}

func (c *handleContext) Value(any) any { return nil }

func (c *handleContext) String() string { return "aio.Handle.Context" }

// AfterFunc is what the context package looks for in a parent (its
// afterFuncer) to tell a derived context, or run a context.AfterFunc,
// without a goroutine waiting on Done: f runs on a goroutine of its own
// once Done is closed, unless stop is called first, which reports whether
// it was and takes the registration off the handle.
func (c *handleContext) AfterFunc(f func()) (stop func() bool) {
	a := &ctxAfter{c: c.core(), f: f}
	a.c.watch(a)
	return a.stop
}

// ctxAfter is one AfterFunc of a handle's context: a watch on the handle.
type ctxAfter struct {
	c     *core         // immutable
	f     func()        // immutable
	state atomic.Uint32 // afterWaiting, then afterRan or afterStopped; any goroutine
}

const (
	afterWaiting uint32 = iota
	afterRan
	afterStopped
)

// inputDone runs f once Done is closed: the dependents are told before the
// terminal transition closes it, and f (a derived context's cancel) reads
// Err, which must not be nil by then.
func (a *ctxAfter) inputDone() { a.c.loop.runLater(a.run) }

func (a *ctxAfter) run() {
	if a.state.CompareAndSwap(afterWaiting, afterRan) {
		go a.f()
	}
}

func (a *ctxAfter) stop() bool {
	if !a.state.CompareAndSwap(afterWaiting, afterStopped) {
		return false
	}
	runInlineCall(a.c.loop, (*core).unwatch, a.c, dependent(a))
	return true
}

// Context returns a context for the body's goroutine-minded code (a
// library call that takes a context, a deadline over several Awaits): it
// is cancelled with cause ErrCancelled as soon as the Do handle is
// cancelled, before the Await the body is suspended in returns, and
// cancelled (context.Canceled) when the body returns. A cancel made while
// the body runs (by the body, or from another goroutine) reaches the
// context at the body's next Await or Context call, or as it returns: the
// body holds the loop that would tell it. While the loop stops,
// the cause matches ErrStopped too, and the context ends before the body
// goes on from an Await that Stop cancelled: what the body awaits is
// cancelled first. The cause says whether the loop was stopping when the
// cancellation reached it (a Cancel made off the loop just before Stop may
// read as the stop's). A deadline over the
// rest of the body is context.WithTimeout(co.Context(), d) with each
// awaited handle tied to it by Handle.Bind. Made on first use. In co's body
// only, as Await: elsewhere it returns a context already cancelled with
// cause ErrNotInBody.
func (co *Co) Context() context.Context {
	if co == nil || co.g.Load() != getg() {
		return notInBody
	}
	co.noticeCancel()
	if co.ctx == nil {
		co.ctx, co.endCtx = context.WithCancelCause(context.Background())
		if co.cause != nil {
			co.endCtx(co.cause)
		}
	}
	return co.ctx
}

// notInBody is the context of Co.Context called outside its body.
var notInBody = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(ErrNotInBody)
	return ctx
}()

// cancelContext ends the body's context early, with cause, now or as it is
// made: the first cause given is the one it keeps. On the loop.
func (co *Co) cancelContext(cause error) {
	if co.cause == nil {
		co.cause = cause
	}
	co.endContext(co.cause)
}

// endContext cancels the body's context, if it made one, with cause (nil:
// context.Canceled). On the loop.
func (co *Co) endContext(cause error) {
	if co.endCtx != nil {
		co.endCtx(cause)
	}
}

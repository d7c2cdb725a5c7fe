package aio

import (
	"errors"
	"fmt"
	"time"
)

// retryNode is the handle of Retry.
type retryNode[T any] struct {
	Handle[T]
	fn      func() *Handle[T]
	left    int           // attempts still allowed, the current one included
	backoff time.Duration // wait before the next attempt
	cur     link[T]       // the current attempt
	t       timer
	attempt int
}

// Retry calls fn (on the loop) for up to attempts attempts and ends as the
// first attempt that completes, or as the last one fails (with its error,
// wrapped in one that counts the attempts when there was more than one).
// Between attempts it waits on a loop timer: base after the first failure,
// then 2·base, 4·base, and so on (a negative base counts as 0: no wait;
// the wait doubles without bound, so keep attempts few or base small).
// Only failures are retried: an attempt that is cancelled cancels the retry,
// and one that fails with an error marked Permanent ends it at once.
// An attempt that failed because a context ended (DialContext's, say) is a
// failure too, and retried: Retry sees no context, so tie its handle to ctx
// (Bind) to end the retries with it. Cancelling the result withdraws from
// the running attempt, or disarms the timer, and no further attempt starts.
// attempts < 1 fails with an error wrapping ErrInvalidArgument; a nil l or
// fn, or a stopping loop, fail it as they fail every producer (see the
// package doc's Errors); fn returning nil fails with ErrNilHandle; a panic
// in fn fails with a *PanicError. Called on the loop, Retry makes the first
// attempt before it returns.
func Retry[T any](l *Loop, attempts int, base time.Duration, fn func() *Handle[T]) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	if attempts < 1 {
		return Fail[T](l, fmt.Errorf("%w: Retry with %d attempts, need at least 1", ErrInvalidArgument, attempts))
	}
	if base < 0 {
		base = 0
	}
	n := &retryNode[T]{fn: fn, left: attempts, backoff: base}
	n.init(l)
	n.prod = n
	n.t.owner = n
	n.t.index = -1
	n.loop.runInline(n.fire)
	return &n.Handle
}

func (n *retryNode[T]) base() *core { return &n.Handle.core }

// fire starts the next attempt. On the loop.
func (n *retryNode[T]) fire() {
	if n.ended() {
		return
	}
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	n.attempt++
	h, err := callValue(func() (*Handle[T], error) { return n.fn(), nil })
	switch {
	case err != nil:
		n.fn = nil // no attempt follows: what it captured goes with it
		var zero T
		n.settle(zero, err)
	case h == nil:
		n.fn = nil
		var zero T
		n.settle(zero, fmt.Errorf("%w: Retry attempt %d", ErrNilHandle, n.attempt))
	default:
		n.cur = link[T]{}
		n.cur.attach(h, n, &n.core, n.attempt)
	}
}

func (n *retryNode[T]) onInput(idx int) {
	if n.ended() || idx != n.attempt || n.cur.done {
		return
	}
	n.cur.done = true
	in := n.cur.in
	n.cur.letGo()
	if in.state.Load() != uint32(Failed) {
		n.fn = nil // no attempt follows: what it captured goes with it
		forward(&n.Handle, in)
		return
	}
	if n.left--; n.left <= 0 || isPermanent(in.err) {
		n.fn = nil
		var zero T
		err := in.err
		if n.attempt > 1 { // say that it was retried: the error is the last attempt's
			err = fmt.Errorf("aio: retry: %d attempts failed, the last: %w", n.attempt, err)
		}
		n.settle(zero, err)
		return
	}
	n.t.when = n.loop.deadline(n.backoff)   // from now, as every timer
	n.backoff = later(n.backoff, n.backoff) // doubled, saturated
	// The attempt may have ended where a dead loop's posts run (it raced
	// with Stop): addTimerFor cancels the retry then.
	n.loop.addTimerFor(&n.core, &n.t)
}

// Permanent marks err as an error that Retry does not retry: an attempt
// that fails with it, or with an error that wraps it, ends the retry at
// once with that error (an invalid certificate, a refusal by the
// server's policy: what another attempt will meet again). errors.Is and
// errors.As see through it to err; its text is err's. Permanent(nil) is
// nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

// permanentError is Permanent's mark.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// isPermanent reports whether err is marked Permanent.
func isPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// disarm disarms the backoff's timer at once when the retry is cancelled
// on the loop, so that Stats.Timers drops in the same callback (disarmer).
func (n *retryNode[T]) disarm() { n.loop.removeTimer(&n.t) }

func (n *retryNode[T]) stop() {
	n.fn = nil // no attempt follows: what it captured goes with it
	n.disarm()
	n.cur.withdraw()
}

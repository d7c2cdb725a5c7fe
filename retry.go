package aio

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// retryNode is the handle of Retry.
type retryNode[T any] struct {
	Handle[T]
	fn      func() *Handle[T]
	left    int           // attempts still allowed, the current one included
	backoff time.Duration // the wait before the next attempt, before jitter
	max     time.Duration // the most backoff grows to; 0: no bound
	jitter  float64       // RetryPolicy.Jitter
	cur     link[T]       // the current attempt
	t       timer
	attempt int
}

// RetryPolicy says how many attempts RetryWith makes and how it spaces
// them.
type RetryPolicy struct {
	// Attempts is the most attempts, the first included: at least 1.
	Attempts int
	// Base is the wait after the first failure; each wait after that is
	// twice the one before, up to Max. Negative counts as 0: no wait.
	Base time.Duration
	// Max bounds the wait (before Jitter); 0 means no bound (the wait
	// doubles, saturating, for as many attempts as there are). Negative is
	// an error.
	Max time.Duration
	// Jitter draws each wait w at random from [(1-Jitter)·w, w], so that
	// clients that failed together (a backend that went down for all of
	// them) do not all come back together: 0 waits w exactly, 1 anywhere
	// from 0 to w ("full jitter"). Outside [0, 1] is an error.
	Jitter float64
}

// Retry is RetryWith(l, RetryPolicy{Attempts: attempts, Base: base}, fn):
// waits of base, 2·base, 4·base and so on, without bound or jitter.
func Retry[T any](l *Loop, attempts int, base time.Duration, fn func() *Handle[T]) *Handle[T] {
	return RetryWith(l, RetryPolicy{Attempts: attempts, Base: base}, fn)
}

// RetryWith calls fn (on the loop) for up to p.Attempts attempts and ends
// as the first attempt that completes, or as the last one fails (with its
// error, wrapped in one that counts the attempts when there was more than
// one). Between attempts it waits on a loop timer, as p says: Base after
// the first failure, then twice that each time, up to Max, each drawn
// down at random by Jitter.
// Only failures are retried: an attempt that is cancelled cancels the retry,
// and one that fails with an error marked Permanent ends it at once.
// An attempt that failed because a context ended (DialContext's, say) is a
// failure too, and retried: RetryWith sees no context, so tie its handle
// to ctx (Bind) to end the retries with it. Cancelling the result
// withdraws from the running attempt, or disarms the timer, and no
// further attempt starts. A policy out of range (Attempts < 1, Max < 0,
// Jitter outside [0, 1]) fails it with an error wrapping
// ErrInvalidArgument; a nil l or fn, or a stopping loop, fail it as they
// fail every producer (see the package doc's Errors); fn returning nil
// fails with ErrNilHandle; a panic in fn fails with a *PanicError. Called
// on the loop, RetryWith makes the first attempt before it returns.
func RetryWith[T any](l *Loop, p RetryPolicy, fn func() *Handle[T]) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	if err := p.check(); err != nil {
		return Fail[T](l, err)
	}
	n := &retryNode[T]{fn: fn, left: p.Attempts, backoff: max(p.Base, 0), max: p.Max, jitter: p.Jitter}
	n.init(l)
	n.prod = n
	n.t.owner = n
	n.t.index = -1
	n.loop.runInline(n.fire)
	return &n.Handle
}

// check returns an error wrapping ErrInvalidArgument for a policy out of
// range.
func (p RetryPolicy) check() error {
	switch {
	case p.Attempts < 1:
		return fmt.Errorf("%w: Retry with %d attempts, need at least 1", ErrInvalidArgument, p.Attempts)
	case p.Max < 0:
		return fmt.Errorf("%w: Retry with a negative Max (%v)", ErrInvalidArgument, p.Max)
	case !(p.Jitter >= 0 && p.Jitter <= 1): // NaN too
		return fmt.Errorf("%w: Retry with Jitter %v, outside [0, 1]", ErrInvalidArgument, p.Jitter)
	}
	return nil
}

// nextWait returns the wait before the next attempt, w (backoff, up to
// max), drawn down by the jitter, from [(1-jitter)·w, w] (rnd returns a
// float in [0, 1)), and doubles the next one's, saturating. On the loop.
func (n *retryNode[T]) nextWait(rnd func() float64) time.Duration {
	w := n.backoff
	if n.max > 0 {
		w = min(w, n.max)
	}
	n.backoff = later(w, w)
	if n.jitter == 0 || w <= 0 {
		return w
	}
	return w - time.Duration(n.jitter*rnd()*float64(w))
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
	n.t.when = n.loop.deadline(n.nextWait(rand.Float64)) // from now, as every timer
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

package aio

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
	return Then(h, func(v T) (T, error) {
		fn(v)
		return v, nil
	})
}

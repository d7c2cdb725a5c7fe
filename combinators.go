package aio

import (
	"errors"
	"fmt"
	"time"
)

// ---- Catch ----

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
	if h == nil {
		return Fail[T](nil, ErrNilHandle)
	}
	if fn == nil {
		return Fail[T](h.Loop(), ErrNilFunc)
	}
	n := &catchNode[T]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *catchNode[T]) inputDone() {
	src := n.src
	n.src = nil
	if src == nil || n.ended() {
		return
	}
	if src.state.Load() == uint32(Failed) {
		fn := n.fn
		n.fn = nil
		v, err := apply(fn, src.err)
		n.settle(v, err)
		return
	}
	forward(&n.Handle, src)
}

func (n *catchNode[T]) stop() {
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
}

// ---- ThenAsync ----

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
	if h == nil {
		return Fail[U](nil, ErrNilHandle)
	}
	if fn == nil {
		return Fail[U](h.Loop(), ErrNilFunc)
	}
	n := &thenAsyncNode[T, U]{src: h, fn: fn}
	n.initAfter(&h.core)
	n.prod = n
	h.register(n)
	return &n.Handle
}

func (n *thenAsyncNode[T, U]) inputDone() {
	src := n.src
	n.src = nil
	if src == nil || n.ended() {
		return
	}
	switch src.state.Load() {
	case uint32(Completed):
		n.state.CompareAndSwap(uint32(Pending), uint32(Running))
		fn := n.fn
		n.fn = nil
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
	if n.ended() || n.inner.reported {
		return
	}
	n.inner.reported = true
	forward(&n.Handle, n.inner.in)
}

func (n *thenAsyncNode[T, U]) stop() {
	if src := n.src; src != nil {
		n.src = nil
		src.withdraw()
	}
	n.inner.withdraw()
}

// ---- All ----

// allNode is the handle of All.
type allNode[T any] struct {
	Handle[[]T]
	links []link[T]
	vals  []T
	left  int
}

// All returns a handle that completes with the values of hs in input order
// once all of them completed. The first failure fails it with that error and
// withdraws its interest in the others (cancelling those nobody else wants); an
// input cancelled cancels it. Cancelling the result withdraws from every input
// still running. The result is pinned to the first input's loop; inputs may
// live on any loop. All of no inputs is completed with an empty slice and has
// no loop; a nil input fails it with ErrNilHandle.
func All[T any](hs ...*Handle[T]) *Handle[[]T] {
	if len(hs) == 0 {
		return Pure[[]T](nil, []T{})
	}
	if err := checkInputs(hs); err != nil {
		return Fail[[]T](nil, err)
	}
	n := &allNode[T]{links: make([]link[T], len(hs)), vals: make([]T, len(hs)), left: len(hs)}
	n.init(hs[0].loop)
	n.prod = n
	attachInputs(&n.core, n, n.links, hs)
	return &n.Handle
}

func checkInputs[T any](hs []*Handle[T]) error {
	for i, h := range hs {
		if h == nil {
			return fmt.Errorf("%w: input %d", ErrNilHandle, i)
		}
	}
	return nil
}

func (n *allNode[T]) onInput(i int) {
	k := &n.links[i]
	if n.ended() || k.reported {
		return
	}
	k.reported = true
	in := k.in
	switch in.state.Load() {
	case uint32(Completed):
		n.vals[i] = in.val
		if n.left--; n.left == 0 {
			vals := n.vals
			n.vals = nil
			n.settle(vals, nil)
		}
	case uint32(Failed):
		n.vals = nil
		withdrawAll(n.links)
		n.settle(nil, in.err)
	default:
		n.cancel()
	}
}

func (n *allNode[T]) stop() { withdrawAll(n.links) }

// attachInputs points links at hs and registers them on the sink's loop.
func attachInputs[T any](self *core, node sink, links []link[T], hs []*Handle[T]) {
	for i, h := range hs {
		links[i].init(h, node, self, i)
	}
	self.onOwnLoop(func() { registerAll(self, links) })
}

// registerAll registers every link of a sink, unless it already ended (then
// it wants none of its inputs). On the sink's loop.
func registerAll[T any](self *core, links []link[T]) {
	for i := range links {
		links[i].registerLive(self)
	}
}

// withdrawAll withdraws from every input not consumed yet.
func withdrawAll[T any](links []link[T]) {
	for i := range links {
		links[i].withdraw()
	}
}

// ---- Race and Any ----

// raceNode is the handle of Race and Any.
type raceNode[T any] struct {
	Handle[T]
	links     []link[T]
	anyMode   bool    // Any: only a completion wins
	errs      []error // Any: the failures so far, by input
	left      int     // inputs not yet ended
	cancelled int     // inputs that ended cancelled
}

// Race returns a handle that ends as the first of hs to complete or fail
// does; the others are withdrawn from (and so cancelled, unless another
// dependent wants them). An input cancelled does not decide the race; if all
// of them end cancelled, so does the result. Race of no inputs fails with
// ErrNoInputs and has no loop. The result is pinned to the first input's loop.
func Race[T any](hs ...*Handle[T]) *Handle[T] { return race(hs, false) }

// Any returns a handle that completes with the value of the first of hs to
// complete; the others are then withdrawn from. If none completes, it fails
// with errors.Join of every input's error in input order (ErrCancelled for an
// input that was cancelled), or is cancelled if every input was. Any of no
// inputs fails with ErrNoInputs and has no loop.
func Any[T any](hs ...*Handle[T]) *Handle[T] { return race(hs, true) }

func race[T any](hs []*Handle[T], anyMode bool) *Handle[T] {
	if len(hs) == 0 {
		return Fail[T](nil, ErrNoInputs)
	}
	if err := checkInputs(hs); err != nil {
		return Fail[T](nil, err)
	}
	n := &raceNode[T]{links: make([]link[T], len(hs)), anyMode: anyMode, left: len(hs)}
	if anyMode {
		n.errs = make([]error, len(hs))
	}
	n.init(hs[0].loop)
	n.prod = n
	attachInputs(&n.core, n, n.links, hs)
	return &n.Handle
}

func (n *raceNode[T]) onInput(i int) {
	k := &n.links[i]
	if n.ended() || k.reported {
		return
	}
	k.reported = true
	in := k.in
	n.left--
	switch st := in.state.Load(); {
	case st == uint32(Completed) || (st == uint32(Failed) && !n.anyMode):
		withdrawAll(n.links)
		forward(&n.Handle, in)
		return
	case st == uint32(Failed):
		n.errs[i] = in.err
	default:
		n.cancelled++
		if n.anyMode {
			n.errs[i] = ErrCancelled
		}
	}
	if n.left > 0 {
		return
	}
	if n.cancelled == len(n.links) {
		n.cancel()
		return
	}
	var zero T
	n.settle(zero, errors.Join(n.errs...))
}

func (n *raceNode[T]) stop() { withdrawAll(n.links) }

// ---- Within ----

// withinNode is the handle of Within: the result, the input and the timer.
type withinNode[T any] struct {
	Handle[T]
	in link[T]
	t  timer
	// gt replaces t for an input with no loop to run a timer on (Stop's
	// handle, or one derived from it): a Go timer whose callback runs fire
	// on the detached pseudo-loop. Set before the input is registered.
	gt *time.Timer
	d  time.Duration
}

// Within returns a handle that ends as h does if h ends within d; otherwise
// it fails with an error matching ErrTimeout when d passes, and withdraws its
// interest in h (which is cancelled unless another dependent wants it). d
// counts as in Delay; d <= 0 times out on the next iteration unless h has
// already ended.
func Within[T any](h *Handle[T], d time.Duration) *Handle[T] {
	if h == nil {
		return Fail[T](nil, ErrNilHandle)
	}
	l := h.loop
	if l == detached && statusOf(h.state.Load()).Terminal() {
		return Finally(h, func() {}) // it cannot time out any more
	}
	n := &withinNode[T]{d: d}
	n.init(l)
	n.prod = n
	n.in.init(h, n, &n.core, 0)
	if l == detached {
		// A loop-less handle still pending waits for a loop's teardown
		// (Stop's handle, or derived from it): no loop timer to arm.
		n.gt = time.AfterFunc(max(d, 0), func() { detached.exec(n.fire) })
	} else {
		n.startTimer(&n.t, n, d)
	}
	n.onOwnLoop(func() { n.in.registerLive(&n.core) })
	return &n.Handle
}

func (n *withinNode[T]) onInput(int) {
	if n.ended() || n.in.reported {
		return
	}
	n.in.reported = true
	n.disarm()
	forward(&n.Handle, n.in.in)
}

func (n *withinNode[T]) base() *core { return &n.Handle.core }

func (n *withinNode[T]) fire() {
	if n.ended() {
		return
	}
	n.in.withdraw()
	var zero T
	n.settle(zero, fmt.Errorf("%w after %v", ErrTimeout, n.d))
}

func (n *withinNode[T]) disarm() {
	if n.gt != nil {
		n.gt.Stop()
		return
	}
	n.loop.removeTimer(&n.t)
}

func (n *withinNode[T]) stop() {
	n.disarm()
	n.in.withdraw()
}

// ---- Retry ----

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
// first attempt that completes, or as the last one fails. Between attempts it
// waits on a loop timer: base after the first failure, then 2·base, 4·base,
// and so on. Only failures are retried: an attempt that is cancelled cancels
// the retry. Cancelling the result withdraws from the running attempt, or
// disarms the timer, and no further attempt starts. attempts < 1 fails with an
// error; fn returning nil fails with ErrNilHandle; a panic in fn fails with a
// *PanicError.
func Retry[T any](l *Loop, attempts int, base time.Duration, fn func() *Handle[T]) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	if attempts < 1 {
		return Fail[T](l, fmt.Errorf("aio: Retry with %d attempts: need at least 1", attempts))
	}
	if base < 0 {
		base = 0
	}
	n := &retryNode[T]{fn: fn, left: attempts, backoff: base}
	n.init(l)
	n.prod = n
	n.t.owner = n
	n.t.index = -1
	n.onOwnLoop(n.fire)
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
		var zero T
		n.settle(zero, err)
	case h == nil:
		var zero T
		n.settle(zero, fmt.Errorf("%w: Retry attempt %d", ErrNilHandle, n.attempt))
	default:
		n.cur = link[T]{}
		n.cur.attach(h, n, &n.core, n.attempt)
	}
}

func (n *retryNode[T]) onInput(idx int) {
	if n.ended() || idx != n.attempt || n.cur.reported {
		return
	}
	n.cur.reported = true
	in := n.cur.in
	if in.state.Load() != uint32(Failed) {
		forward(&n.Handle, in)
		return
	}
	if n.left--; n.left <= 0 {
		var zero T
		n.settle(zero, in.err)
		return
	}
	n.t.when = n.loop.Now() + n.backoff
	n.backoff *= 2
	n.loop.addTimer(&n.t)
}

func (n *retryNode[T]) stop() {
	n.loop.removeTimer(&n.t)
	n.cur.withdraw()
}

// ---- Bracket ----

// bracketNode is the handle of Bracket.
type bracketNode[R, T any] struct {
	Handle[T]
	acq      link[R]
	use      link[T]
	release  func(R)
	useFn    func(R) *Handle[T]
	res      R
	acquired bool // acquire completed: release is owed
	holdAcq  bool // cancelled while acquiring: Done waits for acquire to end
	holdUse  bool // cancelled while using: Done waits for use to end
}

// Bracket acquires a resource, uses it, and always releases it: once acquire
// completes with r, use(r) runs on the loop, and when the handle it returns
// ends in any way (completes, fails or is cancelled), release(r) runs, then
// the result ends as use's handle did.
//
// Cancelling the result withdraws from acquire or use, whichever runs (so it
// is cancelled unless another dependent wants it), and release runs once that
// handle has ended, even if it lives on another loop or is a Work job: never
// while use may still be using the resource. If acquire completes anyway, the
// resource is released as soon as it arrives. The result's Done closes only
// after that: release runs exactly once iff acquire completed, always on the
// loop, always before the result's Done closes. If acquire fails or is
// cancelled, use and release never run. A panic in use or release fails the
// result with a *PanicError (release still runs after a panic in use).
func Bracket[R, T any](acquire *Handle[R], release func(R), use func(R) *Handle[T]) *Handle[T] {
	if acquire == nil {
		return Fail[T](nil, ErrNilHandle)
	}
	if release == nil || use == nil {
		return Fail[T](acquire.Loop(), ErrNilFunc)
	}
	n := &bracketNode[R, T]{release: release, useFn: use}
	n.init(acquire.loop)
	n.prod = n
	n.acq.init(acquire, n, &n.core, 0)
	// Registered even if the bracket already ended: a resource that arrives
	// after a cancellation must still be released (acquireDone).
	n.onOwnLoop(func() {
		k := &n.acq
		gaveUp := k.reported || n.ended()
		k.register(&n.core)
		if gaveUp {
			k.reported = true
			k.in.withdrawFrom()
		}
	})
	return &n.Handle
}

func (n *bracketNode[R, T]) onInput(idx int) {
	if idx == 0 {
		n.acquireDone()
		return
	}
	if n.holdUse {
		// Cancelled while using, and use has now ended: release, then let
		// the cancellation finish.
		_ = n.doRelease()
		n.unhold(&n.holdUse)
		return
	}
	if n.use.reported {
		return
	}
	n.use.reported = true
	if n.ended() {
		// Cancelled from another goroutine, its terminal transition still
		// queued: use has ended, so stop releases at once instead of
		// holding for a report that has come already.
		return
	}
	if err := n.doRelease(); err != nil {
		var zero T
		n.settle(zero, err)
		return
	}
	forward(&n.Handle, n.use.in)
}

func (n *bracketNode[R, T]) acquireDone() {
	in := n.acq.in
	completed := in.state.Load() == uint32(Completed)
	if completed {
		n.res, n.acquired = in.val, true
	}
	if n.ended() || n.acq.reported {
		// Cancelled while acquiring: give back a resource that arrived
		// anyway. If the terminal transition is still queued (a Cancel
		// from another goroutine), the report marks acquire as consumed,
		// so that stop does not hold for a report that has come already.
		n.acq.reported = true
		_ = n.doRelease()
		n.unhold(&n.holdAcq)
		return
	}
	n.acq.reported = true
	if !completed {
		forwardFailure(&n.Handle, in)
		return
	}
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	useFn := n.useFn
	n.useFn = nil
	h, err := apply(func(r R) (*Handle[T], error) { return useFn(r), nil }, n.res)
	if err == nil && h == nil {
		err = ErrNilHandle
	}
	if err != nil {
		_ = n.doRelease()
		var zero T
		n.settle(zero, err)
		return
	}
	n.use.attach(h, n, &n.core, 1)
}

// doRelease runs release once if the resource was acquired.
func (n *bracketNode[R, T]) doRelease() error {
	if !n.acquired {
		return nil
	}
	n.acquired = false
	release, r := n.release, n.res
	n.release = nil
	var zero R
	n.res = zero
	return callErr(func() { release(r) })
}

// stop runs when the result is cancelled: withdraw from what runs and hold
// the terminal transition until it has ended (see onInput).
func (n *bracketNode[R, T]) stop() {
	if !n.acq.reported {
		n.hold(&n.holdAcq)
		n.acq.withdraw()
		return
	}
	if n.use.registered && !n.use.reported {
		n.hold(&n.holdUse)
		n.use.withdraw()
		return
	}
	_ = n.doRelease()
}

// forwardFailure settles h as the failed or cancelled input in ended.
func forwardFailure[T, U any](h *Handle[T], in *Handle[U]) {
	if in.state.Load() == uint32(Failed) {
		var zero T
		h.settle(zero, in.err)
		return
	}
	h.cancel()
}

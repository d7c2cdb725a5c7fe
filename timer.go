package aio

import (
	"fmt"
	"math"
	"time"
)

// timer is one entry of a loop's timer heap. Deadlines are loop-relative
// monotonic nanoseconds; ties are broken by creation sequence, so timers with
// equal deadlines fire in the order they were created.
type timer struct {
	when  time.Duration // deadline, relative to the loop's base
	seq   uint64        // creation order, the tie breaker
	index int           // position in the heap; -1 when not armed
	owner timerOwner
	// periodic: fire arms the timer again (Every). It stays counted in
	// Stats.Timers while it fires, so that the count, read off the loop
	// at any moment, does not dip at every run of a ticker armed all
	// along.
	periodic bool
}

// timerOwner is the handle behind a timer.
type timerOwner interface {
	fire()       // the deadline passed; on the loop, after the timer left the heap
	base() *core // the handle, for Stop
}

func (t *timer) before(u *timer) bool {
	return t.when < u.when || (t.when == u.when && t.seq < u.seq)
}

// timerHeap is a 4-ary min-heap, as in Go's runtime: half the depth of a binary
// heap, and the four children of a node share a cache line or two.
type timerHeap []*timer

func (h timerHeap) peek() *timer {
	if len(h) == 0 {
		return nil
	}
	return h[0]
}

func (h timerHeap) all() []*timer { return append([]*timer(nil), h...) }

func (h *timerHeap) push(t *timer) {
	t.index = len(*h)
	*h = append(*h, t)
	h.up(t.index)
}

// remove takes t out of the heap; a timer not armed is left alone.
func (h *timerHeap) remove(t *timer) bool {
	i := t.index
	if i < 0 || i >= len(*h) || (*h)[i] != t {
		return false
	}
	last := len(*h) - 1
	if i != last {
		(*h)[i] = (*h)[last]
		(*h)[i].index = i
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	if i != last {
		h.down(i)
		h.up(i)
	}
	t.index = -1
	return true
}

func (h timerHeap) up(i int) {
	t := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !t.before(h[p]) {
			break
		}
		h[i] = h[p]
		h[i].index = i
		i = p
	}
	h[i] = t
	t.index = i
}

func (h timerHeap) down(i int) {
	n := len(h)
	t := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best := c
		for k := c + 1; k < c+4 && k < n; k++ {
			if h[k].before(h[best]) {
				best = k
			}
		}
		if !h[best].before(t) {
			break
		}
		h[i] = h[best]
		h[i].index = i
		i = best
	}
	h[i] = t
	t.index = i
}

// addTimer arms t. On the loop.
func (l *Loop) addTimer(t *timer) {
	l.checkOnLoop()
	l.timerSeq++
	t.seq = l.timerSeq
	l.timers.push(t)
	if l.firing == t {
		l.firing = nil // still counted (runTimers)
		return
	}
	l.ntimers.Add(1)
}

// removeTimer disarms t if armed. On the loop.
func (l *Loop) removeTimer(t *timer) {
	l.checkOnLoop()
	if l.timers.remove(t) {
		l.ntimers.Add(-1)
	}
}

// runTimers fires every timer whose deadline is not after the cached time, in
// (deadline, creation) order. A timer armed by a callback in this phase is due
// from a reading taken after the cached time (deadline), so it waits for the
// next iteration's timers phase, as libuv's do since 1.45.
func (l *Loop) runTimers() {
	now := l.Now()
	for len(l.timers) > 0 {
		t := l.timers[0]
		if t.when > now {
			return
		}
		l.timers.remove(t)
		if t.periodic {
			l.firing = t // counted until fire has armed it again, or not
		} else {
			l.ntimers.Add(-1)
		}
		l.enter(phaseTimers)
		l.m.timerLag.add(now - t.when)
		l.busy = true
		t.owner.fire()
		if l.firing == t { // a periodic timer that stopped
			l.firing = nil
			l.ntimers.Add(-1)
		}
		l.drain()
	}
}

// armTimer arms t, the timer of handle c, from any goroutine: directly on the
// loop, else by a posted job (addTimerFor).
func (l *Loop) armTimer(c *core, t *timer) {
	if l.OnLoop() {
		l.addTimer(t)
		return
	}
	l.runLater(func() { l.addTimerFor(c, t) })
}

// addTimerFor arms t, the timer of handle c, where l runs its jobs: on the
// loop, or where a dead loop's posts run. Not if c has ended (its finish
// may still be queued). On a dead loop nobody would fire it (a job that
// raced with Stop, or came after it): c is cancelled instead, after the
// jobs queued before, which may end it (an input registered in the same
// job that had ended).
func (l *Loop) addTimerFor(c *core, t *timer) {
	switch {
	case c.endedOrEnding():
	case l.state.Load() == stateDead:
		l.runLater(func() {
			if !c.endedOrEnding() {
				c.cancel()
			}
		})
	default:
		l.addTimer(t)
	}
}

// endedOrEnding reports whether c has finished or reached its terminal
// state (its finish may still be queued). On c's loop.
func (c *core) endedOrEnding() bool { return c.finished || statusOf(c.state.Load()).Terminal() }

// setTimer makes c a running handle driven by its own timer t, due d from
// now (see deadline), not armed yet.
func (c *core) setTimer(t *timer, owner timerOwner, d time.Duration) {
	t.owner, t.index, t.when = owner, -1, c.loop.deadline(d)
	c.state.CompareAndSwap(uint32(Pending), uint32(Running))
}

// startTimer sets t (setTimer) and arms it from any goroutine; cancelling c
// disarms t at once (its producer is a disarmer).
func (c *core) startTimer(t *timer, owner timerOwner, d time.Duration) {
	c.setTimer(t, owner, d)
	c.loop.armTimer(c, t)
}

// deadline turns a delay into a loop-relative deadline, counted from the
// clock read now. Not from the cached time (libuv's choice, uv_now): a
// callback that ran long, or one late in a busy iteration, would arm a
// timer that fires early by that much, where Go code expects, as of
// time.AfterFunc, at least d after the call. Negative delays count as 0.
func (l *Loop) deadline(d time.Duration) time.Duration {
	if d < 0 {
		d = 0
	}
	return later(l.clock(), d)
}

// later is t+d for d >= 0, saturated at the largest Duration: a delay of
// math.MaxInt64 ("never", some 292 years) must not wrap to a deadline in
// the past, which would fire at once.
func later(t, d time.Duration) time.Duration {
	if d > math.MaxInt64-t {
		return math.MaxInt64
	}
	return t + d
}

// delayNode is the handle of Delay: the handle, its timer and its function in
// one allocation.
type delayNode[T any] struct {
	Handle[T]
	t  timer
	fn func() (T, error)
}

// Delay returns a handle that runs fn on the loop once d has passed and
// completes with its result (fails with its error). Cancelling the handle
// before it fires disarms the timer at once (Stats.Timers drops) and fn
// never runs; a Cancel from another goroutine that lands while fn runs
// still returns true, and what fn returns is dropped. d
// counts from the call, on the loop too (not from the cached Now, as libuv
// counts: fn never runs before d has passed). d <= 0 fires on the next
// iteration. A nil fn or loop gives a failed handle (ErrNilFunc,
// ErrNilLoop); a stopping loop, one failed with ErrStopped. A panic in fn
// fails the handle with a *PanicError.
func Delay[T any](l *Loop, d time.Duration, fn func() (T, error)) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	n := &delayNode[T]{fn: fn}
	n.init(l)
	n.prod = n
	n.startTimer(&n.t, n, d)
	return &n.Handle
}

func (n *delayNode[T]) base() *core { return &n.Handle.core }

func (n *delayNode[T]) fire() {
	// The timer has let go of the handle: if it does not end here (fn
	// calls runtime.Goexit), its cleanups need their record armed.
	defer n.armUnlessEnded()
	if n.state.Load() != uint32(Running) {
		return
	}
	v, err := callValue(n.fn)
	n.fn = nil
	n.settle(v, err)
}

// stop disarms the timer of a cancelled handle, arming its record first
// (see timerHeld).
func (n *delayNode[T]) stop() {
	n.fn = nil // never to run now: what it captured goes with it
	n.armRecord()
	n.disarm()
}
func (n *delayNode[T]) disarm()          { n.loop.removeTimer(&n.t) }
func (n *delayNode[T]) timerHolds() bool { return n.t.index >= 0 }

// Sleep returns a handle that completes after d. It is Delay with nothing to
// run.
func Sleep(l *Loop, d time.Duration) *Handle[struct{}] { return Delay(l, d, nothingToDo) }

func nothingToDo() (struct{}, error) { return struct{}{}, nil }

// everyNode is the handle of Every.
type everyNode struct {
	Handle[struct{}]
	t      timer
	period time.Duration
	fn     func()
}

// Every returns a handle that runs fn on the loop every d until it is
// cancelled; it never completes by itself. The next run is due d after the
// previous deadline, so runs do not drift; if the loop fell behind by more
// than a period, missed runs are skipped rather than run in a burst. d <= 0
// gives a handle failed with ErrInvalidArgument (a zero period would spin
// the loop). A panic in fn
// fails the handle with a *PanicError and stops the repetition.
func Every(l *Loop, d time.Duration, fn func()) *Handle[struct{}] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[struct{}](l, err)
	}
	if d <= 0 {
		return Fail[struct{}](l, fmt.Errorf("%w: Every period %v, must be positive", ErrInvalidArgument, d))
	}
	n := &everyNode{fn: fn, period: d}
	n.t.periodic = true
	n.init(l)
	n.prod = n
	n.startTimer(&n.t, n, d)
	return &n.Handle
}

func (n *everyNode) base() *core { return &n.Handle.core }

func (n *everyNode) fire() {
	// Unless fn ended the handle or the timer was armed again for the next
	// run, the timer has let go of it (see timerHeld).
	defer n.armUnlessEnded()
	if n.state.Load() != uint32(Running) {
		return
	}
	if err := callErr(n.fn); err != nil {
		n.fn = nil // the repetition stops: what it captured goes with it
		n.settle(struct{}{}, err)
		return
	}
	if n.state.Load() != uint32(Running) { // fn cancelled its own handle
		return
	}
	next := later(n.t.when, n.period)
	// A reading, not the cached time: a run that took longer than a period
	// has put the loop behind by that much too, and the run it passed is
	// skipped, not run late.
	if now := n.loop.clock(); next <= now {
		next = later(now, n.period-(now-n.t.when)%n.period)
	}
	n.t.when = next
	n.loop.addTimer(&n.t)
}

// stop disarms the timer of a cancelled handle, arming its record first
// (see timerHeld).
func (n *everyNode) stop() {
	n.fn = nil // never to run now: what it captured goes with it
	n.armRecord()
	n.disarm()
}
func (n *everyNode) disarm()          { n.loop.removeTimer(&n.t) }
func (n *everyNode) timerHolds() bool { return n.t.index >= 0 }

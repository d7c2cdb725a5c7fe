package aio

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Timers fire in deadline order, and timers with equal deadlines in creation
// order.
func TestTimerOrder(t *testing.T) {
	l := startLoop(t)
	var order []int // on the loop
	done := make(chan struct{})
	onLoop(t, l, func() {
		ds := []time.Duration{5, 1, 3, 1, 5, 3, 0, 0}
		for i, d := range ds {
			Delay(l, d*time.Millisecond, func() (int, error) {
				order = append(order, i)
				if len(order) == len(ds) {
					close(done)
				}
				return i, nil
			})
		}
	})
	recv(t, done)
	var got []int
	onLoop(t, l, func() { got = append(got, order...) })
	require.Equal(t, []int{6, 7, 1, 3, 2, 5, 0, 4}, got)
}

// Many timers with random-ish deadlines come out sorted: the 4-ary heap keeps
// its invariant through pushes and removals.
func TestTimerHeapManyWithRemovals(t *testing.T) {
	l := startLoop(t)
	const n = 2000
	var fired []int // the timers' indexes, in firing order, on the loop
	hs := make([]*Handle[int], n)
	when := map[*core]time.Duration{} // each armed timer's deadline
	done := make(chan struct{})
	var live atomic.Int64
	onLoop(t, l, func() {
		for i := 0; i < n; i++ {
			d := time.Duration((i*7919)%200) * 100 * time.Microsecond
			hs[i] = Delay(l, d, func() (int, error) {
				fired = append(fired, i)
				if live.Add(-1) == 0 {
					close(done)
				}
				return 0, nil
			})
			if i%3 == 0 {
				hs[i].Cancel() // removed from the middle of the heap at once
			} else {
				live.Add(1)
			}
		}
		assert.Equal(t, int(live.Load()), l.Stats().Timers)
		for _, tm := range l.timers {
			when[tm.owner.base()] = tm.when
		}
	})
	recv(t, done)
	var got []int
	onLoop(t, l, func() { got = append(got, fired...) })
	require.Len(t, got, int(n-(n+2)/3))
	for k := 1; k < len(got); k++ {
		require.LessOrEqual(t, when[&hs[got[k-1]].core], when[&hs[got[k]].core], "fired out of deadline order")
	}
}

// A timer never fires early: measured from the call, off the loop or on
// it, it fires no sooner than its delay.
func TestTimerNeverEarly(t *testing.T) {
	l := startLoop(t)
	for _, d := range []time.Duration{50 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond, 7 * time.Millisecond} {
		start := time.Now()
		var at time.Time
		h := Delay(l, d, func() (int, error) { at = time.Now(); return 0, nil })
		_, err := wait(t, h)
		require.NoError(t, err)
		require.GreaterOrEqual(t, at.Sub(start), d, "timer of %v fired early", d)
	}
	// On the loop too, late in a long callback: d counts from the call,
	// not from the time the loop cached when the iteration began.
	var start, at time.Time
	var h *Handle[int]
	onLoop(t, l, func() {
		time.Sleep(30 * time.Millisecond) // a callback that runs long, not a synchronisation
		start = time.Now()
		h = Delay(l, 50*time.Millisecond, func() (int, error) { at = time.Now(); return 0, nil })
	})
	_, err := wait(t, h)
	require.NoError(t, err)
	require.GreaterOrEqual(t, at.Sub(start), 50*time.Millisecond, "a timer armed on the loop fired early")
}

// UT-05: cancelling a timer handle disarms the timer at once (Stats.Timers
// drops in the same callback) and its function never runs.
func TestCancelTimerRemovesItAtOnce(t *testing.T) {
	l := startLoop(t)
	var ran atomic.Bool
	var before, after int
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Delay(l, time.Hour, func() (int, error) { ran.Store(true); return 0, nil })
		before = l.Stats().Timers
		assert.True(t, h.Cancel())
		after = l.Stats().Timers
	})
	require.Equal(t, 1, before)
	require.Equal(t, 0, after)
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	require.False(t, ran.Load())

	// Off the loop: the timer leaves the heap when the loop processes the cancel.
	h = Delay(l, time.Hour, func() (int, error) { ran.Store(true); return 0, nil })
	onLoop(t, l, func() {})
	require.Equal(t, 1, l.Stats().Timers)
	require.True(t, h.Cancel())
	_, _ = wait(t, h)
	require.Equal(t, 0, l.Stats().Timers)
	require.False(t, ran.Load())
}

func TestSleepAndNegativeDelay(t *testing.T) {
	l := startLoop(t)
	_, err := wait(t, Sleep(l, time.Millisecond))
	require.NoError(t, err)
	v, err := wait(t, Delay(l, -time.Hour, func() (int, error) { return 1, nil }))
	require.NoError(t, err, "a negative delay fires on the next iteration")
	require.Equal(t, 1, v)
}

// Every repeats until cancelled; the handle then ends Cancelled and the timer
// is gone.
func TestEveryRepeatsUntilCancelled(t *testing.T) {
	l := startLoop(t)
	var n atomic.Int32
	third := make(chan struct{})
	h := Every(l, time.Millisecond, func() {
		if n.Add(1) == 3 {
			close(third)
		}
	})
	recv(t, third)
	require.Equal(t, Running, h.Status())
	require.True(t, h.Cancel())
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	onLoop(t, l, func() {})
	require.Equal(t, 0, l.Stats().Timers)
	got := n.Load()
	onLoop(t, l, func() {})
	require.Equal(t, got, n.Load())

	// Cancelled from inside its own callback.
	var m atomic.Int32
	var self *Handle[struct{}]
	onLoop(t, l, func() {
		self = Every(l, time.Millisecond, func() {
			if m.Add(1) == 2 {
				self.Cancel()
			}
		})
	})
	_, err = wait(t, self)
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, int32(2), m.Load())

	// A panic stops it with a *PanicError.
	bad := Every(l, time.Millisecond, func() { panic("tick") })
	_, err = wait(t, bad)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
}

// An Every's timer counts in Stats.Timers all along, also while it fires:
// read off the loop (a /metrics scrape), the count of a loop with one
// ticker does not dip to 0 at every run. One that stops in its run, by
// cancelling itself, is no longer counted when the run ends.
func TestEveryCountsWhileFiring(t *testing.T) {
	l := startLoop(t)
	const runs = 5
	seen := make(chan int, runs)
	var tick *Handle[struct{}]
	onLoop(t, l, func() {
		tick = Every(l, time.Millisecond, func() {
			seen <- l.Stats().Timers
			if len(seen) == runs {
				tick.Cancel()
			}
		})
	})
	_, err := wait(t, tick)
	require.ErrorIs(t, err, ErrCancelled)
	for range runs {
		require.Equal(t, 1, recv(t, seen), "the ticker's timer while it fires")
	}
	onLoop(t, l, func() {})
	require.Equal(t, 0, l.Stats().Timers)

	// A ticker whose function panics fails and leaves nothing armed.
	h := Every(l, time.Millisecond, func() { panic("boom") })
	_, err = wait(t, h)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	onLoop(t, l, func() {})
	require.Equal(t, 0, l.Stats().Timers)
}

// math.MaxInt64 is "never" (some 292 years): a deadline that far off
// saturates instead of wrapping into the past, where it would fire at
// once. Each huge timer here is armed before a 1 ms Sleep, which would
// fire after it if it had wrapped: once the Sleep has ended, none of them
// may have.
func TestHugeDelaysNeverFire(t *testing.T) {
	l := startLoop(t)
	var ticks, attempts atomic.Int32
	offLoop := Sleep(l, math.MaxInt64) // from the clock
	var onLoopDelay, every, retry, within *Handle[struct{}]
	onLoop(t, l, func() { // from the loop's cached time
		onLoopDelay = Sleep(l, math.MaxInt64)
		every = Every(l, math.MaxInt64, func() { ticks.Add(1) })
		retry = Retry(l, 3, math.MaxInt64, func() *Handle[struct{}] {
			attempts.Add(1)
			return Fail[struct{}](l, errBoom)
		})
		within = Within(NewPromise[struct{}](l).Handle(), math.MaxInt64)
	})
	accepted := make(chan struct{})
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{IdleTimeout: math.MaxInt64,
		ReadTimeout: math.MaxInt64, WriteTimeout: math.MaxInt64}}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		close(accepted)
	})
	require.NoError(t, err)
	netDial(t, ln)
	recv(t, accepted)
	_, err = wait(t, Sleep(l, time.Millisecond))
	require.NoError(t, err)
	for _, h := range []*Handle[struct{}]{offLoop, onLoopDelay, every, retry, within} {
		require.Equal(t, Running, h.Status())
		h.Cancel()
	}
	require.Zero(t, ticks.Load())
	require.Equal(t, int32(1), attempts.Load(), "the second attempt waits math.MaxInt64")
	require.Equal(t, 1, l.Stats().TCPOpen, "a connection timed out")
}

// Within and AllSettledWithin of a handle that has ended end as it did,
// whatever d, called from any goroutine: the deadline is armed after the
// input is looked at, in the same job (two posts let the loop take them in
// two batches, with the timers phase between them, or a dead loop's run
// them in any order).
func TestWithinOfAnEndedHandle(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l, other := startLoopOn(t, rt), startLoopOn(t, rt)
	h := Pure(l, 1)
	for i := 0; i < 100; i++ {
		v, err := wait(t, Within(h, 0))
		require.NoError(t, err, "off the loop, round %d", i)
		require.Equal(t, 1, v)
		outs, err := wait(t, AllSettledWithin(-time.Second, h))
		require.NoError(t, err)
		require.NoError(t, outs[0].Err, "off the loop, round %d", i)
		var w *Handle[int]
		onLoop(t, other, func() { w = Within(h, 0) })
		v, err = wait(t, w)
		require.NoError(t, err, "from another loop, round %d", i)
		require.Equal(t, 1, v)
	}
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	for i := 0; i < 50; i++ { // its loop stopped: posts run on goroutines of their own
		v, err := wait(t, Within(h, time.Hour))
		require.NoError(t, err, "after Stop, round %d", i)
		require.Equal(t, 1, v)
		outs, err := wait(t, AllSettledWithin(time.Hour, h))
		require.NoError(t, err, "after Stop, round %d", i)
		require.Equal(t, 1, outs[0].Value)
	}
}

// A run of Every that takes longer than a period puts the loop behind:
// the run it passed is skipped, not run late, and the next is on the grid.
func TestEverySkipsTheRunASlowOnePassed(t *testing.T) {
	l := startLoop(t)
	const p = 10 * time.Millisecond
	var due []time.Duration // each run's deadline
	var ran []time.Duration // and the clock when it ran
	var slowEnd time.Duration
	done := make(chan struct{})
	var ev *Handle[struct{}]
	onLoop(t, l, func() {
		ev = Every(l, p, func() {
			due = append(due, ev.core.prod.(*everyNode).t.when)
			ran = append(ran, l.clock())
			if len(due) == 2 {
				time.Sleep(3*p + p/2) // a slow run: 3.5 periods, or more on a loaded machine
				slowEnd = l.clock()
			}
			if len(due) == 4 {
				ev.Cancel()
				close(done)
			}
		})
	})
	recv(t, done)
	_, _ = wait(t, ev)
	onLoop(t, l, func() {
		// The next run is the first on the grid after the slow one ended
		// (Every reads the clock just after slowEnd): the runs it passed
		// are skipped, however many, not run late.
		assert.Zero(t, (due[2]-due[1])%p, "off the grid")
		assert.GreaterOrEqual(t, due[2]-due[1], 4*p, "a run the slow one passed was not skipped")
		assert.Greater(t, due[2], slowEnd, "a run the slow one passed ran late")
		assert.LessOrEqual(t, due[2]-p, slowEnd+p/2, "a run after the slow one was skipped")
		assert.Equal(t, due[2]+p, due[3])
		assert.Less(t, ran[2]-due[2], 3*p, "the run after the slow one is periods late")
	})
}

// Cancelling a Retry waiting for its next attempt disarms its timer at
// once: Stats.Timers drops in the same callback, as for Delay and Every.
func TestRetryCancelDisarmsAtOnce(t *testing.T) {
	l := startLoop(t)
	var r *Handle[int]
	onLoop(t, l, func() {
		r = Retry(l, 5, time.Hour, func() *Handle[int] { return Fail[int](l, errBoom) })
	})
	onLoop(t, l, func() {
		require.Equal(t, 1, l.Stats().Timers, "waiting for the second attempt")
		r.Cancel()
		assert.Equal(t, 0, l.Stats().Timers, "in the callback that cancelled it")
	})
	_, err := wait(t, r)
	require.ErrorIs(t, err, ErrCancelled)
}

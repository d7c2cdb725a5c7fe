package aio

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statsOnLoop reads l's Stats on the loop, where the health counters are
// exact.
func statsOnLoop(t *testing.T, l *Loop) Stats {
	t.Helper()
	return onLoopValue(t, l, l.Stats)
}

// busyFor keeps the calling goroutine (the loop, in a callback) running for
// d: time the loop spends on its callback, as a slow callback would.
func busyFor(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// The phases add up to the loop's life, and the time of a slow callback is
// charged to its phase.
func TestStatsTimeByPhase(t *testing.T) {
	before := time.Now()
	l := startLoop(t)
	onLoop(t, l, func() { busyFor(20 * time.Millisecond) })
	_, err := wait(t, Delay(l, 0, func() (int, error) { busyFor(10 * time.Millisecond); return 0, nil }))
	require.NoError(t, err)
	// The loop may have found each post before it went to sleep; now it
	// has nothing to do.
	eventually(t, func() bool { return l.Stats().Time.Idle > 0 }, "the loop never sleeps")
	_, err = wait(t, l.Stop())
	require.NoError(t, err)
	life := time.Since(before)

	s := l.Stats() // published at Stop: exact
	assert.GreaterOrEqual(t, s.Time.Posted, 20*time.Millisecond)
	assert.GreaterOrEqual(t, s.Time.Timers, 10*time.Millisecond)
	assert.Positive(t, s.Time.Idle)
	total := s.Time.Busy() + s.Time.Idle
	assert.LessOrEqual(t, total, life, "the phases cover the loop's life, no more")
	assert.GreaterOrEqual(t, total, s.Time.Posted+s.Time.Timers)
	assert.Equal(t, s.Time.Timers+s.Time.Posted+s.Time.IO+s.Time.Closing+s.Time.Other, s.Time.Busy())
}

// A loop that spins for posts (Config.Spin) is idle meanwhile, not busy.
func TestStatsSpinIsIdle(t *testing.T) {
	const spin = 50 * time.Millisecond
	l := startLoop(t, Config{Spin: spin})
	s0 := statsOnLoop(t, l) // the loop spins after this callback, then sleeps
	eventually(t, func() bool { return l.Stats().Time.Idle-s0.Time.Idle > spin },
		"idle time does not grow while the loop spins and sleeps")
	s := l.Stats()
	assert.Less(t, s.Time.Busy()-s0.Time.Busy(), spin, "spinning counted as busy: %+v", s.Time)
}

// Off the loop, Stats reads what the loop published: every counter only
// grows, whether the loop sleeps (Idle grows while it does) or works, and
// what the loop counted shows once it has gone to sleep.
func TestStatsMonotonicOffLoop(t *testing.T) {
	l := startLoop(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		prev := l.Stats()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := l.Stats()
			ok := s.Iterations >= prev.Iterations && s.Posted >= prev.Posted &&
				s.Time.Timers >= prev.Time.Timers && s.Time.Posted >= prev.Time.Posted &&
				s.Time.IO >= prev.Time.IO && s.Time.Closing >= prev.Time.Closing &&
				s.Time.Other >= prev.Time.Other && s.Time.Idle >= prev.Time.Idle &&
				s.PostLag.Count >= prev.PostLag.Count && s.PostLag.Sum >= prev.PostLag.Sum &&
				s.TimerLag.Count >= prev.TimerLag.Count
			if !assert.True(t, ok, "went back:\n%+v\n%+v", prev, s) {
				return
			}
			prev = s
		}
	}()
	for i := 0; i < 200; i++ {
		// Alternate work and sleep, with timers now and then.
		onLoop(t, l, func() {
			busyFor(20 * time.Microsecond)
			if i%10 == 0 {
				Sleep(l, 0)
			}
		})
	}
	on := statsOnLoop(t, l)
	eventually(t, func() bool { return l.Stats().Posted >= on.Posted }, "the loop did not publish as it went to sleep")
	idle := l.Stats().Time.Idle
	eventually(t, func() bool { return l.Stats().Time.Idle > idle }, "idle time stands still while the loop sleeps")
	close(stop)
	wg.Wait()
	s := l.Stats()
	assert.GreaterOrEqual(t, s.Posted, uint64(200))
	assert.GreaterOrEqual(t, s.TimerLag.Count, uint64(20))
}

// A read on the loop, then one off it: the second sees no less, as a
// scrape in a handler on one loop reads the other loops off theirs. The
// loop is kept busy, so it has counted more than it last published.
func TestStatsMonotonicOnThenOffLoop(t *testing.T) {
	l := startLoop(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // keeps the loop iterating
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				_ = l.Post(func() {})
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 50 {
		var on, off Stats
		onLoop(t, l, func() {
			on = l.Stats()
			got := make(chan Stats)
			go func() { got <- l.Stats() }() // off the loop, which is held here
			off = <-got
		})
		require.True(t, off.Iterations >= on.Iterations && off.Posted >= on.Posted &&
			off.Time.Posted >= on.Time.Posted && off.PostLag.Count >= on.PostLag.Count,
			"went back:\n%+v\n%+v", on, off)
	}
}

// A callback posted while the loop is held waits until it is released: the
// batch it starts is sampled with that wait.
func TestStatsPostLag(t *testing.T) {
	const held = 11 * time.Millisecond
	l := startLoop(t)
	release := holdLoop(t, l)
	ran := make(chan struct{})
	require.NoError(t, l.Post(func() { close(ran) }))
	time.Sleep(held) // not a synchronisation: the lag to be measured
	release()
	recv(t, ran)
	s := statsOnLoop(t, l)
	g := s.PostLag
	assert.GreaterOrEqual(t, g.Max, held)
	assert.GreaterOrEqual(t, g.Sum, held)
	var above, sum uint64 // samples above 10ms
	for i, n := range g.Buckets {
		sum += n
		if i > 0 && LagBound(i-1) >= 10*time.Millisecond {
			above += n
		}
	}
	assert.Equal(t, g.Count, sum)
	assert.GreaterOrEqual(t, above, uint64(1), "%+v", g)
}

// A post that wakes a sleeping loop waits for the wakeup only, not for the
// sleep before it.
func TestStatsPostLagAfterSleep(t *testing.T) {
	const asleep = 200 * time.Millisecond
	l := startLoop(t)
	idle := l.Stats().Time.Idle
	eventually(t, func() bool { return l.Stats().Time.Idle > idle }, "the loop does not sleep")
	time.Sleep(asleep) // not a synchronisation: the sleep not to be measured
	g := statsOnLoop(t, l).PostLag
	assert.Positive(t, g.Count)
	assert.Less(t, g.Max, asleep, "the loop's sleep counted as the post's wait: %+v", g)
}

// A timer due while the loop is busy in a callback fires late by as much.
func TestStatsTimerLag(t *testing.T) {
	const busy = 5 * time.Millisecond
	l := startLoop(t)
	var h *Handle[struct{}]
	onLoop(t, l, func() {
		h = Sleep(l, 0) // due now, fires next iteration
		busyFor(busy)
	})
	_, err := wait(t, h)
	require.NoError(t, err)
	g := statsOnLoop(t, l).TimerLag
	assert.Equal(t, uint64(1), g.Count)
	assert.GreaterOrEqual(t, g.Max, busy)
	assert.Equal(t, g.Max, g.Sum)
	assert.Equal(t, g.Sum, g.Mean())
}

// Aging producers that have finished reads no clock, so that a loop whose
// callbacks make a promise or two pays no reading for it; tracking one still
// pending starts a segment of bookkeeping (Time.Other).
func TestStatsAgingReadsClockOnlyToTrack(t *testing.T) {
	l := startLoop(t)
	onLoop(t, l, func() {
		done, pending := NewPromise[int](l), NewPromise[int](l)
		done.Resolve(1)
		require.Equal(t, phasePosted, l.m.cur)
		mark := l.m.mark
		l.trackYoung() // an iteration boundary: pending is held, done let go
		assert.Equal(t, phasePosted, l.m.cur, "a segment for letting go")
		assert.Equal(t, mark, l.m.mark, "a clock reading for letting go")
		l.trackYoung() // pending is tracked
		assert.Equal(t, phaseBook, l.m.cur)
		assert.Greater(t, l.m.mark, mark)
		pending.Resolve(2)
	})
}

func TestLagBuckets(t *testing.T) {
	assert.Equal(t, time.Microsecond, LagBound(0))
	assert.Equal(t, time.Second, LagBound(LagBuckets-2))
	assert.Equal(t, time.Duration(math.MaxInt64), LagBound(LagBuckets-1))
	assert.Equal(t, time.Duration(math.MaxInt64), LagBound(-1))
	for i := 1; i < LagBuckets; i++ {
		assert.Less(t, LagBound(i-1), LagBound(i))
	}

	var a lagAcc
	a.add(-time.Millisecond) // clamped to 0
	a.add(time.Microsecond)
	a.add(time.Microsecond + 1)
	a.add(time.Hour)
	g := a.lag()
	assert.Equal(t, [LagBuckets]uint64{2, 1, 0, 0, 0, 0, 0, 1}, g.Buckets)
	assert.Equal(t, uint64(4), g.Count)
	assert.Equal(t, time.Hour, g.Max)
	assert.Equal(t, time.Hour+2*time.Microsecond+1, g.Sum)
	assert.Equal(t, g.Sum/4, g.Mean())
	assert.Zero(t, Lag{}.Mean())
}

// Callbacks posted to a loop held busy are counted in PostQueued until they
// run: exactly on the loop (the one running no more), off it the queue
// exactly and what the loop took from it as of the start of its run.
func TestStatsPostQueued(t *testing.T) {
	const n, batch = 50, 8
	l := startLoop(t, Config{PostBatch: batch})
	release := holdLoop(t, l)
	left := make(chan int, n)
	for range n {
		require.NoError(t, l.Post(func() { left <- l.Stats().PostQueued }))
	}
	assert.Equal(t, n, l.Stats().PostQueued, "posted behind a held loop")
	release()
	for i := range n {
		assert.Equal(t, n-1-i, recv(t, left), "on the loop, in callback %d", i)
	}
	assert.Zero(t, statsOnLoop(t, l).PostQueued)
	eventually(t, func() bool { return l.Stats().PostQueued == 0 }, "PostQueued stays at %d", l.Stats().PostQueued)

	// Off the loop, what the loop took from the queue counts as it was
	// when it started on it, less the first callback, running.
	release = holdLoop(t, l)
	started, ran := make(chan struct{}), make(chan struct{})
	require.NoError(t, l.Post(func() { close(started); <-ran }))
	for range batch - 1 {
		require.NoError(t, l.Post(func() {}))
	}
	for range n {
		require.NoError(t, l.Post(func() {}))
	}
	release()
	recv(t, started)
	assert.Equal(t, batch+n-1, l.Stats().PostQueued, "the rest of what the loop took")
	close(ran)
	eventually(t, func() bool { return l.Stats().PostQueued == 0 }, "PostQueued stays at %d", l.Stats().PostQueued)
}

// Running shows a loop stuck in a callback, whose busy time off the loop
// stands still until the callback returns; it is 0 while the loop sleeps.
func TestStatsRunningShowsAStuckLoop(t *testing.T) {
	l := startLoop(t)
	eventually(t, func() bool { return l.Stats().Time.Idle > 0 && l.Stats().Running == 0 }, "the loop never sleeps")
	release := holdLoop(t, l)
	eventually(t, func() bool { return l.Stats().Running >= 50*time.Millisecond }, "a loop held in a callback: Running %v", l.Stats().Running)
	release()
	eventually(t, func() bool { return l.Stats().Running == 0 }, "asleep again: Running %v", l.Stats().Running)
	st := statsOnLoop(t, l)
	assert.GreaterOrEqual(t, st.Time.Posted, 50*time.Millisecond, "the hold counted once it returned")
	assert.Less(t, st.Running, 50*time.Millisecond, "on the loop: the callback in progress")
}

// On the loop, Posted counts every callback run so far, the one running
// included, also within a batch.
func TestStatsPostedOnLoopWithinABatch(t *testing.T) {
	l := startLoop(t)
	release := holdLoop(t, l)
	got := make(chan uint64, 10)
	for range 10 {
		require.NoError(t, l.Post(func() { got <- l.Stats().Posted }))
	}
	release()
	first := recv(t, got)
	for i := 1; i < 10; i++ {
		assert.Equal(t, first+uint64(i), recv(t, got), "callback %d of the batch", i)
	}
}

// Running is 0 for a loop that waits for work spinning (Config.Spin), and
// for a loop that has stopped: neither is at work.
func TestStatsRunningSpinningOrStopped(t *testing.T) {
	l := startLoop(t, Config{Spin: time.Hour})
	require.NoError(t, l.Post(func() {})) // work: the loop spins after it
	eventually(t, func() bool { return l.spinning.Load() }, "the loop never spins")
	require.Never(t, func() bool { return l.Stats().Running > 0 && l.spinning.Load() }, 50*time.Millisecond, time.Millisecond,
		"a spinning loop is not at work")
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	assert.Zero(t, l.Stats().Running, "a stopped loop")
}

package aio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A loop that waits passes through the Go scheduler before a poll that may
// block, once every yieldEvery at most (yieldP), so that the scheduler's
// monitor need not take its P. A loop that never waits is left to the
// monitor, and a loop asleep in the poller is not woken to yield.
func TestLoopYieldsToScheduler(t *testing.T) {
	l := startLoop(t)
	yields := func() (n uint64) {
		onLoop(t, l, func() { n = l.m.yields })
		return n
	}

	// Waiting for 6 yieldEvery: a timer every millisecond, so that the
	// loop sleeps in the poller between its ticks.
	before := yields()
	done := make(chan struct{})
	end := time.Now().Add(6 * yieldEvery)
	var tick *Handle[struct{}]
	onLoop(t, l, func() {
		tick = Every(l, time.Millisecond, func() {
			if !time.Now().Before(end) && tick.Cancel() {
				close(done)
			}
		})
	})
	recvWithin(t, waitTimeout, done)
	// 5 or 6 here; fewer only if single iterations took yieldEvery.
	require.GreaterOrEqual(t, yields()-before, uint64(3), "yields while waiting")

	// Busy for 6 yieldEvery: a callback that posts itself until then, so
	// every poll of the stretch is one that cannot block.
	before = yields()
	done = make(chan struct{})
	end = time.Now().Add(6 * yieldEvery)
	var busy func()
	busy = func() {
		if time.Now().Before(end) {
			if l.Post(busy) != nil {
				close(done)
			}
			return
		}
		close(done)
	}
	require.NoError(t, l.Post(busy))
	recvWithin(t, waitTimeout, done)
	// At most the yield before the poll that waited for the first post,
	// and the one before the poll after the last: none in between.
	require.LessOrEqual(t, yields()-before, uint64(2), "yields while busy")

	before = yields()
	time.Sleep(6 * yieldEvery)
	// The post that reads the count wakes the loop: it may yield once
	// before it polls again, not once per yieldEvery asleep.
	require.LessOrEqual(t, yields()-before, uint64(1), "yields while asleep")
}

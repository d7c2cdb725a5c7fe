package aio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A loop that never waits still passes through the Go scheduler every
// yieldEvery (yieldP), so that the scheduler's monitor need not preempt
// it; a loop asleep in the poller is not woken to yield.
func TestLoopYieldsToScheduler(t *testing.T) {
	l := startLoop(t)
	yields := func() (n uint64) {
		onLoop(t, l, func() { n = l.m.yields })
		return n
	}

	before := yields()
	// Busy for 6 yieldEvery: a callback that posts itself until then, so
	// every poll of the stretch is one that cannot block.
	done := make(chan struct{})
	end := time.Now().Add(6 * yieldEvery)
	var busy func()
	busy = func() {
		if time.Now().Before(end) {
			require.NoError(t, l.Post(busy))
			return
		}
		close(done)
	}
	require.NoError(t, l.Post(busy))
	recvWithin(t, waitTimeout, done)
	busyYields := yields() - before
	// 5 or 6 here; fewer only if single iterations took yieldEvery.
	require.GreaterOrEqual(t, busyYields, uint64(3), "yields while busy")

	before = yields()
	time.Sleep(6 * yieldEvery)
	// The post that reads the count wakes the loop: it may yield once
	// before it polls again, not once per yieldEvery asleep.
	require.LessOrEqual(t, yields()-before, uint64(1), "yields while asleep")
}

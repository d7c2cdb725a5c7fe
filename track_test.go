package aio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A handle abandoned while its loop is idle is collected: the loop used to
// hold young producers strongly until two more iteration boundaries, which
// an idle loop, asleep in the poller, never reached. The promise here is
// made and dropped from another goroutine, and nothing else wakes the loop.
func TestAbandonedHandleCollectedOnIdleLoop(t *testing.T) {
	l := startLoop(t)
	ran := make(chan bool, 1)
	func() {
		p := NewPromise[int](l)
		p.Handle().OnCleanup(func() { ran <- l.OnLoop() })
	}()
	require.True(t, collectUntil(t, ran), "an abandoned handle's cleanups run on its loop")
	onLoop(t, l, func() {})
	require.Equal(t, uint64(1), l.Stats().Abandoned)
	require.Equal(t, 0, l.Stats().Handles)
}

// An idle loop holding no young producer sleeps until woken: the aging bound
// applies only while there is something to age.
func TestIdleLoopWithoutYoungSleeps(t *testing.T) {
	l := startLoop(t)
	onLoop(t, l, func() {
		p := NewPromise[int](l)
		p.Resolve(1)
	})
	before := l.Stats().Iterations
	time.Sleep(3 * youngAging) // a quiet period: nothing to wait for
	require.LessOrEqual(t, l.Stats().Iterations-before, uint64(2),
		"a loop with nothing to age stops waking once its young producers finished")
}

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
	requireAbandoned(t, l, ran)
}

// An idle loop sleeps until woken unless it holds young producers: the
// aging bound applies only while there is something to age.
func TestIdleLoopWakesOnlyToAge(t *testing.T) {
	l := startLoop(t)
	var pending, settled time.Duration
	onLoop(t, l, func() { // one callback: the loop's own aging cannot come between
		p := NewPromise[int](l)
		l.trackYoung() // an iteration boundary: p is held, one boundary older
		pending = l.pollTimeout()
		p.Resolve(1)
		l.drain()
		l.trackYoung()
		l.trackYoung() // nothing pending is held any longer
		settled = l.pollTimeout()
	})
	require.Equal(t, youngAging, pending, "a held young producer bounds the sleep")
	require.Equal(t, time.Duration(-1), settled, "nothing to age: sleep until woken")
}

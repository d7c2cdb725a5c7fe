package aio

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Delay's cleanups are kept without tracking it weakly while its timer
// holds it: no weak pointer, no collector hook, nothing on the loop's
// list, for the usual case where the timer fires and the handle ends.
func TestDelayCleanupsUntrackedWhileTimerHolds(t *testing.T) {
	l := startLoop(t)
	ran := make(chan bool, 1)
	var h *Handle[int]
	var armed bool
	var listed int
	onLoop(t, l, func() { // the Delay fires after this callback, not before the checks
		h = Delay(l, 0, func() (int, error) { return 1, nil })
		h.OnCleanup(func() { ran <- true })
		armed, listed = h.rare.rec.armed, l.records.n
	})
	require.False(t, armed, "a timer-held handle's record stays unarmed")
	require.Zero(t, listed)
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.True(t, recv(t, ran))
	require.False(t, onLoopValue(t, l, func() bool { return h.rare.rec.armed }), "it ended untracked")
}

// A Delay cancelled before its timer fires runs its cleanups; its record is
// armed as the timer lets go (so that teardown could still find it).
func TestDelayCleanupsRunOnCancel(t *testing.T) {
	l := startLoop(t)
	ran := make(chan bool, 1)
	h := Delay(l, waitTimeout, func() (int, error) { return 1, nil })
	h.OnCleanup(func() { ran <- true })
	require.True(t, h.Cancel())
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	require.True(t, recv(t, ran))
	require.Zero(t, onLoopValue(t, l, func() int { return l.records.n }), "unlisted at its end")
}

// Stop cancels a pending Delay through the timer heap and runs the cleanups
// of its unarmed record.
func TestDelayCleanupsRunAtStop(t *testing.T) {
	l := startLoop(t)
	var ran atomic.Int32
	h := Delay(l, waitTimeout, func() (int, error) { return 1, nil })
	h.OnCleanup(func() { ran.Add(1) })
	onLoop(t, l, func() {})
	_, err := l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	_, err = h.Result()
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, int32(1), ran.Load())
	require.Zero(t, l.Stats().Handles)
}

// The transition of a cancelled Delay cut short by a runtime.Goexit in an
// OnCancel callback: its record was armed as its timer let go, so teardown
// finds it listed and runs its cleanup (as for any tracked handle, see
// TestGoexitMidTransitionDoesNotSpinTeardown).
func TestDelayGoexitMidCancelRunsCleanupAtStop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	var cleaned atomic.Bool
	goexiting := make(chan struct{})
	h := Delay(l, waitTimeout, func() (int, error) { return 1, nil })
	h.OnCleanup(func() { cleaned.Store(true) })
	h.OnCancel(func() { close(goexiting); runtime.Goexit() })
	onLoop(t, l, func() {})
	require.True(t, h.Cancel())
	recv(t, goexiting)
	requireStops(t, l, func() {
		_ = l.enqueue(func() { h.rare.rec.finish() }, stateStopping)
		_, _ = l.Stop().Wait(testCtx(t))
	}, "Stop's handle did not complete")
	require.True(t, cleaned.Load(), "the Delay's cleanup never ran")
	require.True(t, h.rare.rec.armed, "armed when its timer let go")
}

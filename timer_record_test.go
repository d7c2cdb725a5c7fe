package aio

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// heldHandle is a handle of a timer-held producer (see timerHeld), seen
// through what the tests below need of it whatever its value type.
type heldHandle struct {
	c         *core
	onCleanup func(func())
	onCancel  func(func())
	cancel    func() bool
	result    func() error // its error once it ended
}

func heldOf[T any](h *Handle[T]) heldHandle {
	return heldHandle{
		c:         &h.core,
		onCleanup: h.OnCleanup,
		onCancel:  func(fn func()) { h.OnCancel(fn) },
		cancel:    h.Cancel,
		result:    func() error { _, err := h.Result(); return err },
	}
}

// timerHeldKinds makes, on l, a pending handle of each timer-held kind
// whose timer is due in d (a Within's input never ends by itself).
var timerHeldKinds = []struct {
	name string
	make func(l *Loop, d time.Duration) heldHandle
}{
	{"Delay", func(l *Loop, d time.Duration) heldHandle {
		return heldOf(Delay(l, d, func() (int, error) { return 1, nil }))
	}},
	{"Every", func(l *Loop, d time.Duration) heldHandle {
		return heldOf(Every(l, d, func() {}))
	}},
	{"Within", func(l *Loop, d time.Duration) heldHandle {
		return heldOf(Within(NewPromise[int](l).Handle(), d))
	}},
	{"AllSettledWithin", func(l *Loop, d time.Duration) heldHandle {
		return heldOf(AllSettledWithin(d, NewPromise[int](l).Handle()))
	}},
}

// The cleanups of a handle whose armed timer holds it are kept in an
// unarmed record: no weak pointer, no collector's hook, nothing listed.
// A Within (or AllSettledWithin) whose input ends in time ends so, and
// runs them.
func TestWithinCleanupsUntrackedWhileTimerHolds(t *testing.T) {
	for _, kind := range []struct {
		name  string
		reply func(l *Loop, in *Handle[int]) heldHandle
	}{
		{"Within", func(_ *Loop, in *Handle[int]) heldHandle { return heldOf(Within(in, waitTimeout)) }},
		{"AllSettledWithin", func(_ *Loop, in *Handle[int]) heldHandle {
			return heldOf(AllSettledWithin(waitTimeout, in))
		}},
	} {
		t.Run(kind.name, func(t *testing.T) {
			l := startLoop(t)
			ran := make(chan bool, 1)
			p := NewPromise[int](l)
			var h heldHandle
			var armed bool
			var listed int
			onLoop(t, l, func() {
				h = kind.reply(l, p.Handle())
				h.onCleanup(func() { ran <- true })
				armed, listed = h.c.rare.rec.armed, l.records.n
			})
			require.False(t, armed, "a timer-held handle's record stays unarmed")
			require.Zero(t, listed)
			require.True(t, p.Resolve(1))
			require.True(t, recv(t, ran))
			require.NoError(t, h.result())
			require.False(t, onLoopValue(t, l, func() bool { return h.c.rare.rec.armed }), "it ended untracked")
		})
	}
}

// A Within whose deadline passes ends with ErrTimeout and runs its
// cleanups, untracked all along.
func TestWithinTimeoutRunsCleanupsUntracked(t *testing.T) {
	l := startLoop(t)
	ran := make(chan bool, 1)
	var h *Handle[int]
	onLoop(t, l, func() { // as a handler would: its timer armed at once
		h = Within(NewPromise[int](l).Handle(), time.Millisecond)
		h.OnCleanup(func() { ran <- true })
	})
	require.True(t, recv(t, ran)) // not wait: a Done channel is tracked
	_, err := h.Result()
	require.ErrorIs(t, err, ErrTimeout)
	require.False(t, onLoopValue(t, l, func() bool { return h.rare.rec.armed }))
	require.Zero(t, onLoopValue(t, l, func() int { return l.records.n }))
}

// Each timer-held kind cancelled before its timer fires runs its cleanups
// and is not left listed.
func TestTimerHeldCleanupsRunOnCancel(t *testing.T) {
	for _, kind := range timerHeldKinds {
		t.Run(kind.name, func(t *testing.T) {
			l := startLoop(t)
			ran := make(chan bool, 1)
			h := kind.make(l, waitTimeout)
			h.onCleanup(func() { ran <- true })
			require.True(t, h.cancel())
			require.True(t, recv(t, ran))
			require.ErrorIs(t, h.result(), ErrCancelled)
			require.Zero(t, onLoopValue(t, l, func() int { return l.records.n }), "unlisted at its end")
		})
	}
}

// Stop cancels each pending timer-held kind through the timer heap and
// runs the cleanups of its unarmed record, once.
func TestTimerHeldCleanupsRunAtStop(t *testing.T) {
	for _, kind := range timerHeldKinds {
		t.Run(kind.name, func(t *testing.T) {
			l := startLoop(t)
			var ran atomic.Int32
			var h heldHandle
			var armed bool
			onLoop(t, l, func() {
				h = kind.make(l, waitTimeout)
				h.onCleanup(func() { ran.Add(1) })
				armed = h.c.rare.rec.armed
			})
			require.False(t, armed, "held by its timer")
			_, err := l.Stop().Wait(testCtx(t))
			require.NoError(t, err)
			require.ErrorIs(t, h.result(), ErrCancelled)
			require.Equal(t, int32(1), ran.Load())
			require.Zero(t, l.Stats().Handles)
		})
	}
}

// A runtime.Goexit in an OnCancel callback cuts the cancelled handle's
// terminal transition short: its record was armed as its timer let go, so
// teardown finds it listed and runs its cleanup.
func TestTimerHeldGoexitMidCancelRunsCleanupAtStop(t *testing.T) {
	for _, kind := range timerHeldKinds {
		t.Run(kind.name, func(t *testing.T) {
			rt := newRuntime(t, RuntimeConfig{})
			l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
			var cleaned atomic.Bool
			goexiting := make(chan struct{})
			h := kind.make(l, waitTimeout)
			h.onCleanup(func() { cleaned.Store(true) })
			h.onCancel(func() { close(goexiting); runtime.Goexit() })
			onLoop(t, l, func() {})
			require.True(t, h.cancel())
			recv(t, goexiting)
			requireStopsCut(t, l, h.c)
			require.True(t, cleaned.Load(), "the cleanup never ran")
			require.True(t, h.c.rare.rec.armed, "armed when its timer let go")
		})
	}
}

// An Every whose fn calls runtime.Goexit: its timer let go of the handle
// as it fired and was not armed again, and the handle did not end; the
// Goexit ends the loop goroutine, and teardown finds the record armed and
// listed and runs the cleanup.
func TestEveryGoexitInFireRunsCleanupAtStop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	var cleaned atomic.Bool
	goexiting := make(chan struct{})
	var h *Handle[struct{}]
	onLoop(t, l, func() { // its cleanup in place before the timer fires
		h = Every(l, time.Millisecond, func() { close(goexiting); runtime.Goexit() })
		h.OnCleanup(func() { cleaned.Store(true) })
	})
	recv(t, goexiting)
	requireStopsCut(t, l, &h.core)
	require.True(t, cleaned.Load(), "the cleanup never ran")
	require.True(t, h.rare.rec.armed, "armed when its timer let go")
	_, err := h.Result()
	require.ErrorIs(t, err, ErrCancelled)
}

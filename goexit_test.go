package aio

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A runtime.Goexit in a loop callback (testing's FailNow where it does not
// belong) cannot be recovered; the loop goroutine's guard (goexited) stops
// the loop instead of leaving it half alive. These tests, written in review,
// are the paths where a further Goexit or a held lock defeated it. If the
// loop goroutine died anyway, they finish the teardown it left undone, so
// that a failure leaks nothing into the run (TestMain checks for leaks).

// goexited reported the Goexit through OnPanic before it tears the
// loop down. An OnPanic that calls runtime.Goexit (t.Fatal in a test's
// OnPanic is the usual way) Goexits again inside the deferred guard; the
// guard has already run, so the loop goroutine dies with nothing torn down:
// Stop's handle never completes and pending handles are never cancelled,
// exactly what the commit set out to fix. Here the first Goexit is itself
// OnPanic's, reporting an ordinary panic in a posted callback.
func TestGoexitInOnPanicStillStops(t *testing.T) {
	reports := make(chan any, 4)
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(v any) {
		reports <- v     // before the Goexit: the rescue's happens-before edge
		runtime.Goexit() // as t.Fatal would
	}})
	p := NewPromise[int](l)
	onLoop(t, l, func() {})
	require.NoError(t, l.Post(func() { panic("boom") }))
	require.Equal(t, "boom", recv(t, reports))
	err, _ := recv(t, reports).(error)
	require.ErrorIs(t, err, errGoexit) // the guard's report: its OnPanic Goexits too
	requireStops(t, l, func() { rescueStop(t, l) },
		"Stop's handle did not complete: the loop goroutine died in OnPanic during the guard")
	require.Equal(t, Cancelled, p.Handle().Status())
	require.Equal(t, 0, rt.Running())
}

// A second Goexit during the guard's teardown (an OnCancel callback
// of a handle the teardown cancels, as a test callback that calls FailNow on
// everything would) kills the loop goroutine half way through teardown: the
// guard is not re-armed. Stop's handle never completes, the handles after
// the one whose callback Goexited are never cancelled, the slot is held.
func TestSecondGoexitDuringTeardownStillStops(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	dying := make(chan struct{})
	first := NewPromise[int](l)
	first.Handle().OnCancel(func() { close(dying); runtime.Goexit() })
	second := NewPromise[int](l)
	onLoop(t, l, func() {})
	require.NoError(t, l.Post(func() { runtime.Goexit() })) // the loop stops itself: no Stop yet
	recv(t, dying)
	requireStops(t, l, func() { rescueStop(t, l) },
		"Stop's handle did not complete: a Goexit in an OnCancel run by the guard's teardown killed the loop goroutine")
	require.Equal(t, Cancelled, second.Handle().Status())
	require.Equal(t, 0, rt.Running())
}

// Teardown runs the work that arrived after
// its last cancelling pass (rest) with deadMu held, on the loop goroutine. A
// Goexit in one of those callbacks runs the guard, whose goexited calls
// teardown again, which locks deadMu again: the loop goroutine deadlocks on
// itself, Stop's handle never completes. (The remaining callbacks of rest
// are dropped as well.) Here the late arrival is an OnCleanup registered
// from another goroutine while Stop closes the sockets, which is when a Work
// result or another loop's notification can land.
func TestGoexitUnderDeadMuStillStops(t *testing.T) {
	reports := make(chan any, 1)
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(v any) {
		select {
		case reports <- v:
		default: // one report is the assertion; more must not block the loop
		}
	}})
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(*Conn) {})
	require.NoError(t, err)
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	finished := Pure(l, 1)
	hit := make(chan struct{}) // the Goexit under deadMu happened
	c.Closed().OnCancel(func() {
		// Runs in closeFDs, after the last pass: the registration is
		// posted, and teardown runs it under deadMu.
		registered := make(chan struct{})
		go func() {
			defer close(registered)
			finished.OnCleanup(func() { close(hit); runtime.Goexit() })
		}()
		<-registered // the loop's own callback: bounded by the goroutine above
	})
	onLoop(t, l, func() {})
	requireStops(t, l, func() {
		// The loop goroutine is blocked in the second teardown's
		// deadMu.Lock, held by the first: let it finish.
		l.deadMu.Unlock()
		_, _ = l.Stop().Wait(testCtx(t))
	}, "Stop's handle did not complete: the guard's teardown locked deadMu, already held by the teardown the Goexit interrupted")
	recv(t, hit)
	err, _ = recv(t, reports).(error)
	require.ErrorIs(t, err, errGoexit)
	require.Equal(t, 0, rt.Running())
}

// A Goexit in a callback that runs inside a handle's terminal
// transition (finishRest runs the OnCancel callbacks, the dependents, then
// x.rec.finish, which unlists the handle's record and runs its cleanups, then
// closes Done) abandons the rest of that transition: the handle is marked
// finished, but its record stays on l.records. The guard's teardown then
// never ends: cancelPending sets found for every listed record, finished or
// not, so its "until a pass finds nothing" loop spins on the loop goroutine
// for ever (100% CPU); Stop's handle never completes, the handle's cleanups
// never run, its Done never closes. Any tracked handle qualifies (one with
// OnCleanup or Done, or pending across two iterations), and any callback of
// its transition: OnCancel, a dependent's inline code, a cleanup.
func TestGoexitMidTransitionDoesNotSpinTeardown(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	var cleaned atomic.Bool
	goexiting := make(chan struct{})
	p := NewPromise[int](l)
	p.Handle().OnCleanup(func() { cleaned.Store(true) })
	p.Handle().OnCancel(func() { close(goexiting); runtime.Goexit() })
	onLoop(t, l, func() {})
	require.True(t, p.Handle().Cancel())
	recv(t, goexiting)
	requireStops(t, l, func() {
		// Rescue: the spinning teardown still runs posted internal work;
		// have it finish the stale record (its cleanup runs then), so the
		// pass finds nothing and the loop stops. The handle itself cannot
		// be collected instead: the Goexit's frames, finishRest's with its
		// core, stay on the stack under the guard.
		_ = l.enqueue(func() { p.h.rare.rec.finish() }, stateStopping)
		_, _ = l.Stop().Wait(testCtx(t))
	}, "Stop's handle did not complete: teardown spun on the record of a handle whose transition a Goexit cut short")
	require.True(t, cleaned.Load(), "the handle's cleanup never ran")
	require.Equal(t, 0, rt.Running())
}

// Once a loop is dead, runLater runs callbacks on a goroutine of
// their own (runDead) holding deadMu. A Goexit there leaves deadMu locked and
// l.ownerG naming a dead goroutine, so every later callback on that loop blocks
// for ever on deadMu. The same happens, process-wide, on the detached
// pseudo-loop (Stop's handles, All of nothing, ...) for a Goexit in a
// callback on one of its handles.
func TestGoexitInDeadLoopRunnerReleasesDeadMu(t *testing.T) {
	l := startLoop(t)
	finished := Pure(l, 1)
	_, err := wait(t, l.Stop())
	require.NoError(t, err)

	entered := make(chan struct{})
	finished.OnCleanup(func() { close(entered); runtime.Goexit() })
	recv(t, entered) // its runner holds deadMu from here on
	ran := make(chan struct{})
	finished.OnCleanup(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(goexitStopWithin):
		l.deadMu.Unlock() // left locked by the Goexited runner: release the waiters
		recv(t, ran)
		t.Fatal("a callback on the dead loop never ran: deadMu stayed locked after a Goexit in runDead")
	}
}

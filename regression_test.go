// Regression tests for the bugs a review of the core found (R1-R10): each
// failed before its fix.
package aio

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// R1: All built off the result's loop publishes the node to the loop (by the
// first input's register) before the later links are attached. An input that
// has already failed makes the loop run withdrawAll while the caller is still
// attaching: links not yet attached are skipped (k.in == nil), then registered
// anyway, and their interest is never withdrawn: they run forever.
func TestAllOffLoopFailureWithdrawsEveryInput(t *testing.T) {
	l := startLoop(t)
	const n = 20000
	hs := make([]*Handle[int], n)
	hs[0] = Fail[int](l, errors.New("boom"))
	for i := 1; i < n; i++ {
		hs[i] = NewPromise[int](l).Handle()
	}
	onLoop(t, l, func() {})       // let the promises settle into the loop
	_, err := wait(t, All(hs...)) // from the test goroutine, not the loop
	require.Error(t, err)
	for i := 1; i < n; i++ {
		_, err := wait(t, hs[i])
		require.ErrorIs(t, err, ErrCancelled, "input %d: All failed, nobody wants it, yet it still runs", i)
		require.Equal(t, Cancelled, hs[i].Status())
	}
}

// R2: a continuation on a handle with no loop (Pure(nil, …), All(), Stop's
// handle) runs inside the call that registers it, on the caller's goroutine.
func TestThenOnLooplessHandleNeverRunsInsideTheCall(t *testing.T) {
	caller := getg()
	ranOn := make(chan uintptr, 2)
	h := Then(Pure[int](nil, 1), func(v int) (int, error) { ranOn <- getg(); return v + 1, nil })
	_, _ = wait(t, h)
	require.NotEqual(t, caller, <-ranOn, "API: a continuation never runs inside the call that registers it")

	h2 := Then(All[int](), func([]int) (int, error) { ranOn <- getg(); return 0, nil })
	_, _ = wait(t, h2)
	require.NotEqual(t, caller, <-ranOn, "API: a continuation never runs inside the call that registers it")
}

// R3: cancelling a chain of Within recurses once per link: cancel ->
// schedFinish (on-loop cancel) -> stopProducer -> withinNode.stop -> link.withdraw
// -> withdrawFrom -> withdraw -> cancel of the next Within ... A 1,000,000-deep
// chain grows the loop goroutine's stack to 256 MiB (a 4,000,000-deep one dies
// with "goroutine stack exceeds 1000000000-byte limit").
func TestCancelWithinChainBoundedStack(t *testing.T) {
	const depth = 1_000_000
	l := startLoop(t)
	var root, last *Handle[struct{}]
	onLoop(t, l, func() {
		root = NewPromise[struct{}](l).Handle()
		last = root
		for i := 0; i < depth; i++ {
			last = Within(last, time.Hour)
		}
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	onLoop(t, l, func() { last.Cancel() })
	runtime.ReadMemStats(&after)
	_, err := wait(t, root)
	require.ErrorIs(t, err, ErrCancelled)
	grown := int64(after.StackInuse) - int64(before.StackInuse)
	require.Less(t, grown, int64(32<<20), "stack grew by %d MiB cancelling a %d-deep Within chain", grown>>20, depth)
}

// R4: the record of a weakly tracked handle does not hold its Done channel
// (DESIGN: "keep each handle's cleanups, Done channel and a finished flag in a
// small record"). A goroutine blocked on the Done channel of a pending handle
// does not keep the handle alive; once it is collected its cleanups run, but
// the channel is never closed, not even by Stop: the waiter leaks forever.
func TestAbandonedHandleDoneIsClosed(t *testing.T) {
	l := startLoop(t)
	var done <-chan struct{}
	onLoop(t, l, func() {
		h := NewPromise[int](l).Handle()
		h.OnCleanup(func() {})
		done = h.Done()
	})
	onLoop(t, l, func() {})
	onLoop(t, l, func() {})
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Abandoned == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, uint64(1), l.Stats().Abandoned, "the handle was collected and abandoned")
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Done of an abandoned handle never closes, even after Stop: its waiters hang")
	}
}

// R5: after its Do handle is cancelled, Await cancels the awaited handle
// outright (h.Cancel()) instead of withdrawing interest, so a handle that
// another consumer still depends on is cancelled under it. The same await
// while suspended only withdraws (the shared input survives).
func TestAwaitAfterCancelSparesSharedInput(t *testing.T) {
	l := startLoop(t)
	shared := NewPromise[int](l)
	other := Then(shared.Handle(), func(v int) (int, error) { return v, nil }) // still wants it
	gate := NewPromise[int](l)
	var firstErr error
	d := Do(l, func(co *Co) (int, error) {
		_, firstErr = Await(co, gate.Handle()) // cancelled while suspended here
		return Await(co, shared.Handle())      // "every later Await returns ErrCancelled at once"
	})
	onLoop(t, l, func() {})
	d.Cancel()
	_, err := wait(t, d)
	require.ErrorIs(t, err, ErrCancelled)
	require.ErrorIs(t, firstErr, ErrCancelled)
	onLoop(t, l, func() {})
	require.Equal(t, Running, shared.Handle().Status(), "other still depends on the shared input")
	shared.Resolve(7)
	v, err := wait(t, other)
	require.NoError(t, err)
	require.Equal(t, 7, v)
}

// R6: Await reads co.g, a plain field the body's goroutine writes at every
// suspend/resume, from whatever goroutine calls it; a foreign goroutine's call
// (documented to return ErrNotInBody) is a data race (go test -race).
func TestAwaitOutsideBodyIsRaceFree(t *testing.T) {
	l := startLoop(t)
	gotCo := make(chan *Co, 1)
	p := NewPromise[int](l)
	d := Do(l, func(co *Co) (int, error) {
		gotCo <- co
		return Await(co, p.Handle())
	})
	co := <-gotCo
	_, err := Await(co, Pure(l, 1))
	require.ErrorIs(t, err, ErrNotInBody)
	p.Resolve(1)
	_, err = wait(t, d)
	require.NoError(t, err)
}

// R10: Bracket promises release "after use completes, fails or is cancelled".
// When the Bracket is cancelled, stop() withdraws from use and calls release
// in the same breath; with use on another loop the withdrawal is only posted,
// so release runs while use is still Running there (still using the resource).
func TestBracketReleasesAfterUseEnded(t *testing.T) {
	a, b := startLoop(t), startLoop(t)
	use := NewPromise[int](b) // the operation using the resource, on loop b
	useStatus := make(chan Status, 1)
	br := Bracket(Pure(a, "conn"),
		func(string) { useStatus <- use.Handle().Status() },
		func(string) *Handle[int] { return use.Handle() })
	onLoop(t, a, func() {})
	onLoop(t, b, func() {})
	br.Cancel()
	_, err := wait(t, br)
	require.ErrorIs(t, err, ErrCancelled)
	require.True(t, (<-useStatus).Terminal(), "release ran while use was still running")
}

// R7: Do racing Stop. Do checks the loop state, then exec(n.start). When the
// loop died in between, start ran inline on the caller, where onLoopThread is
// false, so it pushed itself as a job, which drain popped and ran, which
// pushed itself again: the caller spun forever holding the dead loop's deadMu.
func TestDoRacingStopNeverHangs(t *testing.T) {
	raceStop(t, 4, func(l *Loop) *Handle[int] {
		return Do(l, func(co *Co) (int, error) { return Await(co, NewPromise[int](co.Loop()).Handle()) })
	})
}

// R8: New/NewPromise/Delay racing Stop: the producer passed checkProducer,
// the loop tore down, then the producer's start landed in teardown's final
// pass or on the dead loop, was adopted (or its timer armed in the dead heap),
// and nothing ever cancelled it.
func TestProducersRacingStopAllEnd(t *testing.T) {
	makers := map[string]func(l *Loop) *Handle[int]{
		"New":        func(l *Loop) *Handle[int] { return New(l, func(func(int), func(error)) {}) },
		"NewPromise": func(l *Loop) *Handle[int] { return NewPromise[int](l).Handle() },
		"Delay":      func(l *Loop) *Handle[int] { return Delay(l, time.Hour, func() (int, error) { return 0, nil }) },
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) { raceStop(t, 4, mk) })
	}
}

// R8b: the same race with Work hung Stop itself: the Work's adopt job landed
// after teardown's last cancel pass but submit() beat pool.close(), so the
// worker waited on a ctx never cancelled and pool.close waited forever
// (about 1 run in 1,600 before the fix: raise AIO_STOP_RACE_ROUNDS to soak it).
func TestWorkRacingStop(t *testing.T) {
	raceStop(t, 8, func(l *Loop) *Handle[int] {
		return Work(l, func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() })
	})
}

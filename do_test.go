package aio

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDoSequentialAwaits(t *testing.T) {
	l := startLoop(t)
	h := Do(l, func(co *Co) (int, error) {
		assert.True(t, l.OnLoop(), "a Do body runs as the loop")
		a, err := Await(co, Delay(l, time.Millisecond, func() (int, error) { return 2, nil }))
		if err != nil {
			return 0, err
		}
		b, err := Await(co, Work(l, func(context.Context) (int, error) { return 3, nil }))
		if err != nil {
			return 0, err
		}
		c, err := Await(co, Pure(l, 4)) // already terminal: no suspension
		return a * b * c, err
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 24, v)

	_, err = wait(t, Do(l, func(co *Co) (int, error) {
		_, err := Await(co, Fail[int](l, errBoom))
		return 0, err
	}))
	require.ErrorIs(t, err, errBoom)

	_, err = wait(t, Do(l, func(*Co) (int, error) { panic("body") }))
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
}

// 10,000 sequential awaits, each suspending the body until a posted callback
// resolves the promise it waits on.
func TestDoTenThousandAwaits(t *testing.T) {
	l := startLoop(t)
	const n = 10_000
	h := Do(l, func(co *Co) (int, error) {
		sum := 0
		for i := 0; i < n; i++ {
			p := NewPromise[int](l)
			if err := l.Post(func() { p.Resolve(i) }); err != nil {
				return 0, err
			}
			v, err := Await(co, p.Handle())
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, n*(n-1)/2, v)
}

func TestDoCancelCancelsAwaitedHandle(t *testing.T) {
	l := startLoop(t)
	inner := NewPromise[int](l)
	var awaitErr error
	var afterErr error
	var innerAfter *Handle[int]
	suspended := make(chan struct{})
	h := Do(l, func(co *Co) (int, error) {
		close(suspended)
		_, awaitErr = Await(co, inner.Handle())
		innerAfter = NewPromise[int](l).Handle()
		_, afterErr = Await(co, innerAfter)
		return 1, nil
	})
	recv(t, suspended)
	onLoop(t, l, func() {})
	require.True(t, h.Cancel())
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	_, err = wait(t, inner.Handle())
	require.ErrorIs(t, err, ErrCancelled, "the awaited handle is cancelled")
	onLoop(t, l, func() {})
	require.ErrorIs(t, awaitErr, ErrCancelled)
	require.ErrorIs(t, afterErr, ErrCancelled, "every later Await returns ErrCancelled")
	require.Equal(t, Cancelled, innerAfter.Status())
}

// Bug R5: Await after its Do was cancelled cancelled a shared input.
//
// After its Do handle is cancelled, Await cancels the awaited handle
// outright (h.Cancel()) instead of withdrawing interest, so a handle that
// another consumer still depends on is cancelled under it. The same await
// while suspended only withdraws (the shared input survives).
func TestAwaitAfterCancelSparesSharedInput(t *testing.T) {
	l := startLoop(t)
	shared, requireWanted := sharedInput(t, l)
	gate := NewPromise[int](l)
	var firstErr error
	d := Do(l, func(co *Co) (int, error) {
		_, firstErr = Await(co, gate.Handle()) // cancelled while suspended here
		return Await(co, shared)               // "every later Await returns ErrCancelled at once"
	})
	onLoop(t, l, func() {})
	d.Cancel()
	_, err := wait(t, d)
	require.ErrorIs(t, err, ErrCancelled)
	require.ErrorIs(t, firstErr, ErrCancelled)
	requireWanted()
}

func TestDoAcrossLoopsAndOutsideBody(t *testing.T) {
	a, b := startLoop(t), startLoop(t)
	var captured *Co
	h := Do(a, func(co *Co) (string, error) {
		captured = co
		return Await(co, Delay(b, time.Millisecond, func() (string, error) { return "from b", nil }))
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, "from b", v)
	_, err = Await(captured, Pure(a, 1))
	require.ErrorIs(t, err, ErrNotInBody)
	_, err = Await[int](nil, Pure(a, 1))
	require.ErrorIs(t, err, ErrNotInBody)
}

// Every Await of a body reuses one link (awaitLink). Awaits of handles on
// another loop, each told from there, get each its own outcome; and when
// the Do handle is cancelled while the first input ends on the other loop
// at the same moment, the body never takes the second Await's outcome
// early: a late telling of the first finds its link done, and after a
// cancellation no Await registers the link again.
func TestAwaitReusedLinkAcrossLoops(t *testing.T) {
	a, b := startLoop(t), startLoop(t)
	const n = 500
	h := Do(a, func(co *Co) (int, error) {
		for i := range n {
			p := NewPromise[int](b)
			if err := b.Post(func() { p.Resolve(i) }); err != nil {
				return i, err // not require: FailNow would Goexit the body
			}
			v, err := Await(co, p.Handle())
			if err != nil || v != i {
				return i, fmt.Errorf("await %d: got %d, %v", i, v, err)
			}
		}
		return n, nil
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, n, v)

	for range 200 {
		first := NewPromise[int](b)
		second := NewPromise[int](b) // resolved only after the body's outcome is known
		type outcome struct {
			err1, err2 error
			v2         int
		}
		got, ready := make(chan outcome, 1), make(chan struct{})
		d := Do(a, func(co *Co) (struct{}, error) {
			var o outcome
			close(ready)
			_, o.err1 = Await(co, first.Handle())
			o.v2, o.err2 = Await(co, second.Handle())
			got <- o
			return struct{}{}, nil
		})
		recv(t, ready)
		go first.Resolve(1)
		d.Cancel()
		o := recv(t, got)
		if o.err1 != nil {
			require.ErrorIs(t, o.err1, ErrCancelled)
		}
		require.ErrorIs(t, o.err2, ErrCancelled, "second awaited after %v: %d", o.err1, o.v2)
		second.Resolve(2)
		_, _ = wait(t, d)
	}
}

// Bug R6: Await called outside its body raced on co.g.
//
// Await reads co.g, a plain field the body's goroutine writes at every
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
	co := recv(t, gotCo)
	_, err := Await(co, Pure(l, 1))
	require.ErrorIs(t, err, ErrNotInBody)
	p.Resolve(1)
	_, err = wait(t, d)
	require.NoError(t, err)
}

// A Do body suspended when the loop stops is cancelled and runs to its end;
// no goroutine is left behind (goleak in TestMain).
func TestStopResumesSuspendedBodies(t *testing.T) {
	l := startLoop(t)
	var returned atomic.Int32
	var hs []*Handle[int]
	for i := 0; i < 10; i++ {
		hs = append(hs, Do(l, func(co *Co) (int, error) {
			defer returned.Add(1)
			return Await(co, NewPromise[int](l).Handle())
		}))
	}
	onLoop(t, l, func() {})
	_, err := l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, int32(10), returned.Load())
	for _, h := range hs {
		require.Equal(t, Cancelled, h.Status())
	}
}

// Bug R7: Do racing Stop spun for ever on the dead loop.
//
// Do racing Stop. Do checks the loop state, then runLater(n.start). When the
// loop died in between, start ran inline on the caller, where onLoopThread is
// false, so it pushed itself as a job, which drain popped and ran, which
// pushed itself again: the caller spun forever holding the dead loop's deadMu.
func TestDoRacingStopNeverHangs(t *testing.T) {
	raceStop(t, 4, func(l *Loop) *Handle[int] {
		return Do(l, func(co *Co) (int, error) { return Await(co, NewPromise[int](co.Loop()).Handle()) })
	})
}

// Nested Do: a body starting another Do and awaiting it.
func TestDoNested(t *testing.T) {
	l := startLoop(t)
	v, err := wait(t, Do(l, func(co *Co) (int, error) {
		inner := Do(l, func(co2 *Co) (int, error) {
			return Await(co2, Delay(l, time.Millisecond, func() (int, error) { return 5, nil }))
		})
		x, err := Await(co, inner)
		return x + 1, err
	}))
	require.NoError(t, err)
	require.Equal(t, 6, v)
}

// A runtime.Goexit in a Do body (testing's FailNow, called where it should
// not be) ended the loop goroutine: the Do handle and Stop hung for ever.
// Now the handle fails with ErrGoexit and the loop runs on, before and after
// a suspension, with its other bodies and cleanups intact.
func TestDoBodyGoexitFailsHandleNotLoop(t *testing.T) {
	l := startLoop(t)
	var cleaned atomic.Int32
	first := Do(l, func(*Co) (int, error) {
		runtime.Goexit()
		return 1, nil
	})
	first.OnCleanup(func() { cleaned.Add(1) })
	_, err := wait(t, first)
	require.ErrorIs(t, err, ErrGoexit)

	p := NewPromise[int](l)
	other := Do(l, func(co *Co) (int, error) { return Await(co, p.Handle()) })
	afterAwait := Do(l, func(co *Co) (int, error) {
		if _, err := Await(co, Delay(l, time.Millisecond, func() (int, error) { return 0, nil })); err != nil {
			return 0, err
		}
		runtime.Goexit()
		return 2, nil
	})
	_, err = wait(t, afterAwait)
	require.ErrorIs(t, err, ErrGoexit)

	require.True(t, p.Resolve(7), "the loop still runs callbacks")
	v, err := wait(t, other)
	require.NoError(t, err)
	require.Equal(t, 7, v, "a body suspended across the Goexits resumes")
	var owned bool
	onLoop(t, l, func() { owned = l.OnLoop() })
	require.True(t, owned, "the loop owns its goroutine again")
	require.EqualValues(t, 1, cleaned.Load())
}

// A body suspended in an Await and cancelled from another Do body (which
// runs as the loop, not on the loop goroutine) resumes with ErrCancelled.
func TestDoCancelledFromAnotherBodyResumes(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	resumed := make(chan error, 1)
	b := Do(l, func(co *Co) (int, error) {
		_, err := Await(co, p.Handle())
		resumed <- err
		return 0, err
	})
	onLoop(t, l, func() {}) // b is suspended in its Await
	a := Do(l, func(co *Co) (int, error) {
		b.Cancel()
		return 1, nil
	})
	_, err := wait(t, a)
	require.NoError(t, err)
	require.ErrorIs(t, recv(t, resumed), ErrCancelled, "b's body resumed with ErrCancelled")
	_, err = wait(t, b)
	require.ErrorIs(t, err, ErrCancelled)
}

// A Do handle cancelled while its body runs, by the body itself or from
// another goroutine, counts at the body's next Context and Await: the
// context is done with cause ErrCancelled, and Await returns ErrCancelled
// even for a handle that has ended already. Bug: until the body next suspended, Await
// handed it values and the context read as live, though Cancel had
// returned true.
func TestDoCancelledWhileBodyRunsCountsAtOnce(t *testing.T) {
	for _, offLoop := range []bool{false, true} {
		l := startLoop(t)
		type seen struct {
			cancelled bool
			ctxErr    error
			cause     error
			err       error
		}
		out := make(chan seen, 1)
		self := make(chan *Handle[int], 1)
		h := Do(l, func(co *Co) (int, error) {
			_, _ = Await(co, Sleep(l, 0)) // self is known from here on
			var s seen
			if offLoop {
				s.cancelled = cancelFromGoroutine(<-self)
			} else {
				s.cancelled = (<-self).Cancel()
			}
			ctx := co.Context()
			s.ctxErr, s.cause = ctx.Err(), context.Cause(ctx)
			given := Pure(l, 42) // ended already: Await would not suspend
			_, s.err = Await(co, given)
			out <- s
			return 0, nil
		})
		self <- h
		s := recv(t, out)
		require.True(t, s.cancelled)
		require.ErrorIs(t, s.err, ErrCancelled, "off the loop: %v", offLoop)
		require.ErrorIs(t, s.ctxErr, context.Canceled)
		require.ErrorIs(t, s.cause, ErrCancelled)
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
	}
}

// A body that awaits its own Do handle gets an error, not a wait for
// itself that only a cancel or Stop would end. Bug: it hung.
func TestAwaitOwnHandleIsRefused(t *testing.T) {
	l := startLoop(t)
	self := make(chan *Handle[int], 1)
	h := Do(l, func(co *Co) (int, error) {
		_, _ = Await(co, Sleep(l, 0)) // self is known from here on
		return Await(co, <-self)
	})
	self <- h
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "own Do handle")
}

package aio

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatch(t *testing.T) {
	t.Run("a failure is recovered by fn", func(t *testing.T) {
		l := startLoop(t)
		v, err := wait(t, Catch(Fail[int](l, errBoom), func(err error) (int, error) {
			assert.ErrorIs(t, err, errBoom)
			return 7, nil
		}))
		require.NoError(t, err)
		require.Equal(t, 7, v)
	})
	t.Run("a success passes through without calling fn", func(t *testing.T) {
		l := startLoop(t)
		v, err := wait(t, Catch(Pure(l, 3), func(error) (int, error) { return 0, errors.New("not called") }))
		require.NoError(t, err)
		require.Equal(t, 3, v)
	})
	t.Run("a cancelled input is no failure and never calls fn", func(t *testing.T) {
		l := startLoop(t)
		var called atomic.Bool
		p := NewPromise[int](l)
		c := Catch(p.Handle(), func(error) (int, error) { called.Store(true); return 0, nil })
		p.Handle().Cancel()
		_, err := wait(t, c)
		require.ErrorIs(t, err, ErrCancelled, "a cancellation is not a failure")
		require.False(t, called.Load())
	})
	t.Run("a panic in fn fails it with a PanicError", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, Catch(Fail[int](l, errBoom), func(error) (int, error) { panic("catch") }))
		var pe *PanicError
		require.ErrorAs(t, err, &pe)
	})
}

func TestThenAsyncFlattensAcrossLoops(t *testing.T) {
	a, b := startLoop(t), startLoop(t)
	h := ThenAsync(Pure(a, 2), func(v int) *Handle[int] {
		return Delay(b, time.Millisecond, func() (int, error) {
			assert.True(t, b.OnLoop(), "the inner producer runs on its own loop")
			return v * 10, nil
		})
	})
	require.Same(t, a, h.Loop())
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 20, v)

	_, err = wait(t, ThenAsync(Pure(a, 1), func(int) *Handle[int] { return nil }))
	require.ErrorIs(t, err, ErrNilHandle)
	_, err = wait(t, ThenAsync(Fail[int](a, errBoom), func(int) *Handle[int] { return Pure(a, 1) }))
	require.ErrorIs(t, err, errBoom)

	// Cancelling the result while it waits on the inner handle cancels that.
	inner := NewPromise[int](b)
	started := make(chan struct{})
	h = ThenAsync(Pure(a, 1), func(int) *Handle[int] { close(started); return inner.Handle() })
	recv(t, started)
	onLoop(t, a, func() {}) // the inner link is attached
	require.True(t, h.Cancel())
	_, err = wait(t, inner.Handle())
	require.ErrorIs(t, err, ErrCancelled)
}

func TestAll(t *testing.T) {
	t.Run("results come in input order, not completion order", func(t *testing.T) {
		l := startLoop(t)
		var hs []*Handle[int]
		for i := 0; i < 5; i++ {
			hs = append(hs, Delay(l, time.Duration(5-i)*time.Millisecond, func() (int, error) { return i, nil }))
		}
		v, err := wait(t, All(hs...))
		require.NoError(t, err)
		require.Equal(t, []int{0, 1, 2, 3, 4}, v, "input order, not completion order")
	})
	t.Run("All of nothing completes with an empty slice on no loop", func(t *testing.T) {
		empty := All[int]()
		require.Nil(t, empty.Loop())
		v, err := wait(t, empty)
		require.NoError(t, err)
		require.Empty(t, v)
		require.NotNil(t, v)
	})
	t.Run("a first input on no loop, the others on loops", func(t *testing.T) {
		// The result lives on no loop, which is dead from the start, but
		// no Stop cancels it there: its inputs' loops do when they stop.
		l := startLoop(t)
		p := NewPromise[int](l)
		all := All(Pure[int](nil, 1), p.Handle())
		race := Race(Pure[int](nil, 1), p.Handle())
		settled := AllSettled(Pure[int](nil, 1), p.Handle())
		async := ThenAsync(Pure[int](nil, 1), func(v int) *Handle[int] { return p.Handle() })
		p.Resolve(2)
		v, err := wait(t, all)
		require.NoError(t, err)
		require.Equal(t, []int{1, 2}, v)
		w, err := wait(t, race)
		require.NoError(t, err)
		require.Equal(t, 1, w)
		outs, err := wait(t, settled)
		require.NoError(t, err)
		require.Len(t, outs, 2)
		require.Equal(t, 2, outs[1].Value)
		w, err = wait(t, async)
		require.NoError(t, err)
		require.Equal(t, 2, w)
	})
	t.Run("the first failure fails it and cancels the rest", func(t *testing.T) {
		l := startLoop(t)
		slow := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		_, err := wait(t, All(slow, Fail[int](l, errBoom)))
		require.ErrorIs(t, err, errBoom)
		_, err = wait(t, slow)
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("cancelling it cancels every input", func(t *testing.T) { // UT-03
		l := startLoop(t)
		in := []*Handle[int]{NewPromise[int](l).Handle(), Delay(l, time.Hour, func() (int, error) { return 0, nil })}
		all := All(in...)
		require.True(t, all.Cancel())
		for _, h := range in {
			_, err := wait(t, h)
			require.ErrorIs(t, err, ErrCancelled)
		}
	})
	t.Run("a cancelled input cancels it", func(t *testing.T) {
		l := startLoop(t)
		p := NewPromise[int](l)
		all := All(p.Handle(), Pure(l, 1))
		p.Handle().Cancel()
		_, err := wait(t, all)
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("a nil input fails it with ErrNilHandle", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, All(Pure(l, 1), nil))
		require.ErrorIs(t, err, ErrNilHandle)
	})
}

// Bug R1: All built off its loop left inputs attached after a failure running.
//
// All built off the result's loop publishes the node to the loop (by the
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

func TestRace(t *testing.T) {
	t.Run("the first to complete wins and the loser is cancelled", func(t *testing.T) {
		l := startLoop(t)
		slow := Delay(l, time.Hour, func() (string, error) { return "slow", nil })
		v, err := wait(t, Race(slow, Delay(l, time.Millisecond, func() (string, error) { return "fast", nil })))
		require.NoError(t, err)
		require.Equal(t, "fast", v)
		_, err = wait(t, slow)
		require.ErrorIs(t, err, ErrCancelled, "the loser is cancelled")
	})
	t.Run("a failure wins too", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, Race(Delay(l, time.Hour, func() (int, error) { return 0, nil }), Fail[int](l, errBoom)))
		require.ErrorIs(t, err, errBoom, "a failure wins a race too")
	})
	t.Run("Race of nothing fails with ErrNoInputs", func(t *testing.T) {
		_, err := wait(t, Race[int]())
		require.ErrorIs(t, err, ErrNoInputs)
	})
	t.Run("cancelling it cancels every input", func(t *testing.T) { // UT-04
		l := startLoop(t)
		a, b := NewPromise[int](l), NewPromise[int](l)
		r := Race(a.Handle(), b.Handle())
		r.Cancel()
		_, err := wait(t, a.Handle())
		require.ErrorIs(t, err, ErrCancelled)
		_, err = wait(t, b.Handle())
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("a cancelled input does not decide it", func(t *testing.T) {
		l := startLoop(t)
		a, b := NewPromise[int](l), NewPromise[int](l)
		r := Race(a.Handle(), b.Handle())
		a.Handle().Cancel()
		onLoop(t, l, func() {})
		require.Equal(t, Pending, r.Status())
		b.Resolve(5)
		v, err := wait(t, r)
		require.NoError(t, err)
		require.Equal(t, 5, v)
	})
	t.Run("every input cancelled cancels it", func(t *testing.T) {
		l := startLoop(t)
		a, b := NewPromise[int](l), NewPromise[int](l)
		r := Race(a.Handle(), b.Handle())
		a.Handle().Cancel()
		b.Handle().Cancel()
		_, err := wait(t, r)
		require.ErrorIs(t, err, ErrCancelled)
	})
}

func TestAny(t *testing.T) {
	e1, e2 := errors.New("e1"), errors.New("e2")
	t.Run("the first success wins over failures", func(t *testing.T) {
		l := startLoop(t)
		v, err := wait(t, Any(Fail[int](l, e1), Delay(l, time.Millisecond, func() (int, error) { return 9, nil })))
		require.NoError(t, err)
		require.Equal(t, 9, v)
	})
	t.Run("every input failed fails it with every error", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, Any(Fail[int](l, e1), Fail[int](l, e2)))
		require.ErrorIs(t, err, e1)
		require.ErrorIs(t, err, e2)
	})
	t.Run("a cancelled input counts as failed", func(t *testing.T) {
		l := startLoop(t)
		p := NewPromise[int](l)
		a := Any(p.Handle(), Fail[int](l, e1))
		p.Handle().Cancel()
		_, err := wait(t, a)
		require.ErrorIs(t, err, e1)
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("Any of nothing fails with ErrNoInputs", func(t *testing.T) {
		_, err := wait(t, Any[int]())
		require.ErrorIs(t, err, ErrNoInputs)
	})
}

func TestWithin(t *testing.T) {
	l := startLoop(t)
	slow := Delay(l, time.Hour, func() (int, error) { return 0, nil })
	_, err := wait(t, Within(slow, 5*time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	_, err = wait(t, slow)
	require.ErrorIs(t, err, ErrCancelled, "the timed-out input is cancelled")

	v, err := wait(t, Within(Delay(l, time.Millisecond, func() (int, error) { return 4, nil }), time.Hour))
	require.NoError(t, err)
	require.Equal(t, 4, v)
	onLoop(t, l, func() {})
	require.Equal(t, 0, l.Stats().Timers, "the deadline timer is disarmed when the input wins")

	// Cancelling Within cancels the input and the timer.
	p := NewPromise[int](l)
	w := Within(p.Handle(), time.Hour)
	w.Cancel()
	_, err = wait(t, p.Handle())
	require.ErrorIs(t, err, ErrCancelled)
	onLoop(t, l, func() {})
	require.Equal(t, 0, l.Stats().Timers)

	// A shared input survives the timeout of one consumer.
	shared := NewPromise[int](l)
	other := Then(shared.Handle(), func(v int) (int, error) { return v, nil })
	_, err = wait(t, Within(shared.Handle(), time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, Running, shared.Handle().Status())
	shared.Resolve(1)
	_, err = wait(t, other)
	require.NoError(t, err)
}

// An attempt that fails with an error marked Permanent ends the retry at
// once, with that error (errors.Is sees through the mark, and through
// the count of attempts); other failures go on being retried.
func TestRetryStopsAtPermanent(t *testing.T) {
	l := startLoop(t)
	var attempts atomic.Int32
	h := Retry(l, 5, 0, func() *Handle[int] {
		if attempts.Add(1) < 2 {
			return Fail[int](l, errBoom)
		}
		return Fail[int](l, fmt.Errorf("bad certificate: %w", Permanent(errBoom)))
	})
	_, err := wait(t, h)
	require.ErrorIs(t, err, errBoom)
	require.ErrorContains(t, err, "2 attempts failed, the last: bad certificate: boom")
	require.Equal(t, int32(2), attempts.Load(), "no attempt after the permanent failure")
	require.NoError(t, Permanent(nil))
	require.Equal(t, errBoom.Error(), Permanent(errBoom).Error())
}

// RetryWith's policy: the wait doubles from Base up to Max, and Jitter
// draws each one down at random, to (1-Jitter) of it at the least.
func TestRetryWithPolicySpacesAttempts(t *testing.T) {
	waits := func(p RetryPolicy, rnd float64, n int) []time.Duration {
		r := &retryNode[int]{backoff: max(p.Base, 0), max: p.Max, jitter: p.Jitter} // as RetryWith makes it
		var ws []time.Duration
		for range n {
			ws = append(ws, r.nextWait(func() float64 { return rnd }))
		}
		return ws
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms},
		waits(RetryPolicy{Base: ms}, 0.5, 5), "no Max, no Jitter: doubling")
	assert.Equal(t, []time.Duration{ms, 2 * ms, 3 * ms, 3 * ms},
		waits(RetryPolicy{Base: ms, Max: 3 * ms}, 0.5, 4), "doubling up to Max")
	assert.Equal(t, []time.Duration{2 * ms, 2 * ms},
		waits(RetryPolicy{Base: 5 * ms, Max: 2 * ms}, 0.5, 2), "a Base over Max is Max")
	assert.Equal(t, []time.Duration{ms / 2, ms, 2 * ms},
		waits(RetryPolicy{Base: ms, Jitter: 1}, 0.5, 3), "full jitter: half way at rnd 0.5")
	assert.Equal(t, []time.Duration{ms, 2 * ms},
		waits(RetryPolicy{Base: ms, Jitter: 1}, 0, 2), "rnd 0: the whole wait")
	assert.Equal(t, []time.Duration{3 * ms / 4, 3 * ms / 2},
		waits(RetryPolicy{Base: ms, Jitter: 0.25}, 1, 2), "at most Jitter of it taken off")
	last := waits(RetryPolicy{Base: time.Hour}, 0, 80)[79]
	assert.Equal(t, time.Duration(math.MaxInt64), last, "saturates, never wraps negative")

	// A real retry with a policy: each wait is at least the policy's least.
	l := startLoop(t)
	var times []time.Duration // on the loop
	h := RetryWith(l, RetryPolicy{Attempts: 4, Base: 2 * ms, Max: 3 * ms, Jitter: 0.5}, func() *Handle[int] {
		times = append(times, l.Now())
		return Fail[int](l, errBoom)
	})
	_, err := wait(t, h)
	require.ErrorIs(t, err, errBoom)
	require.ErrorContains(t, err, "4 attempts failed")
	var ts []time.Duration
	onLoop(t, l, func() { ts = append(ts, times...) })
	require.Len(t, ts, 4)
	for i, least := range []time.Duration{ms, 3 * ms / 2, 3 * ms / 2} {
		require.GreaterOrEqual(t, ts[i+1]-ts[i], least, "wait %d", i)
	}

	// A policy out of range fails the handle, and fn is never called.
	for _, p := range []RetryPolicy{
		{Attempts: 0}, {Attempts: 2, Max: -ms}, {Attempts: 2, Jitter: -0.1},
		{Attempts: 2, Jitter: 1.5}, {Attempts: 2, Jitter: math.NaN()},
	} {
		_, err := wait(t, RetryWith(l, p, func() *Handle[int] {
			t.Errorf("fn called for %+v", p)
			return Pure(l, 1)
		}))
		require.ErrorIs(t, err, ErrInvalidArgument, "%+v", p)
	}
}

func TestRetryWithBackoff(t *testing.T) {
	l := startLoop(t)
	var attempts atomic.Int32
	var times []time.Duration // on the loop
	h := Retry(l, 4, 2*time.Millisecond, func() *Handle[int] {
		times = append(times, l.Now())
		if attempts.Add(1) < 3 {
			return Fail[int](l, errBoom)
		}
		return Pure(l, 42)
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 42, v)
	require.Equal(t, int32(3), attempts.Load())
	var ts []time.Duration
	onLoop(t, l, func() { ts = append(ts, times...) })
	require.GreaterOrEqual(t, ts[1]-ts[0], 2*time.Millisecond)
	require.GreaterOrEqual(t, ts[2]-ts[1], 4*time.Millisecond, "the backoff doubles")

	// The backoff counts from the failure, even one that comes late in a
	// long callback (not from the time the loop cached before it).
	var first *Promise[int]
	var failed, second time.Time
	retried := make(chan struct{})
	onLoop(t, l, func() {
		h = Retry(l, 2, 50*time.Millisecond, func() *Handle[int] {
			if first == nil {
				first = NewPromise[int](l)
				return first.Handle()
			}
			second = time.Now()
			close(retried)
			return Pure(l, 1)
		})
	})
	onLoop(t, l, func() {
		time.Sleep(30 * time.Millisecond) // a callback that runs long, not a synchronisation
		failed = time.Now()
		first.Reject(errBoom)
	})
	recv(t, retried)
	_, err = wait(t, h)
	require.NoError(t, err)
	require.GreaterOrEqual(t, second.Sub(failed), 50*time.Millisecond, "the backoff ended early")

	attempts.Store(0)
	_, err = wait(t, Retry(l, 3, 0, func() *Handle[int] { attempts.Add(1); return Fail[int](l, errBoom) }))
	require.ErrorIs(t, err, errBoom)
	require.ErrorContains(t, err, "3 attempts failed", "the error says it was retried")
	require.Equal(t, int32(3), attempts.Load())
	_, err = wait(t, Retry(l, 1, 0, func() *Handle[int] { return Fail[int](l, errBoom) }))
	require.Equal(t, errBoom, err, "one attempt: its error as it is")

	// Fewer than one attempt: fn is never called.
	attempts.Store(0)
	for _, n := range []int{0, -1} {
		_, err = wait(t, Retry(l, n, 0, func() *Handle[int] { attempts.Add(1); return Pure(l, 1) }))
		require.ErrorIs(t, err, ErrInvalidArgument)
	}
	require.Zero(t, attempts.Load())

	// Cancelled during the backoff: no more attempts.
	attempts.Store(0)
	r := Retry(l, 5, time.Hour, func() *Handle[int] { attempts.Add(1); return Fail[int](l, errBoom) })
	onLoop(t, l, func() {})
	onLoop(t, l, func() {})
	require.True(t, r.Cancel())
	_, err = wait(t, r)
	require.ErrorIs(t, err, ErrCancelled)
	onLoop(t, l, func() {})
	require.Equal(t, int32(1), attempts.Load())
	require.Equal(t, 0, l.Stats().Timers)
}

func TestBracket(t *testing.T) {
	// counted returns a release that checks its resource, and its call count.
	counted := func(t *testing.T) (func(string), *atomic.Int32) {
		var released atomic.Int32
		return func(r string) { assert.Equal(t, "res", r); released.Add(1) }, &released
	}
	t.Run("a completed use is released", func(t *testing.T) {
		l := startLoop(t)
		release, released := counted(t)
		v, err := wait(t, Bracket(Pure(l, "res"), release, func(r string) *Handle[int] { return Pure(l, len(r)) }))
		require.NoError(t, err)
		require.Equal(t, 3, v)
		require.Equal(t, int32(1), released.Load())
	})
	t.Run("a failed use is released", func(t *testing.T) {
		l := startLoop(t)
		release, released := counted(t)
		_, err := wait(t, Bracket(Pure(l, "res"), release, func(string) *Handle[int] { return Fail[int](l, errBoom) }))
		require.ErrorIs(t, err, errBoom)
		require.Equal(t, int32(1), released.Load(), "released after use fails")
	})
	t.Run("cancelled while using: use is cancelled, release runs before Done", func(t *testing.T) {
		l := startLoop(t)
		release, released := counted(t)
		use := NewPromise[int](l)
		b := Bracket(Pure(l, "res"), release, func(string) *Handle[int] { return use.Handle() })
		onLoop(t, l, func() {})
		onLoop(t, l, func() {})
		require.True(t, b.Cancel())
		_, err := wait(t, b)
		require.ErrorIs(t, err, ErrCancelled)
		require.Equal(t, int32(1), released.Load(), "released when use is cancelled, before Done")
		_, err = wait(t, use.Handle())
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("a failed acquire runs neither use nor release", func(t *testing.T) {
		l := startLoop(t)
		release, released := counted(t)
		var used atomic.Bool
		_, err := wait(t, Bracket(Fail[string](l, errBoom), release, func(string) *Handle[int] { used.Store(true); return Pure(l, 0) }))
		require.ErrorIs(t, err, errBoom)
		require.False(t, used.Load())
		require.Equal(t, int32(0), released.Load())
	})
	t.Run("a panic in use still releases", func(t *testing.T) {
		l := startLoop(t)
		release, released := counted(t)
		_, err := wait(t, Bracket(Pure(l, "res"), release, func(string) *Handle[int] { panic("use") }))
		var pe *PanicError
		require.ErrorAs(t, err, &pe)
		require.Equal(t, int32(1), released.Load())
	})
}

// Bug R10: a cancelled Bracket released while use still ran on another loop.
//
// Bracket promises release "after use completes, fails or is cancelled".
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
	require.True(t, recv(t, useStatus).Terminal(), "release ran while use was still running")
}

func TestScope(t *testing.T) {
	t.Run("nothing adopted outlives its scope, and Done waits for cleanups", func(t *testing.T) {
		l := startLoop(t)
		var child *Handle[int]
		var cleaned atomic.Bool
		h := WithScope(l, func(s *Scope) *Handle[string] {
			child = Adopt(s, Delay(l, time.Hour, func() (int, error) { return 0, nil }))
			child.OnCleanup(func() { cleaned.Store(true) })
			return Delay(l, time.Millisecond, func() (string, error) { return "done", nil })
		})
		v, err := wait(t, h)
		require.NoError(t, err)
		require.Equal(t, "done", v)
		require.True(t, cleaned.Load(), "the scope's Done waits for its children's cleanups")
		_, err = wait(t, child)
		require.ErrorIs(t, err, ErrCancelled, "nothing adopted outlives its scope")
		require.True(t, cleaned.Load())
	})
	t.Run("a cancelled scope's cleanups and Done wait for its children's cleanups", func(t *testing.T) {
		l := startLoop(t)
		var order []string // on the loop
		var h *Handle[int]
		onLoop(t, l, func() {
			h = WithScope(l, func(s *Scope) *Handle[int] {
				Adopt(s, NewPromise[int](l).Handle()).OnCleanup(func() { order = append(order, "child") })
				return NewPromise[int](l).Handle()
			})
			h.OnCleanup(func() { order = append(order, "scope") })
		})
		require.True(t, h.Cancel())
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
		var got []string
		onLoop(t, l, func() { got = order })
		require.Equal(t, []string{"child", "scope"}, got)
	})
	t.Run("cancelling the scope cancels every child, on any loop", func(t *testing.T) {
		l, other := startLoop(t), startLoop(t)
		var kids []*Handle[int]
		h := WithScope(l, func(s *Scope) *Handle[string] {
			kids = append(kids, Adopt(s, NewPromise[int](l).Handle()), Adopt(s, NewPromise[int](other).Handle()))
			return NewPromise[string](l).Handle()
		})
		onLoop(t, l, func() {})
		require.True(t, h.Cancel())
		for _, k := range kids {
			_, err := wait(t, k)
			require.ErrorIs(t, err, ErrCancelled)
		}
	})
	t.Run("a deadline around the scope cancels it and its children", func(t *testing.T) {
		l := startLoop(t)
		var late *Handle[int]
		_, err := wait(t, Within(WithScope(l, func(s *Scope) *Handle[int] {
			late = Adopt(s, NewPromise[int](l).Handle())
			return NewPromise[int](l).Handle()
		}), 2*time.Millisecond))
		require.ErrorIs(t, err, ErrTimeout)
		_, err = wait(t, late)
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("finished children leave the scope", func(t *testing.T) {
		l := startLoop(t)
		var s *Scope
		var delays []*Handle[int]
		h := WithScope(l, func(sc *Scope) *Handle[int] {
			s = sc
			for i := 0; i < 100; i++ {
				Adopt(sc, Pure(l, i))
				delays = append(delays, Adopt(sc, Delay(l, 0, func() (int, error) { return 0, nil })))
			}
			return NewPromise[int](l).Handle()
		})
		onLoop(t, l, func() {}) // the scope body ran
		_, err := wait(t, All(delays...))
		require.NoError(t, err)
		var n int
		onLoop(t, l, func() { n = s.Len() })
		require.Zero(t, n, "a long-lived scope holds only what runs")
		h.Cancel()
	})
	t.Run("a nil result from the body fails it with ErrNilHandle", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, WithScope(l, func(*Scope) *Handle[int] { return nil }))
		require.ErrorIs(t, err, ErrNilHandle)
	})
}

// A stopped loop among the inputs does not decide a combinator's result by
// being first: the result was pinned to the first input's loop, and one
// pinned to a stopped loop is cancelled at once, so Race(gone, ok) was
// cancelled where Race(ok, gone) completed, and AllSettled(gone, ok)
// failed where it never fails because of an input.
func TestCombinatorFirstInputOnStoppedLoop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	live, dead := startLoopOn(t, rt), startLoopOn(t, rt)
	gone := NewPromise[int](dead).Handle()
	_, err := wait(t, dead.Stop())
	require.NoError(t, err)
	ok := Pure(live, 3)
	for _, h := range []*Handle[int]{Race(gone, ok), Race(ok, gone), Any(gone, ok), Any(ok, gone)} {
		v, err := wait(t, h)
		require.NoError(t, err)
		require.Equal(t, 3, v)
		require.Same(t, live, h.Loop())
	}
	outs, err := wait(t, AllSettled(gone, ok))
	require.NoError(t, err)
	require.ErrorIs(t, outs[0].Err, ErrCancelled)
	require.Equal(t, Outcome[int]{Value: 3}, outs[1])
	outs, err = wait(t, AllSettledWithin(time.Minute, gone, ok))
	require.NoError(t, err)
	require.Equal(t, 3, outs[1].Value)
	_, err = wait(t, All(gone, ok))
	require.ErrorIs(t, err, ErrCancelled, "an input was cancelled: All is")

	// An input on no loop after the stopped one takes the result as a running
	// loop would: no Stop cancels it.
	r := Race(gone, Pure[int](nil, 4))
	v, err := wait(t, r)
	require.NoError(t, err)
	require.Equal(t, 4, v)
	require.Nil(t, r.Loop())
	outs, err = wait(t, AllSettled(gone, Pure[int](nil, 4)))
	require.NoError(t, err, "AllSettled never fails because of an input")
	require.ErrorIs(t, outs[0].Err, ErrCancelled)
	require.Equal(t, Outcome[int]{Value: 4}, outs[1])
}

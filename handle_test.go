package aio

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/gcwatch"
)

// UT-01: cancelling a pending handle moves it to Cancelled at once, from any
// goroutine, and its waiters see ErrCancelled.
func TestCancelPendingHandle(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	h := p.Handle()
	require.Equal(t, Running, h.Status())
	require.True(t, h.Cancel())
	require.Equal(t, Cancelled, h.Status())
	require.True(t, h.Cancelled())
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	require.False(t, p.Resolve(1), "resolve after cancel must be a no-op")
	_, err = h.Result()
	require.ErrorIs(t, err, ErrCancelled)
}

// UT-08 and UT-09: cancelling a completed or failed handle returns false and
// changes nothing.
func TestCancelTerminalHandleReturnsFalse(t *testing.T) {
	l := startLoop(t)
	done := NewPromise[int](l)
	require.True(t, done.Resolve(7))
	failed := NewPromise[int](l)
	boom := errors.New("boom")
	require.True(t, failed.Reject(boom))

	_, _ = wait(t, done.Handle())
	_, _ = wait(t, failed.Handle())
	require.False(t, done.Handle().Cancel())
	require.False(t, failed.Handle().Cancel())
	require.Equal(t, Completed, done.Handle().Status())
	require.Equal(t, Failed, failed.Handle().Status())
	v, err := done.Handle().Result()
	require.NoError(t, err)
	require.Equal(t, 7, v)
	_, err = failed.Handle().Result()
	require.ErrorIs(t, err, boom)
	require.False(t, Pure(l, 1).Cancel())
	require.False(t, Fail[int](l, boom).Cancel())
}

// UT-06: OnCancel callbacks run on the loop when the handle is cancelled, and
// never when it finishes otherwise.
func TestOnCancelRunsOnCancelOnly(t *testing.T) {
	l := startLoop(t)
	var cancelled, completed atomic.Int32
	var onLoop atomic.Bool
	a := NewPromise[int](l)
	a.Handle().OnCancel(func() { cancelled.Add(1); onLoop.Store(l.OnLoop()) })
	b := NewPromise[int](l)
	b.Handle().OnCancel(func() { completed.Add(1) })

	require.True(t, a.Handle().Cancel())
	require.True(t, b.Resolve(1))
	_, _ = wait(t, a.Handle())
	_, _ = wait(t, b.Handle())
	require.Equal(t, int32(1), cancelled.Load())
	require.True(t, onLoop.Load(), "OnCancel must run on the loop")
	require.Equal(t, int32(0), completed.Load())

	// Registered after the cancellation: runs soon after.
	late := make(chan struct{})
	a.Handle().OnCancel(func() { close(late) })
	select {
	case <-late:
	case <-time.After(waitTimeout):
		t.Fatal("OnCancel on a cancelled handle did not run")
	}
}

// The four tests of async-handle-cleanup-list.md plus UT-07: cleanups run
// once, last registered first, on completion, failure and cancellation.
func TestCleanupsRunLIFOOnEveryOutcome(t *testing.T) {
	l := startLoop(t)
	for _, tc := range []struct {
		name   string
		settle func(p *Promise[int])
		status Status
	}{
		{"complete", func(p *Promise[int]) { p.Resolve(1) }, Completed},
		{"fail", func(p *Promise[int]) { p.Reject(errors.New("x")) }, Failed},
		{"cancel", func(p *Promise[int]) { p.Handle().Cancel() }, Cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var order []int
			p := NewPromise[int](l)
			for i := 1; i <= 3; i++ {
				p.Handle().OnCleanup(func() {
					assert.True(t, l.OnLoop())
					mu.Lock()
					order = append(order, i)
					mu.Unlock()
				})
			}
			tc.settle(p)
			_, _ = wait(t, p.Handle())
			assert.Equal(t, tc.status, p.Handle().Status())
			mu.Lock()
			assert.Equal(t, []int{3, 2, 1}, order, "cleanups run LIFO, each once, before Done")
			mu.Unlock()
		})
	}
}

// Cleanups never run twice: settling again, cancelling after completion and
// the collector all leave them alone.
func TestCleanupsNoDoubleRun(t *testing.T) {
	l := startLoop(t)
	var runs atomic.Int32
	p := NewPromise[int](l)
	p.Handle().OnCleanup(func() { runs.Add(1) })
	require.True(t, p.Resolve(1))
	require.False(t, p.Resolve(2))
	require.False(t, p.Reject(errors.New("late")))
	_, _ = wait(t, p.Handle())
	require.False(t, p.Handle().Cancel())
	onLoop(t, l, func() {}) // a full turn of the loop after the extra calls
	runtime.GC()
	onLoop(t, l, func() {})
	require.Equal(t, int32(1), runs.Load())
	v, err := p.Handle().Result()
	require.NoError(t, err)
	require.Equal(t, 1, v, "the first settling call wins")
}

// A cleanup registered on a handle that already finished runs soon after, on
// the loop.
func TestCleanupOnFinishedHandleRuns(t *testing.T) {
	l := startLoop(t)
	h := Pure(l, 1)
	ran := make(chan bool, 1)
	h.OnCleanup(func() { ran <- l.OnLoop() })
	select {
	case on := <-ran:
		require.True(t, on)
	case <-time.After(waitTimeout):
		t.Fatal("cleanup on a finished handle did not run")
	}
}

// The ordering of the terminal transition: OnCancel, then continuations, then
// cleanups, then Done.
func TestTerminalTransitionOrder(t *testing.T) {
	l := startLoop(t)
	var order []string // touched only on the loop
	p := NewPromise[int](l)
	h := p.Handle()
	onLoop(t, l, func() {
		h.OnCleanup(func() { order = append(order, "cleanup") })
		Then(h, func(int) (int, error) { order = append(order, "then"); return 0, nil })
		Finally(h, func() { order = append(order, "finally") })
	})
	p.Resolve(1)
	_, _ = wait(t, h)
	var got []string
	onLoop(t, l, func() { got = append(got, order...) })
	require.Equal(t, []string{"then", "finally", "cleanup"}, got)

	order = nil
	onLoop(t, l, func() {
		c := NewPromise[int](l).Handle()
		c.OnCleanup(func() { order = append(order, "cleanup") })
		c.OnCancel(func() { order = append(order, "oncancel") })
		Finally(c, func() { order = append(order, "finally") })
		c.Cancel()
	})
	got = nil
	onLoop(t, l, func() { got = append(got, order...) })
	require.Equal(t, []string{"oncancel", "finally", "cleanup"}, got)
}

// UT-11 and concurrent Cancel: many goroutines cancel one handle while others
// read Cancelled; exactly one Cancel returns true and readers never see a torn
// state (the race detector checks the atomics).
func TestConcurrentCancelExactlyOneWins(t *testing.T) {
	l := startLoop(t)
	for round := 0; round < 50; round++ {
		p := NewPromise[int](l)
		h := p.Handle()
		var cleanups atomic.Int32
		h.OnCleanup(func() { cleanups.Add(1) })
		var wins atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 16; i++ {
			wg.Add(2)
			go func() {
				defer wg.Done()
				<-start
				if h.Cancel() {
					wins.Add(1)
				}
			}()
			go func() {
				defer wg.Done()
				<-start
				for j := 0; j < 100; j++ {
					if h.Cancelled() {
						assert.Equal(t, Cancelled, h.Status())
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
		require.Equal(t, int32(1), wins.Load())
		require.Equal(t, int32(1), cleanups.Load())
	}
}

// Resolve, reject and cancel racing from different goroutines: exactly one
// wins, the outcome matches the winner, and the cleanup runs once.
func TestSettleCancelRace(t *testing.T) {
	l := startLoop(t)
	for round := 0; round < 200; round++ {
		p := NewPromise[int](l)
		h := p.Handle()
		var cleanups atomic.Int32
		h.OnCleanup(func() { cleanups.Add(1) })
		var resolved, rejected, cancelled atomic.Bool
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); <-start; resolved.Store(p.Resolve(round)) }()
		go func() { defer wg.Done(); <-start; rejected.Store(p.Reject(errors.New("no"))) }()
		go func() { defer wg.Done(); <-start; cancelled.Store(h.Cancel()) }()
		close(start)
		wg.Wait()
		v, err := wait(t, h)
		wins := 0
		for _, b := range []bool{resolved.Load(), rejected.Load(), cancelled.Load()} {
			if b {
				wins++
			}
		}
		require.Equal(t, 1, wins, "exactly one settling call wins")
		switch {
		case resolved.Load():
			require.NoError(t, err)
			require.Equal(t, round, v)
			require.Equal(t, Completed, h.Status())
		case rejected.Load():
			require.EqualError(t, err, "no")
			require.Equal(t, Failed, h.Status())
		default:
			require.ErrorIs(t, err, ErrCancelled)
			require.Equal(t, Cancelled, h.Status())
		}
		require.Equal(t, int32(1), cleanups.Load())
	}
}

func TestNewResolvesFromAnyGoroutine(t *testing.T) {
	l := startLoop(t)
	var startedOnLoop atomic.Bool
	h := New(l, func(resolve func(int), reject func(error)) {
		startedOnLoop.Store(l.OnLoop())
		go resolve(5)
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 5, v)
	require.True(t, startedOnLoop.Load(), "start runs on the loop")

	h = New(l, func(resolve func(int), reject func(error)) { reject(nil) })
	_, err = wait(t, h)
	require.Error(t, err, "reject(nil) still fails the handle")
}

func TestPanicsFailTheirHandle(t *testing.T) {
	l := startLoop(t)
	boom := errors.New("boom")
	h := New(l, func(func(int), func(error)) { panic(boom) })
	_, err := wait(t, h)
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, boom, "a PanicError unwraps to an error panic value")

	h2 := Then(Pure(l, 1), func(int) (int, error) { panic("then") })
	_, err = wait(t, h2)
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "then", pe.Value)
	require.NotEmpty(t, pe.Stack)

	h3 := Delay(l, 0, func() (int, error) { panic("delay") })
	_, err = wait(t, h3)
	require.ErrorAs(t, err, &pe)

	// A panic in a posted callback or a cleanup does not kill the loop.
	require.NoError(t, l.Post(func() { panic("posted") }))
	p := NewPromise[int](l)
	var second atomic.Bool
	p.Handle().OnCleanup(func() { second.Store(true) })
	p.Handle().OnCleanup(func() { panic("cleanup") })
	p.Resolve(1)
	_, err = wait(t, p.Handle())
	require.NoError(t, err)
	require.True(t, second.Load(), "the other cleanups still run")
	onLoop(t, l, func() {})
	require.GreaterOrEqual(t, l.Stats().Panics, uint64(2))
}

func TestWaitOnOwnLoop(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	var errPending, errDone error
	var vDone int
	onLoop(t, l, func() {
		_, errPending = p.Handle().Wait(context.Background())
		p.Resolve(3)
		vDone, errDone = p.Handle().Wait(context.Background())
	})
	require.ErrorIs(t, errPending, ErrAwaitOnLoop)
	require.NoError(t, errDone, "a terminal handle's outcome is available on its loop")
	require.Equal(t, 3, vDone)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewPromise[int](l).Handle().Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

// A handle done by the time Wait sees its context end gives its outcome,
// not the context's error: a value that must be closed (a dialed Conn) is
// not lost to a coin toss between two ready cases.
func TestWaitPrefersTheOutcome(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	p.Resolve(7)
	<-p.Handle().Done()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		v, err := p.Handle().Wait(ctx)
		require.NoError(t, err)
		require.Equal(t, 7, v)
	}
}

// Wait's outcome means done: a handle settled whose terminal transition
// has not run yet (its loop is busy) is not done, its cleanups still to
// run, and a Wait whose context has ended gives the context's error for
// it, not a value before its Done.
func TestWaitOutcomeOnlyWhenDone(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	var cleaned atomic.Bool
	p.Handle().OnCleanup(func() { cleaned.Store(true) })
	block := make(chan struct{})
	require.NoError(t, l.Post(func() { <-block })) // the loop is busy: the transition waits
	p.Resolve(7)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Handle().Wait(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, cleaned.Load())
	close(block)
	v, err := p.Handle().Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.True(t, cleaned.Load(), "Done closes after the cleanups")
}

// A nil context is bad input: Wait says so instead of panicking, on the
// handle's loop and off it, pending or not.
func TestWaitNilContext(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	_, err := p.Handle().Wait(nil) // the bad input under test
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "nil context")
	onLoop(t, l, func() { _, err = p.Handle().Wait(nil) })
	require.ErrorIs(t, err, ErrInvalidArgument)
	p.Resolve(1)
	_, err = p.Handle().Wait(nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestResultBeforeTerminal(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[string](l)
	v, err := p.Handle().Result()
	require.ErrorIs(t, err, ErrPending)
	require.Empty(t, v)
	select {
	case <-p.Handle().Done():
		t.Fatal("Done closed before terminal")
	default:
	}
	p.Resolve("ok")
	recv(t, p.Handle().Done())
	v, err = p.Handle().Result()
	require.NoError(t, err)
	require.Equal(t, "ok", v)
}

func TestStatusStrings(t *testing.T) {
	for s, want := range map[Status]string{Pending: "pending", Running: "running", Completed: "completed", Failed: "failed", Cancelled: "cancelled"} {
		assert.Equal(t, want, s.String())
	}
	assert.Equal(t, "Status(9)", Status(9).String())
	assert.False(t, Pending.Terminal())
	assert.False(t, Running.Terminal())
	assert.True(t, Completed.Terminal())
	assert.True(t, Failed.Terminal())
	assert.True(t, Cancelled.Terminal())
	assert.False(t, Status(9).Terminal())
}

// Then: failure passes through without calling fn, cancellation of the input
// cancels the dependent, and fn never runs inside the call to Then.
func TestThenSemantics(t *testing.T) {
	t.Run("a failure passes through without calling fn", func(t *testing.T) {
		l := startLoop(t)
		boom := errors.New("boom")
		var called atomic.Bool
		failed := Then(Fail[int](l, boom), func(int) (int, error) { called.Store(true); return 0, nil })
		_, err := wait(t, failed)
		require.ErrorIs(t, err, boom)
		onLoop(t, l, func() {})
		assert.False(t, called.Load())
	})
	t.Run("a cancelled input cancels the dependent without calling fn", func(t *testing.T) {
		l := startLoop(t)
		var called atomic.Bool
		p := NewPromise[int](l)
		dep := Then(p.Handle(), func(int) (int, error) { called.Store(true); return 0, nil })
		p.Handle().Cancel()
		_, err := wait(t, dep)
		require.ErrorIs(t, err, ErrCancelled)
		require.Equal(t, Cancelled, dep.Status())
		onLoop(t, l, func() {})
		assert.False(t, called.Load())
	})
	t.Run("fn never runs inside the call to Then", func(t *testing.T) {
		l := startLoop(t)
		var ranInside bool
		onLoop(t, l, func() {
			inCall := true
			Then(Pure(l, 1), func(int) (int, error) { ranInside = inCall; return 0, nil })
			inCall = false
		})
		onLoop(t, l, func() {
			assert.False(t, ranInside, "a continuation never runs inside the call that registers it")
		})
	})
}

// Bug R2: Then on a loopless handle ran its continuation inside the call.
//
// A continuation on a handle with no loop (Pure(nil, …), All(), Stop's
// handle) runs inside the call that registers it, on the caller's goroutine.
func TestThenOnLooplessHandleNeverRunsInsideTheCall(t *testing.T) {
	caller := getg()
	ranOn := make(chan uintptr, 2)
	h := Then(Pure[int](nil, 1), func(v int) (int, error) { ranOn <- getg(); return v + 1, nil })
	_, _ = wait(t, h)
	require.NotEqual(t, caller, recv(t, ranOn), "API: a continuation never runs inside the call that registers it")

	h2 := Then(All[int](), func([]int) (int, error) { ranOn <- getg(); return 0, nil })
	_, _ = wait(t, h2)
	require.NotEqual(t, caller, recv(t, ranOn), "API: a continuation never runs inside the call that registers it")
}

// Cancelling a dependent withdraws its interest: an input with no interested
// dependent left is cancelled, one still wanted by another dependent is not.
func TestCancelWithdrawsInterest(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	a := Then(p.Handle(), func(v int) (int, error) { return v, nil })
	b := Then(p.Handle(), func(v int) (int, error) { return v * 2, nil })
	a.Cancel()
	onLoop(t, l, func() {})
	require.Equal(t, Running, p.Handle().Status(), "b still wants the input")
	b.Cancel()
	_, err := wait(t, p.Handle())
	require.ErrorIs(t, err, ErrCancelled, "no dependent wants the input any more")
}

// UT-02 and the deep chain (deepN() links): completion and cancellation walk
// the graph with the job queue, not the stack (boundStack fails recursion).
// A Then, ThenAsync, Catch or Tap whose function will never run
// (cancelled before or after its input settled, or its input settled the
// way that passes through) lets go of the function, and of what it
// captured, though its handle is kept: a server that keeps cancelled
// handles must not keep their requests' buffers.
func TestUnrunFunctionIsLetGo(t *testing.T) {
	l := startLoop(t)
	type chain func(h *Handle[int], big *[1 << 20]byte) *Handle[int]
	for _, c := range []struct {
		name   string
		chain  chain
		passes func(p *Promise[int]) // settles p the way that does not run fn
	}{
		{"Then", func(h *Handle[int], big *[1 << 20]byte) *Handle[int] {
			return Then(h, func(int) (int, error) { return int(big[0]), nil })
		}, func(p *Promise[int]) { p.Reject(errors.New("no")) }},
		{"ThenAsync", func(h *Handle[int], big *[1 << 20]byte) *Handle[int] {
			return ThenAsync(h, func(int) *Handle[int] { return Pure(h.Loop(), int(big[0])) })
		}, func(p *Promise[int]) { p.Reject(errors.New("no")) }},
		{"Catch", func(h *Handle[int], big *[1 << 20]byte) *Handle[int] {
			return Catch(h, func(error) (int, error) { return int(big[0]), nil })
		}, func(p *Promise[int]) { p.Resolve(1) }},
		{"Tap", func(h *Handle[int], big *[1 << 20]byte) *Handle[int] {
			return Tap(h, func(int) { _ = big[0] })
		}, func(p *Promise[int]) { p.Reject(errors.New("no")) }},
	} {
		for _, how := range []string{"cancelled", "cancelled, then input done", "input passed through"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				freed := make(chan struct{})
				var res *Handle[int]
				p := NewPromise[int](l)
				onLoop(t, l, func() {
					big := new([1 << 20]byte)
					runtime.AddCleanup(big, func(ch chan struct{}) { close(ch) }, freed)
					res = c.chain(p.Handle(), big)
					switch how {
					case "cancelled":
						res.Cancel()
					case "cancelled, then input done":
						res.Cancel()
						c.passes(p)
					case "input passed through":
						c.passes(p)
					}
				})
				_, _ = wait(t, res)
				onLoop(t, l, func() {}) // the loop is past every job of the test
				collected(t, freed, "the handle keeps its function's captures")
				runtime.KeepAlive(res)
				runtime.KeepAlive(p)
			})
		}
	}
}

// The producers that hold a function of the caller's (Delay, Every,
// Retry, Bracket, Work, Do) let go of it, and of what it captured, once their
// handle has ended and the function will not run (again), as the
// continuations do (TestUnrunFunctionIsLetGo). Each case starts its
// producer off the loop and returns the handle to wait for.
func TestEndedProducerLetsGoOfItsFunction(t *testing.T) {
	l := startLoop(t)
	type ender interface{ Done() <-chan struct{} }
	for _, c := range []struct {
		name  string
		start func(big *[1 << 20]byte) ender
	}{
		{"Delay/cancelled", func(big *[1 << 20]byte) ender {
			h := Delay(l, time.Hour, func() (int, error) { return int(big[0]), nil })
			h.Cancel()
			return h
		}},
		{"Every/cancelled", func(big *[1 << 20]byte) ender {
			h := Every(l, time.Hour, func() { _ = big[0] })
			h.Cancel()
			return h
		}},
		{"Every/failed", func(big *[1 << 20]byte) ender {
			return Every(l, time.Millisecond, func() { panic(int(big[0])) })
		}},
		{"Retry/completed", func(big *[1 << 20]byte) ender {
			return Retry(l, 3, 0, func() *Handle[int] { return Pure(l, int(big[0])) })
		}},
		{"Retry/failed", func(big *[1 << 20]byte) ender {
			return Retry(l, 1, 0, func() *Handle[int] { return Fail[int](l, fmt.Errorf("no %d", big[0])) })
		}},
		{"Retry/cancelled", func(big *[1 << 20]byte) ender {
			h := Retry(l, 3, time.Hour, func() *Handle[int] { return Fail[int](l, fmt.Errorf("no %d", big[0])) })
			h.Cancel()
			return h
		}},
		{"Bracket/acquire failed", func(big *[1 << 20]byte) ender {
			return Bracket(Fail[int](l, errors.New("no")), func(int) { _ = big[0] },
				func(int) *Handle[int] { return Pure(l, int(big[0])) })
		}},
		{"Bracket/cancelled while acquiring", func(big *[1 << 20]byte) ender {
			acq := NewPromise[int](l)
			h := Bracket(acq.Handle(), func(int) { _ = big[0] },
				func(int) *Handle[int] { return Pure(l, int(big[0])) })
			h.Cancel()
			return h
		}},
		{"Work/completed", func(big *[1 << 20]byte) ender {
			return Work(l, func(context.Context) (int, error) { return int(big[0]), nil })
		}},
		{"Work/cancelled before it ran", func(big *[1 << 20]byte) ender {
			held := make(chan struct{}) // every worker busy: the job waits in the queue
			var busy []*Handle[int]
			for range 4 { // Config.WorkPool's default
				busy = append(busy, Work(l, func(context.Context) (int, error) { <-held; return 0, nil }))
			}
			h := Work(l, func(context.Context) (int, error) { return int(big[0]), nil })
			h.Cancel()
			close(held)
			for _, b := range busy {
				_, _ = wait(t, b)
			}
			return h
		}},
		{"Do/cancelled before it started", func(big *[1 << 20]byte) ender {
			held := make(chan struct{})
			require.NoError(t, l.Post(func() { <-held })) // Do's start waits behind this
			h := Do(l, func(*Co) (int, error) { return int(big[0]), nil })
			h.Cancel()
			close(held)
			return h
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			freed := make(chan struct{})
			big := new([1 << 20]byte)
			runtime.AddCleanup(big, func(ch chan struct{}) { close(ch) }, freed)
			res := c.start(big)
			big = nil
			<-res.Done()
			onLoop(t, l, func() {}) // the loop is past every job of the test
			collected(t, freed, "the ended handle keeps its function's captures")
			runtime.KeepAlive(res)
		})
	}
}

// collected waits for freed to close (a runtime.AddCleanup's signal),
// collecting garbage meanwhile.
func collected(t *testing.T, freed <-chan struct{}, msg string) {
	t.Helper()
	require.True(t, gcwatch.Within(freed, waitTimeout), msg)
}

// A combinator's result that has ended lets go of the inputs it no longer
// needs: one it withdrew from (a Race's loser, a Within's input at the
// timeout, All's others after a failure) may complete later all the same,
// because another dependent wants it, and the result, which the program
// keeps, must not keep that value reachable; nor must a Bracket keep the
// resource it released.
func TestEndedCombinatorLetsGoOfItsInputs(t *testing.T) {
	l := startLoop(t)
	type big = [1 << 20]byte
	type ender interface{ Done() <-chan struct{} }
	for _, c := range []struct {
		name string
		// start builds the result on the loop from in, an input that
		// completes (with the big value) only after the result ended.
		start func(in *Handle[*big]) ender
	}{
		{"Within/timed out", func(in *Handle[*big]) ender {
			return Within(in, time.Millisecond)
		}},
		{"Race/lost", func(in *Handle[*big]) ender {
			return Race(in, Pure(l, (*big)(nil)))
		}},
		{"Any/lost", func(in *Handle[*big]) ender {
			return Any(in, Pure(l, (*big)(nil)))
		}},
		{"All/failed", func(in *Handle[*big]) ender {
			return All(in, Fail[*big](l, errors.New("no")))
		}},
		{"AllSettledWithin/timed out", func(in *Handle[*big]) ender {
			return AllSettledWithin(time.Millisecond, in)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			freed := make(chan struct{})
			p := NewPromise[*big](l)
			var res ender
			var other *Handle[int]
			onLoop(t, l, func() {
				// Another dependent wants the input: withdrawing from it
				// does not cancel it.
				other = Then(p.Handle(), func(*big) (int, error) { return 0, nil })
				res = c.start(p.Handle())
			})
			<-res.Done()
			onLoop(t, l, func() {
				b := new(big)
				runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, freed)
				require.True(t, p.Resolve(b))
			})
			p = nil
			_, err := wait(t, other)
			require.NoError(t, err)
			onLoop(t, l, func() {}) // the loop is past every job of the test
			collected(t, freed, "the ended result keeps its input's later value")
			runtime.KeepAlive(res)
		})
	}
}

// A Bracket's result lets go of the resource once released: the program
// keeps the result handle, and the resource (a connection, a file) was
// handed back by release.
func TestBracketLetsGoOfItsReleasedResource(t *testing.T) {
	l := startLoop(t)
	type big = [1 << 20]byte
	freed := make(chan struct{})
	var res *Handle[int]
	onLoop(t, l, func() {
		b := new(big)
		runtime.AddCleanup(b, func(ch chan struct{}) { close(ch) }, freed)
		res = Bracket(Pure(l, b), func(*big) {}, func(r *big) *Handle[int] { return Pure(l, int(r[0])) })
	})
	_, err := wait(t, res)
	require.NoError(t, err)
	onLoop(t, l, func() {})
	collected(t, freed, "the ended bracket keeps the resource it released")
	runtime.KeepAlive(res)
}

func TestDeepChainCompletesAndCancels(t *testing.T) {
	inc := func(v int) (int, error) { return v + 1, nil }
	l, build := deepChain(t, func(_ *Loop, h *Handle[int]) *Handle[int] { return Then(h, inc) })

	// Cancel at the root: every dependent ends cancelled.
	p, last := build()
	require.True(t, p.Handle().Cancel())
	_, err := waitWithin(t, deepTimeout, last)
	require.ErrorIs(t, err, ErrCancelled)
	onLoopWithin(t, l, deepTimeout, func() {})
	require.Equal(t, 0, l.Stats().Handles, "every handle of the chains has finished")
}

// A handle dropped without reaching a terminal state is collected, its
// cleanups still run on the loop, and Stats counts it as abandoned.
func TestAbandonedHandleRunsCleanups(t *testing.T) {
	l := startLoop(t)
	ran := make(chan bool, 1)
	onLoop(t, l, func() {
		p := NewPromise[int](l)
		p.Handle().OnCleanup(func() { ran <- l.OnLoop() })
	})
	// Two iteration boundaries later the loop tracks it weakly (track.go).
	onLoop(t, l, func() {})
	onLoop(t, l, func() {})
	onLoop(t, l, func() {})
	requireAbandoned(t, l, ran)
}

// Bug R4: the Done channel of an abandoned handle was never closed.
//
// The record of a weakly tracked handle does not hold its Done channel
// (DESIGN: "keep each handle's cleanups, Done channel and a finished flag in a
// small record"). A goroutine blocked on the Done channel of a pending handle
// does not keep the handle alive; once it is collected its cleanups run, but
// the channel is never closed, not even by Stop: the waiter leaks forever.
func TestAbandonedHandleDoneIsClosed(t *testing.T) {
	l := startLoop(t)
	var done <-chan struct{}
	cleaned := make(chan struct{}, 1)
	onLoop(t, l, func() {
		h := NewPromise[int](l).Handle()
		h.OnCleanup(func() { cleaned <- struct{}{} })
		done = h.Done()
	})
	collectUntil(t, cleaned)
	onLoop(t, l, func() {})
	require.Equal(t, uint64(1), l.Stats().Abandoned, "the handle was collected and abandoned")
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Done of an abandoned handle never closes, even after Stop: its waiters hang")
	}
}

func TestNilArguments(t *testing.T) {
	l := startLoop(t)
	check := func(err error, want error) {
		t.Helper()
		assert.ErrorIs(t, err, want)
	}
	_, err := wait(t, New[int](l, nil))
	check(err, ErrNilFunc)
	_, err = wait(t, New(nil, func(func(int), func(error)) {}))
	check(err, ErrNilLoop)
	_, err = wait(t, Delay[int](l, time.Millisecond, nil))
	check(err, ErrNilFunc)
	_, err = wait(t, Every(l, time.Millisecond, nil))
	check(err, ErrNilFunc)
	_, err = wait(t, Every(l, 0, func() {}))
	check(err, ErrInvalidArgument)
	_, err = wait(t, Work[int](l, nil))
	check(err, ErrNilFunc)
	_, err = wait(t, Then[int, int](nil, func(int) (int, error) { return 0, nil }))
	check(err, ErrNilHandle)
	_, err = wait(t, Then[int, int](Pure(l, 1), nil))
	check(err, ErrNilFunc)
	check(l.Post(nil), ErrNilFunc)
	_, err = wait(t, Fail[int](l, nil))
	require.Error(t, err)
	h := Pure[int](nil, 4)
	require.Nil(t, h.Loop())
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 4, v)
	// Nil callbacks on handles are ignored, never a panic.
	NewPromise[int](l).Handle().OnCancel(nil).OnCleanup(nil)
	var nilLoop *Loop
	check(nilLoop.Post(func() {}), ErrNilLoop)
	require.False(t, nilLoop.OnLoop())
}

func TestWorkRunsOffLoopAndCancelsContext(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 2})
	var offLoop atomic.Bool
	h := Work(l, func(ctx context.Context) (int, error) {
		offLoop.Store(!l.OnLoop())
		return 9, nil
	})
	v, err := wait(t, h)
	require.NoError(t, err)
	require.Equal(t, 9, v)
	require.True(t, offLoop.Load())

	started := make(chan struct{})
	ctxErr, ctxCause := make(chan error, 1), make(chan error, 1)
	h = Work(l, func(ctx context.Context) (int, error) {
		close(started)
		<-ctx.Done()
		ctxErr <- ctx.Err()
		ctxCause <- context.Cause(ctx)
		return 0, ctx.Err()
	})
	recv(t, started)
	require.True(t, h.Cancel())
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	require.ErrorIs(t, recv(t, ctxErr), context.Canceled)
	cause := recv(t, ctxCause)
	require.ErrorIs(t, cause, ErrCancelled)
	require.NotErrorIs(t, cause, ErrStopped, "a cancel of the handle is not a stop")
}

// The contexts aio gives goroutine-minded code (a Work function's, a Do
// body's) tell a shutdown from a cancel: Stop cancels them with a cause that
// matches ErrStopped as well as ErrCancelled. A Do body learns it from its
// context whatever it awaits, though Stop cancels what it awaits (timers
// first, young handles next) before the Do handle.
func TestContextCauseOfStop(t *testing.T) {
	l := startLoop(t)
	const n = 4
	causes := make(chan error, n)
	ready := make(chan struct{}, n)
	watch := func(ctx context.Context) {
		go func() { <-ctx.Done(); causes <- context.Cause(ctx) }()
	}
	work := func() *Handle[int] {
		return Work(l, func(ctx context.Context) (int, error) {
			watch(ctx)
			ready <- struct{}{}
			<-ctx.Done()
			return 0, ctx.Err()
		})
	}
	var hs []*Handle[int]
	onLoop(t, l, func() {
		hs = append(hs, work())
		hs = append(hs, Do(l, func(co *Co) (int, error) {
			watch(co.Context())
			ready <- struct{}{}
			return Await(co, NewPromise[int](l).Handle())
		}))
		hs = append(hs, Do(l, func(co *Co) (int, error) {
			watch(co.Context())
			ready <- struct{}{}
			_, err := Await(co, Sleep(l, time.Hour))
			return 0, err
		}))
		hs = append(hs, Do(l, func(co *Co) (int, error) {
			watch(co.Context())
			if _, err := Await(co, Sleep(l, 50*time.Millisecond)); err != nil {
				return 0, err // aged past the young handles Stop cancels first
			}
			// The Work reports ready, and watches its own context: one
			// cause more.
			return Await(co, work())
		}))
	})
	for range n {
		recv(t, ready)
	}
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	for range n + 1 {
		cause := recv(t, causes)
		require.ErrorIs(t, cause, ErrStopped)
		require.ErrorIs(t, cause, ErrCancelled)
		require.EqualError(t, cause, "aio: cancelled: loop stopped")
	}
	for _, h := range hs {
		_, err := h.Result()
		require.ErrorIs(t, err, ErrCancelled)
	}
}

// A Do body cancelled while its loop runs keeps ErrCancelled as its
// context's cause, even if it makes the context only after the loop began
// stopping.
func TestCoContextMadeAfterCancelKeepsItsCause(t *testing.T) {
	l := startLoop(t)
	ready, stopping := make(chan struct{}), make(chan struct{})
	causes := make(chan error, 2)
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Do(l, func(co *Co) (int, error) {
			close(ready)
			_, err := Await(co, NewPromise[int](l).Handle())
			causes <- err
			<-stopping // holds the loop while Stop is called
			causes <- context.Cause(co.Context())
			return 0, err
		})
	})
	recv(t, ready)
	require.True(t, h.Cancel())
	require.ErrorIs(t, recv(t, causes), ErrCancelled)
	l.Stop()
	require.True(t, l.Stopping())
	close(stopping)
	cause := recv(t, causes)
	require.ErrorIs(t, cause, ErrCancelled)
	require.NotErrorIs(t, cause, ErrStopped, "cancelled while the loop ran")
}

// A pending promise with no cleanups that is dropped is collected too: it has
// no runtime cleanup of its own, and Stop (or a sweep of the loop's records)
// finds its weak pointer dead and counts it as abandoned.
func TestAbandonedWithoutCleanupsCountedAtStop(t *testing.T) {
	l := startLoop(t)
	onLoop(t, l, func() {
		for i := 0; i < 10; i++ {
			NewPromise[int](l)
		}
	})
	for i := 0; i < 3; i++ { // two iteration boundaries: tracked weakly
		onLoop(t, l, func() {})
	}
	runtime.GC()
	runtime.GC()
	_, err := l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	require.Equal(t, uint64(10), l.Stats().Abandoned)
	require.Equal(t, 0, l.Stats().Handles)
}

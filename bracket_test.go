package aio

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelFromGoroutine cancels h from a goroutine of its own and returns once
// it has: called in a loop callback, the handle is Cancelled while its
// terminal transition waits in the loop's post queue.
func cancelFromGoroutine(h interface{ Cancel() bool }) bool {
	done := make(chan bool)
	go func() { done <- h.Cancel() }()
	return <-done
}

// Bug: a Bracket cancelled from another goroutine hung for ever (Cancelled,
// its cleanups and Done never run) when its acquire or use reported in the
// window before its terminal transition ran: the report saw the bracket
// ended and returned without marking the input consumed, and stop then held
// the transition for a report that had come already. Found by the ST-04
// soak test.
func TestBracketCancelledOffLoopWhileInputReports(t *testing.T) {
	t.Run("acquire completes", func(t *testing.T) {
		l := startLoop(t)
		released := 0
		var sink *Handle[int]
		onLoop(t, l, func() {
			acquire := NewPromise[int](l)
			sink = Bracket(acquire.Handle(), func(int) { released++ }, func(r int) *Handle[int] { return Pure(l, r) })
			require.True(t, cancelFromGoroutine(sink))
			acquire.Resolve(1)
		})
		_, err := wait(t, sink)
		require.ErrorIs(t, err, ErrCancelled)
		onLoop(t, l, func() { require.Equal(t, 1, released, "a resource that arrived is released once") })
	})
	t.Run("use completes", func(t *testing.T) {
		l := startLoop(t)
		released := 0
		var sink *Handle[int]
		var use *Promise[int]
		onLoop(t, l, func() {
			use = NewPromise[int](l)
			sink = Bracket(Pure(l, 1), func(int) { released++ }, func(int) *Handle[int] { return use.Handle() })
		})
		onLoop(t, l, func() { // acquire has reported: use is running
			require.True(t, cancelFromGoroutine(sink))
			use.Resolve(2)
		})
		_, err := wait(t, sink)
		require.ErrorIs(t, err, ErrCancelled)
		onLoop(t, l, func() { require.Equal(t, 1, released, "released once, after use ended") })
	})
}

// Bug: a Bracket built off its loop and cancelled before its registration
// ran marked acquire as given up, so its terminal transition did not wait;
// when acquire completed anyway (another dependent kept it alive), release
// ran after the result's cleanups and Done, against Bracket's contract.
func TestBracketCancelledBeforeRegistrationReleasesBeforeDone(t *testing.T) {
	l := startLoop(t)
	released := make(chan int, 1)
	count := 0
	var acquire *Promise[int]
	var sink *Handle[int]
	func() {
		release := holdLoop(t, l) // what follows lands in one batch
		defer release()
		acquire = NewPromise[int](l)
		Then(acquire.Handle(), func(v int) (int, error) { return v, nil }) // keeps acquire wanted
		sink = Bracket(acquire.Handle(), func(int) { count++ }, func(r int) *Handle[int] { return Pure(l, r) })
		sink.OnCleanup(func() { released <- count })
		require.True(t, sink.Cancel())
	}()
	onLoop(t, l, func() {}) // the batch has run: the bracket is waiting for acquire
	acquire.Resolve(1)
	require.Equal(t, 1, recv(t, released), "released before the result's cleanups")
	_, err := wait(t, sink)
	require.ErrorIs(t, err, ErrCancelled)
}

// workUse is a Bracket's use that is a Work job on l: its fn signals
// started, and once its context ends it goes on using the resource until
// finish is closed (as a blocking call that sees its context late does),
// recording whether it has returned.
type workUse struct {
	started, finish chan struct{}
	returned        atomic.Bool
	hs              chan *Handle[int] // the Work handle, once made
}

func newWorkUse() *workUse {
	return &workUse{started: make(chan struct{}), finish: make(chan struct{}), hs: make(chan *Handle[int], 1)}
}

// bracket makes, on a, a Bracket of a resource whose use is w on b; its
// release counts in released and records in early whether it ran before
// the fn returned.
func (w *workUse) bracket(t *testing.T, a, b *Loop) (br *Handle[int], released *atomic.Int32, early *atomic.Bool) {
	released, early = new(atomic.Int32), new(atomic.Bool)
	onLoop(t, a, func() {
		br = Bracket(Pure(a, "res"), func(string) {
			early.Store(!w.returned.Load())
			released.Add(1)
		}, w.use(b))
	})
	return br, released, early
}

func (w *workUse) use(l *Loop) func(string) *Handle[int] {
	return func(r string) *Handle[int] {
		h := Work(l, func(ctx context.Context) (int, error) {
			close(w.started)
			<-ctx.Done()
			<-w.finish
			w.returned.Store(true)
			return len(r), nil
		})
		w.hs <- h
		return h
	}
}

// A Work job's handle, cancelled while its fn runs, ends at once; a
// Bracket whose use returned it releases only once the fn has returned,
// as its doc promises, on the same loop or another. Bug: release ran as
// soon as the handle ended, under the fn still using the resource.
func TestBracketReleasesAfterWorkFnReturned(t *testing.T) {
	for _, cross := range []bool{false, true} {
		a := startLoop(t)
		b := a
		if cross {
			b = startLoop(t)
		}
		w := newWorkUse()
		br, released, releasedEarly := w.bracket(t, a, b)
		recv(t, w.started)
		require.True(t, br.Cancel())
		<-recv(t, w.hs).Done() // the Work handle has ended: its dependents were told
		onLoop(t, a, func() {})
		onLoop(t, a, func() {})
		require.Equal(t, int32(0), released.Load(), "cross %v: released while the Work fn runs", cross)
		require.Equal(t, Cancelled, br.Status())
		require.False(t, closed(br.Done()), "cross %v: the Bracket finished while its Work fn runs", cross)
		close(w.finish)
		_, err := wait(t, br)
		require.ErrorIs(t, err, ErrCancelled)
		require.Equal(t, int32(1), released.Load())
		require.False(t, releasedEarly.Load(), "cross %v: released before the fn returned", cross)
	}
}

// A Work job cancelled before a worker took it never runs: the Bracket
// releases at once, without waiting for the worker that is busy.
func TestBracketReleasesAtOnceForAWorkNeverRun(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 1})
	busy := make(chan struct{})
	blocker := Work(l, func(context.Context) (int, error) { <-busy; return 0, nil })
	var released atomic.Int32
	ran := make(chan struct{}, 1)
	br := Bracket(Pure(l, "res"), func(string) { released.Add(1) }, func(string) *Handle[int] {
		return Work(l, func(context.Context) (int, error) { ran <- struct{}{}; return 0, nil })
	})
	onLoop(t, l, func() {})
	require.True(t, br.Cancel())
	_, err := wait(t, br)
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, int32(1), released.Load())
	close(busy)
	_, err = wait(t, blocker)
	require.NoError(t, err)
	onLoop(t, l, func() {}) // the worker has gone past the dropped job by the time blocker's result is in
	require.Empty(t, ran, "a job dropped before it ran must never run")
}

// Stop while a Bracket waits for its Work fn: Stop waits for the fn, and
// the release runs, once, before Stop's handle completes.
func TestBracketWaitingForWorkFnAcrossStop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	w := newWorkUse()
	br, released, releasedEarly := w.bracket(t, l, l)
	recv(t, w.started)
	stop := l.Stop()
	<-recv(t, w.hs).Done() // Stop cancelled it; the fn still runs
	close(w.finish)
	_, err := wait(t, stop)
	require.NoError(t, err)
	require.Equal(t, int32(1), released.Load(), "released once, before Stop's handle completed")
	require.False(t, releasedEarly.Load())
	_, err = wait(t, br)
	require.ErrorIs(t, err, ErrCancelled)
}

// A stopping loop whose Bracket waits for its Work fn waits for a post
// (the fn's end) instead of passing over its handles again and again.
// Bug: teardown counted the held Bracket as found and spun, a CPU for as
// long as the fn ran. On the Bracket's loop and across loops, with a
// record (a cleanup on the Bracket) for teardown's passes to see and
// without one. Bug: without one, across loops, teardown dropped the
// Bracket after its first pass and Stop completed before the release
// (httpd's requests, ended by such a Bracket, outlived their loop).
func TestStopWaitsQuietlyForABracketsWorkFn(t *testing.T) {
	for _, c := range []struct{ cross, record bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
		cross := c
		rt := newRuntime(t, RuntimeConfig{})
		a := startLoopOn(t, rt)
		b := a
		if c.cross {
			b = startLoopOn(t, rt)
		}
		w := newWorkUse()
		br, released, releasedEarly := w.bracket(t, a, b)
		if c.record {
			onLoop(t, a, func() { br.OnCleanup(func() {}) })
		}
		recv(t, w.started)
		stop := a.Stop()
		<-recv(t, w.hs).Done() // cancelled: the fn runs on
		passes := a.passes.Load()
		time.Sleep(50 * time.Millisecond) // a window for passes that must not happen
		assert.LessOrEqual(t, a.passes.Load()-passes, int64(2), "cross %v: teardown passed again and again", cross)
		require.False(t, closed(stop.Done()), "cross %v: Stop completed before the Bracket released", cross)
		close(w.finish)
		_, err := wait(t, stop)
		require.NoError(t, err)
		require.Equal(t, int32(1), released.Load(), "cross %v: released once, before Stop's handle completed", cross)
		require.False(t, releasedEarly.Load())
		require.True(t, br.Status().Terminal())
	}
}

// Two Brackets share a Work job as their use, on a loop that is dead when
// the fn returns (nothing tracks them: teardown does not wait): the first
// release calls runtime.Goexit on the worker that tells them; the second
// is still released, and before Stop's handle completes, though it takes
// a while. Bug: the second was told from a goroutine nobody waited for,
// and Stop completed under it.
func TestBracketsSharingAWorkSurviveAGoexitingRelease(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	w := newWorkUse()
	var h *Handle[int]
	released := make(chan int, 2)
	slow := make(chan struct{})
	var brs [2]*Handle[int]
	onLoop(t, l, func() {
		use := w.use(l)
		for i := range brs {
			brs[i] = Bracket(Pure(l, "res"), func(string) {
				if i == 0 {
					released <- i
					runtime.Goexit()
				}
				<-slow
				released <- i
			}, func(r string) *Handle[int] {
				if h == nil {
					h = use(r)
				}
				return h
			})
		}
	})
	recv(t, w.started)
	stop := l.Stop()
	// Dead before the fn returns (nothing else shows it: Stop's handle
	// waits for the fn): the waiters run on the worker that ends it.
	require.Eventually(t, func() bool { return l.state.Load() == stateDead }, waitTimeout, time.Millisecond)
	close(w.finish)
	// The second release takes a while: Stop's handle must wait for it,
	// however long (only the time the test takes depends on this figure).
	time.AfterFunc(100*time.Millisecond, func() { close(slow) })
	_, err := wait(t, stop)
	require.NoError(t, err)
	require.Len(t, released, 2, "both released before Stop's handle completed")
	got := []int{<-released, <-released}
	require.Equal(t, []int{0, 1}, got, "the second after the first's Goexit")
	<-brs[1].Done()
}

// A teardown that a callback's Goexit started (no Stop) waits for a held
// Bracket's Work fn; a Stop made meanwhile, as Runtime.Shutdown makes one,
// must not hide the loop from the post that ends the wait. Bug: Stop
// marked the loop awake, enqueue then never signalled the waiting
// teardown, and Stop's handle never completed.
func TestStopDuringATeardownWaitingForAPost(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	w := newWorkUse()
	br, released, releasedEarly := w.bracket(t, l, l)
	onLoop(t, l, func() { br.OnCleanup(func() {}) }) // a record: teardown sees it held
	recv(t, w.started)
	require.NoError(t, l.Post(func() { runtime.Goexit() })) // teardown begins, without Stop
	<-recv(t, w.hs).Done()                                  // cancelled: the fn runs on
	require.Eventually(t, func() bool {
		return l.state.Load() == stateStopping && !l.awake.Load()
	}, waitTimeout, time.Millisecond, "teardown did not come to wait for a post")
	stop := l.Stop()
	close(w.finish) // the fn returns: its end is posted to l
	select {
	case <-stop.Done():
	case <-time.After(waitTimeout):
		l.stopWake <- struct{}{} // so that the runtime's cleanup can end
		<-stop.Done()
		t.Fatal("Stop's handle did not complete: the post did not wake the teardown")
	}
	require.Equal(t, int32(1), released.Load())
	require.False(t, releasedEarly.Load())
}

// closed reports whether ch is closed now, without waiting.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

package aio

import (
	"testing"

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

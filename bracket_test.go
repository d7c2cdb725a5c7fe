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

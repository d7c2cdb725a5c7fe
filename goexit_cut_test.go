package aio

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// A runtime.Goexit in an OnCancel callback of a child of a connection's
// scope cuts its end short, whether the closing connection cancels it
// (which arms its record as the scope lets go) or it is cancelled by
// itself while the connection is open (nothing armed it): teardown finds
// it listed and runs its cleanup.
func TestConnScopeGoexitMidCancelRunsCleanupAtStop(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel func(c *Conn, h *Handle[int])
	}{
		{"ConnClose", func(c *Conn, _ *Handle[int]) { c.Close() }},
		{"OwnCancel", func(_ *Conn, h *Handle[int]) { h.Cancel() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, RuntimeConfig{})
			l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
			c, _ := heldScopeConn(t, l)
			var cleaned atomic.Bool
			goexiting := make(chan struct{})
			var h *Handle[int]
			onLoop(t, l, func() {
				h = Adopt(c.Scope(), Then(NewPromise[int](l).Handle(), func(v int) (int, error) { return v, nil }))
				h.OnCleanup(func() { cleaned.Store(true) })
				h.OnCancel(func() { close(goexiting); runtime.Goexit() })
			})
			tc.cancel(c, h)
			recv(t, goexiting)
			requireStopsCut(t, l, &h.core)
			require.True(t, cleaned.Load(), "the cleanup never ran")
			require.True(t, h.rare.rec.armed, "armed when the scope or the cut let go")
		})
	}
}

// A child of an open connection's scope that completes, and a
// continuation of it on its loop calls runtime.Goexit before its cleanups
// ran. Teardown must still run them.
func TestConnScopeChildGoexitInThenRunsCleanupAtStop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	c, _ := heldScopeConn(t, l)
	var cleaned atomic.Bool
	goexiting := make(chan struct{})
	p := NewPromise[int](l)
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Then(p.Handle(), func(v int) (int, error) { return v, nil })
		Then(h, func(int) (int, error) { close(goexiting); runtime.Goexit(); return 0, nil })
		Adopt(c.Scope(), h)
		h.OnCleanup(func() { cleaned.Store(true) })
	})
	require.True(t, p.Resolve(1))
	recv(t, goexiting)
	requireStopsCut(t, l, &h.core)
	require.True(t, cleaned.Load(), "the cleanup never ran")
}

// The same for a Delay, which its timer held until it fired: nothing
// listed it.
func TestDelayGoexitInThenRunsCleanupAtStop(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{OnPanic: func(any) {}})
	var cleaned atomic.Bool
	goexiting := make(chan struct{})
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Delay(l, 0, func() (int, error) { return 1, nil })
		Then(h, func(int) (int, error) { close(goexiting); runtime.Goexit(); return 0, nil })
		h.OnCleanup(func() { cleaned.Store(true) })
	})
	recv(t, goexiting)
	requireStopsCut(t, l, &h.core)
	require.True(t, cleaned.Load(), "the cleanup never ran")
}

// Stop with a child of an open connection's scope that no cancelling pass
// finds through a producer (it waits for the connection itself): its
// cleanup runs while the connection is still open, as the passes promise
// cancel callbacks (closeFDs closes sockets after the last one).
func TestConnScopeChildCleanupSeesConnOpenAtStop(t *testing.T) {
	l := startLoop(t)
	c, _ := heldScopeConn(t, l)
	open := make(chan bool, 1)
	onLoop(t, l, func() {
		h := Adopt(c.Scope(), Then(c.Closed(), func(struct{}) (int, error) { return 1, nil }))
		h.OnCleanup(func() { open <- c.state != connClosed })
	})
	_, err := l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	require.True(t, recv(t, open), "the cleanup ran after the connection closed")
}

package aio

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// heldScopeConn returns a connection accepted on l (its scope held by the
// loop) and a func that closes the client's end and the listener and checks
// the loop's sockets are gone. A test that fails first has the connection
// closed for it, cancelling its scope: the runtime's Shutdown would
// otherwise wait for the pending children it drains.
func heldScopeConn(t *testing.T, l *Loop) (*Conn, func()) {
	t.Helper()
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns)
	t.Cleanup(func() { c.Close() })
	return c, func() { nc.Close(); closedLoopTCP(t, l.closeListener(t, ln)) }
}

// A reply adopted into an open connection's scope (an HTTP handler's, a
// Then over a promise: no timer holds it) keeps its cleanups in an unarmed
// record: the loop holds it through the connection until it ends. It ends
// untracked, and its cleanup runs.
func TestConnScopeChildCleanupsUntracked(t *testing.T) {
	l := startLoop(t)
	c, done := heldScopeConn(t, l)
	p := NewPromise[int](l)
	ran := make(chan bool, 1)
	var h *Handle[int]
	var armed bool
	var listed, before int
	onLoop(t, l, func() {
		before = l.records.n
		h = Adopt(c.Scope(), Then(p.Handle(), func(v int) (int, error) { return v + 1, nil }))
		h.OnCleanup(func() { ran <- true })
		armed, listed = h.rare.rec.armed, l.records.n
	})
	require.False(t, armed, "a child of a connection's scope stays unarmed")
	require.Equal(t, before, listed)
	require.True(t, p.Resolve(1))
	require.True(t, recv(t, ran))
	v, err := h.Result()
	require.NoError(t, err)
	require.Equal(t, 2, v)
	require.False(t, onLoopValue(t, l, func() bool { return h.rare.rec.armed }), "it ended untracked")
	done()
}

// The connection's close lets go of its scope's children: it arms their
// records (tracked as any handle's from then on), cancels them, and their
// cleanups run.
func TestConnScopeCloseArmsChildCleanups(t *testing.T) {
	l := startLoop(t)
	c, done := heldScopeConn(t, l)
	ran := make(chan bool, 1)
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Adopt(c.Scope(), Then(NewPromise[int](l).Handle(), func(v int) (int, error) { return v, nil }))
		h.OnCleanup(func() { ran <- true })
	})
	_, err := wait(t, c.Close())
	require.NoError(t, err)
	require.True(t, recv(t, ran))
	_, err = h.Result()
	require.ErrorIs(t, err, ErrCancelled)
	require.True(t, onLoopValue(t, l, func() bool { return h.rare.rec.armed }), "armed when the scope let go")
	done()
}

// Only a connection's scope is held by the loop: a child of a WithScope
// scope (whose handle its caller may drop) is tracked when it gets a
// cleanup, as before.
func TestWithScopeChildCleanupsTracked(t *testing.T) {
	l := startLoop(t)
	p := NewPromise[int](l)
	var h *Handle[int]
	var armed bool
	onLoop(t, l, func() {
		WithScope(l, func(s *Scope) *Handle[int] {
			h = Adopt(s, Then(p.Handle(), func(v int) (int, error) { return v, nil }))
			h.OnCleanup(func() {})
			armed = h.rare.rec.armed
			return h
		})
	})
	require.True(t, armed)
	require.True(t, p.Resolve(1))
	_, err := wait(t, h)
	require.NoError(t, err)
}

// Stop with a reply pending in an open connection's scope: the reply is
// cancelled through what it waits for (its promise, a producer Stop
// cancels) and its cleanup runs, once.
func TestConnScopeChildCleanupRunsAtStop(t *testing.T) {
	l := startLoop(t)
	c, _ := heldScopeConn(t, l)
	var ran atomic.Int32
	var h *Handle[int]
	onLoop(t, l, func() {
		h = Adopt(c.Scope(), Then(Sleep(l, time.Hour), func(struct{}) (int, error) { return 1, nil }))
		h.OnCleanup(func() { ran.Add(1) })
	})
	_, err := l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	_, err = h.Result()
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, int32(1), ran.Load())
	require.Zero(t, l.Stats().Handles)
}

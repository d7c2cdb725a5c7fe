package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An Await on a dial that has already completed takes the connection (the
// body has it), but registers no interest: a later dependent that declines
// the dial must not close what the body holds.
func TestDialAwaitTerminalTakenNotReleased(t *testing.T) {
	l, s, fds, d := dialedSetup(t)
	c, err := wait(t, Do(l, func(co *Co) (*Conn, error) { return Await(co, d) }))
	require.NoError(t, err)

	requireLateDeclineKeeps(t, l, s, fds, d, c)
}

// A Bracket cancelled while its acquire runs still takes the connection when
// it arrives, and hands it to release: it is the program's then (release may
// put it in a pool). The acquire's other dependent, a Within, passes the value
// on; declining it there must not close what release was given.
func TestDialBracketWithdrawnTakenNotReleased(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	gate := NewPromise[struct{}](l)
	released := make(chan *Conn, 1)
	var b *Handle[struct{}]
	var w *Handle[*Conn]
	onLoop(t, l, func() {
		acq := ThenAsync(gate.Handle(), func(struct{}) *Handle[*Conn] { return Dial(l, addr, ConnConfig{}) })
		w = Within(acq, waitTimeout) // keeps acq wanted
		b = Bracket(acq, func(c *Conn) { released <- c }, func(*Conn) *Handle[struct{}] {
			return Pure(l, struct{}{})
		})
		require.True(t, b.Cancel())
	})
	onLoop(t, l, func() {}) // b's stop has withdrawn from the pending acq
	require.True(t, gate.Resolve(struct{}{}))
	c := recv(t, released)
	_, err := wait(t, b)
	require.ErrorIs(t, err, ErrCancelled)
	_, err = wait(t, w)
	require.NoError(t, err)

	requireLateDeclineKeeps(t, l, s, fds, w, c)
}

// requireConnOpen fails at once if aio closed c (rather than in pingEcho,
// which fails on the loop and waits out its bound).
func requireConnOpen(t *testing.T, l *Loop, c *Conn) {
	t.Helper()
	require.True(t, onLoopValue(t, l, func() bool { return c.state != connClosed }), "a taken connection was closed")
}

// requireLateDeclineKeeps declines h's value, which c was taken from, by a
// Then registered late and cancelled before it is told, then proves c still
// open and working, closes it and waits for the dial's resources to come
// back.
func requireLateDeclineKeeps(t *testing.T, l, s *Loop, fds int, h *Handle[*Conn], c *Conn) {
	t.Helper()
	var late *Handle[struct{}]
	onLoop(t, l, func() {
		late = Then(h, func(*Conn) (struct{}, error) { return struct{}{}, nil })
		require.True(t, late.Cancel())
	})
	_, err := wait(t, late)
	require.ErrorIs(t, err, ErrCancelled)
	requireConnOpen(t, l, c)
	pingEcho(t, l, c)
	onLoop(t, l, func() { c.Close() })
	requireDialReleased(t, l, s, 0, fds)
}

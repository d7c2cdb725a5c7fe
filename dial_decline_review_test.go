package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// An Await on a dial that has already completed takes the connection (the
// body has it), but registers no interest: a later dependent that declines
// the dial must not close what the body holds.
func TestDialAwaitTerminalTakenNotReleased(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	d := Dial(l, addr, ConnConfig{})
	_, err := wait(t, d)
	require.NoError(t, err)
	c, err := wait(t, Do(l, func(co *Co) (*Conn, error) { return Await(co, d) }))
	require.NoError(t, err)

	var late *Handle[struct{}]
	onLoop(t, l, func() {
		late = Then(d, func(*Conn) (struct{}, error) { return struct{}{}, nil })
		require.True(t, late.Cancel())
	})
	_, err = wait(t, late)
	require.ErrorIs(t, err, ErrCancelled)
	requireConnOpen(t, l, c)
	pingEcho(t, l, c)
	onLoop(t, l, func() { c.Close() })
	requireDialReleased(t, l, s, 0, fds)
}

// requireConnOpen fails at once if aio closed c (rather than in pingEcho,
// which fails on the loop and waits out its bound).
func requireConnOpen(t *testing.T, l *Loop, c *Conn) {
	t.Helper()
	require.True(t, onLoopValue(t, l, func() bool { return c.state != connClosed }), "a taken connection was closed")
}

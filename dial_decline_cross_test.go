package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A node on one loop that passes on a connection dialed on another (a Race
// whose first input lives elsewhere, ThenAsync's inner handle) declines it
// there when its own dependents decline it: the decline crosses to the
// dial's loop, which closes the connection.

// requireCrossDeclined builds pass (on l) over a dial made on s, lets a
// failing All on l collect pass's connection, fails the All and waits for
// the connection (both ends on s) to be closed.
func requireCrossDeclined(t *testing.T, pass func(l *Loop, dial func() *Handle[*Conn]) *Handle[*Conn]) {
	t.Helper()
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	h := pass(l, func() *Handle[*Conn] { return Dial(s, addr, ConnConfig{}) })
	require.Same(t, l, h.Loop(), "the node lives on l, its input on s")
	failAllOver(t, l, h)
	requireDialReleased(t, l, s, 0, fds)
}

func TestDialCrossLoopRaceDeclinedReleased(t *testing.T) {
	requireCrossDeclined(t, func(l *Loop, dial func() *Handle[*Conn]) *Handle[*Conn] {
		return Race(NewPromise[*Conn](l).Handle(), dial())
	})
}

func TestDialCrossLoopThenAsyncDeclinedReleased(t *testing.T) {
	requireCrossDeclined(t, func(l *Loop, dial func() *Handle[*Conn]) *Handle[*Conn] {
		p := NewPromise[struct{}](l)
		p.Resolve(struct{}{})
		return ThenAsync(p.Handle(), func(struct{}) *Handle[*Conn] { return dial() })
	})
}

// A taker on the node's loop keeps the connection: the node's decline
// never reaches the dial while a dependent took the value.
func TestDialCrossLoopRaceTakenNotReleased(t *testing.T) {
	l, s, addr := declineSetup(t)
	fds := fdCount(t)
	r := Race(NewPromise[*Conn](l).Handle(), Dial(s, addr, ConnConfig{}))
	taken := Then(r, func(c *Conn) (*Conn, error) { return c, nil })
	p := NewPromise[*Conn](l)
	all := All(r, p.Handle())
	c, err := wait(t, taken)
	require.NoError(t, err)
	require.True(t, p.Reject(errBoom))
	_, err = wait(t, all)
	require.ErrorIs(t, err, errBoom)
	onLoop(t, s, func() {}) // any decline posted to s has run
	onLoop(t, l, func() {})
	onLoop(t, s, func() {})
	require.Equal(t, Running, c.Closed().Status(), "the Then took the connection")
	require.Equal(t, 2, s.Stats().TCPOpen, "both ends still open")
	c.Close()
	_, err = wait(t, c.Closed())
	require.NoError(t, err)
	requireDialReleased(t, l, s, 0, fds) // the taker's close gives everything back
}

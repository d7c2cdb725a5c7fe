package aio

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// Conn.Drain is one connection's lingering close: after its reply and its
// FIN, a request that crossed the FIN is read and dropped, the peer reads
// every reply byte and then EOF (no reset), and the connection closes at
// the peer's EOF, orderly; a second Drain changes nothing.
func TestConnDrainLingersUntilPeerEOF(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	r := newRepliedConn(t, l)
	ln, c, nc, reply, closed := r.ln, r.c, r.nc, r.reply, r.closed

	done := c.Drain()
	require.Same(t, c.Closed(), done)
	finSent(t, l, c)
	require.Same(t, done, c.Drain())
	_, err := nc.Write([]byte("a late request"))
	require.NoError(t, err)
	got, err := io.ReadAll(nc)
	require.NoError(t, err, "no reset before the peer's EOF")
	require.Equal(t, reply, got, "every reply byte, then EOF")
	require.Equal(t, Running, done.Status(), "lingering until the peer's EOF")
	require.NoError(t, nc.Close())
	_, err = wait(t, done)
	require.NoError(t, err)
	require.NoError(t, recv(t, closed), "closed at the peer's EOF, orderly")
	require.Equal(t, uint64(len(reply)), l.Stats().TCPBytesOut, "the late request got no reply")
	l.closeListener(t, ln)
	closedLoopTCP(t, l)
	require.Equal(t, fds, fdCount(t), "fds back")
}

// Drain waits for the connection's scope: a reply that a running handle
// writes goes out before the FIN. On a closed connection it is Closed.
func TestConnDrainWaitsForScope(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	ln, conns, closed := lingerServer(t, l, nil)
	nc := netDial(t, ln)
	c := recv(t, conns)
	p := NewPromise[struct{}](l)
	onLoop(t, l, func() {
		Adopt(c.Scope(), Then(p.Handle(), func(struct{}) (struct{}, error) {
			_, err := c.WriteString("late reply")
			return struct{}{}, err
		}))
		c.Drain()
	})
	var finned bool
	onLoop(t, l, func() { finned = c.wdone })
	require.False(t, finned, "no FIN while the scope is busy")
	onLoop(t, l, func() { p.Resolve(struct{}{}) })
	got, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "late reply", string(got))
	require.NoError(t, nc.Close())
	require.NoError(t, recv(t, closed))
	_, err = wait(t, c.Drain())
	require.NoError(t, err)
	l.closeListener(t, ln)
	closedLoopTCP(t, l)
	require.Equal(t, fds, fdCount(t), "fds back")
}

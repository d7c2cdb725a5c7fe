package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A closed connection's queue is gone, so it is no longer Full: a program
// that checks Full (a broker dropping a slow subscriber, a source paused
// until OnDrain) must not see a closed connection as still backed up with
// nothing buffered.
func TestConnFullEndsWithClose(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{HighWater: 1024}}, 1)
	_ = netDial(t, ln) // never reads: the queue stays above the high-water mark
	c := recv(t, conns)

	onLoop(t, l, func() {
		for c.Buffered() <= 1024 { // past what the kernel's buffers take at once
			require.NoError(t, send(c, make([]byte, 64<<10)))
		}
	})
	require.True(t, c.Full())

	_, err := wait(t, c.Close())
	require.NoError(t, err)
	require.Zero(t, c.Buffered())
	require.False(t, c.Full(), "a closed connection holds no queue")
}

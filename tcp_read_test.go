package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A read callback that closes the loop's last socket still owns b until it
// returns: the shared buffer goes back to the pool only afterwards.
func TestTCPReadBufferOutlivesClose(t *testing.T) {
	l := startLoop(t)
	ok := make(chan bool, 1)
	accepted := make(chan struct{})
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			want := string(b)
			c.Close()
			ok <- l.tcp.buf != nil && string(b) == want && want == "payload"
		})
		close(accepted)
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	recv(t, accepted)
	_, err = wait(t, ln.Close()) // the connection is now the loop's only socket
	require.NoError(t, err)
	_, err = nc.Write([]byte("payload"))
	require.NoError(t, err)
	require.True(t, recv(t, ok))
	// The buffer goes back in a job after the callback, before the loop
	// runs a posted callback.
	require.True(t, onLoopValue(t, l, func() bool { return l.tcp.buf == nil }),
		"the read buffer went back once no socket was left")
}

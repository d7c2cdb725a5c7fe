package aio

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// spinLoop keeps l from ever blocking in the poller: a callback re-posts
// itself until the returned stop is called (also at the end of the test).
func spinLoop(t *testing.T, l *Loop) (stop func()) {
	t.Helper()
	quit, stopped := make(chan struct{}), make(chan struct{})
	var self func()
	self = func() {
		select {
		case <-quit:
			close(stopped)
		default:
			require.NoError(t, l.Post(self))
		}
	}
	require.NoError(t, l.Post(self))
	var once bool
	stop = func() {
		if !once {
			once = true
			close(quit)
			recv(t, stopped)
		}
	}
	t.Cleanup(stop)
	return stop
}

// A loop that always has work polls with a zero timeout, and skips that
// poll while no fd is registered: once one is, its readiness must still be
// seen while the loop spins.
func TestBusyLoopPollsRegisteredFD(t *testing.T) {
	l := startLoop(t)
	stop := spinLoop(t, l)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns) // accepted while the loop never blocked
	_, err := nc.Write([]byte("ping"))
	require.NoError(t, err)
	buf := make([]byte, 4)
	_, err = io.ReadFull(nc, buf) // a Read may return part of the echo
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf))
	stop()
	wait(t, c.Close())
	wait(t, ln.Close())
}

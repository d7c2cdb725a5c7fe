package aio

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Pipe keeps working while Runtime.Shutdown drains: the client's FIN,
// which arrives after the drain began, passes on to the upstream, and the
// upstream's reply to it, sent only after that FIN, still comes back. (A
// draining connection used to close as soon as its FIN was sent: the
// upstream's side closed before the reply, and the client waited for it
// until the deadline.)
func TestPipeShutdownPassesHalfCloseOn(t *testing.T) {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	upDone := make(chan error, 1)
	go func() { // reads the whole request, then replies with it
		c, err := nl.Accept()
		if err != nil {
			upDone <- err
			return
		}
		defer c.Close()
		req, err := io.ReadAll(c)
		if err == nil {
			_, err = c.Write(append([]byte("re: "), req...))
		}
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		upDone <- err
	}()
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	ln, pipes := proxyTo(t, l, nl.Addr().String(), ConnConfig{})
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("hello"))
	require.NoError(t, err)
	pipe := recv(t, pipes)

	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(testCtx(t)) }()
	_, err = wait(t, ln.Closed()) // the drain has begun: every connection is draining
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	reply, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "re: hello", string(reply))
	require.NoError(t, recv(t, upDone))
	got, err := wait(t, pipe)
	require.NoError(t, err)
	require.Equal(t, Piped{AToB: 5, BToA: 9}, got)
	require.NoError(t, recv(t, done), "Shutdown returns once the pipe has ended")
}

package aio

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// acceptOnce listens with Go's net package and runs serve on the first
// connection (closed after it), reporting serve's error on the channel.
func acceptOnce(t *testing.T, serve func(*net.TCPConn) error) (string, <-chan error) {
	t.Helper()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	done := make(chan error, 1)
	go func() {
		nc, err := nl.Accept()
		if err != nil {
			done <- err
			return
		}
		_ = nc.SetDeadline(time.Now().Add(waitTimeout))
		err = serve(nc.(*net.TCPConn))
		nc.Close()
		done <- err
	}()
	return nl.Addr().String(), done
}

// echoOnce is an upstream that echoes one connection until its EOF, then
// half-closes. It copies through user space: io.Copy between two TCP
// connections would splice through a kernel pipe from Go's own pool, which
// only the garbage collector closes, and a test counting fds would count
// it.
func echoOnce(t *testing.T) (string, <-chan error) {
	return acceptOnce(t, func(c *net.TCPConn) error {
		if _, err := io.Copy(struct{ io.Writer }{c}, struct{ io.Reader }{c}); err != nil {
			return err
		}
		return c.CloseWrite()
	})
}

// Runtime.Shutdown that begins while an accepted client's upstream dial
// is still running (connecting, or connected with the continuation that
// pipes it not run yet) loses nothing: the client is busy from its accept
// on, as examples/proxy's accept makes it (the dial's continuation is
// adopted into its scope, and Pipe adopts its own work before that
// continuation leaves), so the bytes it sent before and after the signal
// go through and come back, and Shutdown returns once the pipe has ended,
// with every fd the loop opened (sockets, kernel pipes, poller) closed.
// The drain is made to run right after the accept callback: the callback
// waits until Shutdown's drain is posted to the loop.
func TestShutdownRightAfterAcceptKeepsClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry bool // loopbackRetry: the dial completes inside the accept callback
	}{{"dial-connecting", false}, {"dial-connected", true}} {
		t.Run(tc.name, func(t *testing.T) {
			loopbackRetry = tc.retry
			t.Cleanup(func() { loopbackRetry = true })
			upstream, upDone := echoOnce(t)
			fds := fdCount(t)
			rt := newRuntime(t, RuntimeConfig{})
			l := startLoopOn(t, rt)
			accepted, proceed := make(chan struct{}), make(chan struct{})
			pipes := make(chan *Handle[Piped], 1)
			ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
				var early []byte
				_ = c.OnRead(func(_ *Conn, b []byte) { early = append(early, b...) })
				_ = c.OnEOF(func(*Conn) {})
				piped := Then(Dial(l, upstream, ConnConfig{}), func(up *Conn) (struct{}, error) {
					_, _ = up.Write(early)
					pipes <- Pipe(c, up)
					return struct{}{}, nil
				})
				Adopt(c.Scope(), piped)
				close(accepted)
				<-proceed // until the drain is queued behind this callback
			})
			require.NoError(t, err)

			nc := netDial(t, ln)
			first := bytes.Repeat([]byte("a"), 64<<10)
			_, err = nc.Write(first)
			require.NoError(t, err)
			recv(t, accepted)
			done := make(chan error, 1)
			go func() { done <- rt.Shutdown(testCtx(t)) }()
			eventually(t, func() bool { return l.qlen.Load() > 0 }, "the drain is posted")
			close(proceed)
			_, err = wait(t, ln.Closed()) // the drain has begun
			require.NoError(t, err)

			rest := bytes.Repeat([]byte("b"), 1<<20)
			sent := make(chan error, 1)
			go func() {
				_, err := nc.Write(rest)
				if err == nil {
					err = nc.CloseWrite()
				}
				sent <- err
			}()
			got, err := io.ReadAll(nc)
			require.NoError(t, err)
			require.Equal(t, len(first)+len(rest), len(got))
			require.True(t, bytes.Equal(append(first, rest...), got), "the bytes came back in order")
			require.NoError(t, recv(t, upDone))
			n, err := wait(t, recv(t, pipes))
			require.NoError(t, err)
			require.EqualValues(t, len(first)+len(rest), n.BToA)
			require.NoError(t, recv(t, done), "Shutdown returns once the pipe has ended")
			require.NoError(t, recv(t, sent))
			require.NoError(t, nc.Close())
			require.Equal(t, fds, fdCount(t), "fds left open after Shutdown")
		})
	}
}

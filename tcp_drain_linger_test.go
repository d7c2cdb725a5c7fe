package aio

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/testpeer"
)

// lingerServer replies to each read with reply and hands its connections
// (with the error each closes with) to the test.
func lingerServer(t *testing.T, l *Loop, reply []byte) (*Listener, <-chan *Conn, <-chan error) {
	t.Helper()
	return lingerServerWith(t, l, ConnConfig{}, reply)
}

// lingerServerWith is lingerServer with cfg for its connections.
func lingerServerWith(t *testing.T, l *Loop, cfg ConnConfig, reply []byte) (*Listener, <-chan *Conn, <-chan error) {
	t.Helper()
	conns, closed := make(chan *Conn, 4), make(chan error, 4)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) {
		_ = c.OnClose(func(_ *Conn, err error) { closed <- err })
		_ = c.OnRead(func(c *Conn, b []byte) { _ = send(c, reply) })
		conns <- c
	})
	require.NoError(t, err)
	return ln, conns, closed
}

// repliedConn is a lingerServer's connection that has answered its
// peer's first request with a reply (64 KiB from newRepliedConn) the peer
// has not read yet.
type repliedConn struct {
	ln     *Listener
	c      *Conn        // the server's side
	nc     net.Conn     // the peer
	reply  []byte       // what c sent
	closed <-chan error // c's OnClose
}

func newRepliedConn(t *testing.T, l *Loop) repliedConn {
	t.Helper()
	reply := make([]byte, 64<<10)
	pattern(reply, 0)
	return newRepliedConnWith(t, l, ConnConfig{}, reply)
}

// newRepliedConnWith is newRepliedConn with cfg for the server's
// connection and reply for its answer.
func newRepliedConnWith(t *testing.T, l *Loop, cfg ConnConfig, reply []byte) repliedConn {
	t.Helper()
	r := repliedConn{reply: reply}
	ln, conns, closed := lingerServerWith(t, l, cfg, r.reply)
	r.ln, r.closed = ln, closed
	r.nc = netDial(t, ln)
	_, err := r.nc.Write([]byte("first request"))
	require.NoError(t, err)
	r.c = recv(t, conns)
	eventually(t, func() bool { return l.Stats().TCPBytesOut == uint64(len(r.reply)) }, "reply sent")
	return r
}

// finSent waits until the drain's FIN left c (or c closed, as it did
// before the lingering close: then the test fails later, at the reset).
func finSent(t *testing.T, l *Loop, c *Conn) {
	t.Helper()
	eventually(t, func() bool {
		return onLoopValue(t, l, func() bool { return c.wdone || c.state != connOpen })
	}, "the drain's FIN")
}

// A request that reaches a draining connection after its FIN must not
// cost the peer the replies it has not read yet: the connection reads and
// drops it and closes at the peer's EOF (closing on the unread bytes
// would send a reset, and the peer's kernel would drop the replies).
func TestListenerDrainLingersUntilPeerEOF(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	r := newRepliedConn(t, l)
	ln, c, nc, reply, closed := r.ln, r.c, r.nc, r.reply, r.closed

	drained := ln.Drain(time.Hour)
	finSent(t, l, c)
	// The peer, not reading yet, sends another request, which crosses the
	// FIN: it lands on the draining connection.
	late := bytes.Repeat([]byte("late request "), 100)
	_, err := nc.Write(late)
	require.NoError(t, err)
	require.Equal(t, Running, drained.Status(), "lingering until the peer's EOF")

	got, err := io.ReadAll(nc)
	require.NoError(t, err, "no reset before the peer's EOF")
	require.Equal(t, reply, got, "every reply byte, then EOF")
	require.NoError(t, nc.Close())
	_, err = wait(t, drained)
	require.NoError(t, err)
	require.NoError(t, recv(t, closed), "closed at the peer's EOF, orderly")
	require.Equal(t, uint64(len("first request")+len(late)), l.Stats().TCPBytesIn,
		"the late request was read (and dropped)")
	require.Equal(t, uint64(len(reply)), l.Stats().TCPBytesOut, "the late request got no reply")
	closedLoopTCP(t, l)
	require.Equal(t, fds, fdCount(t), "fds back")
}

// drainStubborn drains (Listener.Drain) a lingerServer's connection made
// with cfg, whose peer reads the FIN and never closes, and returns how
// long the drain took to end the connection, orderly, and the peer.
func drainStubborn(t *testing.T, l *Loop, cfg ConnConfig) (time.Duration, net.Conn) {
	t.Helper()
	ln, conns, closed := lingerServerWith(t, l, cfg, []byte("reply"))
	stubborn := netDial(t, ln)
	c := recv(t, conns)

	start := time.Now()
	drained := ln.Drain(time.Hour)
	finSent(t, l, c)
	n, err := stubborn.Read(make([]byte, 8))
	require.Equal(t, io.EOF, err, "the FIN, read %d bytes", n)
	_, err = waitWithin(t, DefaultLinger+waitTimeout, drained)
	require.NoError(t, err)
	took := time.Since(start)
	require.NoError(t, recv(t, closed), "the linger ends the connection as Close does")
	return took, stubborn
}

// A peer that never closes holds a draining connection for DefaultLinger at
// most (Runtime.Shutdown's drain has no other bound), and a Drain's grace
// that ends first ends it first.
func TestListenerDrainLingerBounded(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	took, stubborn := drainStubborn(t, l, ConnConfig{})
	require.GreaterOrEqual(t, took, DefaultLinger, "lingered for the peer")

	// A grace shorter than the linger closes it at the grace's end.
	ln2, conns2, closed2 := lingerServer(t, l, []byte("reply"))
	stubborn2 := netDial(t, ln2)
	c2 := recv(t, conns2)
	drained2 := ln2.Drain(50 * time.Millisecond)
	finSent(t, l, c2)
	_, err := waitWithin(t, DefaultLinger/2, drained2)
	require.ErrorIs(t, err, ErrGraceExpired)
	require.ErrorIs(t, recv(t, closed2), ErrCancelled, "closed by the grace's end")
	_, err = stubborn2.Read(make([]byte, 8))
	require.Equal(t, io.EOF, err)

	closedLoopTCP(t, l)
	require.NoError(t, stubborn.Close())
	require.NoError(t, stubborn2.Close())
	require.Equal(t, fds, fdCount(t), "fds back")
}

// A connection its program paused stays paused while Drain waits for its
// queue to flush: a peer that sends on without reading the replies is not
// read and dropped at line rate (its writes block once the kernel buffers
// are full). Once the peer reads and the FIN is out, the linger reads
// what it sent and its EOF closes the connection cleanly. A connection
// that was reading reads on meanwhile (TestListenerDrainLingersUntilPeerEOF).
func TestDrainKeepsAPauseUntilTheFIN(t *testing.T) {
	reply := make([]byte, 16<<20) // more than the kernel buffers hold
	pattern(reply, 0)
	l := startLoop(t)
	ln, conns, closed := lingerServer(t, l, reply)
	nc := netDial(t, ln)
	sc := recv(t, conns)
	_, err := nc.Write([]byte{1}) // asks for the reply
	require.NoError(t, err)
	eventually(t, func() bool { return sc.Buffered() > 0 }, "the reply is not queued")
	require.NoError(t, sc.PauseRead())
	sc.Drain()

	const limit = 128 << 20
	written := testpeer.WriteUntilBlocked(t, nc, limit, 2*time.Second)
	require.Less(t, written, limit/2, "the draining connection read on at line rate")
	require.Equal(t, Running, sc.Closed().Status())

	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	got, err := io.ReadAll(nc) // the whole reply, then the FIN
	require.NoError(t, err)
	require.True(t, bytes.Equal(reply, got), "the reply is cut: %d of %d bytes", len(got), len(reply))
	require.NoError(t, nc.CloseWrite()) // the linger reads the rest, then this EOF
	require.NoError(t, recv(t, closed))
	closedLoopTCP(t, l.closeListener(t, ln))
}

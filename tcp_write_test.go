package aio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A client that sends without reading: the server's write queue passes the
// high-water mark, the server stops reading (so the queue stays bounded by
// high water plus one read), and when the client reads again the queue
// drains, OnDrain runs, reading resumes and every byte comes back in order.
func TestTCPBackpressure(t *testing.T) {
	const hw, total = 64 << 10, 48 << 20
	l := startLoop(t)
	var maxQueued atomic.Int64
	paused := make(chan struct{})
	var drains atomic.Int64
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{HighWater: hw}}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			_ = send(c, b)
			q := int64(c.Buffered())
			if q > maxQueued.Load() {
				maxQueued.Store(q)
			}
			if q > hw && drains.Load() == 0 {
				select {
				case <-paused:
				default:
					close(paused)
				}
			}
		})
		_ = c.OnDrain(func(*Conn) { drains.Add(1) })
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	werr := sendAll(nc, total)
	select {
	case <-paused:
	case <-time.After(waitTimeout):
		t.Fatalf("the server's queue never passed high water: %+v", l.Stats())
	}
	// Reading is paused: for a while, the server reads nothing more and its
	// queue does not grow, though the client keeps trying to send.
	in := l.Stats().TCPBytesIn
	for i := 0; i < 20; i++ {
		time.Sleep(10 * time.Millisecond) // an observation window, not a synchronisation
		s := l.Stats()
		require.LessOrEqual(t, s.TCPWriteQueued, hw+ReadBufferSize)
		require.Equal(t, in, s.TCPBytesIn, "the server read while paused")
	}
	require.Zero(t, drains.Load())

	// The client reads again: everything comes back, in order.
	readBack(t, nc, total)
	require.NoError(t, recv(t, werr))
	_, err = nc.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	require.LessOrEqual(t, maxQueued.Load(), int64(hw+ReadBufferSize))
	require.Positive(t, drains.Load(), "OnDrain ran once the queue came down")
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Zero(t, l.Stats().TCPWriteQueued)
}

// The peer resets the connection (SO_LINGER 0) while the server writes a
// lot: the server's Write handle fails, the connection closes with the
// error, nothing panics and nothing is left behind.
func TestTCPPeerResetMidWrite(t *testing.T) {
	fds := fdCount(t)
	l := startLoop(t)
	writes := make(chan *Handle[struct{}], 1)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			writes <- writeFlush(c, make([]byte, 64<<20))
		})
		conns <- c
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("go"))
	require.NoError(t, err)
	_, err = io.ReadFull(nc, make([]byte, 1<<20)) // the server is mid-write
	require.NoError(t, err)
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // RST

	_, err = wait(t, recv(t, writes))
	require.Error(t, err)
	require.True(t, errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE), "%v", err)
	_, cerr := wait(t, recv(t, conns).Closed())
	require.Error(t, cerr)
	require.Zero(t, l.Stats().Panics)
	require.Zero(t, l.Stats().TCPWriteQueued)
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Equal(t, fds+2, fdCount(t), "only the loop's poller fds are left") // epoll + wakeup
}

// A Write on the loop that the kernel refuses (the peer has reset) closes
// the connection and says so as any Write to a closed connection does:
// its error matches ErrConnClosed, and the socket's errno too. It used to
// be the errno alone, so a client that resends what failed on a closed
// connection had to know both.
func TestTCPWriteRefusedOnLoopIsConnClosed(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	c, err := wait(t, Dial(l, nl.Addr().String(), ConnConfig{})) // not read: only Write sees the reset
	require.NoError(t, err)
	peer, err := nl.Accept()
	require.NoError(t, err)
	require.NoError(t, peer.(*net.TCPConn).SetLinger(0))
	require.NoError(t, peer.Close()) // RST
	var werr error
	eventually(t, func() bool {
		werr = onLoopValue(t, l, func() error { _, err := c.Write([]byte("x")); return err })
		return werr != nil
	}, "no write failed after the reset")
	require.ErrorIs(t, werr, ErrConnClosed, "%v", werr)
	if werr != ErrConnClosed { // the kernel's refusal itself, not a close seen before it
		require.True(t, errors.Is(werr, unix.ECONNRESET) || errors.Is(werr, unix.EPIPE), "%v", werr)
	}
	closedLoopTCP(t, l)
}

// Regression test: the write queue kept every consumed slot (grew unbounded).
//
// A connection whose write queue never fully empties (steady streaming to a
// slower reader) keeps every consumed segment slot of the queue's segs: head
// only resets when the queue is empty, so len(segs) grows with the bytes ever
// queued.
func TestTCPWriteQueueStaysBounded(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { conns <- c })
	require.NoError(t, err)
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	c := recv(t, conns)

	const total = 96 << 20
	stop := make(chan struct{})
	go func() { // a slow but steady reader
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := nc.Read(buf); err != nil {
				if err != io.EOF {
					return
				}
				return
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	defer close(stop)

	chunk := make([]byte, 4<<10)
	var sent int
	var maxLive, maxLen int
	var emptied int
	done := make(chan struct{})
	var tick *Handle[struct{}]
	onLoop(t, l, func() {
		tick = Every(l, time.Millisecond, func() {
			if sent >= total {
				select {
				case <-done:
				default:
					close(done)
				}
				return
			}
			if c.Buffered() == 0 && sent > 0 {
				emptied++
			}
			for c.Buffered() < 4<<20 && sent < total {
				_ = send(c, chunk)
				sent += len(chunk)
			}
			if q := c.q; q != nil {
				if live := len(q.segs) - q.head; live > maxLive {
					maxLive = live
				}
				if len(q.segs) > maxLen {
					maxLen = len(q.segs)
				}
			}
		})
	})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("timeout")
	}
	tick.Cancel()
	onLoop(t, l, func() {})
	t.Logf("live segments max %d, len(segs) max %d, queue emptied %d times", maxLive, maxLen, emptied)
	require.Less(t, emptied, 10, "the queue kept emptying: the stream never exercised a queue that stays non-empty")
	require.Less(t, maxLen, 4*maxLive+64, "segs kept %d slots for at most %d live segments", maxLen, maxLive)
}

// sendAll has the client send total bytes of pattern, then half-close,
// without reading; the channel reports the end. The sends can finish only
// if the server keeps reading while its write queue is full.
func sendAll(nc *net.TCPConn, total int) <-chan error {
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var err error
		for off := 0; off < total && err == nil; off += len(buf) {
			pattern(buf, off)
			_, err = nc.Write(buf)
		}
		if err == nil {
			err = nc.CloseWrite()
		}
		werr <- err
	}()
	return werr
}

// readBack reads total bytes of pattern from nc, checking them.
func readBack(t *testing.T, nc net.Conn, total int) {
	t.Helper()
	got := make([]byte, 64<<10)
	for off := 0; off < total; {
		n, err := nc.Read(got)
		require.NoError(t, err)
		want := make([]byte, n)
		pattern(want, off)
		require.True(t, bytes.Equal(want, got[:n]), "echo differs at %d", off)
		off += n
	}
}

// ReadWhileFull gives the two directions independent flow control: an echo
// server whose queue is far above high water goes on reading, so it reads
// a client's whole stream while that client reads nothing; Full is set
// meanwhile and OnDrain runs once the client reads. The echo's socket
// buffers are small so that the kernel cannot take the echo in their stead:
// with the system's (4 MiB of send buffer on Linux) the server could read
// half the stream with its queue empty, and the client's sends could end
// before it read more.
func TestTCPReadWhileFull(t *testing.T) {
	const hw, total = 64 << 10, 8 << 20
	l := startLoop(t)
	readAll := make(chan bool, 1) // Full once the server has read the whole stream
	drained := make(chan bool, 1)
	cfg := ListenConfig{Conn: ConnConfig{HighWater: hw, ReadWhileFull: true, WriteBuffer: peerBuffer}}
	read := 0 // owned by the loop
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			_ = send(c, b)
			if read += len(b); read == total {
				readAll <- c.Full()
			}
		})
		_ = c.OnDrain(func(c *Conn) {
			select {
			case drained <- c.Full():
			default:
			}
		})
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	require.NoError(t, nc.SetReadBuffer(peerBuffer))
	sent := sendAll(nc, total)
	require.True(t, recv(t, readAll), "the whole echo fit in the kernel: the queue never went above high water")
	require.NoError(t, recv(t, sent))
	readBack(t, nc, total)
	require.False(t, recv(t, drained), "OnDrain ran with the queue still Full")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// ResumeRead resumes reading held back by a full write queue: the server
// stops reading once its queue is full, the test resumes it, and the client
// can then send everything without reading (the queue is the program's to
// bound from then on).
func TestTCPResumeReadUndoesFullHold(t *testing.T) {
	const hw, total = 64 << 10, 8 << 20
	l := startLoop(t)
	held := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{HighWater: hw}}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			_ = send(c, b)
			if c.Full() && c.held {
				select {
				case held <- c:
				default:
				}
			}
		})
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	sent := sendAll(nc, total)
	c := recv(t, held)
	require.NoError(t, c.ResumeRead())
	require.NoError(t, recv(t, sent), "ResumeRead did not resume reading")
	readBack(t, nc, total)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Conn is an io.Writer: fmt, io.Copy and WriteString write to it from any
// goroutine, in order; Flush completes once those bytes reached the kernel,
// at once with nothing queued, and fails once the connection is closed.
func TestTCPWriteIsWriter(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 1)
	nc := netDial(t, ln)
	c := recv(t, conns)
	var w io.Writer = c
	_, err := fmt.Fprintf(w, "%s-%d|", "fmt", 1)
	require.NoError(t, err)
	big := bytes.Repeat([]byte("x"), 4<<20) // more than the kernel takes at once
	n, err := io.Copy(w, bytes.NewReader(big))
	require.NoError(t, err)
	require.EqualValues(t, len(big), n)
	_, err = c.WriteString("|end")
	require.NoError(t, err)
	flushed := c.Flush()
	want := append(append([]byte("fmt-1|"), big...), "|end"...)
	got := make([]byte, len(want))
	_, err = io.ReadFull(nc, got)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the bytes arrived out of order")
	_, err = wait(t, flushed)
	require.NoError(t, err)

	require.Equal(t, Completed, onLoopValue(t, l, func() Status { return c.Flush().Status() }),
		"Flush with nothing queued completes at once on the loop")
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, c.Flush())
	require.ErrorIs(t, err, ErrConnClosed)
	n2, err := c.Write([]byte("late"))
	require.ErrorIs(t, err, ErrConnClosed)
	require.Zero(t, n2)
	closedLoopTCP(t, l.closeListener(t, ln))
}

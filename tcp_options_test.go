package aio

import (
	"errors"
	"io"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// An idle connection closes with ErrIdleTimeout; traffic keeps it open.
func TestTCPIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{IdleTimeout: idle}}, 1+busyAttempts)

	// Quiet: closed after about idle.
	start := time.Now()
	quiet := netDial(t, ln)
	qc := recv(t, conns)
	_, err := wait(t, qc.Closed())
	require.ErrorIs(t, err, ErrIdleTimeout)
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, "aio: tcp idle timeout", err.Error(), "one prefix, no repetition")
	var ne net.Error
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Timeout())
	require.GreaterOrEqual(t, time.Since(start), idle)
	_, err = quiet.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)

	// Busy: a byte every idle/5 for 3·idle keeps it open. The client's
	// rounds (write, echo, pause) are timed: a round that took idle/2 or more
	// means the test was starved (a loaded machine), not that traffic failed
	// to count, and the attempt is made again on a new connection.
	for attempt := 1; ; attempt++ {
		busy := netDial(t, ln)
		bc := recv(t, conns)
		slowest := busyClient(t, busy, idle/5, 3*idle)
		if slowest >= idle/2 && attempt < busyAttempts {
			t.Logf("attempt %d: a client round took %v (idle %v): starved, again", attempt, slowest, idle)
			continue
		}
		require.Less(t, slowest, idle/2, "the client kept its pace in %d attempts", attempt)
		require.Equal(t, Running, bc.Closed().Status(), "traffic keeps the connection open")
		_, err = wait(t, bc.Closed())
		require.ErrorIs(t, err, ErrIdleTimeout, "and silence closes it")
		break
	}
	closedLoopTCP(t, l.closeListener(t, ln))
}

// busyAttempts bounds TestTCPIdleTimeout's busy phase on a starved machine.
const busyAttempts = 3

// busyClient writes a byte and reads its echo every pace for length, and
// returns its slowest round, the pause included. It stops early, with the
// round that saw it, if the server closes the connection.
func busyClient(t *testing.T, nc *net.TCPConn, pace, length time.Duration) (slowest time.Duration) {
	t.Helper()
	for end := time.Now().Add(length); time.Now().Before(end); {
		round := time.Now()
		_, err := nc.Write([]byte{1})
		if err == nil {
			_, err = io.ReadFull(nc, make([]byte, 1))
		}
		if err != nil {
			// Closed by the server: only a starved round explains it.
			return max(slowest, time.Since(round)+pace)
		}
		time.Sleep(pace) // the client's pace, not a synchronisation
		slowest = max(slowest, time.Since(round))
	}
	return slowest
}

// A read timeout closes a connection whose peer sends nothing, even while
// the server keeps writing.
func TestTCPReadTimeout(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{ReadTimeout: 150 * time.Millisecond}},
		func(c *Conn) {
			_ = c.OnRead(tcpEcho)
			ticker := Adopt(c.Scope(), Every(l, 20*time.Millisecond, func() { _ = send(c, []byte("tick")) }))
			conns <- c
			_ = ticker
		})
	require.NoError(t, err)
	nc := netDial(t, ln)
	c := recv(t, conns)
	_, err = wait(t, c.Closed())
	require.ErrorIs(t, err, ErrReadTimeout)
	got, _ := io.ReadAll(nc)
	require.NotEmpty(t, got, "the server wrote meanwhile")
	require.Zero(t, l.Stats().Timers, "the scope cancelled the ticker")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Timeouts set on a connection accepted without any (its timeouts are made
// on first use) work as configured ones do, and 0 turns one off.
func TestTCPTimeoutsSetLater(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 3)
	_ = netDial(t, ln)
	idle := recv(t, conns)
	_ = netDial(t, ln)
	read := recv(t, conns)
	_ = netDial(t, ln)
	off := recv(t, conns)

	errs := onLoopValue(t, l, func() [2]error { // in one callback: the 50 ms cannot pass between the two
		return [2]error{off.SetIdleTimeout(50 * time.Millisecond), off.SetIdleTimeout(0)}
	})
	require.Equal(t, [2]error{}, errs)
	require.NoError(t, idle.SetIdleTimeout(100*time.Millisecond))
	require.NoError(t, read.SetReadTimeout(150*time.Millisecond))
	_, err := wait(t, idle.Closed())
	require.ErrorIs(t, err, ErrIdleTimeout)
	_, err = wait(t, read.Closed())
	require.ErrorIs(t, err, ErrReadTimeout)
	// Both closed after the 50 ms the first timeout of off would have taken.
	require.Equal(t, Running, off.Closed().Status(), "a timeout set to 0 is off")
	require.Zero(t, onLoopValue(t, l, func() int { return l.Stats().Timers }), "no timer is left armed")
}

// A dialed connection whose first write is small gets TCP_NODELAY before
// its second write system call (Nagle never holds back such a first write),
// one whose first write is larger before that write, and none at all with
// ConnConfig.Nagle or after SetNoDelay(false).
func TestTCPDialNoDelayBeforeSecondWrite(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	small, large := []byte("one"), make([]byte, noDelayLateMax+1)
	for _, tc := range []struct {
		name        string
		cfg         ConnConfig
		before      func(c *Conn)
		first       []byte
		beforeWrite int // TCP_NODELAY before any write; -1: not checked
		afterFirst  int
		afterSecond int
	}{
		{"small first write", ConnConfig{}, nil, small, 0, 0, 1},
		{"large first write", ConnConfig{}, nil, large, 0, 1, 1},
		{"Nagle", ConnConfig{Nagle: true}, nil, small, 0, 0, 0},
		{"SetNoDelay(false)", ConnConfig{}, func(c *Conn) {
			require.NoError(t, c.SetNoDelay(false))
		}, large, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := wait(t, Dial(l, ln.Addr().String(), tc.cfg))
			require.NoError(t, err)
			defer c.Close()
			if tc.beforeWrite >= 0 {
				require.Equal(t, tc.beforeWrite, noDelayOf(t, c), "TCP_NODELAY before any write")
			}
			if tc.before != nil {
				tc.before(c)
			}
			_, err = wait(t, writeFlush(c, tc.first))
			require.NoError(t, err)
			require.Equal(t, tc.afterFirst, noDelayOf(t, c), "TCP_NODELAY after the first write")
			_, err = wait(t, writeFlush(c, []byte("two")))
			require.NoError(t, err)
			require.Equal(t, tc.afterSecond, noDelayOf(t, c), "TCP_NODELAY after the second write")
		})
	}
}

// noDelayOf reads TCP_NODELAY of c's socket, on its loop.
func noDelayOf(t *testing.T, c *Conn) int {
	t.Helper()
	type opt struct {
		v   int
		err error
	}
	got := onLoopValue(t, c.l, func() opt {
		v, err := unix.GetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		return opt{v, err}
	})
	require.NoError(t, got.err)
	return got.v
}

// ReadBuffer and WriteBuffer size the kernel buffers of accepted connections
// (inherited from the listening socket) and of dialed ones.
func TestTCPBufferSizes(t *testing.T) {
	const size = 16 << 10
	l := startLoop(t)
	cfg := ConnConfig{ReadBuffer: size, WriteBuffer: 2 * size}
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: cfg}, 1)
	dialed, err := wait(t, Dial(l, ln.Addr().String(), cfg))
	require.NoError(t, err)
	for _, c := range []*Conn{recv(t, conns), dialed} {
		got := onLoopValue(t, l, func() [2]int {
			r, rerr := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
			s, serr := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
			require.NoError(t, errors.Join(rerr, serr))
			return [2]int{r, s}
		})
		// Linux doubles the value asked for (bookkeeping overhead); the BSDs
		// keep it.
		require.Contains(t, []int{size, 2 * size}, got[0], "SO_RCVBUF of %v", c.LocalAddr())
		require.Contains(t, []int{2 * size, 4 * size}, got[1], "SO_SNDBUF of %v", c.LocalAddr())
	}
	_, err = wait(t, dialed.Close()) // and the echo side sees EOF and closes
	require.NoError(t, err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A size or backlog beyond an int32 is the largest the kernel allows, not
// the int32 it wraps to. Bug: 1<<32 became 0, so the buffers got the
// kernel's minimum (a zero-window stall waiting to happen) and the
// backlog 0.
func TestTCPHugeSizesAreTheCap(t *testing.T) {
	l := startLoop(t)
	rcvBuf := func(cfg ConnConfig) int {
		ln := echoListen(t, l, ListenConfig{})
		c, err := wait(t, Dial(l, ln.Addr().String(), cfg))
		require.NoError(t, err)
		defer c.Close()
		return onLoopValue(t, l, func() int {
			r, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
			require.NoError(t, err)
			return r
		})
	}
	huge, shift := math.MaxInt32, 32
	if strconv.IntSize == 64 {
		huge = 1<<shift + 8192 // wrapped, 8192
	}
	capped := rcvBuf(ConnConfig{ReadBuffer: math.MaxInt32})
	require.Equal(t, capped, rcvBuf(ConnConfig{ReadBuffer: huge}))

	// listen(2) and SO_SNDBUF get what withDefaults leaves.
	c, err := ListenConfig{Backlog: huge, Conn: ConnConfig{WriteBuffer: huge}}.withDefaults()
	require.NoError(t, err)
	require.Equal(t, math.MaxInt32, c.Backlog)
	require.Equal(t, math.MaxInt32, c.Conn.WriteBuffer)
}

// A peer that stops reading closes the connection with ErrWriteTimeout
// once the kernel has taken none of the queued bytes for WriteTimeout; a
// slow but steady reader is not cut (each byte the kernel takes restarts
// the clock), and the timeout is off while nothing waits to be sent.
func TestTCPWriteTimeout(t *testing.T) {
	const wt = 200 * time.Millisecond
	l := startLoop(t)
	ln, conns := bigSender(t, l, ConnConfig{WriteTimeout: wt, WriteBuffer: 16 << 10}, 8<<20, 2)

	// Quiet but nothing queued: the write timeout does not run.
	stuck := netDial(t, ln)
	sc := recv(t, conns)
	slow := netDial(t, ln)
	wc := recv(t, conns)
	time.Sleep(2 * wt) // the time that must pass without a close, not a synchronisation
	require.Equal(t, Running, sc.Closed().Status(), "nothing queued: no write timeout")

	// A client that asks and never reads: closed after about wt.
	start := time.Now()
	_, err := stuck.Write([]byte{1})
	require.NoError(t, err)
	_, err = wait(t, sc.Closed())
	require.ErrorIs(t, err, ErrWriteTimeout)
	require.ErrorIs(t, err, ErrTimeout)
	require.Equal(t, "aio: tcp write timeout", err.Error())
	require.GreaterOrEqual(t, time.Since(start), wt)

	// A slow, steady reader (64 KiB every wt/8) for 3·wt is not cut.
	_, err = slow.Write([]byte{1})
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	for end := time.Now().Add(3 * wt); time.Now().Before(end); {
		_, err := io.ReadFull(slow, buf)
		require.NoError(t, err)
		time.Sleep(wt / 8) // the client's pace, not a synchronisation
	}
	require.Equal(t, Running, wc.Closed().Status(), "progress keeps the connection open")
	require.Positive(t, wc.Buffered(), "the reader was slower than the writer")
	_, err = wait(t, wc.Closed())
	require.ErrorIs(t, err, ErrWriteTimeout, "and a stop closes it")
	require.Zero(t, onLoopValue(t, l, func() int { return l.Stats().Timers }), "no timer is left armed")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A client that reads steadily but slower than a kernel send buffer of
// hundreds of KiB drains is not cut: the kernel takes no new byte until a
// third of the buffer is free, longer than WriteTimeout here, but the
// peer acknowledges bytes all along, and that is progress. (Linux
// autotunes the buffer up to 4 MiB: a 100 KB/s download stalled 40 s at a
// time, and WriteTimeout's 30 s cut it.)
func TestTCPWriteTimeoutSparesAReaderBehindTheKernelBuffer(t *testing.T) {
	if !sock.SendQueueSupported {
		t.Skip("the kernel's send queue is read on Linux only")
	}
	// The reader's window updates come about every 64 KiB read, 320 ms at
	// its pace; the timeout is twice that, so that a loaded machine's
	// slower reads are not taken for a stall, and the kernel's buffer (800
	// KiB) frees a third of itself in 1.3 s, longer still.
	const wt = 600 * time.Millisecond
	// midStall: the timeout is set once the kernel holds bytes it did not
	// count (SetWriteTimeout on a stalled connection), not configured.
	for _, midStall := range []bool{false, true} {
		t.Run(map[bool]string{false: "configured", true: "set mid-stall"}[midStall], func(t *testing.T) {
			l := startLoop(t)
			cfg := ConnConfig{WriteTimeout: wt, WriteBuffer: 400 << 10}
			if midStall {
				cfg.WriteTimeout = 0
			}
			ln, conns := bigSender(t, l, cfg, 8<<20, 1)
			slow := netDial(t, ln)
			require.NoError(t, slow.SetReadBuffer(32<<10)) // window updates every few reads
			wc := recv(t, conns)
			_, err := slow.Write([]byte{1})
			require.NoError(t, err)
			buf := make([]byte, 8<<10)
			read := 0
			readFor := func(d time.Duration) {
				for end := time.Now().Add(d); time.Now().Before(end); {
					n, err := io.ReadFull(slow, buf)
					read += n
					require.NoError(t, err, "after %d bytes", read)
					time.Sleep(40 * time.Millisecond) // the client's pace (200 KB/s), not a synchronisation
				}
			}
			if midStall {
				eventually(t, func() bool { return wc.Buffered() > 0 }, "the write queue does not wait")
				// The reader is under way (its window updates come about
				// every 64 KiB read, 320 ms at this pace) when the timeout
				// is set, the kernel's buffer full of bytes no timeout counted.
				readFor(400 * time.Millisecond)
				require.Positive(t, wc.Buffered(), "the write queue still waits")
				require.NoError(t, wc.SetWriteTimeout(wt))
			}
			readFor(2 * time.Second)
			require.Equal(t, Running, wc.Closed().Status(), "a reader that keeps acknowledging is not cut")
			require.Positive(t, wc.Buffered(), "the reader was slower than the writer")

			// And a stop is still cut, after the acknowledgements end.
			_, err = wait(t, wc.Closed())
			require.ErrorIs(t, err, ErrWriteTimeout)
			closedLoopTCP(t, l.closeListener(t, ln))
		})
	}
}

// bigSender listens with cfg on 127.0.0.1 and answers any byte a client
// sends with size bytes, handing each accepted connection over on the
// channel (room for n).
func bigSender(t *testing.T, l *Loop, cfg ConnConfig, size, n int) (*Listener, <-chan *Conn) {
	t.Helper()
	conns := make(chan *Conn, n)
	big := make([]byte, size)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) { _ = send(c, big) })
		conns <- c
	})
	require.NoError(t, err)
	return ln, conns
}

// SetWriteTimeout on a connection accepted without timeouts works as the
// configured one does, and 0 turns it off.
func TestTCPSetWriteTimeout(t *testing.T) {
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{WriteBuffer: 16 << 10}}, 2)
	_ = netDial(t, ln)
	on := recv(t, conns)
	_ = netDial(t, ln)
	off := recv(t, conns)
	require.ErrorIs(t, on.SetWriteTimeout(-1), ErrInvalidArgument)
	require.NoError(t, on.SetWriteTimeout(100*time.Millisecond))
	require.NoError(t, off.SetWriteTimeout(50*time.Millisecond))
	require.NoError(t, off.SetWriteTimeout(0))
	big := make([]byte, 8<<20)
	require.NoError(t, send(on, big))
	require.NoError(t, send(off, big))
	_, err := wait(t, on.Closed())
	require.ErrorIs(t, err, ErrWriteTimeout)
	require.Equal(t, Running, off.Closed().Status(), "a write timeout set to 0 is off")
	require.ErrorIs(t, on.SetWriteTimeout(time.Second), ErrConnClosed)
	_, err = wait(t, off.Close())
	require.NoError(t, err)
	closedLoopTCP(t, l.closeListener(t, ln))
}

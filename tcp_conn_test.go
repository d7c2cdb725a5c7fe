package aio

import (
	"context"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A connection that closes cancels the handles adopted into its scope and
// runs their cleanups: this is how a client going away (a reset: a FIN
// alone is a half-close, see TestTCPEOFWaitsForScope) cancels its work.
func TestTCPConnScopeCancelsWork(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 1})
	var cleanups atomic.Int64
	workStarted, workCtxDone := make(chan struct{}), make(chan struct{})
	adopted := make(chan []*Handle[struct{}], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(tcpEcho) // a connection notices its peer leave by reading
		s := c.Scope()
		sleep := Adopt(s, Sleep(l, time.Hour))
		sleep.OnCleanup(func() { cleanups.Add(1) })
		work := Adopt(s, Work(l, func(ctx context.Context) (struct{}, error) {
			close(workStarted)
			<-ctx.Done()
			close(workCtxDone)
			return struct{}{}, ctx.Err()
		}))
		work.OnCleanup(func() { cleanups.Add(1) })
		p := Adopt(s, NewPromise[struct{}](l).Handle())
		p.OnCleanup(func() { cleanups.Add(1) })
		assert.Equal(t, 3, s.Len())
		adopted <- []*Handle[struct{}]{sleep, work, p}
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	hs := recv(t, adopted)
	for _, h := range hs {
		require.Equal(t, Running, h.Status())
	}
	// The Work function must be running, or its cancellation just drops the
	// queued job (which never runs) and there is no context to see cancelled.
	select {
	case <-workStarted:
	case <-time.After(waitTimeout):
		t.Fatal("the Work job never started")
	}
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // the client goes away: RST
	for _, h := range hs {
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
	}
	select {
	case <-workCtxDone:
	case <-time.After(waitTimeout):
		t.Fatal("the Work function's context was never cancelled")
	}
	require.EqualValues(t, 3, cleanups.Load())
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Bad input and use after Close get clear errors, on the loop and off it.
func TestTCPConnMisuse(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{KeepAlive: time.Minute}))
	require.NoError(t, err)
	require.ErrorIs(t, c.OnRead(nil), ErrNilFunc)
	require.ErrorIs(t, c.OnEOF(nil), ErrNilFunc)
	require.ErrorIs(t, c.OnDrain(nil), ErrNilFunc)
	require.ErrorIs(t, c.SetReadTimeout(-1), ErrInvalidArgument)
	require.ErrorIs(t, c.SetIdleTimeout(-time.Second), ErrInvalidArgument)
	require.ErrorIs(t, c.SetKeepAlive(-1), ErrInvalidArgument)
	require.NoError(t, c.SetKeepAlive(30*time.Second))
	require.NoError(t, c.SetNoDelay(false))
	require.Zero(t, onLoopValue(t, l, func() int { // posted, applied in order
		v, err := unix.GetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
		require.NoError(t, err)
		return v
	}))
	_, err = wait(t, writeFlush(c, nil))
	require.NoError(t, err, "an empty write completes")

	_, err = wait(t, c.CloseWrite())
	require.NoError(t, err)
	require.ErrorIs(t, send(c, []byte("x")), ErrWriteClosed)
	_, err = wait(t, writeFlush(c, []byte("x")))
	require.ErrorIs(t, err, ErrWriteClosed)
	errs := onLoopValue(t, l, func() [2]error { // on the loop: Send, Write
		_, err := writeFlush(c, []byte("x")).Result()
		return [2]error{send(c, []byte("x")), err}
	})
	require.ErrorIs(t, errs[0], ErrWriteClosed)
	require.ErrorIs(t, errs[1], ErrWriteClosed)
	_, err = wait(t, c.CloseWrite())
	require.NoError(t, err, "CloseWrite is idempotent")

	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, c.Close())
	require.NoError(t, err, "Close is idempotent")
	require.ErrorIs(t, send(c, []byte("x")), ErrConnClosed)
	require.ErrorIs(t, c.OnRead(tcpEcho), ErrConnClosed)
	require.ErrorIs(t, c.PauseRead(), ErrConnClosed)
	require.ErrorIs(t, c.SetIdleTimeout(time.Second), ErrConnClosed)
	_, err = wait(t, writeFlush(c, []byte("x")))
	require.ErrorIs(t, err, ErrConnClosed)
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = wait(t, c.CloseWrite())
	require.ErrorIs(t, err, ErrConnClosed)
	require.ErrorIs(t, c.SetNoDelay(true), ErrConnClosed)
	require.ErrorIs(t, c.SetKeepAlive(time.Minute), ErrConnClosed)
	errs = onLoopValue(t, l, func() [2]error { // on the loop: OnRead, Send
		return [2]error{c.OnRead(tcpEcho), send(c, []byte("x"))}
	})
	require.ErrorIs(t, errs[0], ErrConnClosed)
	require.ErrorIs(t, errs[1], ErrConnClosed)
	// A handle adopted into a closed connection's scope is cancelled at once.
	h := Adopt(c.Scope(), Sleep(l, time.Hour))
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A panicking callback closes its connection with a *PanicError and the
// loop goes on.
func TestTCPCallbackPanic(t *testing.T) {
	var reported atomic.Int64
	l := startLoop(t, Config{OnPanic: func(any) { reported.Add(1) }})
	conns := make(chan *Conn, 2)
	accepted := 0 // on the loop
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		conns <- c
		_ = c.OnRead(func(c *Conn, b []byte) { panic("boom") })
		if accepted++; accepted == 2 {
			panic("accept boom")
		}
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("x"))
	require.NoError(t, err)
	_, err = wait(t, recv(t, conns).Closed())
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "boom", pe.Value)
	netDial(t, ln)
	_, err = wait(t, recv(t, conns).Closed())
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "accept boom", pe.Value)
	require.EqualValues(t, 2, reported.Load())
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Memory per idle connection on the server side: HeapInuse grows by less
// than 4 KiB per accepted connection that is reading and idle. The client
// ends are raw sockets that cost the Go heap nothing. (cmd/loopbench
// -workload tcp-idle measures 10,000 with the clients in another process.)
func TestTCPIdleConnMemory(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	sa := &unix.SockaddrInet4{Port: int(ln.Addr().Port()), Addr: [4]byte{127, 0, 0, 1}}
	clients := make([]int, 0, n)
	defer func() {
		for _, fd := range clients {
			unix.Close(fd)
		}
	}()
	// One warm-up connection, so the loop's one-time allocations (read
	// buffer, tables) are not counted.
	warm, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	clients = append(clients, warm)
	require.NoError(t, unix.Connect(warm, sa))
	eventually(t, func() bool { return l.Stats().TCPOpen == 1 }, "warm-up not accepted")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		require.NoError(t, err)
		clients = append(clients, fd)
		require.NoError(t, unix.Connect(fd, sa))
	}
	eventually(t, func() bool { return l.Stats().TCPOpen == n+1 }, "not all accepted: %+v", l.Stats())
	onLoop(t, l, func() {}) // one more iteration: young producers are tracked
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n)
	t.Logf("idle connections: %d, HeapInuse delta %.0f B per connection", n, per)
	require.Less(t, per, 4096.0)
}

// A Conn stays within the 320-byte size class on 64-bit systems: it is
// most of an idle connection's memory and what a connect-and-close
// workload allocates and touches, so a field added carelessly (padding
// included) costs every connection the next class, 352 bytes.
func TestConnSize(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit systems")
	}
	require.LessOrEqual(t, unsafe.Sizeof(Conn{}), uintptr(320))
}

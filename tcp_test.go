package aio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// ---- helpers ----

// tcpEcho is the echo callback: every byte read is sent back.
func tcpEcho(c *Conn, b []byte) { _ = c.Send(b) }

// echoListen listens on 127.0.0.1 with an echo server; the listener is closed
// when the test ends (Stop would close it too).
func echoListen(t *testing.T, l *Loop, cfg ListenConfig) *Listener {
	t.Helper()
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	return ln
}

// echoListenConns is echoListen on addr with cfg, handing each accepted
// connection over on the channel (room for n).
func echoListenConns(t *testing.T, l *Loop, addr string, cfg ListenConfig, n int) (*Listener, <-chan *Conn) {
	t.Helper()
	conns := make(chan *Conn, n)
	ln, err := Listen(l, addr, cfg, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		conns <- c
	})
	require.NoError(t, err)
	return ln, conns
}

// skipWithoutLoopback skips a test on a machine without a loopback address
// for host (no ::1 in some containers).
func skipWithoutLoopback(t *testing.T, host string) {
	t.Helper()
	probe, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Skipf("no %s loopback here: %v", host, err)
	}
	require.NoError(t, probe.Close())
}

// netDial connects with Go's net package, with a deadline bounding every
// read and write of the test.
func netDial(t *testing.T, ln *Listener) *net.TCPConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	t.Cleanup(func() { nc.Close() })
	return nc.(*net.TCPConn)
}

// eventually waits for cond, which only counters reveal (there is no event
// to wait on), polling every millisecond up to waitTimeout.
func eventually(t *testing.T, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, waitTimeout, time.Millisecond, append([]any{msg}, args...)...)
}

// closedLoopTCP waits until l has no connection or listener open.
func closedLoopTCP(t *testing.T, l *Loop) {
	t.Helper()
	eventually(t, func() bool { s := l.Stats(); return s.TCPOpen == 0 && s.TCPListeners == 0 },
		"connections still open: %+v", l.Stats())
}

// onLoopValue runs fn on l and returns its result.
func onLoopValue[T any](t *testing.T, l *Loop, fn func() T) T {
	t.Helper()
	var v T
	onLoop(t, l, func() { v = fn() })
	return v
}

// pattern fills b with a position-dependent pattern starting at offset off.
func pattern(b []byte, off int) {
	for i := range b {
		b[i] = byte((off + i) * 7 >> 3)
	}
}

// ---- echo ----

// 200 concurrent clients from Go's net package each send a random payload of
// up to 1 MiB to an echo server served by two loops on one port
// (SO_REUSEPORT), half-close, and check every byte of the echo.
func TestTCPEchoManyClients(t *testing.T) {
	const clients, maxSize = 200, 1 << 20
	a, b := startLoop(t, Config{Name: "echo-a"}), startLoop(t, Config{Name: "echo-b"})
	cfg := ListenConfig{ReusePort: true}
	la := echoListen(t, a, cfg)
	lb, err := Listen(b, la.Addr().String(), cfg, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	require.Equal(t, la.Addr(), lb.Addr())

	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			payload := make([]byte, 1+rng.IntN(maxSize))
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			nc, err := net.DialTimeout("tcp", la.Addr().String(), waitTimeout)
			if !assert.NoError(t, err) {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(waitTimeout))
			werr := make(chan error, 1)
			go func() {
				_, err := nc.Write(payload)
				if err == nil {
					err = nc.(*net.TCPConn).CloseWrite()
				}
				werr <- err
			}()
			got := make([]byte, len(payload))
			_, err = io.ReadFull(nc, got)
			assert.NoError(t, err, "client %d", i)
			n, err := nc.Read(make([]byte, 1))
			assert.Equal(t, 0, n)
			assert.ErrorIs(t, err, io.EOF, "the server closes after echoing everything")
			assert.NoError(t, <-werr)
			assert.True(t, bytes.Equal(payload, got), "client %d: echo differs", i)
			sent.Add(int64(len(payload)))
		}()
	}
	wg.Wait()
	for _, l := range []*Loop{a, b} {
		eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "connections left open on %s", l.Name())
	}
	sa, sb := a.Stats(), b.Stats()
	require.EqualValues(t, clients, sa.TCPAccepted+sb.TCPAccepted)
	require.EqualValues(t, clients, sa.TCPClosed+sb.TCPClosed)
	require.Equal(t, uint64(sent.Load()), sa.TCPBytesIn+sb.TCPBytesIn)
	require.Equal(t, uint64(sent.Load()), sa.TCPBytesOut+sb.TCPBytesOut)
	require.Zero(t, sa.TCPWriteQueued+sb.TCPWriteQueued)
	t.Logf("accepted: %s %d, %s %d", a.Name(), sa.TCPAccepted, b.Name(), sb.TCPAccepted)
}

// An aio client (Dial) against an aio server on the same loop, with writes
// made from another goroutine: order is kept, Write handles complete.
func TestTCPDialEchoSameLoop(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	require.Equal(t, ln.Addr(), c.RemoteAddr())
	require.True(t, c.LocalAddr().Addr().IsLoopback())

	const n, size = 100, 10_000
	var got bytes.Buffer // on the loop
	done := make(chan struct{})
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) {
		got.Write(b)
		if got.Len() == n*size {
			close(done)
		}
	}))
	var hs []*Handle[struct{}]
	want := make([]byte, 0, n*size)
	for i := 0; i < n; i++ {
		msg := bytes.Repeat([]byte{byte(i)}, size)
		want = append(want, msg...)
		hs = append(hs, c.Write(msg)) // off the loop: copied, posted in order
	}
	for _, h := range hs {
		_, err := wait(t, h)
		require.NoError(t, err)
	}
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("echo did not come back")
	}
	echoed := onLoopValue(t, l, func() []byte { return bytes.Clone(got.Bytes()) })
	require.True(t, bytes.Equal(want, echoed))
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, c.Closed())
	require.NoError(t, err)
	require.ErrorIs(t, c.Send([]byte("x")), ErrConnClosed)
	eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "the server side closes on EOF")
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	_, err = wait(t, ln.Closed())
	require.NoError(t, err)
	s := l.Stats()
	require.EqualValues(t, 1, s.TCPDialed)
	require.EqualValues(t, 1, s.TCPAccepted)
	require.EqualValues(t, 2, s.TCPClosed)
}

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

// ---- backpressure ----

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
			_ = c.Send(b)
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
	werr := make(chan error, 1)
	go func() {
		buf := make([]byte, 256<<10)
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
	got := make([]byte, 256<<10)
	for off := 0; off < total; {
		n, err := nc.Read(got)
		require.NoError(t, err)
		want := make([]byte, n)
		pattern(want, off)
		require.True(t, bytes.Equal(want, got[:n]), "echo differs at %d", off)
		off += n
	}
	require.NoError(t, recv(t, werr))
	_, err = nc.Read(got)
	require.ErrorIs(t, err, io.EOF)
	require.LessOrEqual(t, maxQueued.Load(), int64(hw+ReadBufferSize))
	require.Positive(t, drains.Load(), "OnDrain ran once the queue came down")
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Zero(t, l.Stats().TCPWriteQueued)
}

// closeListener closes ln and returns its loop.
func (l *Loop) closeListener(t *testing.T, ln *Listener) *Loop {
	t.Helper()
	_, err := wait(t, ln.Close())
	require.NoError(t, err)
	return l
}

// ---- half-close and resets ----

// The client half-closes; the server sees EOF, still writes its answer,
// half-closes in turn, and the connection closes by itself once both
// directions are finished.
func TestTCPHalfClose(t *testing.T) {
	l := startLoop(t)
	closed := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		var question []byte // on the loop
		_ = c.OnRead(func(c *Conn, b []byte) { question = append(question, b...) })
		_ = c.OnEOF(func(c *Conn) {
			assert.NoError(t, c.Send(append([]byte("answer to "), question...)))
			assert.Equal(t, Running, c.Closed().Status())
			c.CloseWrite() // both directions are finished: the connection closes
			assert.Equal(t, Completed, c.Closed().Status())
			assert.ErrorIs(t, c.Send([]byte("late")), ErrConnClosed)
		})
		closed <- c
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("everything"))
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	got, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "answer to everything", string(got))
	c := recv(t, closed)
	_, err = wait(t, c.Closed())
	require.NoError(t, err, "an orderly end completes Closed")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// CloseWrite with writes still queued sends FIN only after them, and its
// handle completes then.
func TestTCPCloseWriteAfterFlush(t *testing.T) {
	l := startLoop(t)
	const size = 8 << 20
	shut := make(chan *Handle[struct{}], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {}) // to see the client's EOF
		big := make([]byte, size)
		pattern(big, 0)
		w := c.Write(big)
		h := c.CloseWrite()
		assert.Equal(t, Running, w.Status(), "8 MiB do not fit in the kernel at once")
		assert.Equal(t, Running, h.Status())
		assert.ErrorIs(t, c.Send([]byte("late")), ErrWriteClosed)
		_, err := c.Write([]byte("late")).Result()
		assert.ErrorIs(t, err, ErrWriteClosed)
		shut <- h
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	got, err := io.ReadAll(nc)
	require.NoError(t, err)
	want := make([]byte, size)
	pattern(want, 0)
	require.True(t, bytes.Equal(want, got))
	_, err = wait(t, <-shut)
	require.NoError(t, err)
	nc.Close()
	closedLoopTCP(t, l.closeListener(t, ln))
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
			writes <- c.Write(make([]byte, 64<<20))
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

	_, err = wait(t, <-writes)
	require.Error(t, err)
	require.True(t, errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE), "%v", err)
	_, cerr := wait(t, (<-conns).Closed())
	require.Error(t, cerr)
	require.Zero(t, l.Stats().Panics)
	require.Zero(t, l.Stats().TCPWriteQueued)
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Equal(t, fds+2, fdCount(t), "only the loop's poller fds are left") // epoll + wakeup
}

// ---- dial ----

func TestTCPDialRefused(t *testing.T) {
	l := startLoop(t)
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := probe.Addr().String()
	require.NoError(t, probe.Close()) // nobody listens there now
	fds := fdCount(t)
	_, err = wait(t, Dial(l, addr, ConnConfig{}))
	require.ErrorIs(t, err, unix.ECONNREFUSED)
	require.Contains(t, err.Error(), addr)
	require.Equal(t, fds, fdCount(t))
	s := l.Stats()
	require.Zero(t, s.TCPDialed)
	require.Zero(t, s.TCPOpen)
}

// Without the loopback shortcut a dial waits for writability and reads
// SO_ERROR, as it does towards any other host.
func TestTCPDialWaitsForWritable(t *testing.T) {
	loopbackRetry = false
	t.Cleanup(func() { loopbackRetry = true })
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) { got <- string(b) }))
	require.NoError(t, c.Send([]byte("slow path")))
	require.Equal(t, "slow path", recv(t, got))
	_, err = wait(t, c.Close())
	require.NoError(t, err)

	probe, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := probe.Addr().String()
	require.NoError(t, probe.Close())
	_, err = wait(t, Dial(l, addr, ConnConfig{}))
	require.ErrorIs(t, err, unix.ECONNREFUSED)
	require.EqualValues(t, 1, l.Stats().TCPDialed)
}

// stuckAddr returns an address where a connect stays in progress: a
// listener with a backlog of 0 whose accept queue is full, so the kernel
// drops further SYNs.
func stuckAddr(t *testing.T) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(fd, 0))
	ap, err := sock.LocalAddr(fd)
	require.NoError(t, err)
	for i := 0; i < 8; i++ {
		nc, err := net.DialTimeout("tcp", ap.String(), 200*time.Millisecond)
		if err != nil {
			return ap.String() // this one was dropped: the queue is full
		}
		t.Cleanup(func() { nc.Close() })
	}
	t.Skip("could not fill a listen queue here")
	return ""
}

// Cancelling a Dial aborts the connect and closes its socket, whether the
// cancel arrives before the loop started the connect or while it waits.
func TestTCPDialCancel(t *testing.T) {
	l := startLoop(t)
	addr := stuckAddr(t)
	fds := fdCount(t)

	h := Dial(l, addr, ConnConfig{}) // off the loop: the connect is posted
	require.True(t, h.Cancel())
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)

	h = Dial(l, addr, ConnConfig{})
	eventually(t, func() bool { return fdCount(t) == fds+1 }, "the dial's socket never opened")
	time.Sleep(50 * time.Millisecond) // an observation window: the connect does not finish
	require.Equal(t, Running, h.Status())
	require.True(t, h.Cancel())
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	require.Equal(t, fds, fdCount(t), "the connecting socket was closed")

	// Within gives a dial a deadline.
	_, err = wait(t, Within(Dial(l, addr, ConnConfig{}), 50*time.Millisecond))
	require.ErrorIs(t, err, ErrTimeout)
	eventually(t, func() bool { return fdCount(t) == fds }, "the timed-out dial's socket stayed open")
	// The socket closes while the dial's terminal transition runs; a posted
	// callback runs after that transition has finished.
	onLoop(t, l, func() {})
	s := l.Stats()
	require.Zero(t, s.TCPDialed)
	require.Zero(t, s.TCPOpen)
	require.Zero(t, s.Handles)
}

// A name that is not an IP literal is resolved off the loop, the IPv4
// address preferred; a name that does not resolve fails the Dial.
func TestTCPDialResolves(t *testing.T) {
	const name = "aio-test.invalid"
	lookups := make(chan bool, 1) // whether the lookup ran on the loop
	var l *Loop
	// Replaced before the loop starts, restored after it stopped (cleanups
	// run last-in first-out): no Work goroutine reads it meanwhile.
	lookupNetIP = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		if host != name {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		lookups <- l.OnLoop()
		return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("127.0.0.1")}, nil
	}
	t.Cleanup(func() { lookupNetIP = net.DefaultResolver.LookupNetIP })
	l = startLoop(t)
	ln := echoListen(t, l, ListenConfig{})

	c, err := wait(t, Dial(l, net.JoinHostPort(name, strconv.Itoa(int(ln.Addr().Port()))), ConnConfig{}))
	require.NoError(t, err)
	require.False(t, recv(t, lookups), "the name was looked up on the loop")
	require.Equal(t, ln.Addr(), c.RemoteAddr(), "the IPv4 address is preferred")
	_, err = wait(t, c.Close())
	require.NoError(t, err)

	_, err = wait(t, Dial(l, "no-such-host.invalid:80", ConnConfig{}))
	var dnsErr *net.DNSError
	require.ErrorAs(t, err, &dnsErr)
	require.True(t, dnsErr.IsNotFound)
	eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "the connections did not close")
}

// ---- timeouts ----

// An idle connection closes with ErrIdleTimeout; traffic keeps it open.
func TestTCPIdleTimeout(t *testing.T) {
	const idle = 200 * time.Millisecond
	l := startLoop(t)
	ln, conns := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{IdleTimeout: idle}}, 2)

	// Quiet: closed after about idle.
	start := time.Now()
	quiet := netDial(t, ln)
	qc := recv(t, conns)
	_, err := wait(t, qc.Closed())
	require.ErrorIs(t, err, ErrIdleTimeout)
	require.ErrorIs(t, err, ErrTimeout)
	require.GreaterOrEqual(t, time.Since(start), idle)
	_, err = quiet.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)

	// Busy: a byte every idle/5 for 3·idle keeps it open.
	busy := netDial(t, ln)
	bc := recv(t, conns)
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		_, err := busy.Write([]byte{1})
		require.NoError(t, err)
		_, err = io.ReadFull(busy, make([]byte, 1))
		require.NoError(t, err)
		time.Sleep(idle / 5) // the client's pace, not a synchronisation
	}
	require.Equal(t, Running, bc.Closed().Status(), "traffic keeps the connection open")
	_, err = wait(t, bc.Closed())
	require.ErrorIs(t, err, ErrIdleTimeout, "and silence closes it")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// A read timeout closes a connection whose peer sends nothing, even while
// the server keeps writing.
func TestTCPReadTimeout(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: ConnConfig{ReadTimeout: 150 * time.Millisecond}},
		func(c *Conn) {
			_ = c.OnRead(tcpEcho)
			ticker := Adopt(c.Scope(), Every(l, 20*time.Millisecond, func() { _ = c.Send([]byte("tick")) }))
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

// ---- scope ----

// A connection that closes cancels the handles adopted into its scope and
// runs their cleanups: this is how a client going away cancels its work.
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
	require.NoError(t, nc.Close()) // the client goes away
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

// ---- resources ----

// 10,000 connect/close cycles (aio Dial against an aio listener, 50 at a
// time) leave the process with exactly the fds it had.
func TestTCPConnectCloseNoFDLeak(t *testing.T) {
	const cycles, parallel = 10_000, 50
	l := startLoop(t)
	fds := fdCount(t)
	ln := echoListen(t, l, ListenConfig{})
	addr := ln.Addr().String()
	var done, failed atomic.Int64
	finished := make(chan struct{})
	// A slot: dial, send, wait for the echo, close, again.
	var slot func()
	started := 0 // on the loop
	slot = func() {
		if started == cycles {
			return
		}
		started++
		h := Dial(l, addr, ConnConfig{Nagle: true})
		Then(h, func(c *Conn) (struct{}, error) {
			_ = c.OnRead(func(c *Conn, b []byte) { c.Close() })
			Finally(c.Closed(), func() {
				if done.Add(1)+failed.Load() == cycles {
					close(finished)
				}
				slot()
			})
			return struct{}{}, c.Send([]byte("hi"))
		})
		Catch(h, func(err error) (*Conn, error) {
			failed.Add(1)
			if done.Load()+failed.Add(0) == cycles {
				close(finished)
			}
			slot()
			return nil, err
		})
	}
	onLoop(t, l, func() {
		for i := 0; i < parallel; i++ {
			slot()
		}
	})
	select {
	case <-finished:
	case <-time.After(2 * waitTimeout):
		t.Fatalf("cycles not finished: done %d failed %d stats %+v", done.Load(), failed.Load(), l.Stats())
	}
	require.Zero(t, failed.Load())
	eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "server side still open")
	_, err := wait(t, ln.Close())
	require.NoError(t, err)
	require.Equal(t, fds, fdCount(t))
	onLoop(t, l, func() {}) // after the last terminal transitions ran
	s := l.Stats()
	require.EqualValues(t, cycles, s.TCPDialed)
	require.EqualValues(t, cycles, s.TCPAccepted)
	require.EqualValues(t, 2*cycles, s.TCPClosed)
	require.Zero(t, s.Handles)
}

// Stop with connections open closes every one of them, completes (cancels)
// their Closed handles, fails their pending writes, and leaves no fd.
func TestTCPStopClosesConnections(t *testing.T) {
	fds := fdCount(t)
	l, rt := startOwnLoop(t, Config{Name: "stop"})
	var mu sync.Mutex
	var handles []*Handle[struct{}]
	keep := func(h *Handle[struct{}]) {
		mu.Lock()
		handles = append(handles, h)
		mu.Unlock()
	}
	accepted := 0 // on the loop
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		keep(c.Closed())
		if accepted++; accepted <= 2 {
			keep(c.Write(make([]byte, 24<<20))) // stays queued: the clients do not read
		}
	})
	require.NoError(t, err)
	keep(ln.Closed())
	const n = 20
	for i := 0; i < n; i++ {
		c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
		require.NoError(t, err)
		keep(c.Closed())
	}
	eventually(t, func() bool { return l.Stats().TCPOpen == 2*n }, "connections not all open")
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handles, 1+2*n+2)
	for _, h := range handles {
		require.Equal(t, Cancelled, h.Status())
		select {
		case <-h.Done():
		default:
			t.Fatal("a handle is not done after Stop")
		}
	}
	s := l.Stats()
	require.Zero(t, s.TCPOpen)
	require.Zero(t, s.TCPListeners)
	require.Zero(t, s.TCPWriteQueued)
	require.Zero(t, s.Handles)
	require.EqualValues(t, 2*n, s.TCPClosed)
	require.Equal(t, fds, fdCount(t))
	require.Equal(t, 0, rt.Running())
}

// ---- errors ----

func TestTCPListenErrors(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	_, err := Listen(l, ln.Addr().String(), ListenConfig{}, func(*Conn) {})
	require.ErrorIs(t, err, unix.EADDRINUSE, "port in use")
	require.Contains(t, err.Error(), ln.Addr().String())

	for _, addr := range []string{"nope", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:99999", "example.com:80", "[fe80::1%eth0]:0"} {
		_, err := Listen(l, addr, ListenConfig{}, func(*Conn) {})
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "aio: listen tcp", addr)
	}
	_, err = Listen(l, "192.0.2.1:0", ListenConfig{}, func(*Conn) {}) // TEST-NET-1: not ours
	require.ErrorIs(t, err, unix.EADDRNOTAVAIL)
	_, err = Listen(l, "127.0.0.1:0", ListenConfig{}, nil)
	require.ErrorIs(t, err, ErrNilFunc)
	_, err = Listen(nil, "127.0.0.1:0", ListenConfig{}, func(*Conn) {})
	require.ErrorIs(t, err, ErrNilLoop)
	for _, cfg := range []ListenConfig{{Backlog: -1}, {AcceptBatch: -1}, {Conn: ConnConfig{HighWater: -1}},
		{Conn: ConnConfig{HighWater: 10, LowWater: 20}}, {Conn: ConnConfig{ReadTimeout: -1}}, {Conn: ConnConfig{KeepAlive: -1}}} {
		_, err := Listen(l, "127.0.0.1:0", cfg, func(*Conn) {})
		require.Error(t, err, "%+v", cfg)
	}
	_, err = wait(t, Dial(l, "nope", ConnConfig{}))
	require.Error(t, err)
	_, err = wait(t, Dial(l, "127.0.0.1:1", ConnConfig{LowWater: -1}))
	require.Error(t, err)
	_, err = wait(t, Dial(nil, "127.0.0.1:1", ConnConfig{}))
	require.ErrorIs(t, err, ErrNilLoop)
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	_, err = wait(t, ln.Close())
	require.NoError(t, err, "Close is idempotent")
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
	require.Error(t, c.SetReadTimeout(-1))
	require.Error(t, c.SetIdleTimeout(-time.Second))
	_, err = wait(t, c.SetKeepAlive(-1))
	require.Error(t, err)
	_, err = wait(t, c.SetKeepAlive(30*time.Second))
	require.NoError(t, err)
	_, err = wait(t, c.SetNoDelay(false))
	require.NoError(t, err)
	_, err = wait(t, c.Write(nil))
	require.NoError(t, err, "an empty write completes")

	_, err = wait(t, c.CloseWrite())
	require.NoError(t, err)
	require.ErrorIs(t, c.Send([]byte("x")), ErrWriteClosed)
	_, err = wait(t, c.Write([]byte("x")))
	require.ErrorIs(t, err, ErrWriteClosed)
	errs := onLoopValue(t, l, func() [2]error { // on the loop: Send, Write
		_, err := c.Write([]byte("x")).Result()
		return [2]error{c.Send([]byte("x")), err}
	})
	require.ErrorIs(t, errs[0], ErrWriteClosed)
	require.ErrorIs(t, errs[1], ErrWriteClosed)
	_, err = wait(t, c.CloseWrite())
	require.NoError(t, err, "CloseWrite is idempotent")

	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, c.Close())
	require.NoError(t, err, "Close is idempotent")
	require.ErrorIs(t, c.Send([]byte("x")), ErrConnClosed)
	require.ErrorIs(t, c.OnRead(tcpEcho), ErrConnClosed)
	require.ErrorIs(t, c.PauseRead(), ErrConnClosed)
	require.ErrorIs(t, c.SetIdleTimeout(time.Second), ErrConnClosed)
	_, err = wait(t, c.Write([]byte("x")))
	require.ErrorIs(t, err, ErrConnClosed)
	require.ErrorIs(t, err, net.ErrClosed)
	_, err = wait(t, c.CloseWrite())
	require.ErrorIs(t, err, ErrConnClosed)
	_, err = wait(t, c.SetNoDelay(true))
	require.ErrorIs(t, err, ErrConnClosed)
	errs = onLoopValue(t, l, func() [2]error { // on the loop: OnRead, Send
		return [2]error{c.OnRead(tcpEcho), c.Send([]byte("x"))}
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
	_, err = wait(t, (<-conns).Closed())
	var pe *PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, "boom", pe.Value)
	netDial(t, ln)
	_, err = wait(t, (<-conns).Closed())
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

// ---- OnClose ----

// closeReport is what an OnClose callback saw.
type closeReport struct {
	err    error
	onLoop bool
	order  []string // what had run on the loop when it ran
}

// onCloseReports sets an OnClose on c that reports on the returned channel,
// after which calls are counted (a second report fails the test).
func onCloseReports(t *testing.T, c *Conn, order *[]string) <-chan closeReport {
	t.Helper()
	reports := make(chan closeReport, 2)
	require.NoError(t, c.OnClose(func(cc *Conn, err error) {
		assert.Same(t, c, cc) // on the loop: no FailNow
		var seen []string
		if order != nil {
			seen = append(seen, *order...)
		}
		reports <- closeReport{err: err, onLoop: c.l.OnLoop(), order: seen}
	}))
	return reports
}

// OnClose runs once, on the loop, after Closed's continuations, with
// Closed's outcome: nil after Close.
func TestTCPOnCloseAfterClose(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	var order []string // on the loop
	Finally(c.Closed(), func() { order = append(order, "Closed's Finally") })
	reports := onCloseReports(t, c, &order)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	r := recv(t, reports)
	require.NoError(t, r.err)
	require.True(t, r.onLoop)
	require.Equal(t, []string{"Closed's Finally"}, r.order)
	onLoop(t, l, func() {}) // a later iteration: a second call would have run
	require.Empty(t, reports, "OnClose ran twice")
}

// A connection that a reset closed hands OnClose the same error as Closed.
func TestTCPOnCloseAfterReset(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		conns <- c
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	c := recv(t, conns)
	reports := onCloseReports(t, c, nil)
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // RST
	r := recv(t, reports)
	_, cerr := wait(t, c.Closed())
	require.Error(t, cerr)
	require.Equal(t, cerr, r.err)
	require.ErrorIs(t, r.err, unix.ECONNRESET)
}

// On a connection already closed, OnClose still runs, but not inside the
// call that sets it; set twice before the close, only the second runs.
func TestTCPOnCloseLateAndReplaced(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	first := onCloseReports(t, c, nil)
	second := onCloseReports(t, c, nil)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.NoError(t, recv(t, second).err)
	onLoop(t, l, func() {})
	require.Empty(t, first, "the replaced callback ran")

	ran := false // on the loop
	during := onLoopValue(t, l, func() bool {
		assert.NoError(t, c.OnClose(func(*Conn, error) { ran = true }))
		return ran
	})
	require.False(t, during, "OnClose ran inside the call that set it")
	require.True(t, onLoopValue(t, l, func() bool { return ran }))
	require.ErrorIs(t, c.OnClose(nil), ErrNilFunc)
}

// Set again between the close and the queued call, OnClose still runs once,
// the last callback set; and setting it on the loop allocates nothing.
func TestTCPOnCloseReplacedAfterClose(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	var ran []string // on the loop
	first := func(*Conn, error) { ran = append(ran, "first") }
	allocs := onLoopValue(t, l, func() float64 {
		return testing.AllocsPerRun(10, func() { _ = c.OnClose(first) })
	})
	require.Zero(t, allocs, "OnClose on the loop allocated")
	onLoop(t, l, func() {
		c.Close()
		assert.NoError(t, c.OnClose(func(*Conn, error) { ran = append(ran, "second") }))
	})
	onLoop(t, l, func() {}) // a later callback: both calls, if queued, have run
	require.Equal(t, []string{"second"}, onLoopValue(t, l, func() []string { return ran }))
}

// Loop.Stop closes an open connection: OnClose gets ErrCancelled.
func TestTCPOnCloseAtStop(t *testing.T) {
	l, _ := startOwnLoop(t, Config{Name: "onclose-stop"})
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	reports := onCloseReports(t, c, nil)
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	require.ErrorIs(t, recv(t, reports).err, ErrCancelled)
}

// splitAddr: IP literals (the one-parse path) and everything else agree
// with what the long path says about them.
func TestSplitAddr(t *testing.T) {
	ap := netip.MustParseAddrPort
	for _, tc := range []struct {
		addr   string
		listen bool
		want   netip.AddrPort
		name   string
		err    string
	}{
		{addr: "127.0.0.1:80", want: ap("127.0.0.1:80")},
		{addr: "127.0.0.1:080", want: ap("127.0.0.1:80")},
		{addr: "[::1]:443", want: ap("[::1]:443")},
		{addr: "[::ffff:10.0.0.1]:1", want: ap("10.0.0.1:1")}, // unmapped
		{addr: "[fe80::1%2]:22", want: ap("[fe80::1%2]:22")},
		{addr: "[fe80::1%eth0]:22", err: `zone "eth0"`},
		{addr: "[1.2.3.4]:5", want: ap("1.2.3.4:5")},
		{addr: ":8080", want: ap("127.0.0.1:8080")},
		{addr: ":8080", listen: true, want: ap("0.0.0.0:8080")},
		{addr: "localhost:9", want: ap("127.0.0.1:9")},
		{addr: "example.com:9", want: netip.AddrPortFrom(netip.Addr{}, 9), name: "example.com"},
		{addr: "example.com:9", listen: true, err: "not an IP address"},
		{addr: "127.0.0.1:65536", err: "not a number from 0 to 65535"},
		{addr: "127.0.0.1:http", err: "not a number"},
		{addr: "127.0.0.1:", err: "not a number"},
		{addr: "127.0.0.1", err: "missing port"},
		{addr: "::1:80", err: "too many colons"},
		{addr: "", err: "missing port"},
	} {
		got, name, err := splitAddr(tc.addr, tc.listen)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%q", tc.addr)
			continue
		}
		require.NoError(t, err, "%q", tc.addr)
		require.Equal(t, tc.want, got, "%q", tc.addr)
		require.Equal(t, tc.name, name, "%q", tc.addr)
	}
}

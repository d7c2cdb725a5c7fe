package aio

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A connection whose write queue never fully empties (steady streaming to a
// slower reader) keeps every consumed segment slot of the queue's segs: head only
// resets when the queue is empty, so len(segs) grows with the bytes ever queued.
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
				_ = c.Send(chunk)
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

// An epoll batch can hold an event for an fd that an earlier callback of the
// same batch closed; if that callback also opened a socket (a Dial) that got
// the same fd number, the stale event reaches the connecting Conn, whose
// finishConnect reads SO_ERROR = 0 and declares the connection established.
func TestTCPStaleEventDoesNotCompleteDial(t *testing.T) {
	// The dial must get the fd just closed: the kernel hands out the lowest
	// free one, unless another goroutine of the process freed a lower one
	// or took it meanwhile, so a few attempts are allowed.
	for attempt := 1; ; attempt++ {
		l, r := staleEventDial(t)
		if r.newFD != r.oldFD {
			require.Less(t, attempt, 3, "the dial's socket never got the closed fd (last: %d, not %d)", r.newFD, r.oldFD)
			r.h.Cancel()
			continue
		}
		onLoop(t, l, func() {}) // the rest of that batch, stale event included, was dispatched
		st := r.h.Status()
		if st == Completed {
			c, _ := r.h.Result()
			t.Logf("dial to a black-holed address completed; conn %v -> %v", c.LocalAddr(), c.RemoteAddr())
		}
		require.Equal(t, Running, st, "a stale event for the closed fd %d completed the dial", r.oldFD)
		r.h.Cancel()
		_, _ = wait(t, r.h)
		return
	}
}

// staleDial is what staleEventDial's callback did: the Dial it started, the
// fd it closed just before, and the fd the Dial's socket got.
type staleDial struct {
	h     *Handle[*Conn]
	oldFD int
	newFD int
}

// staleEventDial sets up the stale event: two connections whose readiness
// lands in one poll batch; the first one's callback closes the other and
// dials a black-holed address, so the dial's socket may get the closed fd
// while the closed socket's event is still ahead in the batch.
func staleEventDial(t *testing.T) (*Loop, staleDial) {
	l := startLoop(t)
	stuck := stuckAddr(t)
	res := make(chan staleDial, 1)
	var all []*Conn
	fired := false
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		all = append(all, c)
		_ = c.OnRead(func(c *Conn, b []byte) {
			if fired {
				return
			}
			fired = true
			other := all[0]
			if other == c {
				other = all[1]
			}
			old := other.fd
			other.Close()
			h := Dial(l, stuck, ConnConfig{})
			res <- staleDial{h: h, oldFD: old, newFD: connectingFD(l)}
		})
	})
	require.NoError(t, err)
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	eventually(t, func() bool { return l.Stats().TCPAccepted == 2 }, "not accepted")
	onLoop(t, l, func() {}) // the OnRead interest is registered

	// Hold the loop so that both readiness events land in one poll batch.
	release := holdLoop(t, l)
	_, errA := a.Write([]byte("x"))
	_, errB := b.Write([]byte("y"))
	release()
	require.NoError(t, errA)
	require.NoError(t, errB)
	return l, recv(t, res)
}

// A Conn's Closed is not lazily tracked (the fd table holds it): Stop still
// closes a Dial's connecting socket (the Dial handle is cancelled) and the
// connections accepted after Stop within the same poll batch; Stats.Handles
// and the TCP counters come back to zero and no fd is left.
func TestTCPStopClosesConnectingAndLateConns(t *testing.T) {
	stuck := stuckAddr(t)
	fds := fdCount(t)
	l, rt := startOwnLoop(t, Config{Name: "stop-late"})
	var mu sync.Mutex
	var closed []*Handle[struct{}]
	n := 0 // on the loop
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		mu.Lock()
		closed = append(closed, c.Closed())
		mu.Unlock()
		if n++; n == 1 {
			l.Stop() // the rest of the batch is accepted while stopping
		}
	})
	require.NoError(t, err)
	dial := Dial(l, stuck, ConnConfig{})
	// An off-loop Dial posts its connect ahead of this callback.
	require.GreaterOrEqual(t, onLoopValue(t, l, func() int { return connectingFD(l) }), 0, "the dial is not connecting")
	// Hold the loop so that several connections are pending in one batch:
	// the kernel completes their handshakes from the backlog meanwhile.
	release := holdLoop(t, l)
	var ncs []net.Conn
	for i := 0; i < 3; i++ {
		ncs = append(ncs, netDial(t, ln))
	}
	release()
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	for _, nc := range ncs {
		nc.Close()
	}
	require.Equal(t, Cancelled, dial.Status())
	mu.Lock()
	require.Len(t, closed, 3)
	for _, h := range closed {
		require.Equal(t, Cancelled, h.Status())
	}
	mu.Unlock()
	s := l.Stats()
	require.Zero(t, s.Handles)
	require.Zero(t, s.TCPOpen)
	require.Zero(t, s.TCPListeners)
	require.Zero(t, s.Timers)
	require.Equal(t, fds, fdCount(t))
	require.Equal(t, 0, rt.Running())
}

// Stop cancels pending handles first and closes sockets after, whether or
// not a connection has a timeout: a connection's idle timer used to close
// it in the first cancelling pass, before the OnCancel callbacks of other
// handles, while one without a timer closed after them.
func TestTCPStopClosesSocketsAfterCancelling(t *testing.T) {
	for _, cfg := range []ConnConfig{{}, {IdleTimeout: time.Hour}} {
		l, rt := startOwnLoop(t, Config{Name: "stop-order"})
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) { _ = c.OnRead(tcpEcho) })
		require.NoError(t, err)
		c, err := wait(t, Dial(l, ln.Addr().String(), cfg))
		require.NoError(t, err)
		var openAtCancel atomic.Bool
		p := NewPromise[int](l)
		p.Handle().OnCancel(func() { openAtCancel.Store(c.Closed().Status() == Running) })
		_, err = l.Stop().Wait(testCtx(t))
		require.NoError(t, err)
		require.True(t, openAtCancel.Load(), "idle timeout %v: the connection closed before OnCancel ran", cfg.IdleTimeout)
		require.Equal(t, Cancelled, c.Closed().Status())
		require.Zero(t, l.Stats().TCPOpen)
		require.Zero(t, l.Stats().Timers)
		require.Equal(t, 0, rt.Running())
	}
}

// Accepted sockets get TCP_NODELAY unless ListenConfig.Conn.Nagle says
// otherwise, checked on the accepted socket itself, over IPv4 and IPv6 (on
// Linux they inherit it from the listener).
func TestTCPAcceptedNoDelay(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			skipWithoutLoopback(t, host)
			for _, nagle := range []bool{false, true} {
				l := startLoop(t)
				accepted := make(chan *Conn, 1)
				ln, err := Listen(l, net.JoinHostPort(host, "0"), ListenConfig{Conn: ConnConfig{Nagle: nagle}}, func(c *Conn) { accepted <- c })
				require.NoError(t, err)
				nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
				require.NoError(t, err)
				c := recv(t, accepted)
				require.Equal(t, nc.LocalAddr().String(), c.RemoteAddr().String())
				noDelay := noDelayOf(t, c)
				require.Equal(t, !nagle, noDelay != 0, "Nagle %v: TCP_NODELAY on the accepted socket is %d", nagle, noDelay)
				require.NoError(t, nc.Close())
			}
		})
	}
}

// connectingFD returns the fd of a Conn of l still connecting, or -1. On the
// loop.
func connectingFD(l *Loop) int {
	for fd, h := range l.fds {
		if c, ok := h.(*Conn); ok && c.state == connConnecting {
			return fd
		}
	}
	return -1
}

// Close on the loop returns a handle already completed: Closed's own when
// this call closed the connection, a fresh one when an error had closed it
// before (Close still succeeds: it is idempotent).
func TestTCPCloseOnLoopReturnsCompletedHandle(t *testing.T) {
	l := startLoop(t)
	accepted := make(chan *Conn, 2)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {})
		accepted <- c
	})
	require.NoError(t, err)

	nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	defer nc.Close()
	c := recv(t, accepted)
	type closes struct {
		st     [3]Status
		closed bool // the first Close returned Closed's handle
	}
	got := onLoopValue(t, l, func() closes {
		h1, h2 := c.Close(), c.Close()
		return closes{[3]Status{h1.Status(), h2.Status(), c.Closed().Status()}, h1 == c.Closed()}
	})
	require.Equal(t, closes{[3]Status{Completed, Completed, Completed}, true}, got)

	// A reset closes the second connection with an error first.
	nc2, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	c2 := recv(t, accepted)
	require.NoError(t, nc2.(*net.TCPConn).SetLinger(0))
	require.NoError(t, nc2.Close())
	_, err = wait(t, c2.Closed())
	require.ErrorIs(t, err, unix.ECONNRESET)
	st2 := onLoopValue(t, l, func() [2]Status { return [2]Status{c2.Close().Status(), c2.Closed().Status()} })
	require.Equal(t, [2]Status{Completed, Failed}, st2)
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

// Where accepted sockets do not come with the listener's TCP_NODELAY (a
// kernel that only looks like Linux, simulated by clearing it on the
// listening socket before the first accept), each accepted socket gets it.
func TestTCPAcceptSetsNoDelayWhenNotInherited(t *testing.T) {
	l := startLoop(t)
	accepted := make(chan *Conn, 2)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { accepted <- c })
	require.NoError(t, err)
	require.NoError(t, onLoopValue(t, l, func() error {
		return unix.SetsockoptInt(ln.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 0)
	}))
	for range 2 {
		nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
		require.NoError(t, err)
		c := recv(t, accepted)
		require.NotZero(t, noDelayOf(t, c), "the accepted socket has no TCP_NODELAY")
		require.NoError(t, nc.Close())
	}
}

// IPv6: a Dial to a listener on ::1 echoes, and both ends see the
// right addresses.
func TestTCPIPv6Echo(t *testing.T) {
	skipWithoutLoopback(t, "::1")
	l := startLoop(t)
	ln, accepted := echoListenConns(t, l, "[::1]:0", ListenConfig{}, 1)
	require.True(t, ln.Addr().Addr().Is6())
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	sc := recv(t, accepted)
	require.Equal(t, ln.Addr(), c.RemoteAddr())
	require.Equal(t, c.LocalAddr(), sc.RemoteAddr())
	require.Equal(t, ln.Addr(), sc.LocalAddr())
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) { got <- string(b) }))
	require.NoError(t, c.Send([]byte("over v6")))
	require.Equal(t, "over v6", recv(t, got))
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, sc.Closed())
	require.NoError(t, err)
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
			_, err := wait(t, c.SetNoDelay(false))
			require.NoError(t, err)
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
			_, err = wait(t, c.Write(tc.first))
			require.NoError(t, err)
			require.Equal(t, tc.afterFirst, noDelayOf(t, c), "TCP_NODELAY after the first write")
			_, err = wait(t, c.Write([]byte("two")))
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

package aio

import (
	"bytes"
	"context"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

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
		hs = append(hs, writeFlush(c, msg)) // off the loop: copied, posted in order
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
	require.ErrorIs(t, send(c, []byte("x")), ErrConnClosed)
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

// A socket the kernel connects to itself (the local port it chose is the
// remote's, nothing being bound there: a simultaneous open) is refused, as
// package net's redial would be; one whose local port the program named is
// the program's. Bug: Dial completed with a connection that echoed its own
// writes and held the port the server wanted. The kernel's choice is made
// here by binding the port before the connect; by chance it took a few
// thousand dials to a closed port.
func TestTCPDialToItselfIsRefused(t *testing.T) {
	for _, wait4 := range []bool{false, true} { // the loopback shortcut, and writability
		loopbackRetry = !wait4
		t.Cleanup(func() { loopbackRetry = true })
		l := startLoop(t)
		closedPort := func() netip.AddrPort {
			probe, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			require.NoError(t, probe.Close()) // nobody listens there now
			return netip.MustParseAddrPort(probe.Addr().String())
		}
		ap := closedPort()
		dialBound = func(fd int) { // on the loop: assert, not require (FailNow would end the loop)
			assert.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}))
		}
		t.Cleanup(func() { dialBound = nil })
		fds := fdCount(t)
		_, err := wait(t, Dial(l, ap.String(), ConnConfig{}))
		require.ErrorIs(t, err, unix.ECONNREFUSED, "waiting for writability: %v", wait4)
		require.Contains(t, err.Error(), "connected to itself")
		require.Equal(t, fds, fdCount(t))
		require.Zero(t, l.Stats().TCPDialed)

		// The unspecified address is the local host's: the dialed address
		// is then not the peer's, which getpeername names.
		ap = closedPort()
		_, err = wait(t, Dial(l, netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port()).String(), ConnConfig{}))
		require.ErrorIs(t, err, unix.ECONNREFUSED, "to 0.0.0.0, waiting for writability: %v", wait4)
		require.Equal(t, fds, fdCount(t))
		dialBound = nil

		ap = closedPort() // the other is in TIME_WAIT
		c, err := wait(t, (&Dialer{LocalAddr: ap}).Dial(l, ap.String()))
		require.NoError(t, err, "a local port the program named")
		require.Equal(t, c.RemoteAddr(), c.LocalAddr())
		_, err = wait(t, c.Close())
		require.NoError(t, err)
	}
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
	require.NoError(t, send(c, []byte("slow path")))
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

// A dial to the unspecified address reaches the local host, and the
// connection names the peer it has, as package net's does.
func TestTCPDialUnspecifiedNamesItsPeer(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	ap := netip.MustParseAddrPort(ln.Addr().String())
	addr := netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port()).String() // ln is on 127.0.0.1
	c, err := wait(t, Dial(l, addr, ConnConfig{}))
	require.NoError(t, err)
	want, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	assert.Equal(t, want.RemoteAddr().String(), c.RemoteAddr().String())
	assert.Equal(t, ap.String(), c.RemoteAddr().String())
	require.NoError(t, want.Close())
	_, err = wait(t, c.Close())
	require.NoError(t, err)
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

// Regression test: a closed fd's stale event completed a Dial on its number.
//
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

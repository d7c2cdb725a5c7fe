//go:build linux || darwin || freebsd || netbsd || openbsd

package sock

import (
	"bytes"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// timeout bounds every wait for a socket: no test waits longer for one
// event, so none can hang.
const timeout = 5 * time.Second

// loopbacks are the address families tested over real sockets.
var loopbacks = []struct {
	name string
	ip   netip.Addr
}{
	{"IPv4", netip.MustParseAddr("127.0.0.1")},
	{"IPv6", netip.IPv6Loopback()},
}

// forEachLoopback runs f for each loopback address, skipping only the IPv6
// case on a machine without ::1.
func forEachLoopback(t *testing.T, f func(t *testing.T, ip netip.Addr)) {
	for _, lo := range loopbacks {
		t.Run(lo.name, func(t *testing.T) {
			if lo.ip.Is6() {
				ln, err := net.Listen("tcp6", "[::1]:0")
				if err != nil {
					t.Skipf("no IPv6 loopback here (net.Listen tcp6 [::1]:0: %v); IPv4 still tested", err)
				}
				require.NoError(t, ln.Close())
			}
			f(t, lo.ip)
		})
	}
}

// own closes fd when the test ends, and returns a function that closes it
// sooner (once: the cleanup then does nothing, so a reused fd number is
// never closed by mistake).
func own(t testing.TB, fd int) (closeNow func()) {
	t.Helper()
	var once sync.Once
	closeNow = func() { once.Do(func() { assert.NoError(t, Close(fd), "close fd %d", fd) }) }
	t.Cleanup(closeNow)
	return closeNow
}

// waitFD waits, at most timeout, for fd to report one of events.
func waitFD(t testing.TB, fd int, events int16) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(fds, 100)
		if err != unix.EINTR {
			require.NoError(t, err)
			if n > 0 && fds[0].Revents != 0 {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "fd %d not ready for %#x within %v", fd, events, timeout)
	}
}

// listen opens a listening socket on ip with Socket and returns it with
// the address it is bound to.
func listen(t testing.TB, ip netip.Addr) (fd int, addr netip.AddrPort) {
	t.Helper()
	sa, family := Sockaddr(netip.AddrPortFrom(ip, 0))
	fd, err := Socket(family)
	require.NoError(t, err)
	own(t, fd)
	require.NoError(t, unix.Bind(fd, sa))
	require.NoError(t, unix.Listen(fd, 16))
	addr, err = LocalAddr(fd)
	require.NoError(t, err)
	require.Equal(t, ip, addr.Addr())
	require.NotZero(t, addr.Port())
	return fd, addr
}

// dial connects a new socket to ap as aio does: Connect, then, while it
// says EINPROGRESS, wait for writability and ask ConnectAgain until
// connected (bounded), SocketError reporting no error. closeNow closes the
// socket before the test ends.
func dial(t testing.TB, ap netip.AddrPort) (fd int, closeNow func()) {
	t.Helper()
	fd, err := Socket(Family(ap))
	require.NoError(t, err)
	closeNow = own(t, fd)
	err = Connect(fd, ap)
	if err == nil {
		return fd, closeNow // completed at once (allowed, if rare on loopback)
	}
	require.ErrorIs(t, err, unix.EINPROGRESS)
	deadline := time.Now().Add(timeout)
	for {
		waitFD(t, fd, unix.POLLOUT)
		e, err := SocketError(fd)
		require.NoError(t, err)
		require.Zero(t, e, "SO_ERROR: %v", unix.Errno(e))
		err = ConnectAgain(fd, ap)
		if err == nil || err == unix.EISCONN {
			return fd, closeNow
		}
		require.Contains(t, []error{unix.EALREADY, unix.EINPROGRESS}, err)
		require.True(t, time.Now().Before(deadline), "still connecting after %v", timeout)
	}
}

// closedPort returns an address on ip that nothing listens on: one just
// bound and closed again.
func closedPort(t testing.TB, ip netip.Addr) netip.AddrPort {
	t.Helper()
	sa, family := Sockaddr(netip.AddrPortFrom(ip, 0))
	fd, err := Socket(family)
	require.NoError(t, err)
	closeNow := own(t, fd)
	require.NoError(t, unix.Bind(fd, sa))
	addr, err := LocalAddr(fd)
	require.NoError(t, err)
	closeNow()
	return addr
}

// accept accepts one connection on the listener lfd, waiting (bounded)
// for it.
func accept(t testing.TB, lfd int) (int, netip.AddrPort) {
	t.Helper()
	for {
		nfd, peer, err := Accept(lfd)
		if err == nil {
			own(t, nfd)
			return nfd, peer
		}
		require.ErrorIs(t, err, unix.EAGAIN)
		waitFD(t, lfd, unix.POLLIN)
	}
}

// pair returns both ends of a loopback connection on ip.
func pair(t testing.TB, ip netip.Addr) (client, server int) {
	t.Helper()
	lfd, addr := listen(t, ip)
	client, _ = dial(t, addr)
	server, _ = accept(t, lfd)
	return client, server
}

// readFull reads exactly n bytes from fd, waiting (bounded) when it has
// none.
func readFull(t testing.TB, fd, n int) []byte {
	t.Helper()
	got := make([]byte, 0, n)
	buf := make([]byte, 4096)
	for len(got) < n {
		k, err := Read(fd, buf[:min(len(buf), n-len(got))])
		if err == unix.EAGAIN {
			waitFD(t, fd, unix.POLLIN)
			continue
		}
		require.NoError(t, err)
		require.NotZero(t, k, "EOF after %d of %d bytes", len(got), n)
		got = append(got, buf[:k]...)
	}
	return got
}

// pump sends want from wfd to rfd in one goroutine: write(off) sends what
// is left from offset off (returning EAGAIN when the socket is full), and
// rfd is drained as it goes, until all of want has arrived, bounded.
func pump(t testing.TB, wfd, rfd int, want []byte, write func(off int) (int, error)) {
	t.Helper()
	got := make([]byte, 0, len(want))
	buf := make([]byte, 256<<10) // above RawCopyMax: reads through the scheduler too
	off := 0
	deadline := time.Now().Add(timeout)
	for len(got) < len(want) {
		progress := false
		if off < len(want) {
			n, err := write(off)
			if err != unix.EAGAIN {
				require.NoError(t, err)
				require.Positive(t, n)
				off += n
				progress = true
			}
		}
		n, err := Read(rfd, buf)
		if err != unix.EAGAIN {
			require.NoError(t, err)
			require.NotZero(t, n, "EOF after %d of %d bytes", len(got), len(want))
			got = append(got, buf[:n]...)
			progress = true
		}
		if !progress {
			fds := []unix.PollFd{{Fd: int32(rfd), Events: unix.POLLIN}, {Fd: int32(wfd), Events: unix.POLLOUT}}
			_, err := unix.Poll(fds, 100)
			if err != unix.EINTR {
				require.NoError(t, err)
			}
		}
		require.True(t, time.Now().Before(deadline), "%d of %d bytes after %v", len(got), len(want), timeout)
	}
	require.Equal(t, len(want), off)
	require.True(t, bytes.Equal(want, got), "the bytes arrived changed")
}

// pattern returns n bytes that differ from one offset (and seed) to the
// next.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + byte(i>>8) + seed
	}
	return b
}

// Socket, Connect, ConnectAgain and Accept: a connection comes up; both
// ends are non-blocking and close-on-exec; the peer Accept reports is the
// client's LocalAddr, and the server end is bound to the listener's
// address.
func TestConnectAccept(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		lfd, addr := listen(t, ip)
		_, _, err := Accept(lfd)
		require.ErrorIs(t, err, unix.EAGAIN, "Accept with nothing pending")

		cfd, _ := dial(t, addr)
		sfd, peer := accept(t, lfd)

		clientAddr, err := LocalAddr(cfd)
		require.NoError(t, err)
		assert.Equal(t, clientAddr, peer)
		assert.Equal(t, ip, peer.Addr())
		serverAddr, err := LocalAddr(sfd)
		require.NoError(t, err)
		assert.Equal(t, addr, serverAddr)

		for _, fd := range []int{lfd, cfd, sfd} {
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			require.NoError(t, err)
			assert.NotZero(t, fl&unix.O_NONBLOCK, "fd %d is blocking", fd)
			fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			require.NoError(t, err)
			assert.NotZero(t, fdfl&unix.FD_CLOEXEC, "fd %d is not close-on-exec", fd)
		}
		e, err := SocketError(cfd)
		require.NoError(t, err)
		assert.Zero(t, e)
	})
}

// A connect to a port nobody listens on fails, at once or through
// SocketError, which reports ECONNREFUSED once and then clears it.
func TestConnectRefused(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		addr := closedPort(t, ip)
		fd, err := Socket(Family(addr))
		require.NoError(t, err)
		own(t, fd)
		err = Connect(fd, addr)
		if err == unix.ECONNREFUSED {
			return
		}
		require.ErrorIs(t, err, unix.EINPROGRESS)
		waitFD(t, fd, unix.POLLOUT)
		e, err := SocketError(fd)
		require.NoError(t, err)
		assert.Equal(t, unix.ECONNREFUSED, unix.Errno(e))
		e, err = SocketError(fd)
		require.NoError(t, err)
		assert.Zero(t, e, "SO_ERROR is cleared by reading it")
	})
}

// Read and Write carry bytes both ways; an empty non-blocking socket reads
// EAGAIN, and one whose peer has closed reads 0 bytes, no error.
func TestReadWrite(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		buf := make([]byte, 64)
		_, err := Read(sfd, buf)
		require.ErrorIs(t, err, unix.EAGAIN, "Read on an empty socket")

		n, err := Write(cfd, []byte("ping"))
		require.NoError(t, err)
		require.Equal(t, 4, n)
		assert.Equal(t, "ping", string(readFull(t, sfd, 4)))
		n, err = Write(sfd, []byte("pong!"))
		require.NoError(t, err)
		require.Equal(t, 5, n)
		assert.Equal(t, "pong!", string(readFull(t, cfd, 5)))

		n, err = Write(cfd, nil)
		require.NoError(t, err)
		assert.Zero(t, n, "an empty Write")

		// More than RawCopyMax each way: those go through the scheduler.
		big := pattern(3*RawCopyMax+123, 1)
		pump(t, cfd, sfd, big, func(off int) (int, error) { return Write(cfd, big[off:]) })
		pump(t, sfd, cfd, big, func(off int) (int, error) { return Write(sfd, big[off:]) })

		_, err = Read(sfd, buf)
		require.ErrorIs(t, err, unix.EAGAIN, "Read on a drained socket")
		require.NoError(t, unix.Shutdown(cfd, unix.SHUT_WR))
		waitFD(t, sfd, unix.POLLIN)
		n, err = Read(sfd, buf)
		require.NoError(t, err)
		assert.Zero(t, n, "Read after the peer's FIN is EOF")
	})
}

// After the peer closes outright, Read still reports EOF (0, nil).
func TestReadPeerClosed(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		lfd, addr := listen(t, ip)
		cfd, closeClient := dial(t, addr)
		sfd, _ := accept(t, lfd)
		_, err := Write(cfd, []byte("last"))
		require.NoError(t, err)
		closeClient()
		assert.Equal(t, "last", string(readFull(t, sfd, 4)))
		waitFD(t, sfd, unix.POLLIN)
		n, err := Read(sfd, make([]byte, 8))
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestBadFD(t *testing.T) {
	_, err := Read(-1, make([]byte, 1))
	assert.ErrorIs(t, err, unix.EBADF)
	_, err = Write(-1, []byte("x"))
	assert.ErrorIs(t, err, unix.EBADF)
	_, err = SocketError(-1)
	assert.ErrorIs(t, err, unix.EBADF)
	_, err = LocalAddr(-1)
	assert.ErrorIs(t, err, unix.EBADF)
	_, _, err = Accept(-1)
	assert.ErrorIs(t, err, unix.EBADF)
	assert.ErrorIs(t, SetsockoptInt(-1, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1), unix.EBADF)
	assert.ErrorIs(t, Connect(-1, netip.MustParseAddrPort("127.0.0.1:1")), unix.EBADF)
	assert.ErrorIs(t, Close(-1), unix.EBADF)
	var iov Iovecs
	_, err = Writev(-1, [][]byte{[]byte("x")}, &iov)
	assert.ErrorIs(t, err, unix.EBADF)
}

func TestSetsockoptInt(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		fd, err := Socket(Family(netip.AddrPortFrom(ip, 0)))
		require.NoError(t, err)
		own(t, fd)
		for _, v := range []int{1, 0} {
			require.NoError(t, SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v))
			got, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
			require.NoError(t, err)
			assert.Equal(t, v != 0, got != 0, "TCP_NODELAY set to %d", v)
		}
		require.NoError(t, SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 64<<10))
		got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got, 64<<10/2)
	})
}

// SetKeepAlive turns SO_KEEPALIVE on for d > 0 and off otherwise (the
// times are read back in keepalive_test.go, where the system has them).
func TestSetKeepAliveOnOff(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, _ := pair(t, ip)
		for _, tc := range []struct {
			d  time.Duration
			on bool
		}{{time.Minute, true}, {0, false}, {time.Second, true}, {-time.Second, false}} {
			require.NoError(t, SetKeepAlive(cfd, tc.d))
			got, err := unix.GetsockoptInt(cfd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			require.NoError(t, err)
			assert.Equal(t, tc.on, got != 0, "SO_KEEPALIVE after SetKeepAlive(%v)", tc.d)
		}
		err := SetKeepAlive(-1, time.Minute)
		assert.ErrorIs(t, err, unix.EBADF)
		assert.ErrorContains(t, err, "setsockopt", "the error names the option")
		err = SetKeepAlive(-1, 0)
		assert.ErrorIs(t, err, unix.EBADF)
		assert.ErrorContains(t, err, "SO_KEEPALIVE")
	})
}

func TestSockaddrRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in     string
		family int
		back   string // what AddrPortOf gives back, if not in
	}{
		{in: "127.0.0.1:80", family: unix.AF_INET},
		{in: "0.0.0.0:0", family: unix.AF_INET},
		{in: "255.255.255.255:65535", family: unix.AF_INET},
		{in: "[::1]:443", family: unix.AF_INET6},
		{in: "[::]:0", family: unix.AF_INET6},
		{in: "[2001:db8::17]:8080", family: unix.AF_INET6},
		{in: "[fe80::1%3]:9", family: unix.AF_INET6},
		// An IPv4-mapped address is an IPv6 socket address, unmapped back.
		{in: "[::ffff:10.0.0.1]:9", family: unix.AF_INET6, back: "10.0.0.1:9"},
		{in: "[::ffff:127.0.0.1]:1", family: unix.AF_INET6, back: "127.0.0.1:1"},
		// A zone that is not a number becomes scope id 0 (aio refuses it earlier).
		{in: "[fe80::1%eth0]:9", family: unix.AF_INET6, back: "[fe80::1]:9"},
	} {
		ap := netip.MustParseAddrPort(tc.in)
		sa, family := Sockaddr(ap)
		assert.Equal(t, tc.family, family, tc.in)
		assert.Equal(t, tc.family, Family(ap), tc.in)
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			assert.Equal(t, unix.AF_INET, tc.family, tc.in)
			assert.Equal(t, ap.Addr().As4(), sa.Addr, tc.in)
			assert.Equal(t, int(ap.Port()), sa.Port, tc.in)
		case *unix.SockaddrInet6:
			assert.Equal(t, unix.AF_INET6, tc.family, tc.in)
			assert.Equal(t, ap.Addr().As16(), sa.Addr, tc.in)
			assert.Equal(t, int(ap.Port()), sa.Port, tc.in)
			assert.Equal(t, zoneID(ap.Addr()), sa.ZoneId, tc.in)
		default:
			t.Fatalf("%s: Sockaddr gave %T", tc.in, sa)
		}
		want := ap
		if tc.back != "" {
			want = netip.MustParseAddrPort(tc.back)
		}
		assert.Equal(t, want, AddrPortOf(sa), tc.in)
	}
	sa, _ := Sockaddr(netip.MustParseAddrPort("[fe80::1%3]:9"))
	assert.Equal(t, uint32(3), sa.(*unix.SockaddrInet6).ZoneId)

	assert.Equal(t, netip.AddrPort{}, AddrPortOf(&unix.SockaddrUnix{Name: "/tmp/x"}))
	assert.Equal(t, netip.AddrPort{}, AddrPortOf(nil))
}

// The table of accept errors from accept_*.go: the only per-connection
// errno left to AcceptConnErrno is Linux's ENONET (sock_linux_test.go);
// ECONNABORTED, ECONNRESET, EPERM and the rest are classified by aio
// itself (acceptActionOf), never here.
func TestAcceptConnErrno(t *testing.T) {
	for _, en := range []unix.Errno{
		0, unix.EAGAIN, unix.EINTR, unix.ECONNABORTED, unix.ECONNRESET,
		unix.ETIMEDOUT, unix.EPROTO, unix.EPERM, unix.EACCES, unix.EMFILE,
		unix.ENFILE, unix.ENOBUFS, unix.ENOMEM, unix.EBADF, unix.EINVAL,
	} {
		assert.False(t, AcceptConnErrno(en), "AcceptConnErrno(%v)", en)
	}
	assert.Equal(t, runtime.GOOS == "linux", AcceptInheritsNoDelay)
}

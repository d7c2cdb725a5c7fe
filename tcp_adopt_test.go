package aio

import (
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// fdFlags returns fd's file status flags and fd flags, failing the test if
// fd is not open.
func fdFlags(t *testing.T, fd int) (fl, fdfl int) {
	t.Helper()
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	require.NoError(t, err, "fd %d is not open", fd)
	fdfl, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	require.NoError(t, err)
	return fl, fdfl
}

// A listener made by net.Listen, adopted through its SyscallConn: aio
// accepts on its duplicate after the caller closed its own, counts it as a
// listener, and gives every fd back when it closes.
func TestTCPAdoptListenerFromNet(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln, err := AdoptListenerFrom(l, nl.(*net.TCPListener), ListenConfig{},
		func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	require.Equal(t, nl.Addr().String(), ln.Addr().String())
	require.NoError(t, nl.Close()) // the caller's copy; aio's goes on listening

	nc := netDial(t, ln)
	echoes(t, nc, "adopted listener")
	s := l.Stats()
	require.Equal(t, 1, s.TCPListeners)
	require.EqualValues(t, 1, s.TCPAccepted)
	require.Zero(t, s.TCPAdopted, "an accepted connection is not an adopted one")
	require.NoError(t, nc.Close())
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	_, err = wait(t, ln.Closed())
	require.NoError(t, err)
	closedLoopTCP(t, l)
	require.Equal(t, fds, fdCount(t))
}

// A raw listening fd, as a service manager or a parent process passes one
// (blocking, inherited across exec), here made by net.Listen and handed
// over as File's fd: AdoptListener makes it non-blocking and close-on-exec
// and owns it from then on.
func TestTCPAdoptListenerFD(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	f, err := nl.(*net.TCPListener).File()
	require.NoError(t, err)
	fd, err := unix.Dup(int(f.Fd())) // Fd makes it blocking, as passed fds are
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, nl.Close())
	fl, fdfl := fdFlags(t, fd)
	require.Zero(t, fl&unix.O_NONBLOCK)
	require.Zero(t, fdfl&unix.FD_CLOEXEC)
	ln, err := AdoptListener(l, fd, ListenConfig{}, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	fl, fdfl = fdFlags(t, fd)
	require.NotZero(t, fl&unix.O_NONBLOCK, "the adopted socket is blocking")
	require.NotZero(t, fdfl&unix.FD_CLOEXEC, "the adopted socket is inherited across exec")
	require.NotZero(t, ln.Addr().Port())

	nc := netDial(t, ln)
	echoes(t, nc, "adopted fd")
	require.NoError(t, nc.Close())
	closedLoopTCP(t, l.closeListener(t, ln))
	require.Equal(t, fds, fdCount(t), "closing the Listener closed the adopted fd")
}

// Connections adopted on both sides of a package net pair: a dialed one
// (through SyscallConn) and an accepted one (a raw fd). They work as any
// Conn, count in TCPAdopted and TCPOpen, close with Close or Stop, and
// give their fds back.
func TestTCPAdoptConn(t *testing.T) {
	l := startLoop(t)
	fds := fdCount(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	client, err := net.Dial("tcp", nl.Addr().String())
	require.NoError(t, err)
	server, err := nl.Accept()
	require.NoError(t, err)

	c, err := AdoptConnFrom(l, client.(*net.TCPConn), ConnConfig{})
	require.NoError(t, err)
	require.NoError(t, client.Close()) // the duplicate keeps the connection
	require.Equal(t, client.LocalAddr().String(), c.LocalAddr().String())
	require.Equal(t, nl.Addr().String(), c.RemoteAddr().String())
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) { got <- string(b) }))
	closedWith := make(chan error, 1)
	require.NoError(t, c.OnClose(func(c *Conn, err error) { closedWith <- err }))
	_, err = server.Write([]byte("to the adopted client"))
	require.NoError(t, err)
	require.Equal(t, "to the adopted client", recv(t, got))
	require.NoError(t, send(c, []byte("back")))
	buf := make([]byte, 4)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	require.Equal(t, "back", string(buf))
	s := l.Stats()
	require.EqualValues(t, 1, s.TCPAdopted)
	require.Equal(t, 1, s.TCPOpen)

	// The server side as a raw fd, duplicated by hand: AdoptConn owns it.
	var sfd int
	rc, err := server.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	require.NoError(t, rc.Control(func(fd uintptr) { sfd, err = unix.Dup(int(fd)) }))
	require.NoError(t, err)
	require.NoError(t, server.Close())
	sc, err := AdoptConn(l, sfd, ConnConfig{})
	require.NoError(t, err)
	require.NoError(t, sc.OnRead(tcpEcho))
	require.NoError(t, send(c, []byte("echo")))
	require.Equal(t, "echo", recv(t, got))
	require.EqualValues(t, 2, l.Stats().TCPAdopted)

	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.NoError(t, recv(t, closedWith))
	_, err = wait(t, c.Closed())
	require.NoError(t, err)
	require.NoError(t, sc.OnClose(func(c *Conn, err error) { closedWith <- err }))
	// The server side read EOF and closed by itself (no OnEOF).
	require.NoError(t, recv(t, closedWith))
	s = l.Stats()
	require.Zero(t, s.TCPOpen)
	require.EqualValues(t, 2, s.TCPClosed)
	require.NoError(t, nl.Close())
	require.Equal(t, fds, fdCount(t))

	// Stop closes an adopted connection as any other.
	nl2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl2.Close()
	client, err = net.Dial("tcp", nl2.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err = AdoptConnFrom(l, client.(*net.TCPConn), ConnConfig{})
	require.NoError(t, err)
	require.NoError(t, c.OnClose(func(c *Conn, err error) { closedWith <- err }))
	_, err = wait(t, l.Stop())
	require.NoError(t, err)
	require.ErrorIs(t, recv(t, closedWith), ErrStopped)
	require.ErrorIs(t, func() error { _, err := c.Closed().Result(); return err }(), ErrCancelled)
}

// What is not a socket to adopt as asked is refused with an error that
// says what it is, and the fd is left as it was: open, its flags unchanged.
func TestTCPAdoptRefuses(t *testing.T) {
	l := startLoop(t)
	open := func(domain, typ int) int {
		fd, err := unix.Socket(domain, typ, 0)
		require.NoError(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	var p [2]int
	require.NoError(t, unix.Pipe(p[:]))
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(pair[0]); unix.Close(pair[1]) })
	listening := open(unix.AF_INET, unix.SOCK_STREAM)
	require.NoError(t, unix.Bind(listening, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(listening, 1))
	lap, err := unix.Getsockname(listening)
	require.NoError(t, err)
	connected := open(unix.AF_INET, unix.SOCK_STREAM)
	require.NoError(t, unix.Connect(connected, lap))
	unconnected := open(unix.AF_INET, unix.SOCK_STREAM)
	udp := open(unix.AF_INET, unix.SOCK_DGRAM)

	onConn := func(*Conn) {}
	adoptConn := func(fd int) error { _, err := AdoptConn(l, fd, ConnConfig{}); return err }
	adoptListener := func(fd int) error { _, err := AdoptListener(l, fd, ListenConfig{}, onConn); return err }
	for _, tc := range []struct {
		name  string
		fd    int
		adopt func(int) error
		want  string
	}{
		{"pipe", p[0], adoptConn, "not a socket"},
		{"udp", udp, adoptConn, "not a stream socket"},
		{"unix", pair[0], adoptConn, "not an IPv4 or IPv6 socket"},
		{"listening as conn", listening, adoptConn, "a listening socket"},
		{"unconnected as conn", unconnected, adoptConn, "not connected"},
		{"connected as listener", connected, adoptListener, "not listening"},
		{"unconnected as listener", unconnected, adoptListener, "not listening"},
		{"pipe as listener", p[1], adoptListener, "not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl, fdfl := fdFlags(t, tc.fd)
			err := tc.adopt(tc.fd)
			require.ErrorContains(t, err, tc.want)
			fl2, fdfl2 := fdFlags(t, tc.fd)
			require.Equal(t, fl, fl2, "the refused fd's flags changed")
			require.Equal(t, fdfl, fdfl2)
		})
	}
	require.ErrorContains(t, adoptConn(-1), "negative fd")
	_, err = AdoptConn(nil, connected, ConnConfig{})
	require.ErrorIs(t, err, ErrNilLoop)
	_, err = AdoptListener(l, listening, ListenConfig{}, nil)
	require.ErrorIs(t, err, ErrNilFunc)
	_, err = AdoptConn(l, connected, ConnConfig{HighWater: -1})
	require.ErrorContains(t, err, "negative water mark")
	_, err = AdoptConnFrom(l, nil, ConnConfig{})
	require.ErrorContains(t, err, "nil socket")
	// A typed nil, which an interface holding it does not show as nil:
	// its SyscallConn panicked; and one a value hides, or a nil RawConn.
	for _, from := range []syscall.Conn{(*net.TCPConn)(nil), struct{ *net.TCPConn }{}, nilRawConn{}} {
		_, err = AdoptConnFrom(l, from, ConnConfig{})
		require.ErrorIs(t, err, ErrInvalidArgument, "%T", from)
		require.ErrorContains(t, err, "nil socket", "%T", from)
	}
	_, err = AdoptListenerFrom(l, (*net.TCPListener)(nil), ListenConfig{}, func(*Conn) {})
	require.ErrorContains(t, err, "nil socket")
	// Nils whose SyscallConn returns an error rather than panicking.
	for _, from := range []syscall.Conn{struct{ *net.TCPListener }{}, struct{ *os.File }{}} {
		_, err = AdoptListenerFrom(l, from, ListenConfig{}, func(*Conn) {})
		require.ErrorIs(t, err, ErrInvalidArgument, "%T", from)
		require.ErrorContains(t, err, "nil socket", "%T", from)
	}
	require.ErrorIs(t, adoptConn(-1), ErrInvalidArgument)
	fds := fdCount(t)
	gone, err := net.Dial("tcp", boundAddr(t, listening))
	require.NoError(t, err)
	require.NoError(t, gone.Close())
	_, err = AdoptConnFrom(l, gone.(*net.TCPConn), ConnConfig{})
	require.Error(t, err, "a closed net.Conn was adopted")
	require.Equal(t, fds, fdCount(t))

	// An fd the loop owns already, a connection's or a listener's. The
	// refusal leaves nothing behind: no handle stays pending.
	ln, accepted := echoListenConns(t, l, "127.0.0.1:0", ListenConfig{}, 1)
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	recv(t, accepted) // its handles count before the count is taken
	ownedFD := func(sc syscall.Conn) int {
		rc, err := sc.SyscallConn()
		require.NoError(t, err)
		fd := -1
		require.NoError(t, rc.Control(func(s uintptr) { fd = int(s) }))
		return fd
	}
	handles := l.Stats().Handles
	require.ErrorContains(t, adoptConn(ownedFD(c)), "owns this fd already")
	require.ErrorContains(t, adoptListener(ownedFD(ln)), "owns this fd already")
	require.Equal(t, handles, l.Stats().Handles, "a refused adoption left a handle")
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) { got <- string(b) }))
	require.NoError(t, send(c, []byte("still mine")))
	require.Equal(t, "still mine", recv(t, got))

	// A stopped loop refuses, and leaves the fd as it was.
	_, err = wait(t, l.Stop())
	require.NoError(t, err)
	fl, _ := fdFlags(t, connected)
	_, err = AdoptConn(l, connected, ConnConfig{})
	require.ErrorIs(t, err, ErrStopped)
	_, err = AdoptListener(l, listening, ListenConfig{}, onConn)
	require.ErrorIs(t, err, ErrStopped)
	fl2, _ := fdFlags(t, connected)
	require.Equal(t, fl, fl2)
}

// boundAddr returns the address a listening fd is bound to.
func boundAddr(t *testing.T, fd int) string {
	t.Helper()
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	a := sa.(*unix.SockaddrInet4)
	return (&net.TCPAddr{IP: a.Addr[:], Port: a.Port}).String()
}

// nilRawConn is a syscall.Conn whose SyscallConn gives a nil RawConn.
type nilRawConn struct{}

func (nilRawConn) SyscallConn() (syscall.RawConn, error) { return nil, nil }

// panicAfterControl is a syscall.Conn whose RawConn panics once its
// Control has run fn (the dup made).
type panicAfterControl struct{ c *net.TCPConn }

func (p panicAfterControl) SyscallConn() (syscall.RawConn, error) {
	rc, err := p.c.SyscallConn()
	return panicRawConn{rc}, err
}

type panicRawConn struct{ syscall.RawConn }

func (r panicRawConn) Control(fn func(uintptr)) error {
	_ = r.RawConn.Control(fn)
	panic("after the dup")
}

// A panic in the caller's Control after the dup is an error that says so,
// and the dup is closed. Bug: the duplicate fd leaked, and the error
// called it a nil socket whatever the panic was.
func TestAdoptConnFromPanickingControlLeaksNothing(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	nc, err := net.Dial("tcp", nl.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	fds := fdCount(t)
	_, err = AdoptConnFrom(l, panicAfterControl{nc.(*net.TCPConn)}, ConnConfig{})
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "after the dup")
	require.Equal(t, fds, fdCount(t), "the duplicate fd was closed")
}

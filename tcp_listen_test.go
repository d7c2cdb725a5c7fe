package aio

import (
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

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
	for _, cfg := range []ListenConfig{{Backlog: -1}, {AcceptBatch: -1}, {ReusePortAnyProcess: true}, {Conn: ConnConfig{HighWater: -1}},
		{Conn: ConnConfig{HighWater: 10, LowWater: 20}}, {Conn: ConnConfig{ReadTimeout: -1}}, {Conn: ConnConfig{KeepAlive: -1}},
		{Conn: ConnConfig{ReadBuffer: -1}}, {Conn: ConnConfig{WriteBuffer: -1}}} {
		_, err := Listen(l, "127.0.0.1:0", cfg, func(*Conn) {})
		require.ErrorIs(t, err, ErrInvalidArgument, "%+v", cfg)
	}
	_, err = wait(t, Dial(l, "nope", ConnConfig{}))
	require.Error(t, err)
	_, err = wait(t, Dial(l, "127.0.0.1:1", ConnConfig{LowWater: -1}))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = wait(t, Dial(nil, "127.0.0.1:1", ConnConfig{}))
	require.ErrorIs(t, err, ErrNilLoop)
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	_, err = wait(t, ln.Close())
	require.NoError(t, err, "Close is idempotent")
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

// Regression test: accepted sockets lacked TCP_NODELAY under gVisor.
//
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

// A closed Listener lets go of its accept callback, and of what it
// captured: the listener stays reachable from every connection it
// accepted (and from the program that keeps it), long after it closed.
func TestClosedListenerLetsGoOfItsCallback(t *testing.T) {
	l := startLoop(t)
	freed := make(chan struct{})
	conns := make(chan *Conn, 1)
	ln, err := func() (*Listener, error) { // big is the callback's alone
		big := new([1 << 20]byte)
		runtime.AddCleanup(big, func(ch chan struct{}) { close(ch) }, freed)
		return Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
			_ = big[0]
			conns <- c
		})
	}()
	require.NoError(t, err)
	nc := netDial(t, ln)
	c := recv(t, conns) // an open connection the program keeps
	l.closeListener(t, ln)
	onLoop(t, l, func() {})
	collected(t, freed, "the closed listener keeps its accept callback's captures")
	runtime.KeepAlive(ln)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.NoError(t, nc.Close())
	closedLoopTCP(t, l)
}

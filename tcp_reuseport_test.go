package aio

import (
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// foreignReusePort binds and listens on addr with SO_REUSEPORT the way
// another process would (aio's reusePorts does not know it), and returns
// the socket's fd and address.
func foreignReusePort(t *testing.T, addr string) (int, netip.AddrPort) {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	fd, err := sock.Socket(unix.AF_INET)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	require.NoError(t, unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1))
	require.NoError(t, unix.Bind(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}))
	require.NoError(t, unix.Listen(fd, 8))
	sa, err := unix.Getsockname(fd)
	require.NoError(t, err)
	return fd, netip.AddrPortFrom(ap.Addr(), uint16(sa.(*unix.SockaddrInet4).Port))
}

func reuseHeld(addr netip.AddrPort) int {
	reusePorts.mu.Lock()
	defer reusePorts.mu.Unlock()
	return reusePorts.held[addr]
}

// ReusePort shares a port among this process's listeners only: a port a
// socket of another process holds with SO_REUSEPORT, which the option
// alone would let the listener join silently, is refused with EADDRINUSE,
// as a plain listener is; ReusePortAnyProcess joins it. The count of the
// process's listeners per address comes back to nothing as they close,
// and the port is free for anyone then.
func TestReusePortRefusesAnotherProcesssPort(t *testing.T) {
	a, b := startLoop(t, Config{Name: "reuse-a"}), startLoop(t, Config{Name: "reuse-b"})
	cfg := ListenConfig{ReusePort: true}
	accept := func(c *Conn) { c.Close() }

	la, err := Listen(a, "127.0.0.1:0", cfg, accept)
	require.NoError(t, err)
	lb, err := Listen(b, la.Addr().String(), cfg, accept)
	require.NoError(t, err, "this process's second loop joins the first")
	require.Equal(t, 2, reuseHeld(la.Addr()))
	_, err = net.Listen("tcp4", la.Addr().String())
	require.ErrorIs(t, err, unix.EADDRINUSE, "a plain listener finds the port busy")
	a.closeListener(t, la)
	b.closeListener(t, lb)
	require.Zero(t, reuseHeld(la.Addr()), "every listener that closed is counted out")
	free, err := net.Listen("tcp4", la.Addr().String())
	require.NoError(t, err, "the port is free once they closed")
	require.NoError(t, free.Close())

	_, other := foreignReusePort(t, "127.0.0.1:0")
	_, err = Listen(a, other.String(), cfg, accept)
	require.ErrorIs(t, err, unix.EADDRINUSE, "another process's port is not joined")
	assert.Contains(t, err.Error(), "address already in use")
	require.Zero(t, reuseHeld(other), "a refused listener is not counted")

	lj, err := Listen(a, other.String(), ListenConfig{ReusePort: true, ReusePortAnyProcess: true}, accept)
	require.NoError(t, err, "ReusePortAnyProcess joins it")
	require.Equal(t, 1, reuseHeld(other), "one that skips the check is this process's all the same")
	a.closeListener(t, lj)
	require.Zero(t, reuseHeld(other))
}

// An adopted listening socket with SO_REUSEPORT is this process's: a
// ReusePort Listen on its address (the other loops joining a socket that
// systemd or a parent handed over) joins it, as before the check, rather
// than being refused as another program's.
func TestReusePortJoinsAdoptedListener(t *testing.T) {
	a, b := startLoop(t, Config{Name: "adopt-a"}), startLoop(t, Config{Name: "adopt-b"})
	fd, addr := foreignReusePort(t, "127.0.0.1:0") // made here, handed to aio
	dup, err := unix.Dup(fd)                       // the Listener's; t.Cleanup closes fd
	require.NoError(t, err)
	accept := func(c *Conn) { c.Close() }
	la, err := AdoptListener(a, dup, ListenConfig{}, accept)
	require.NoError(t, err)
	lb, err := Listen(b, addr.String(), ListenConfig{ReusePort: true}, accept)
	require.NoError(t, err, "this process's own adopted listener is refused as another program's")
	b.closeListener(t, lb)
	a.closeListener(t, la)
	require.Zero(t, reuseHeld(addr), "every listener that closed is counted out")
}

// Every loop of a server listens on the same address string; with a zone
// the kernel ignores (on an address that is not link-local) the listener
// is counted under the address it bound, and the second loop's check
// must look it up under that address too, not find nothing and be
// refused by its own process's first listener.
func TestReusePortJoinsAcrossAnIgnoredZone(t *testing.T) {
	a, b := startLoop(t, Config{Name: "zone-a"}), startLoop(t, Config{Name: "zone-b"})
	cfg := ListenConfig{ReusePort: true}
	accept := func(c *Conn) { c.Close() }
	la, err := Listen(a, "[::1%1]:0", cfg, accept)
	require.NoError(t, err)
	defer a.closeListener(t, la)
	addr := "[::1%01]:" + strconv.Itoa(int(la.Addr().Port()))
	lb, err := Listen(b, addr, cfg, accept)
	require.NoError(t, err, "this process's second loop joins the first on %s", addr)
	b.closeListener(t, lb)
}

// A process that took a port over with ReusePortAnyProcess (its old
// server still serving) and then listens there again with ReusePort alone
// (a loop added, a listener restarted) joins its own listener.
func TestReusePortJoinsAnAnyProcessListener(t *testing.T) {
	a, b := startLoop(t, Config{Name: "any-a"}), startLoop(t, Config{Name: "any-b"})
	accept := func(c *Conn) { c.Close() }
	la, err := Listen(a, "127.0.0.1:0", ListenConfig{ReusePort: true, ReusePortAnyProcess: true}, accept)
	require.NoError(t, err)
	defer a.closeListener(t, la)
	lb, err := Listen(b, la.Addr().String(), ListenConfig{ReusePort: true}, accept)
	require.NoError(t, err, "this process's own listener on %s is taken for another program's", la.Addr())
	b.closeListener(t, lb)
}

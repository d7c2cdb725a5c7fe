package sock

import (
	"net/netip"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ENONET is the per-connection accept error only Linux has (accept(2)
// lists it among the network errors to retry after).
func TestAcceptConnErrnoLinux(t *testing.T) {
	assert.True(t, AcceptConnErrno(unix.ENONET))
}

// An accepted socket starts with the listener's TCP_NODELAY
// (AcceptInheritsNoDelay), which aio's Listen relies on.
func TestAcceptInheritsNoDelay(t *testing.T) {
	require.True(t, AcceptInheritsNoDelay)
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		for _, v := range []int{1, 0} {
			lfd, addr := listen(t, ip)
			require.NoError(t, SetsockoptInt(lfd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v))
			dial(t, addr)
			sfd, _ := accept(t, lfd)
			got, err := unix.GetsockoptInt(sfd, unix.IPPROTO_TCP, unix.TCP_NODELAY)
			require.NoError(t, err)
			assert.Equal(t, v != 0, got != 0, "listener TCP_NODELAY %d", v)
		}
	})
}

// openFDs counts the process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/dev/fd")
	require.NoError(t, err)
	return len(ents)
}

// The helpers, and so every test here, close every fd they open: a run of
// the whole connection life (listen, dial, accept, read, write, writev,
// refused connect) leaves the process's fd count where it was.
func TestNoFDLeak(t *testing.T) {
	life := func(t *testing.T, ip netip.Addr) {
		lfd, addr := listen(t, ip)
		cfd, _ := dial(t, addr)
		sfd, _ := accept(t, lfd)
		_, err := Write(cfd, []byte("x"))
		require.NoError(t, err)
		readFull(t, sfd, 1)
		var iov Iovecs
		_, err = Writev(sfd, [][]byte{[]byte("y")}, &iov)
		require.NoError(t, err)
		readFull(t, cfd, 1)
		refused := closedPort(t, ip)
		fd, err := Socket(Family(refused))
		require.NoError(t, err)
		own(t, fd)
		_ = Connect(fd, refused)
	}
	forEachLoopback(t, life) // warm up: the runtime's own fds (netpoller) open once
	before := openFDs(t)
	for range 3 {
		forEachLoopback(t, life)
	}
	assert.Equal(t, before, openFDs(t), "open fds before and after")
}

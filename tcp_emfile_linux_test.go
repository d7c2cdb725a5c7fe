//go:build linux

package aio

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Out of fds, a listener accepts and drops the pending connection with its
// spare fd instead of spinning on the level-triggered listening socket.
func TestTCPAcceptEMFILE(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &old))
	lim := old
	lim.Cur = uint64(fdCount(t) + 64)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	var fill []int
	defer func() {
		for _, fd := range fill {
			unix.Close(fd)
		}
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &old))
	}()
	// The client's socket first, then fill the table to the limit.
	cfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	defer unix.Close(cfd)
	for {
		fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			require.ErrorIs(t, err, unix.EMFILE)
			break
		}
		fill = append(fill, fd)
	}
	before := l.Stats()
	require.NoError(t, unix.Connect(cfd, &unix.SockaddrInet4{Port: int(ln.Addr().Port()), Addr: [4]byte{127, 0, 0, 1}}))
	eventually(t, func() bool { return l.Stats().TCPDropped > before.TCPDropped }, "the pending connection was not dropped")
	// The client sees its connection closed.
	n, err := unix.Read(cfd, make([]byte, 1))
	require.True(t, n == 0 || errors.Is(err, unix.ECONNRESET), "n %d err %v", n, err)
	// And the loop is not spinning: a few iterations at most while idle.
	it := l.Stats().Iterations
	time.Sleep(50 * time.Millisecond) // an observation window
	require.Less(t, l.Stats().Iterations-it, uint64(10), "the loop spins")
	require.Zero(t, l.Stats().TCPAccepted)
	// With fds back, accepting works again.
	for _, fd := range fill {
		unix.Close(fd)
	}
	fill = nil
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("ok"))
	require.NoError(t, err)
	_, err = io.ReadFull(nc, make([]byte, 2))
	require.NoError(t, err)
}

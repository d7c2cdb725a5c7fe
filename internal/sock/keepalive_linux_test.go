package sock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A SetKeepAlive that fails leaves keep-alive as it was: it used to turn
// SO_KEEPALIVE on before setting the timers, so a refused time (Linux's
// EINVAL above 32767 s, before the clamp) left it on with the old timers.
// An fd that takes SO_KEEPALIVE but not TCP_KEEPIDLE (a Unix socket) shows it.
func TestSetKeepAliveFailureLeavesItOff(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	require.Error(t, SetKeepAlive(fds[0], time.Minute))
	on, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_KEEPALIVE)
	require.NoError(t, err)
	require.Zero(t, on, "keep-alive turned on by a call that failed")
}

package sock

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Bytes one socket received move by Splice into a Pipe and out of it to
// another socket, byte-exact; the pipe has the capacity asked for (as
// root, or under pipe-max-size, which both allow 256 KiB by default); an
// empty source is EAGAIN, and a source at EOF gives 0.
func TestSpliceThroughPipe(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		in, from := pair(t, ip) // bytes written to in arrive at from
		to, out := pair(t, ip)  // bytes spliced to to arrive at out
		r, w, size, err := Pipe()
		require.NoError(t, err)
		own(t, r)
		own(t, w)
		assert.Equal(t, PipeSize, size)
		for _, fd := range []int{r, w} {
			fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			require.NoError(t, err)
			assert.NotZero(t, fl&unix.O_NONBLOCK, "non-blocking")
			fdfl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
			require.NoError(t, err)
			assert.NotZero(t, fdfl&unix.FD_CLOEXEC, "close-on-exec")
		}

		_, err = Splice(w, from, size)
		require.ErrorIs(t, err, unix.EAGAIN, "nothing received yet")
		msg := pattern(32<<10, 3) // within the sockets' default buffers
		for sent := 0; sent < len(msg); {
			n, err := Write(in, msg[sent:])
			require.NoError(t, err)
			sent += n
		}
		moved := 0
		for moved < len(msg) {
			n, err := Splice(w, from, size)
			if err == unix.EAGAIN {
				waitFD(t, from, unix.POLLIN)
				continue
			}
			require.NoError(t, err)
			for left := n; left > 0; {
				k, err := Splice(to, r, left)
				if err == unix.EAGAIN {
					waitFD(t, to, unix.POLLOUT)
					continue
				}
				require.NoError(t, err)
				left -= k
			}
			moved += n
		}
		assert.Equal(t, msg, readFull(t, out, len(msg)))
		require.NoError(t, unix.Shutdown(in, unix.SHUT_WR))
		for {
			// More than a raw splice asks for: through the scheduler.
			n, err := Splice(w, from, spliceRawMax+1)
			if err == unix.EAGAIN {
				waitFD(t, from, unix.POLLIN)
				continue
			}
			require.NoError(t, err)
			require.Zero(t, n, "EOF")
			break
		}
	})
}

//go:build linux || freebsd || netbsd

package sock

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Where Writev makes the system call itself, the caller's Iovecs is the
// only iovec array: grown once to MaxIovecs, reused without allocating, and
// left holding no pointer into the caller's buffers.
func TestWritevReusesIovecs(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		var iov Iovecs
		bufs := [][]byte{[]byte("ab"), nil, []byte("cd")}
		n, err := Writev(cfd, bufs, &iov)
		require.NoError(t, err)
		require.Equal(t, 4, n)
		require.Equal(t, MaxIovecs, cap(iov))
		first := &iov[:1][0]
		for i, v := range iov[:cap(iov)] {
			require.Nil(t, v.Base, "iovec %d still points into a buffer", i)
		}

		const runs = 100
		allocs := testing.AllocsPerRun(runs, func() {
			if n, err := Writev(cfd, bufs, &iov); n != 4 || err != nil {
				t.Errorf("Writev = %d, %v", n, err)
			}
		})
		assert.Zero(t, allocs, "allocations per Writev")
		assert.Same(t, first, &iov[:1][0], "Writev replaced the caller's iovec array")
		assert.Equal(t, "ab"+"cd", string(readFull(t, sfd, 4)))
		readFull(t, sfd, 4*(runs+1)) // AllocsPerRun calls once more than runs
		_, err = Read(sfd, make([]byte, 1))
		require.ErrorIs(t, err, unix.EAGAIN)

		// A too-small scratch is replaced by a MaxIovecs one.
		small := make(Iovecs, 0, 2)
		n, err = Writev(cfd, [][]byte{[]byte("x"), []byte("y"), []byte("z")}, &small)
		require.NoError(t, err)
		require.Equal(t, 3, n)
		assert.Equal(t, MaxIovecs, cap(small))
		assert.Equal(t, "xyz", string(readFull(t, sfd, 3)))
	})
}

// Empty buffers do not count against MaxIovecs, and buffers that are all
// empty make no system call (so not even a bad fd fails).
func TestWritevSkipsEmpty(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		var iov Iovecs
		var bufs [][]byte
		for i := range 2 * MaxIovecs {
			bufs = append(bufs, nil, []byte{byte(i)})
		}
		n, err := Writev(cfd, bufs, &iov)
		require.NoError(t, err)
		require.Equal(t, MaxIovecs, n, "one byte from each of MaxIovecs non-empty buffers")
		got := readFull(t, sfd, n)
		for i, b := range got {
			require.Equal(t, byte(i), b)
		}

		n, err = Writev(-1, [][]byte{nil, {}, nil}, &iov)
		assert.NoError(t, err)
		assert.Zero(t, n)
		n, err = Writev(-1, nil, &iov)
		assert.NoError(t, err)
		assert.Zero(t, n)
	})
}

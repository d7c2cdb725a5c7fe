//go:build linux || darwin || freebsd || netbsd || openbsd

package sock

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Writev writes its buffers in order, empty ones contributing nothing.
func TestWritevOrder(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		var iov Iovecs
		bufs := [][]byte{[]byte("ab"), nil, []byte("cde"), {}, []byte("f"), []byte("ghij")}
		n, err := Writev(cfd, bufs, &iov)
		require.NoError(t, err)
		require.Equal(t, 10, n)
		assert.Equal(t, "abcdefghij", string(readFull(t, sfd, n)))

		n, err = Writev(cfd, [][]byte{[]byte("k")}, &iov) // the scratch again
		require.NoError(t, err)
		require.Equal(t, 1, n)
		assert.Equal(t, "k", string(readFull(t, sfd, n)))
	})
}

// One Writev takes at most MaxIovecs segments; the caller sends the rest
// with another.
func TestWritevCapsSegments(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		var iov Iovecs
		bufs := make([][]byte, MaxIovecs+36)
		var all []byte
		for i := range bufs {
			bufs[i] = []byte{byte(i), byte(i + 1)}
			all = append(all, bufs[i]...)
		}
		n, err := Writev(cfd, bufs, &iov)
		require.NoError(t, err)
		require.Equal(t, 2*MaxIovecs, n)
		n, err = Writev(cfd, bufs[MaxIovecs:], &iov)
		require.NoError(t, err)
		require.Equal(t, 2*36, n)
		assert.True(t, bytes.Equal(all, readFull(t, sfd, len(all))))
	})
}

// Writev of more than the socket takes returns a partial count; resumed
// from there, everything arrives in order, through the scheduler (more
// than RawCopyMax) and raw alike.
func TestWritevPartial(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, sfd := pair(t, ip)
		var iov Iovecs
		bufs := [][]byte{pattern(RawCopyMax, 1), nil, pattern(100, 2), pattern(2*RawCopyMax+5, 3), {}, pattern(1, 4)}
		want := bytes.Join(bufs, nil)
		pump(t, cfd, sfd, want, func(off int) (int, error) {
			return Writev(cfd, skip(bufs, off), &iov)
		})
	})
}

// skip returns bufs without their first off bytes.
func skip(bufs [][]byte, off int) [][]byte {
	for len(bufs) > 0 && off >= len(bufs[0]) {
		off -= len(bufs[0])
		bufs = bufs[1:]
	}
	if len(bufs) == 0 {
		return nil
	}
	return append([][]byte{bufs[0][off:]}, bufs[1:]...)
}

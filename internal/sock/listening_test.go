//go:build linux || darwin || freebsd || netbsd || openbsd

package sock

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// IsListening tells a listening socket from a connected one on every
// system (darwin has no getsockopt SO_ACCEPTCONN: listening_darwin.go).
func TestIsListening(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		lfd, _ := listen(t, ip)
		ok, err := IsListening(lfd)
		require.NoError(t, err)
		assert.True(t, ok, "listening socket")
		cfd, sfd := pair(t, ip)
		for _, fd := range []int{cfd, sfd} {
			ok, err := IsListening(fd)
			require.NoError(t, err)
			assert.False(t, ok, "connected socket")
		}
	})
}

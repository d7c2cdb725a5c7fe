//go:build linux || darwin || freebsd || netbsd

package sock

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// SetKeepAlive sets the idle time and the probe interval to d in whole
// seconds, rounded up, at least 1, where the system has per-socket timers
// (openbsd has not: keepalive_openbsd.go).
func TestSetKeepAliveTimes(t *testing.T) {
	forEachLoopback(t, func(t *testing.T, ip netip.Addr) {
		cfd, _ := pair(t, ip)
		for _, tc := range []struct {
			d    time.Duration
			secs int
		}{
			{90 * time.Second, 90},
			{1500 * time.Millisecond, 2},
			{time.Second, 1},
			{time.Nanosecond, 1},
			{time.Hour, 3600},
			{MaxKeepAlive, 32767},
			{10 * time.Hour, 32767},               // Linux refused this (EINVAL)
			{time.Duration(math.MaxInt64), 32767}, // overflowed to 1 s
		} {
			require.NoError(t, SetKeepAlive(cfd, tc.d))
			on, err := unix.GetsockoptInt(cfd, unix.SOL_SOCKET, unix.SO_KEEPALIVE)
			require.NoError(t, err)
			assert.NotZero(t, on, "SO_KEEPALIVE for %v", tc.d)
			idle, err := unix.GetsockoptInt(cfd, unix.IPPROTO_TCP, keepIdleOpt)
			require.NoError(t, err)
			assert.Equal(t, tc.secs, idle, "idle time for %v", tc.d)
			intvl, err := unix.GetsockoptInt(cfd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
			require.NoError(t, err)
			assert.Equal(t, tc.secs, intvl, "probe interval for %v", tc.d)
		}
	})
}

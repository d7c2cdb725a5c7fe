//go:build !openbsd

package sock

import (
	"time"

	"golang.org/x/sys/unix"
)

// setKeepAliveTimes sets the idle time before the first keep-alive probe and
// the interval between probes, in whole seconds (at least 1, at most
// MaxKeepAlive).
func setKeepAliveTimes(fd int, d time.Duration) error {
	secs := keepAliveSecs(d)
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, keepIdleOpt, secs); err != nil {
		return err
	}
	return unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, secs)
}

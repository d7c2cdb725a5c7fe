//go:build !freebsd

package sock

import "golang.org/x/sys/unix"

// SetReusePort lets several listening sockets bind one address
// (SO_REUSEPORT). Linux spreads the connections over them by hash; darwin,
// netbsd and openbsd only permit the sharing: the listener bound last
// takes every connection. Through the scheduler (x/sys).
func SetReusePort(fd int) error {
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
}

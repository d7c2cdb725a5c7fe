package sock

import "golang.org/x/sys/unix"

// SetReusePort lets several listening sockets bind one address: on
// FreeBSD SO_REUSEPORT, which only permits the sharing (the listener bound
// last takes every connection), and SO_REUSEPORT_LB (FreeBSD 12 and
// later), with which the kernel spreads the connections over the group by
// hash, as Linux's SO_REUSEPORT does. Through the scheduler (x/sys).
func SetReusePort(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); err != nil {
		return err
	}
	return unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEPORT_LB, 1)
}

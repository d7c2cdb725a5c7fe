//go:build (linux && (386 || s390x)) || freebsd

package sock

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// Accept accepts a connection on the listening socket fd as a
// non-blocking, close-on-exec fd and returns it with the peer's address.
// Its errors are accept4(2)'s (EAGAIN when nothing is pending). Through the
// scheduler (x/sys).
func Accept(fd int) (nfd int, peer netip.AddrPort, err error) {
	nfd, sa, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	return nfd, AddrPortOf(sa), nil
}

// LocalAddr returns the address fd is bound to (getsockname(2)). Through the
// scheduler (x/sys).
func LocalAddr(fd int) (netip.AddrPort, error) { return xLocalAddr(fd) }

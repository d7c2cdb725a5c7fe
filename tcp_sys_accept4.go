//go:build (linux && (386 || s390x)) || freebsd

package aio

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// sysAccept accepts a connection as a non-blocking, close-on-exec fd and
// returns the peer's address.
func sysAccept(fd int) (int, netip.AddrPort, error) {
	nfd, sa, err := unix.Accept4(fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	return nfd, addrPortOf(sa), nil
}

// localAddr returns the address fd is bound to.
func localAddr(fd int) (netip.AddrPort, error) { return sockLocalAddr(fd) }

//go:build darwin || netbsd || openbsd

package aio

import (
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Where accept4 (or socket's type flags) are not available, the fd is made
// close-on-exec under syscall.ForkLock, as Go's net package does, so that a
// concurrent fork+exec cannot inherit it, and non-blocking afterwards.

// sysSocket opens a non-blocking, close-on-exec stream socket.
func sysSocket(family int) (int, error) {
	syscall.ForkLock.RLock()
	fd, err := unix.Socket(family, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, err
	}
	return fd, nonblock(fd)
}

// sysAccept accepts a connection as a non-blocking, close-on-exec fd and
// returns the peer's address.
func sysAccept(fd int) (int, netip.AddrPort, error) {
	syscall.ForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	return nfd, addrPortOf(sa), nonblock(nfd)
}

// localAddr returns the address fd is bound to.
func localAddr(fd int) (netip.AddrPort, error) { return sockLocalAddr(fd) }

// nonblock sets O_NONBLOCK on fd, closing it if that fails.
func nonblock(fd int) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	return nil
}

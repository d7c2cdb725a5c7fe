//go:build darwin || netbsd || openbsd

package sock

import (
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Where accept4 (or socket's type flags) are not available, the fd is made
// close-on-exec under syscall.ForkLock, as Go's net package does, so that a
// concurrent fork+exec cannot inherit it, and non-blocking afterwards.

// Socket opens a non-blocking, close-on-exec stream socket of family
// (AF_INET, AF_INET6). Its errors are socket(2)'s or fcntl(2)'s (the fd is
// closed then). Through the scheduler (x/sys).
func Socket(family int) (int, error) {
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

// Accept accepts a connection on the listening socket fd as a
// non-blocking, close-on-exec fd and returns it with the peer's address.
// Its errors are accept(2)'s (EAGAIN when nothing is pending) or fcntl(2)'s
// (the new fd is closed then). Through the scheduler (x/sys).
func Accept(fd int) (nfd int, peer netip.AddrPort, err error) {
	syscall.ForkLock.RLock()
	nfd, sa, err := unix.Accept(fd)
	if err == nil {
		unix.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return -1, netip.AddrPort{}, err
	}
	return nfd, AddrPortOf(sa), nonblock(nfd)
}

// LocalAddr returns the address fd is bound to (getsockname(2)). Through the
// scheduler (x/sys).
func LocalAddr(fd int) (netip.AddrPort, error) { return xLocalAddr(fd) }

// nonblock sets O_NONBLOCK on fd, closing it if that fails.
func nonblock(fd int) error {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	return nil
}

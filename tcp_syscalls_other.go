//go:build !linux || 386 || s390x

package aio

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// sysConnect starts connecting fd to ap (again: asks whether it is
// connected yet).
func sysConnect(fd int, ap netip.AddrPort, _ bool) error {
	sa, _ := sockaddrOf(ap)
	return unix.Connect(fd, sa)
}

// sysClose closes a socket fd.
func sysClose(fd int) error { return unix.Close(fd) }

// sysRead reads into b.
func sysRead(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// sysWrite writes b.
func sysWrite(fd int, b []byte) (int, error) { return unix.Write(fd, b) }

// sysSetsockoptInt sets an integer socket option.
func sysSetsockoptInt(fd, level, opt, value int) error {
	return unix.SetsockoptInt(fd, level, opt, value)
}

// sysSocketError returns the socket's pending error (SO_ERROR), clearing it.
func sysSocketError(fd int) (int, error) {
	return unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
}

// writevRawMax is 0: where these calls are not made raw, neither is writev.
const writevRawMax = 0

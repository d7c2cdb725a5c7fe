//go:build !linux || 386 || s390x

package sock

import (
	"net/netip"

	"golang.org/x/sys/unix"
)

// Where the calls are not made raw, each is golang.org/x/sys's, through the
// scheduler; the contracts are those of syscalls_linux.go.

// Connect starts connecting fd to ap (connect(2)): EINPROGRESS while the
// handshake goes on (the socket turns writable when it ends, and
// SocketError says how), nil if it completed at once, or the errno.
func Connect(fd int, ap netip.AddrPort) error {
	sa, _ := Sockaddr(ap)
	return unix.Connect(fd, sa)
}

// ConnectAgain asks a socket that Connect left connecting whether it is
// connected yet: nil or EISCONN, still connecting: EALREADY (or
// EINPROGRESS), or the connect's error.
func ConnectAgain(fd int, ap netip.AddrPort) error { return Connect(fd, ap) }

// Close closes a socket fd (close(2)).
func Close(fd int) error { return unix.Close(fd) }

// Read reads into b (read(2)): EAGAIN when nothing is there yet; 0 bytes
// and no error is EOF.
func Read(fd int, b []byte) (int, error) { return unix.Read(fd, b) }

// Write writes b (write(2)) and returns how many bytes the kernel took
// (EAGAIN when the socket buffer is full).
func Write(fd int, b []byte) (int, error) { return unix.Write(fd, b) }

// SetsockoptInt sets an integer socket option (setsockopt(2)).
func SetsockoptInt(fd, level, opt, value int) error {
	return unix.SetsockoptInt(fd, level, opt, value)
}

// SocketError returns the socket's pending error (getsockopt SO_ERROR; 0
// for none), clearing it. err is getsockopt's own failure.
func SocketError(fd int) (int, error) {
	return unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
}

// writevRawMax is 0: where these calls are not made raw, neither is writev.
const writevRawMax = 0

// spliceRawMax is 0: where these calls are not made raw, neither is splice.
const spliceRawMax = 0

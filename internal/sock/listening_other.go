//go:build !darwin

package sock

import (
	"errors"

	"golang.org/x/sys/unix"
)

// IsListening reports whether the socket fd listens (getsockopt
// SO_ACCEPTCONN). A system whose getsockopt does not know the option
// (ENOPROTOOPT: OpenBSD's has been reported so) is answered by
// getpeername instead: a listening socket has no peer. That takes a
// socket never connected nor listening for a listening one, whose
// accept then fails. Through the scheduler (x/sys).
func IsListening(fd int) (bool, error) {
	acc, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	if errors.Is(err, unix.ENOPROTOOPT) {
		switch _, err := unix.Getpeername(fd); {
		case err == nil:
			return false, nil
		case errors.Is(err, unix.ENOTCONN):
			return true, nil
		default:
			return false, err
		}
	}
	return err == nil && acc != 0, err
}

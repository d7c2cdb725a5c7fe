package sock

import "golang.org/x/sys/unix"

// IsTCP reports whether a stream socket of the IPv4 or IPv6 family is TCP,
// from its protocol (getsockopt SO_PROTOCOL, returned as proto): not SCTP.
// Through the scheduler (x/sys).
func IsTCP(fd int) (ok bool, proto int, err error) {
	proto, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	return err == nil && proto == unix.IPPROTO_TCP, proto, err
}

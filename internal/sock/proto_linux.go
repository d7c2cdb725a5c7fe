package sock

import "golang.org/x/sys/unix"

// IsTCP reports whether a stream socket of the IPv4 or IPv6 family is TCP,
// from its protocol (getsockopt SO_PROTOCOL, returned as proto):
// IPPROTO_TCP, or IPPROTO_MPTCP, Multipath TCP, which speaks TCP to a peer
// that does not know it and which Go's net package listens with by default
// since Go 1.24; not SCTP. Through the scheduler (x/sys).
func IsTCP(fd int) (ok bool, proto int, err error) {
	proto, err = unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL)
	return err == nil && (proto == unix.IPPROTO_TCP || proto == unix.IPPROTO_MPTCP), proto, err
}

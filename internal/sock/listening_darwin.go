//go:build darwin

package sock

import "golang.org/x/sys/unix"

// tcpsListen is TCPS_LISTEN of <netinet/tcp_fsm.h>.
const tcpsListen = 1

// IsListening reports whether the TCP socket fd listens. Darwin's
// getsockopt has no SO_ACCEPTCONN (xnu's sogetoptlock answers ENOPROTOOPT
// for it), so the TCP state of TCP_CONNECTION_INFO tells instead. Through
// the scheduler (x/sys).
func IsListening(fd int) (bool, error) {
	ci, err := unix.GetsockoptTCPConnectionInfo(fd, unix.IPPROTO_TCP, unix.TCP_CONNECTION_INFO)
	if err != nil {
		return false, err
	}
	return ci.State == tcpsListen, nil
}

//go:build linux || freebsd

package sock

import "golang.org/x/sys/unix"

// Socket opens a non-blocking, close-on-exec stream socket of family
// (AF_INET, AF_INET6) in one call. Its errors are socket(2)'s. Through the
// scheduler (x/sys).
func Socket(family int) (int, error) {
	return unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}

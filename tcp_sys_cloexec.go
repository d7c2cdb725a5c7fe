//go:build linux || freebsd

package aio

import "golang.org/x/sys/unix"

// sysSocket opens a non-blocking, close-on-exec stream socket in one call.
func sysSocket(family int) (int, error) {
	return unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
}

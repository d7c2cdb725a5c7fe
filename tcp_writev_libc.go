//go:build darwin || openbsd

package aio

import "golang.org/x/sys/unix"

// iovecs is unused where system calls go through libc: unix.Writev builds
// its own iovec array.
type iovecs struct{}

// maxIovecs bounds the segments handed to one writev.
const maxIovecs = 64

// sysWritev writes bufs with one writev(2).
func sysWritev(_ *tcpLoop, fd int, bufs [][]byte) (int, error) {
	if len(bufs) > maxIovecs {
		bufs = bufs[:maxIovecs]
	}
	return unix.Writev(fd, bufs)
}

//go:build darwin || openbsd

package sock

import "golang.org/x/sys/unix"

// Iovecs is unused where system calls go through libc: unix.Writev builds
// its own iovec array.
type Iovecs struct{}

// MaxIovecs bounds the segments handed to one writev.
const MaxIovecs = 64

// Writev writes the first MaxIovecs buffers of bufs, empty ones counted
// (unlike the raw Writev: a caller only sees a shorter write), with one
// writev(2) and returns how many bytes the kernel took; its errors are
// writev(2)'s (EAGAIN when the socket buffer is full). iov is unused here
// (see writev_raw.go). Through the scheduler (libc).
func Writev(fd int, bufs [][]byte, _ *Iovecs) (int, error) {
	if len(bufs) > MaxIovecs {
		bufs = bufs[:MaxIovecs]
	}
	return unix.Writev(fd, bufs)
}

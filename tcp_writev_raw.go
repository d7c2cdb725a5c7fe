//go:build linux || freebsd || netbsd

package aio

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// iovecs is a loop's writev scratch: the system call is made directly, with
// an iovec array reused across calls, so a flush allocates nothing.
type iovecs []unix.Iovec

// maxIovecs bounds the segments handed to one writev (IOV_MAX is 1024).
const maxIovecs = 64

// sysWritev writes bufs with one writev(2).
func sysWritev(t *tcpLoop, fd int, bufs [][]byte) (int, error) {
	if cap(t.iov) < maxIovecs {
		t.iov = make(iovecs, 0, maxIovecs)
	}
	iov := t.iov[:0]
	total := 0
	for _, b := range bufs {
		if len(iov) == maxIovecs {
			break
		}
		if len(b) == 0 {
			continue
		}
		v := unix.Iovec{Base: &b[0]}
		v.SetLen(len(b))
		iov = append(iov, v)
		total += len(b)
	}
	if len(iov) == 0 {
		return 0, nil
	}
	// Small writes go raw, as sysWrite's do (see rawCopyMax).
	call := unix.Syscall
	if total <= writevRawMax {
		call = unix.RawSyscall
	}
	n, _, errno := call(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
	clear(iov) // drop the pointers into the queue
	if errno != 0 {
		return 0, errno
	}
	for left, i := int(n), 0; raceEnabled && left > 0 && i < len(bufs); i++ { // what the kernel copied
		k := min(left, len(bufs[i]))
		raceRead(bufs[i][:k])
		left -= k
	}
	return int(n), nil
}

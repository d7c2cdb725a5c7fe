//go:build linux || freebsd || netbsd

package sock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Iovecs is a caller's writev scratch (one per loop in aio): the system call
// is made directly, with an iovec array reused across calls, so a flush
// allocates nothing. The zero value is ready; Writev grows it on first use.
// It holds no pointer between calls.
type Iovecs []unix.Iovec

// MaxIovecs bounds the segments handed to one writev (IOV_MAX is 1024).
const MaxIovecs = 64

// Writev writes the first MaxIovecs non-empty buffers of bufs (empty ones
// are skipped and do not count) with one writev(2), using *iov as scratch, and returns how many bytes the kernel
// took; its errors are writev(2)'s (EAGAIN when the socket buffer is full).
// Raw up to RawCopyMax bytes where Write is, through the scheduler for
// more.
func Writev(fd int, bufs [][]byte, iov *Iovecs) (int, error) {
	if cap(*iov) < MaxIovecs {
		*iov = make(Iovecs, 0, MaxIovecs)
	}
	v := (*iov)[:0]
	total := 0
	for _, b := range bufs {
		if len(v) == MaxIovecs {
			break
		}
		if len(b) == 0 {
			continue
		}
		e := unix.Iovec{Base: &b[0]}
		e.SetLen(len(b))
		v = append(v, e)
		total += len(b)
	}
	if len(v) == 0 {
		return 0, nil
	}
	// Small writes go raw, as Write's do (see RawCopyMax).
	call := unix.Syscall
	if total <= writevRawMax {
		call = unix.RawSyscall
	}
	n, _, errno := call(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(&v[0])), uintptr(len(v)))
	clear(v) // drop the pointers into the caller's buffers
	if errno != 0 {
		return 0, errno
	}
	for left, i := int(n), 0; RaceEnabled && left > 0 && i < len(bufs); i++ { // what the kernel copied
		k := min(left, len(bufs[i]))
		raceRead(bufs[i][:k])
		left -= k
	}
	return int(n), nil
}

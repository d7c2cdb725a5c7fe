package sock

import (
	"golang.org/x/sys/unix"
)

// SpliceSupported says Splice and Pipe work here: splice(2) is Linux's.
const SpliceSupported = true

// PipeSize is the capacity Pipe asks for: what one Splice into the pipe
// moves at most. As aio's DefaultHighWater: what a connection may hold
// back for a slow peer by default.
const PipeSize = 256 << 10

// Pipe makes a non-blocking, close-on-exec kernel pipe for Splice, its
// capacity raised to PipeSize where the system allows. It returns the read
// and the write end and the capacity it got (64 KiB by default where
// pipe-max-size or the user's pipe pages refuse more).
func Pipe() (r, w, size int, err error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return -1, -1, 0, err
	}
	size, err = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, PipeSize)
	if err != nil {
		if size, err = unix.FcntlInt(uintptr(p[1]), unix.F_GETPIPE_SZ, 0); err != nil {
			unix.Close(p[0])
			unix.Close(p[1])
			return -1, -1, 0, err
		}
	}
	return p[0], p[1], size, nil
}

// Splice moves up to n bytes from the fd in to the fd out, one of them a
// pipe, without copying them through user space (splice(2), non-blocking,
// moving pages where it can): the bytes a socket received into a pipe, or a
// pipe's bytes out to a socket. It returns how many bytes moved: 0 from a
// socket is its EOF; EAGAIN says the source has nothing or the destination
// no room.
//
// Raw up to spliceRawMax bytes (see syscalls_linux.go), through the
// scheduler for more. No byte is copied, so a splice costs what a raw
// write of RawCopyMax bytes does at most: into a pipe, taking references
// to the pages the socket holds, at most a pipe's PipeSize; out of it to a
// socket, TCP's send path and, over loopback, the receiver's side, as a
// write has. Through the scheduler, each of a proxy's splices paid
// entersyscall/exitsyscall, and sysmon retook the loop's P during the
// longer ones (loopbench tcp-proxy, one loop: ~5% more echoes per
// CPU-second raw, near this machine's noise).
func Splice(out, in, n int) (int, error) {
	if n > spliceRawMax {
		m, err := unix.Splice(in, nil, out, nil, n, spliceFlags)
		return int(m), err
	}
	m, _, e := unix.RawSyscall6(unix.SYS_SPLICE, uintptr(in), 0, uintptr(out), 0, uintptr(n), spliceFlags)
	if e != 0 {
		return 0, e
	}
	return int(m), nil
}

// spliceFlags are Splice's: never block (the sockets' readiness is the
// loop's to wait for), and move pages rather than copy where the kernel can.
const spliceFlags = unix.SPLICE_F_NONBLOCK | unix.SPLICE_F_MOVE

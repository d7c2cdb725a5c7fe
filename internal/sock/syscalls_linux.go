//go:build linux && !386 && !s390x

package sock

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The calls below never block: the sockets are non-blocking and carry no
// SO_LINGER, so close lets the kernel finish the connection in the
// background. They are made raw, without telling the scheduler
// (unix.RawSyscall), for the same reason as poll's Wait(0): there is no P to
// hand off, and entersyscall/exitsyscall cost ~100 ns a call. A raw call
// cannot be preempted and holds its P (sysmon cannot retake it, a GC
// stop-the-world waits for it), so only calls with a short, bounded cost are
// raw: a read or write only up to RawCopyMax bytes (a few microseconds of
// copying), larger ones going through the scheduler, and a splice of up to
// a pipe's PipeSize bytes, which copies none (splice_linux.go). connect is not raw: it
// searches the ephemeral port range, tens of microseconds on a busy machine
// and milliseconds when the range is nearly used up (measured on tcp-pound,
// raw saved only the ~2.5% of process CPU that sysmon spends retaking the P
// during those searches). Nor is accept4: growing the fd table waits for an
// RCU grace period (5-24 ms measured).

// Read reads into b (read(2)): raw up to RawCopyMax bytes, through the
// scheduler for more (or for none). Its errors are read(2)'s: EAGAIN when
// nothing is there yet; 0 bytes and no error is EOF.
func Read(fd int, b []byte) (int, error) {
	if len(b) == 0 || len(b) > RawCopyMax {
		return unix.Read(fd, b)
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	raceWritten(b[:n])
	return int(n), nil
}

// Write writes b (write(2)): raw up to RawCopyMax bytes, through the
// scheduler for more (or for none). It returns how many bytes the kernel
// took; its errors are write(2)'s (EAGAIN when the socket buffer is full).
func Write(fd int, b []byte) (int, error) {
	if len(b) == 0 || len(b) > RawCopyMax {
		return unix.Write(fd, b)
	}
	n, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&b[0])),
		uintptr(len(b)))
	if e != 0 {
		return 0, e
	}
	raceRead(b[:n])
	return int(n), nil
}

// SetsockoptInt sets an integer socket option (setsockopt(2)). Raw.
func SetsockoptInt(fd, level, opt, value int) error {
	v := int32(value)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&v)), 4, 0)
	if e != 0 {
		return e
	}
	return nil
}

// SocketError returns the socket's pending error (getsockopt SO_ERROR; 0
// for none), clearing it. err is getsockopt's own failure. Raw.
func SocketError(fd int) (int, error) {
	var v int32
	n := uint32(4)
	_, _, e := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_ERROR,
		uintptr(unsafe.Pointer(&v)), uintptr(unsafe.Pointer(&n)), 0)
	if e != 0 {
		return 0, e
	}
	return int(v), nil
}

// Connect starts connecting fd to ap (connect(2)): EINPROGRESS while the
// handshake goes on (the socket turns writable when it ends, and
// SocketError says how), nil if it completed at once, or the errno. Not raw
// (see above); made here only to skip building a unix.Sockaddr.
func Connect(fd int, ap netip.AddrPort) error { return connect(fd, ap, false) }

// ConnectAgain asks a socket that Connect left connecting whether it is
// connected yet: nil or EISCONN, still connecting: EALREADY (or
// EINPROGRESS), or the connect's error. Raw: the port is chosen already, and
// a non-blocking socket in that state answers at once, without waiting or
// searching.
func ConnectAgain(fd int, ap netip.AddrPort) error { return connect(fd, ap, true) }

// connect is Connect, or ConnectAgain if again.
func connect(fd int, ap netip.AddrPort, again bool) error {
	var rsa unix.RawSockaddrAny
	n := rawSockaddr(&rsa, ap)
	var e unix.Errno
	if again {
		_, _, e = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
			uintptr(n))
	} else {
		_, _, e = unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
			uintptr(n))
	}
	if e != 0 {
		return e
	}
	return nil
}

// Close closes a socket fd (close(2)). Raw: without SO_LINGER close never
// blocks (see above).
func Close(fd int) error {
	_, _, e := unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// rawSockaddr fills rsa with ap and returns its length.
func rawSockaddr(rsa *unix.RawSockaddrAny, ap netip.AddrPort) uint32 {
	ip := ap.Addr()
	port := ap.Port()
	if ip.Is4() {
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		sa.Family = unix.AF_INET
		sa.Port = netPort(port)
		sa.Addr = ip.As4()
		return unix.SizeofSockaddrInet4
	}
	sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
	sa.Family = unix.AF_INET6
	sa.Port = netPort(port)
	sa.Addr = ip.As16()
	sa.Scope_id = zoneID(ip)
	return unix.SizeofSockaddrInet6
}

// writevRawMax is RawCopyMax for writev.
const writevRawMax = RawCopyMax

// spliceRawMax is the most a raw Splice asks to move: a whole pipe (see
// Splice).
const spliceRawMax = PipeSize

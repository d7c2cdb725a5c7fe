//go:build linux && !386 && !s390x

package sock

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux accept4 and getsockname are called directly: golang.org/x/sys
// follows both with a getsockopt(SO_PROTOCOL) on every IPv4 socket (to tell
// L2TP sockets apart), one system call per connection for nothing here.
// getsockname is raw (see syscalls_linux.go); accept4 is not: the new fd
// may not fit the fd table, and growing it waits for an RCU grace period
// (expand_fdtable), milliseconds during which a raw call would hold the P.

// Accept accepts a connection on the listening socket fd as a
// non-blocking, close-on-exec fd and returns it with the peer's address.
// Its errors are accept4(2)'s (EAGAIN when nothing is pending). Through the
// scheduler (see above).
func Accept(fd int) (nfd int, peer netip.AddrPort, err error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	r, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&n)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	return int(r), rawAddrPort(&rsa), nil
}

// LocalAddr returns the address fd is bound to (getsockname(2)). Raw (see
// above).
func LocalAddr(fd int) (netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return netip.AddrPort{}, e
	}
	return rawAddrPort(&rsa), nil
}

// rawAddrPort converts an IPv4 or IPv6 socket address (the zero AddrPort for
// any other family).
func rawAddrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), netPort(sa.Port))
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		ip := withZone(netip.AddrFrom16(sa.Addr), sa.Scope_id).Unmap()
		return netip.AddrPortFrom(ip, netPort(sa.Port))
	}
	return netip.AddrPort{}
}

// netPort converts a port in network byte order.
func netPort(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

//go:build linux && !386 && !s390x

package aio

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Linux accept4 and getsockname are called directly: golang.org/x/sys
// follows both with a getsockopt(SO_PROTOCOL) on every IPv4 socket (to tell
// L2TP sockets apart), one system call per connection for nothing here.
// getsockname is raw (see tcp_syscalls_linux.go); accept4 is not: the new fd
// may not fit the fd table, and growing it waits for an RCU grace period
// (expand_fdtable), milliseconds during which a raw call would hold the P.

// sysAccept accepts a connection as a non-blocking, close-on-exec fd and
// returns the peer's address.
func sysAccept(fd int) (int, netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	nfd, _, e := unix.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&n)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, netip.AddrPort{}, e
	}
	return int(nfd), rawAddrPort(&rsa), nil
}

// localAddr returns the address fd is bound to.
func localAddr(fd int) (netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
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
		return netip.AddrPortFrom(withZone(netip.AddrFrom16(sa.Addr), sa.Scope_id).Unmap(), netPort(sa.Port))
	}
	return netip.AddrPort{}
}

// netPort converts a port in network byte order.
func netPort(p uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return uint16(b[0])<<8 | uint16(b[1])
}

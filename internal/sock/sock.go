// Package sock is the socket system-call layer under aio's TCP: the calls a
// loop makes on its non-blocking sockets, each in the variant that suits the
// platform (accept4 or accept under ForkLock, a raw writev or libc's, the
// keep-alive options each system names its own way), with scratch memory
// passed in by the caller. It plays the role of Go's internal/poll under net,
// or of libuv's src/unix/ under its streams: policy (what to do on EAGAIN, a
// reset, a full fd table) stays in aio.
//
// Raw calls and the scheduler. On Linux (except 386 and s390x) the calls
// that never block and cost a bounded few microseconds are made raw
// (unix.RawSyscall), without telling the scheduler: a loop goroutine has no
// P worth handing off, and entersyscall/exitsyscall cost ~100 ns a call. The
// others go through the scheduler (unix.Syscall): connect (searching the
// ephemeral port range), accept4 (growing the fd table), reads and
// writes of more than RawCopyMax bytes, and splices of more than a pipe. syscalls_linux.go gives the
// measurements; each function's comment says which kind it is. Elsewhere
// every call goes through golang.org/x/sys as usual.
//
// Every function takes a socket fd the caller owns and is safe on any
// goroutine the caller's ownership allows (aio calls them on the loop that
// owns the fd). Errors are the bare unix.Errno (or x/sys's error) of the
// failing call, for the caller to classify and wrap.
package sock

import (
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// RawCopyMax is the most a raw read or write copies (where they are raw): a
// few microseconds of copying. It is aio's ReadBufferSize, so that a read
// into a loop's whole read buffer is raw.
const RawCopyMax = 64 << 10

// Sockaddr converts ap to a socket address and its address family
// (AF_INET for an IPv4 address, AF_INET6 otherwise, with ap's numeric zone
// as the scope id).
func Sockaddr(ap netip.AddrPort) (unix.Sockaddr, int) {
	ip := ap.Addr()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}, unix.AF_INET
	}
	sa := &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16(), ZoneId: zoneID(ip)}
	return sa, unix.AF_INET6
}

// Family is the socket family for ap: AF_INET or AF_INET6.
func Family(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// zoneID is the numeric zone of an IPv6 address (0 for none, or for a zone
// that is not a number: aio refuses those before they get here).
func zoneID(ip netip.Addr) uint32 {
	id, _ := strconv.ParseUint(ip.Zone(), 10, 32)
	return uint32(id)
}

// AddrPortOf converts a socket address to an AddrPort (the zero AddrPort
// for anything but IPv4 and IPv6). An IPv4-mapped IPv6 address is unmapped.
func AddrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		ip := withZone(netip.AddrFrom16(sa.Addr), sa.ZoneId).Unmap()
		return netip.AddrPortFrom(ip, uint16(sa.Port))
	}
	return netip.AddrPort{}
}

// withZone gives ip the numeric zone id, if not 0.
func withZone(ip netip.Addr, id uint32) netip.Addr {
	if id == 0 {
		return ip
	}
	return ip.WithZone(strconv.FormatUint(uint64(id), 10))
}

// xLocalAddr returns the address fd is bound to, through golang.org/x/sys
// (see LocalAddr).
func xLocalAddr(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return AddrPortOf(sa), nil
}

// MaxKeepAlive is the longest keep-alive idle time and probe interval
// SetKeepAlive sets: Linux refuses more than 32767 seconds (EINVAL), and a
// longer d is taken to mean this much rather than failing.
const MaxKeepAlive = 32767 * time.Second

// keepAliveSecs is d in whole seconds, rounded up, from 1 to MaxKeepAlive's,
// without overflowing for any d.
func keepAliveSecs(d time.Duration) int {
	d = min(d, MaxKeepAlive)
	secs := d / time.Second
	if d%time.Second != 0 {
		secs++
	}
	return max(int(secs), 1)
}

// SetKeepAlive turns TCP keep-alive on fd on (SO_KEEPALIVE) with d as the
// idle time before the first probe and the interval between probes, in
// whole seconds, rounded up, from 1 to MaxKeepAlive (where the platform lets
// them be set per socket; openbsd keeps its system-wide timers), or off for
// d <= 0. The timers are set before keep-alive is turned on, so a failure
// leaves it as it was. The error names the option that failed and wraps the
// errno. Through the scheduler (x/sys).
func SetKeepAlive(fd int, d time.Duration) error {
	if d <= 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 0); err != nil {
			return fmt.Errorf("setsockopt SO_KEEPALIVE: %w", err)
		}
		return nil
	}
	if err := setKeepAliveTimes(fd, d); err != nil {
		return fmt.Errorf("setsockopt keep-alive times: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1); err != nil {
		return fmt.Errorf("setsockopt SO_KEEPALIVE: %w", err)
	}
	return nil
}

// SetResetOnClose makes close(2) of fd reset the connection (SO_LINGER on
// with a zero timeout): the peer gets RST, not FIN, and what the kernel
// still holds is dropped. Through the scheduler (x/sys).
func SetResetOnClose(fd int) error {
	return unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
}

// Dup duplicates fd as a close-on-exec fd (fcntl F_DUPFD_CLOEXEC, atomic:
// no fork can inherit it in between). The copy shares the open socket
// with fd: its options and file status flags (O_NONBLOCK) are the same
// socket's. Through the scheduler (x/sys).
func Dup(fd int) (int, error) { return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) }

// PeerAddr returns the address of fd's peer (getpeername(2)): ENOTCONN for
// a socket that is not connected. Through the scheduler (x/sys).
func PeerAddr(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getpeername(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return AddrPortOf(sa), nil
}

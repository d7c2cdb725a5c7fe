package aio

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"
)

// splitAddr parses "host:port" for Listen (listen) or Dial. The port must be a
// number. The host may be an IP literal (IPv6 in brackets, with a numeric
// zone if any), "localhost" (127.0.0.1) or empty (Listen: 0.0.0.0, every IPv4
// interface; Dial: 127.0.0.1). Any other host is returned in name, for Dial to
// resolve off the loop; Listen refuses it.
func splitAddr(addr string, listen bool) (ap netip.AddrPort, name string, err error) {
	// The common case, an IP literal without a zone, in one parse.
	if ap, err := netip.ParseAddrPort(addr); err == nil && ap.Addr().Zone() == "" {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), "", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ap, "", err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return ap, "", fmt.Errorf("port %q: not a number from 0 to 65535", port)
	}
	var ip netip.Addr
	switch host {
	case "":
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		if listen {
			ip = netip.IPv4Unspecified()
		}
	case "localhost":
		ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	default:
		ip, err = netip.ParseAddr(host)
		if err != nil {
			if listen {
				return ap, "", fmt.Errorf("host %q: not an IP address (resolve names before Listen)", host)
			}
			return netip.AddrPortFrom(netip.Addr{}, uint16(p)), host, nil // the port, for after resolving
		}
		if z := ip.Zone(); z != "" {
			if _, err := strconv.ParseUint(z, 10, 32); err != nil {
				return ap, "", fmt.Errorf("zone %q: only numeric zones are supported", z)
			}
		}
		ip = ip.Unmap()
	}
	return netip.AddrPortFrom(ip, uint16(p)), "", nil
}

// sockaddrOf converts ap to a socket address and its address family.
func sockaddrOf(ap netip.AddrPort) (unix.Sockaddr, int) {
	ip := ap.Addr()
	if ip.Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ip.As4()}, unix.AF_INET
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ip.As16(), ZoneId: zoneID(ip)}, unix.AF_INET6
}

// familyOf is the socket family for ap: AF_INET or AF_INET6.
func familyOf(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// zoneID is the numeric zone of an IPv6 address (0 for none). splitAddr has
// refused every zone that is not a number.
func zoneID(ip netip.Addr) uint32 {
	id, _ := strconv.ParseUint(ip.Zone(), 10, 32)
	return uint32(id)
}

// addrPortOf converts a socket address to an AddrPort (the zero AddrPort for
// anything but IPv4 and IPv6).
func addrPortOf(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(withZone(netip.AddrFrom16(sa.Addr), sa.ZoneId).Unmap(), uint16(sa.Port))
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

// sockLocalAddr returns the address fd is bound to, through
// golang.org/x/sys (see localAddr).
func sockLocalAddr(fd int) (netip.AddrPort, error) {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return addrPortOf(sa), nil
}

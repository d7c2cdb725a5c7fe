package aio

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
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
		return ap, "", invalid(err.Error(), err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return ap, "", invalid(fmt.Sprintf("port %q: not a number from 0 to 65535", port))
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
				return ap, "", invalid(fmt.Sprintf("host %q: not an IP address (resolve names before Listen)", host))
			}
			return netip.AddrPortFrom(netip.Addr{}, uint16(p)), host, nil // the port, for after resolving
		}
		if err := checkZone(ip); err != nil {
			return ap, "", err
		}
		ip = ip.Unmap()
	}
	return netip.AddrPortFrom(ip, uint16(p)), "", nil
}

// checkZone refuses an IPv6 zone that is not numeric (an interface index):
// a name would have to be looked up, and sock.Sockaddr takes only numbers.
func checkZone(ip netip.Addr) error {
	if z := ip.Zone(); z != "" {
		if _, err := strconv.ParseUint(z, 10, 32); err != nil {
			return invalid(fmt.Sprintf("zone %q: only numeric zones are supported", z))
		}
	}
	return nil
}

// Package portcheck makes sure that an example server about to listen on a
// port with SO_REUSEPORT (one listener per loop, which the kernel spreads
// connections over) is the only one there: SO_REUSEPORT would let a second
// process of the same user bind the port too, silently, and take a share of
// its connections, where a server started twice by mistake should fail with
// "address already in use".
//
// The check narrows the window, it does not close it: it holds nothing, so
// two instances started at the same moment may both pass it before either
// binds (SO_REUSEPORT must be set before the first bind, so no listener can
// both take the port alone and be joined by the loops' others).
package portcheck

import (
	"net"
	"net/netip"
	"strconv"
)

// Free returns the error of a plain listen (no SO_REUSEPORT) on what
// aio.Listen binds for addr, which fails while anything listens there, and
// closes that listener at once. An empty host is 0.0.0.0, IPv4 only, as
// aio binds it (package net would make a dual-stack socket, which an IPv6
// listener alone would make busy). Nothing is checked for a port of 0
// (the server's listen picks a free one), nor for an address aio.Listen
// refuses (malformed, a host name but localhost, a service name for the
// port): its own error says why, with no DNS lookup first.
func Free(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	if n, err := strconv.Atoi(port); err != nil || n == 0 {
		return nil
	}
	network := "tcp4"
	switch ip, err := netip.ParseAddr(host); {
	case host == "":
		addr = net.JoinHostPort("0.0.0.0", port)
	case host == "localhost":
		addr = net.JoinHostPort("127.0.0.1", port)
	case err != nil:
		return nil
	case ip.Is6() && !ip.Is4In6():
		network = "tcp6"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

// Package portcheck makes sure that an example server about to listen on a
// port with SO_REUSEPORT (one listener per loop, which the kernel spreads
// connections over) is the only one there: SO_REUSEPORT would let a second
// process of the same user bind the port too, silently, and take a share of
// its connections, where a server started twice by mistake should fail with
// "address already in use".
package portcheck

import "net"

// Free returns the error of a plain listen on addr (no SO_REUSEPORT), which
// fails while anything listens on its port, and closes that listener at
// once. An address whose port is 0 picks a free port when the server listens:
// nothing to check. A malformed address is left to the server's own listen
// to report.
func Free(addr string) error {
	if _, port, err := net.SplitHostPort(addr); err != nil || port == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}

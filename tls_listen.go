package aio

import "errors"

// serveTLS starts the handshake of c, just accepted by a TLS listener; the
// accept callback gets c once it ended well. On the loop.
func (ln *Listener) serveTLS(c *Conn) {
	c.startTLS(ln.cfg.TLS, true, ln.cfg.HandshakeTimeout, func(t *tlsConn, err error) {
		if err != nil { // closed, and counted
			if f := ln.cfg.OnHandshakeError; f != nil {
				// The peer's address comes apart: without ended's
				// wrapping, which names it, as the cause.
				f(c.raddr, errors.Unwrap(err))
			}
			return
		}
		ln.deliver(c)
		// The Finished may have come with application data: deliver it
		// once the callback set a reader.
		if c.state == connOpen && c.reading() {
			t.pump()
		}
	})
}

package aio

import (
	"crypto/tls"
	"errors"
)

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

// notTLSReply is the plaintext reply of the listener that accepted t's
// connection (ListenConfig.NotTLS) to err, its failed handshake's error,
// or nil. crypto/tls gives the header with the conn it read from (before
// detachConn clears it) only for a first record that is not TLS at all,
// which is when a plaintext reply may be understood (as net/http
// checks). On the loop.
func (t *tlsConn) notTLSReply(err error) []byte {
	ln := t.c.ln
	if ln == nil || ln.cfg.NotTLS == nil {
		return nil // a dial's or an adoption's handshake, or no reply
	}
	rh, ok := err.(tls.RecordHeaderError)
	if !ok || rh.Conn == nil {
		return nil
	}
	return ln.cfg.NotTLS(rh.RecordHeader)
}

// answerPlain ends c, whose handshake failed on a first record that is
// not TLS, with reply: c is a plain connection from here on (crypto/tls
// wrote nothing and is done), which writes reply and closes as a
// draining connection does, with a lingering close (drainIdle): FIN once
// the reply is flushed, then what the client still sends (the rest of
// its request, already buffered in the handshake's input or not) is
// dropped until its EOF or ConnConfig.Linger. A close with unread bytes
// would send a reset, which can destroy the reply before the client read
// it. On the loop.
func (c *Conn) answerPlain(reply []byte) {
	c.tls = nil
	// Counted as Conn.drain counts (closeWith takes it back): a Listener.Drain
	// or Runtime.Shutdown meanwhile has nothing to add, and waits for it.
	c.draining = true
	c.tl.draining++
	if _, err := c.write(reply, false); err != nil || c.state != connOpen {
		return // an error closed it
	}
	c.drainIdle()
}

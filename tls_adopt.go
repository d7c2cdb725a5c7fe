package aio

import (
	"crypto/tls"
	"fmt"
	"syscall"
	"time"
)

// AdoptTLSConfig holds the options of AdoptTLSConn: a Conn's, and the TLS
// ones of ListenConfig and Dialer, with the side of the handshake this end
// plays.
type AdoptTLSConfig struct {
	// Conn is applied to the connection, as AdoptConn's cfg.
	Conn ConnConfig
	// TLS is the connection's TLS configuration; nil is an error. Share
	// one Config across connections so that sessions resume; do not
	// change it once passed. A client's ServerName, when empty, is the
	// peer's IP address, with InsecureSkipVerify too: it is not sent as
	// SNI (crypto/tls sends no IP address there), but verifies the
	// certificate and keys the cached sessions (tls.Client keys them by
	// the address with its port). Renegotiation stays off, as for
	// Dialer.TLS.
	TLS *tls.Config
	// Server makes this end the TLS server; false makes it the client.
	// Both occur, and the socket cannot tell which: an adopted
	// connection was accepted by someone else (inetd, systemd's
	// Accept=yes, a parent that accepted with package net) and serves,
	// or was dialed elsewhere (a tunnel set up with package net, a
	// protocol that starts in plaintext and upgrades) and is a client.
	// The role is the protocol's, not the socket's, so the caller says.
	Server bool
	// HandshakeTimeout bounds the handshake, from the adoption: the
	// handle fails with an error, naming the peer's address, for which
	// errors.Is(err, ErrHandshakeTimeout) (and so ErrTimeout) holds. 0
	// means DefaultHandshakeTimeout; negative means none.
	HandshakeTimeout time.Duration
}

// AdoptTLSConn adopts fd, a connected TCP socket made elsewhere, as
// AdoptConn does, and runs a TLS handshake on it (as a server or a client,
// cfg.Server says) on the loop. The returned error is AdoptConn's (fd was
// refused and is still the caller's) or a nil cfg.TLS; without one, the
// Conn owns fd from then on, and the handle completes with it once the
// handshake ended well: its reads and writes are plaintext (see Conn.TLS),
// and, as with Dial, the program sees it only then. A handshake that
// fails, times out, or whose handle is cancelled closes the Conn (and fd),
// and the handle fails; Stats count it in TCPAdopted and, as any
// handshake, TLSHandshakes or TLSHandshakeErrors. Any goroutine.
func AdoptTLSConn(l *Loop, fd int, cfg AdoptTLSConfig) (*Handle[*Conn], error) {
	if cfg.TLS == nil {
		return nil, fmt.Errorf("%w: adopt tls fd %d: nil TLS config", ErrInvalidArgument, fd)
	}
	c, err := AdoptConn(l, fd, cfg.Conn)
	if err != nil {
		return nil, err
	}
	return adoptTLS(c, cfg), nil
}

// AdoptTLSConnFrom is AdoptTLSConn of a duplicate of from's socket, with
// AdoptConnFrom's ownership: the duplicate is aio's, from stays the
// caller's to close and must not be read or written any more. On error
// nothing is left open. Any goroutine.
func AdoptTLSConnFrom(l *Loop, from syscall.Conn, cfg AdoptTLSConfig) (*Handle[*Conn], error) {
	if cfg.TLS == nil {
		return nil, fmt.Errorf("%w: adopt tls: nil TLS config", ErrInvalidArgument)
	}
	c, err := AdoptConnFrom(l, from, cfg.Conn)
	if err != nil {
		return nil, err
	}
	return adoptTLS(c, cfg), nil
}

// adoptTLS runs the handshake of c, just adopted, in a Do coroutine
// bounded by the timeout, and returns the handle that gives c once it
// ended well. Any goroutine.
func adoptTLS(c *Conn, cfg AdoptTLSConfig) *Handle[*Conn] {
	tcfg := cfg.TLS
	if !cfg.Server {
		tcfg = clientConfig(tcfg, c.raddr.String())
	}
	h := Do(c.l, func(co *Co) (*Conn, error) {
		t := c.setupTLS(tcfg, cfg.Server)
		_, err := t.handshake(co)
		if err = t.ended(err); err != nil {
			return nil, err
		}
		co.core.rareFields().relConn = c // as a TLS dial's (see dialTLS)
		return c, nil
	})
	h = handshakeWithin(h, cfg.HandshakeTimeout, c.raddr.String())
	h.watch(&adoptTLSEnd{c: c, h: h})
	return h
}

// adoptTLSEnd closes an adopted connection whose handshake handle failed
// without closing it: cancelled or timed out before its body ran, or
// between the handshake's end and the handle's. Owned by the loop.
type adoptTLSEnd struct {
	c *Conn
	h *Handle[*Conn]
}

func (a *adoptTLSEnd) inputDone() {
	c := a.c
	if _, err := a.h.Result(); err != nil && c.state == connOpen {
		if c.tls == nil {
			c.tl.tlsFailed.Add(1) // never started: a failed handshake still
		}
		c.closeWith(err)
	}
}

package aio

import (
	"context"
	"crypto/tls"
	"net"
)

// dialTLS is the TLS client's part of Dial: a Do whose body awaits the
// connection (dialing, h) and then runs the handshake itself, so that
// cancelling the handle withdraws from the dial or ends the handshake at
// its next read, and the connection is the program's only once the
// handshake ended well. ctx (nil for none), done before the handshake
// ended, closes the connection and fails the handle with ctx's error.
// Any goroutine.
func dialTLS(ctx context.Context, l *Loop, addr string, h *Handle[*Conn], d *Dialer) *Handle[*Conn] {
	cfg := clientConfig(d.TLS, addr)
	hs := Do(l, func(co *Co) (*Conn, error) {
		c, err := Await(co, h)
		if err != nil {
			if v, e := h.Result(); e == nil && v != nil {
				v.closeWith(ErrCancelled) // established as the Await was cancelled
			}
			return nil, err
		}
		t := c.setupTLS(cfg, false)
		if ctx != nil && ctx.Done() != nil {
			stop := context.AfterFunc(ctx, func() {
				l.runLater(func() {
					if !t.done {
						c.closeWith(ctxError(ctx))
					}
				})
			})
			defer stop()
		}
		_, err = t.handshake(co)
		if ctx != nil && err != nil && ctx.Err() != nil {
			err = ctxError(ctx) // the handshake's: ended names it, and the peer
		}
		if err = t.ended(err); err != nil {
			return nil, err
		}
		// Closed if every dependent declines it, or if the handle was
		// cancelled as the body returned (see releaseUnwanted).
		co.core.rareFields().relConn = c
		return c, nil
	})
	// The dial's own time counts too: the timeout bounds the whole.
	return handshakeWithin(hs, d.HandshakeTimeout, addr)
}

// clientConfig returns the Config a client dials addr with: cfg, or a
// copy with ServerName taken from addr's host (as tls.Dial does) and
// renegotiation off (a renegotiation would run a handshake inside a read
// on the loop).
func clientConfig(cfg *tls.Config, addr string) *tls.Config {
	needName := cfg.ServerName == "" // with InsecureSkipVerify too: the name is also SNI
	if !needName && cfg.Renegotiation == tls.RenegotiateNever {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.Renegotiation = tls.RenegotiateNever
	if needName {
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	return cfg
}

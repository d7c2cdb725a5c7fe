package httpd

import "crypto/tls"

// HTTPS: Config.Listen.TLS serves TLS with the standard crypto/tls on the
// loops (aio's ListenConfig.TLS): a connection reaches the engines once
// its handshake ended, in plaintext. ALPN offers h2, http/1.1 and
// http/1.0 (as nginx does: curl --http1.0 offers only that one) unless
// the config lists protocols itself; a client that negotiated h2 opens
// with the HTTP/2 client preface, which hands the connection to the HTTP/2
// engine as on a cleartext connection (h2conn.go's startH2), and any other
// is served HTTP/1.1. A client that speaks plaintext HTTP to it gets
// net/http's plaintext 400 (notTLS).

// alpnProtos is what the server offers by ALPN when its TLS config lists
// nothing.
var alpnProtos = []string{"h2", "http/1.1", "http/1.0"}

// withALPN returns cfg, or a copy that offers alpnProtos when cfg offers
// no protocol.
func withALPN(cfg *tls.Config) *tls.Config {
	if cfg == nil || len(cfg.NextProtos) > 0 {
		return cfg
	}
	cfg = cfg.Clone()
	cfg.NextProtos = alpnProtos
	return cfg
}

// notHTTPS is net/http's answer to plaintext HTTP sent to an HTTPS
// server, word for word: clients and scripts that look for it find it.
var notHTTPS = []byte("HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")

// notTLS is the listeners' ListenConfig.NotTLS unless the config sets
// one: notHTTPS to a first record whose head looks like an HTTP request
// (the heads net/http's server recognises), nothing to anything else,
// which closes in silence. On the loop; aio copies the reply.
func notTLS(head [5]byte) []byte {
	switch string(head[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO":
		return notHTTPS
	}
	return nil
}

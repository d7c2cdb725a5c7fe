package httpd

import "crypto/tls"

// HTTPS: Config.Listen.TLS serves TLS with the standard crypto/tls on the
// loops (aio's ListenConfig.TLS): a connection reaches the engines once
// its handshake ended, in plaintext. ALPN offers h2 and http/1.1 unless
// the config lists protocols itself; a client that negotiated h2 opens
// with the HTTP/2 client preface, which hands the connection to the HTTP/2
// engine as on a cleartext connection (h2conn.go's startH2), and any other
// is served HTTP/1.1.

// alpnProtos is what the server offers by ALPN when its TLS config lists
// nothing.
var alpnProtos = []string{"h2", "http/1.1"}

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

package main

import (
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/valkyria/aio/internal/selfsigned"
)

// tlsConfig returns the server's TLS config for the -tls flags, nil for
// none: the certificate and key files, or a self-signed certificate made
// now (for localhost, 127.0.0.1 and ::1) whose SHA-256 fingerprint is
// logged, so that a client can pin it (curl -k does not check it).
func tlsConfig(o options) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case o.tlsSelfSigned && (o.tlsCert != "" || o.tlsKey != ""):
		return nil, errors.New("-tls-self-signed excludes -tls-cert and -tls-key")
	case o.tlsSelfSigned:
		cert, _, err = selfsigned.Cert("localhost")
		if err != nil {
			return nil, fmt.Errorf("-tls-self-signed: %w", err)
		}
		log.Printf("self-signed certificate for localhost, SHA-256 fingerprint %s", fingerprint(cert.Certificate[0]))
	case o.tlsCert != "" && o.tlsKey != "":
		cert, err = tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
	case o.tlsCert != "" || o.tlsKey != "":
		return nil, errors.New("-tls-cert and -tls-key go together")
	default:
		return nil, nil
	}
	// httpd offers h2, http/1.1 and http/1.0 by ALPN.
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

// fingerprint is der's SHA-256 as colon-separated hex, as openssl prints it.
func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	hex := make([]string, len(sum))
	for i, b := range sum {
		hex[i] = fmt.Sprintf("%02X", b)
	}
	return strings.Join(hex, ":")
}

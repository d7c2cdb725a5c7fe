package aio_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/valkyria/aio"
)

// A TLS server that logs why handshakes fail, as net/http's does through
// Server.ErrorLog: here a client that speaks plaintext HTTP to it.
func ExampleListenConfig_onHandshakeError() {
	rt, l := start()
	defer stop(rt)
	cert, _ := exampleCert("localhost")

	failed := make(chan error, 1)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		OnHandshakeError: func(peer netip.AddrPort, err error) {
			// On the loop: log, count, never block. Here peer is the
			// client's address, 127.0.0.1 and an ephemeral port.
			fmt.Println("TLS handshake error from", peer.Addr(), ":", err)
			failed <- err
		},
	}, func(c *aio.Conn) { c.Close() })
	if err != nil {
		panic(err)
	}

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
	var rh tls.RecordHeaderError
	fmt.Println("record header error:", errors.As(<-failed, &rh))
	// Output:
	// TLS handshake error from 127.0.0.1 : tls: first record does not look like a TLS handshake
	// record header error: true
}

package aio_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/valkyria/aio"
)

// A connection dialed with package net (a tunnel, say) is adopted as a
// TLS client: the handle gives the Conn once its handshake ended, and its
// reads and writes are plaintext.
func ExampleAdoptTLSConn() {
	rt, l := start()
	defer stop(rt)
	cert, roots := exampleCert("localhost")

	server := &tls.Config{Certificates: []tls.Certificate{cert}}
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{TLS: server}, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) { _, _ = c.Write(b) })
	})
	if err != nil {
		panic(err)
	}

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	client := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	conn, err := aio.AdoptTLSConnFrom(l, nc.(*net.TCPConn), aio.AdoptTLSConfig{TLS: client})
	nc.Close() // aio has its own duplicate of the socket
	if err != nil {
		panic(err)
	}
	fmt.Println(echoHello(l, conn).Wait(context.Background()))
	// Output:
	// hello <nil>
}

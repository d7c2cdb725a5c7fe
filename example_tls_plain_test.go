package aio_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"

	"github.com/valkyria/aio"
)

// A TLS server that answers a client speaking plaintext HTTP to it with
// a plaintext 400, as net/http does, instead of closing in silence.
func ExampleListenConfig_notTLS() {
	rt, l := start()
	defer stop(rt)
	cert, _ := exampleCert("localhost")

	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}},
		NotTLS: func(head [5]byte) []byte {
			// On the loop: head is the first 5 bytes the client sent.
			if string(head[:]) == "GET /" {
				return []byte("HTTP/1.0 400 Bad Request\r\n\r\nThis is an HTTPS server.\n")
			}
			return nil // anything else: closed with nothing written
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
	reply, err := io.ReadAll(nc) // the reply, then the server's FIN
	fmt.Printf("%q %v\n", reply, err)
	// Output:
	// "HTTP/1.0 400 Bad Request\r\n\r\nThis is an HTTPS server.\n" <nil>
}

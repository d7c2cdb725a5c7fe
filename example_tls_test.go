package aio_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/valkyria/aio"
)

// A TLS echo server and a TLS client on one loop, with the standard
// crypto/tls and no goroutine per connection: the accept callback gets
// the connection once its handshake ended, with ALPN's choice in
// Conn.TLS, and the reads and writes are plaintext.
func ExampleListenConfig_tls() {
	rt, l := start()
	defer stop(rt)
	cert, roots := exampleCert("localhost")

	server := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{TLS: server}, func(c *aio.Conn) {
		st, _ := c.TLS()
		fmt.Println("server: ALPN", st.NegotiatedProtocol)
		_ = c.OnRead(func(c *aio.Conn, b []byte) { _, _ = c.Write(b) })
	})
	if err != nil {
		panic(err)
	}

	client := &tls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"h2"}}
	conn := (&aio.Dialer{TLS: client}).Dial(l, ln.Addr().String())
	fmt.Println(echoHello(l, conn).Wait(context.Background()))
	// Output:
	// server: ALPN h2
	// hello <nil>
}

// echoHello writes "hello" on the connection conn gives, and returns the
// handle of the echo it reads back; then the connection ends.
func echoHello(l *aio.Loop, conn *aio.Handle[*aio.Conn]) *aio.Handle[string] {
	reply := aio.NewPromise[string](l)
	aio.Then(conn, func(c *aio.Conn) (struct{}, error) {
		var got strings.Builder
		_ = c.OnRead(func(c *aio.Conn, b []byte) {
			got.Write(b)
			if got.Len() == len("hello") {
				reply.Resolve(got.String())
				c.Close() // close_notify (nothing is queued), then FIN
			}
		})
		_, err := c.Write([]byte("hello"))
		return struct{}{}, err
	})
	return reply.Handle()
}

// exampleCert makes a self-signed certificate for name and a pool that
// trusts it.
func exampleCert(name string) (tls.Certificate, *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		DNSNames:     []string{name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, roots
}

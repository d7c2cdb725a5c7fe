package aio

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/selfsigned"
)

// testCert makes a self-signed certificate for names (and 127.0.0.1),
// generated in the test: no files.
func testCert(t testing.TB, names ...string) tls.Certificate {
	t.Helper()
	cert, _, err := selfsigned.Cert(names...)
	require.NoError(t, err)
	return cert
}

var (
	testTLSOnce sync.Once
	testTLSCert tls.Certificate
)

// tlsConfigs returns a server config with a certificate for localhost and
// a client config that trusts it (the certificate is made once per run:
// key generation is the slow part).
func tlsConfigs(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	testTLSOnce.Do(func() { testTLSCert = testCert(t, "localhost") })
	pool := x509.NewCertPool()
	pool.AddCert(testTLSCert.Leaf)
	server = &tls.Config{Certificates: []tls.Certificate{testTLSCert}}
	client = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	return server, client
}

// tlsEchoListen listens on 127.0.0.1 with a TLS echo server.
func tlsEchoListen(t *testing.T, l *Loop, cfg ListenConfig) *Listener {
	t.Helper()
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	return ln
}

// tlsDial connects to ln with crypto/tls's client and completes the
// handshake, with a deadline bounding the test's reads and writes.
func tlsDial(t *testing.T, ln *Listener, cfg *tls.Config) *tls.Conn {
	t.Helper()
	nc := netDial(t, ln)
	tc := tls.Client(nc, cfg)
	require.NoError(t, tc.Handshake())
	return tc
}

// byteConn writes what it is given one byte per write, so that the peer
// reads records a byte at a time.
type byteConn struct{ net.Conn }

func (b byteConn) Write(p []byte) (int, error) {
	for i := range p {
		if _, err := b.Conn.Write(p[i : i+1]); err != nil {
			return i, err
		}
	}
	return len(p), nil
}

// recordConn keeps the bytes it read, to tell the TLS records they held.
type recordConn struct {
	net.Conn
	mu  sync.Mutex
	all []byte
}

func (r *recordConn) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.all = append(r.all, p[:n]...)
	r.mu.Unlock()
	return n, err
}

// recordTypes returns the content types of the whole records read.
func (r *recordConn) recordTypes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	var types []byte
	for b := r.all; len(b) >= 5; {
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if len(b) < n {
			break
		}
		types = append(types, b[0])
		b = b[n:]
	}
	return types
}

// stalledClient listens on l with a TLS echo server and connects a client
// that sends the start of a record header and no more: the server's
// handshake waits for it.
func stalledClient(t *testing.T, l *Loop) (*Listener, net.Conn) {
	t.Helper()
	scfg, _ := tlsConfigs(t)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	nc := netDial(t, ln)
	_, err := nc.Write([]byte{22, 3, 1})
	require.NoError(t, err)
	// Read by the server: closing then sends a FIN, not a reset for
	// unread bytes.
	eventually(t, func() bool { s := l.Stats(); return s.TCPOpen == 1 && s.TCPBytesIn == 3 }, "not accepted and read")
	return ln, nc
}

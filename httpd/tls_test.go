package httpd

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/selfsigned"
	"golang.org/x/net/http2"
)

// tlsServer serves a handler that answers with the request's protocol over
// TLS, with a certificate made in the test; it returns the server and a
// pool that trusts the certificate.
func tlsServer(t *testing.T) (*testServer, *x509.CertPool) {
	t.Helper()
	cert, pool, err := selfsigned.Cert("localhost")
	require.NoError(t, err)
	cfg := Config{Listen: aio.ListenConfig{TLS: &tls.Config{
		Certificates: []tls.Certificate{cert},
	}}, H2CUpgrade: true} // which TLS ignores: h2c is for cleartext
	ts := startServer(t, HandlerFunc(func(r *Request) Reply { return Text(200, r.Proto()) }), cfg)
	ts.url = "https://" + ts.addr
	return ts, pool
}

// TestTLSALPN: net/http's client gets HTTP/1.1 without h2 and HTTP/2 when
// it offers h2 by ALPN, over the loop's TLS.
func TestTLSALPN(t *testing.T) {
	ts, pool := tlsServer(t)
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: h2}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: waitTimeout}
		for range 3 { // one connection, reused
			req, err := http.NewRequest("GET", ts.url+"/", nil)
			require.NoError(t, err)
			resp, body := do(t, c, req)
			want := "HTTP/1.1"
			if h2 {
				want = "HTTP/2.0"
			}
			require.Equal(t, want, resp.Proto)
			require.Equal(t, want, string(body))
			require.NotNil(t, resp.TLS)
		}
	}
}

// TestTLSCurl: curl -k with and without --http2.
func TestTLSCurl(t *testing.T) {
	run := curlRunner(t, "-k")
	ts, _ := tlsServer(t)
	for _, v := range []struct{ flag, want string }{{"--http1.0", "HTTP/1.0"}, {"--http1.1", "HTTP/1.1"}, {"--http2", "HTTP/2.0"}} {
		require.Equal(t, v.want, strings.TrimSpace(run(v.flag, ts.url+"/")))
	}
}

// TestTLSALPNDecidesTheProtocol: over TLS the protocol is the one ALPN
// agreed, never guessed from the first bytes (RFC 9113 §3.2, RFC 7301
// §3.2). HTTP/1.1 on a connection that agreed on h2 is not answered; the
// HTTP/2 preface on one that agreed on http/1.1 is an HTTP/1.1 request
// (refused), not HTTP/2; and Upgrade: h2c, which is for cleartext only,
// is ignored.
func TestTLSALPNDecidesTheProtocol(t *testing.T) {
	ts, pool := tlsServer(t)
	dial := func(t *testing.T, proto string) (*tls.Conn, *bufio.Reader) {
		c, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{proto}})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		require.Equal(t, proto, c.ConnectionState().NegotiatedProtocol)
		require.NoError(t, c.SetDeadline(time.Now().Add(waitTimeout)))
		return c, bufio.NewReader(c)
	}
	answer := func(t *testing.T, br *bufio.Reader) (int, string) {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	t.Run("h2 then HTTP/1.1", func(t *testing.T) {
		c, br := dial(t, "h2")
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		require.NoError(t, err)
		b, _ := io.ReadAll(br) // the end: EOF, or a reset
		assert.Empty(t, b, "an HTTP/1.1 request was answered on an h2 connection")
	})
	t.Run("http/1.1 then the h2 preface", func(t *testing.T) {
		c, br := dial(t, "http/1.1")
		_, err := io.WriteString(c, http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err, "not an HTTP/1.1 response")
		resp.Body.Close()
		assert.GreaterOrEqual(t, resp.StatusCode, 400)
	})
	t.Run("http/1.0", func(t *testing.T) { // a client that offers only it (curl --http1.0)
		c, br := dial(t, "http/1.0")
		_, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
		require.NoError(t, err)
		status, body := answer(t, br)
		assert.Equal(t, 200, status)
		assert.Equal(t, "HTTP/1.0", body)
	})
	t.Run("http/1.1 with Upgrade: h2c", func(t *testing.T) {
		c, br := dial(t, "http/1.1")
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings\r\n"+
			"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
		require.NoError(t, err)
		status, body := answer(t, br)
		assert.Equal(t, 200, status)
		assert.Equal(t, "HTTP/1.1", body)
	})
	ts.atRest(t)
}

// A client that opens a TLS connection and sends nothing is closed after
// HeaderTimeout, not aio.DefaultHandshakeTimeout: as net/http bounds the
// handshake by its ReadHeaderTimeout, the handshake is part of the time a
// client has to send its head. A HandshakeTimeout set is kept.
func TestTLSHandshakeWithinHeaderTimeout(t *testing.T) {
	cert, _, err := selfsigned.Cert("localhost")
	require.NoError(t, err)
	cfg := Config{HeaderTimeout: 200 * time.Millisecond, Listen: aio.ListenConfig{TLS: &tls.Config{
		Certificates: []tls.Certificate{cert},
	}}}
	ts := startServer(t, HandlerFunc(func(r *Request) Reply { return Text(200, "ok") }), cfg)
	c, err := net.Dial("tcp", ts.addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(aio.DefaultHandshakeTimeout/2)))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the silent client was not closed within half the default handshake timeout")

	set := Config{HeaderTimeout: time.Second, Listen: aio.ListenConfig{HandshakeTimeout: time.Minute}}.withDefaults()
	assert.Equal(t, time.Minute, set.Listen.HandshakeTimeout)
	none := Config{Listen: aio.ListenConfig{HandshakeTimeout: -1}}.withDefaults()
	assert.Equal(t, time.Duration(-1), none.Listen.HandshakeTimeout)
	long := Config{HeaderTimeout: time.Hour}.withDefaults()
	assert.Equal(t, aio.DefaultHandshakeTimeout, long.Listen.HandshakeTimeout)
}

package httpd

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/selfsigned"
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
	}}}
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
	for _, v := range []struct{ flag, want string }{{"--http1.1", "HTTP/1.1"}, {"--http2", "HTTP/2.0"}} {
		require.Equal(t, v.want, strings.TrimSpace(run(v.flag, ts.url+"/")))
	}
}

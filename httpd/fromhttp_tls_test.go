package httpd

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/selfsigned"
)

// Over TLS, FromHTTP's *http.Request has the connection's TLS state, as
// net/http's has: handlers tell https from http by r.TLS != nil (redirects,
// Secure cookies, HSTS). Without TLS it stays nil.
func TestFromHTTPRequestTLS(t *testing.T) {
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			fmt.Fprint(w, "plain")
			return
		}
		fmt.Fprintf(w, "tls %v %q %s", r.TLS.HandshakeComplete, r.TLS.NegotiatedProtocol, r.TLS.ServerName)
	}))
	cert, pool, err := selfsigned.Cert("localhost")
	require.NoError(t, err)
	ts := startServer(t, h, Config{Listen: aio.ListenConfig{TLS: &tls.Config{Certificates: []tls.Certificate{cert}}}})
	for _, h2 := range []bool{false, true} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: h2}
		t.Cleanup(tr.CloseIdleConnections)
		_, b := get(t, &http.Client{Transport: tr, Timeout: waitTimeout}, "https://"+ts.addr+"/")
		want := `tls true "" localhost` // no ALPN offered
		if h2 {
			want = `tls true "h2" localhost`
		}
		assert.Equal(t, want, b)
	}
	ts.atRest(t)

	plain := startServer(t, h, Config{})
	_, b := get(t, client(t), plain.url+"/")
	assert.Equal(t, "plain", b)
	_, b = get(t, h2Client(t), plain.url+"/")
	assert.Equal(t, "plain", b)
}

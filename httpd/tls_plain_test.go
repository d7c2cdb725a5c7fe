package httpd

import (
	"crypto/tls"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// TestTLSPlainHTTP: plaintext HTTP to the TLS port gets net/http's 400,
// in plaintext, from curl and from net/http's client, on each method
// net/http recognises.
func TestTLSPlainHTTP(t *testing.T) {
	ts, _ := tlsServer(t)
	plain := "http://" + ts.addr + "/"
	const body = "Client sent an HTTP request to an HTTPS server.\n"
	out := curlRunner(t)("-w", "%{http_code}", plain)
	require.Equal(t, body+"400", out)

	c := client(t)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "OPTIONS"} {
		req, err := http.NewRequest(method, plain, nil)
		require.NoError(t, err)
		resp, got := do(t, c, req)
		require.Equal(t, 400, resp.StatusCode, method)
		require.True(t, resp.Close, "HTTP/1.0 without keep-alive: the connection ends")
		if method != "HEAD" {
			require.Equal(t, body, string(got), method)
		}
	}
}

// TestTLSPlainNotHTTP: what does not look like HTTP (here a method
// net/http does not recognise) gets nothing: the connection closes.
func TestTLSPlainNotHTTP(t *testing.T) {
	ts, _ := tlsServer(t)
	for _, junk := range []string{"\x00\x01\x02\x03\x04junk", "DELETE / HTTP/1.1\r\n\r\n"} {
		rc := dialRaw(t, ts.addr)
		rc.send(junk)
		got, err := io.ReadAll(rc)
		require.NoError(t, err)
		require.Empty(t, got, "%q", junk)
	}
}

// TestTLSPlainOwnReply: a NotTLS of the program's own is kept.
func TestTLSPlainOwnReply(t *testing.T) {
	mine := func([5]byte) []byte { return []byte("mine") }
	cfg := Config{Listen: aio.ListenConfig{TLS: &tls.Config{}, NotTLS: mine}}.withDefaults()
	require.Equal(t, "mine", string(cfg.Listen.NotTLS([5]byte{})))
	require.Nil(t, Config{}.withDefaults().Listen.NotTLS, "no TLS: no reply")
}

package main

import (
	"bytes"
	"crypto/tls"
	"net/http"
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -tls-self-signed serves HTTPS: the fingerprint is logged, curl -k gets
// HTTP/1.1 and, with --http2, HTTP/2 by ALPN; net/http's client gets
// HTTP/2 and an echo of 1 MiB.
func testTLS(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2", "-tls-self-signed")
	url := "https://" + s.Addr
	if curlPath, err := exec.LookPath("curl"); err == nil {
		for _, v := range []struct{ flag, want string }{{"--http1.1", "1.1"}, {"--http2", "2"}} {
			out, err := exec.Command(curlPath, "-sSk", "--max-time", "20", v.flag,
				"-w", " %{http_version}", url+"/health").CombinedOutput()
			require.NoError(t, err, "curl %s: %s", v.flag, out)
			assert.Equal(t, "ok "+v.want, string(out))
		}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: timeout}
	big := randomBytes(5, 1<<20)
	resp, err := c.Post(url+"/echo", "application/octet-stream", bytes.NewReader(big))
	require.NoError(t, err)
	require.Equal(t, "HTTP/2.0", resp.Proto)
	r := readReply(t, resp)
	require.Equal(t, 200, r.status)
	require.True(t, bytes.Equal(big, []byte(r.body)), "the echo of 1 MiB over TLS differs (%d bytes back)", len(r.body))

	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
	assert.Regexp(t, regexp.MustCompile(`SHA-256 fingerprint ([0-9A-F]{2}:){31}[0-9A-F]{2}`), s.Stderr())
}

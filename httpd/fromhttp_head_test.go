package httpd

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A net/http handler answering HEAD sets the Content-Length of the body
// it would send and writes none (http.FileServer, http.ServeContent):
// FromHTTP's answer keeps that length, on HTTP/1.1 and HTTP/2, as
// net/http's does, instead of a Content-Length of 0.
func TestFromHTTPHeadContentLength(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f.txt"), []byte(strings.Repeat("x", 100_000)), 0o644))
	m := NewMux()
	m.Handle("GET /files/", FromHTTP(http.StripPrefix("/files", http.FileServer(http.Dir(dir)))))
	ts := startServer(t, m, Config{})

	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		req, err := http.NewRequest("HEAD", ts.url+"/files/f.txt", nil)
		require.NoError(t, err)
		resp, b := do(t, c, req)
		assert.Equal(t, 200, resp.StatusCode, name)
		assert.Equal(t, int64(100_000), resp.ContentLength, name)
		assert.Empty(t, b, name)

		req.Header.Set("Range", "bytes=10-19")
		resp, _ = do(t, c, req)
		assert.Equal(t, 206, resp.StatusCode, name)
		assert.Equal(t, int64(10), resp.ContentLength, name)
	}
	ts.atRest(t)
}

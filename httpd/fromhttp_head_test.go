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

// A net/http handler that sets the connection-specific Keep-Alive,
// Proxy-Connection or Upgrade gets its response through, streamed or not:
// on HTTP/1.1 with the fields, as net/http sends them; on HTTP/2 without
// them, as net/http's server drops them. Bug: HTTP/2 answered 500, the
// engine refusing a field HTTP/2 cannot carry.
func TestFromHTTPConnectionSpecificFields(t *testing.T) {
	conn := []string{"Keep-Alive", "Proxy-Connection", "Upgrade"}
	m := NewMux()
	m.Handle("GET /{how}", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, name := range conn {
			w.Header().Set(name, "x")
		}
		w.Header().Set("X-A", "1")
		_, _ = w.Write([]byte("ok"))
		if r.PathValue("how") == "streamed" {
			w.(http.Flusher).Flush()
			_, _ = w.Write([]byte("!"))
		}
	})))
	ts := startServer(t, m, Config{})
	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		for how, want := range map[string]string{"buffered": "ok", "streamed": "ok!"} {
			req, err := http.NewRequest("GET", ts.url+"/"+how, nil)
			require.NoError(t, err)
			resp, b := do(t, c, req)
			assert.Equal(t, 200, resp.StatusCode, "%s %s", name, how)
			assert.Equal(t, want, string(b), "%s %s", name, how)
			assert.Equal(t, "1", resp.Header.Get("X-A"), "%s %s", name, how)
			for _, f := range conn {
				if name == "h1" {
					assert.Equal(t, "x", resp.Header.Get(f), "%s %s: %s", name, how, f)
				} else {
					assert.Empty(t, resp.Header.Values(f), "%s %s: %s", name, how, f)
				}
			}
		}
	}
	ts.atRest(t)
}

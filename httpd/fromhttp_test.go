package httpd

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FromHTTP runs net/http handlers: path values, headers, buffered and
// streamed bodies; a client that goes away cancels their context.
func TestFromHTTP(t *testing.T) {
	m := testMux()
	m.Handle("GET /std/{name}", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Name", r.PathValue("name"))
		w.WriteHeader(202)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-In"))
	})))
	m.Handle("POST /std/echo", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})))
	ctxDone := make(chan error, 1)
	m.Handle("GET /std/wait", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxDone <- nil
		<-r.Context().Done()
		ctxDone <- r.Context().Err()
	})))
	ts := startServer(t, m, Config{})
	c := client(t)

	req, err := http.NewRequest("GET", ts.url+"/std/bob", nil)
	require.NoError(t, err)
	req.Header.Set("X-In", "hi")
	resp, b := do(t, c, req)
	assert.Equal(t, 202, resp.StatusCode)
	assert.Equal(t, "bob", resp.Header.Get("X-Name"))
	assert.Equal(t, "GET /std/bob hi", string(b))

	for _, n := range []int{5, 3 << 20} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		_, got := post(t, c, ts.url+"/std/echo", bytes.NewReader(body))
		assert.True(t, bytes.Equal(body, got), "%d bytes: %d back", n, len(got))
	}

	raw := dialRaw(t, ts.addr)
	raw.send("GET /std/wait HTTP/1.1\r\nHost: x\r\n\r\n")
	recvT(t, ctxDone)
	raw.Close()
	assert.ErrorIs(t, recvT(t, ctxDone), context.Canceled)
	ts.atRest(t)
}

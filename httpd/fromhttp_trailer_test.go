package httpd

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A net/http handler's trailer, declared or named with TrailerPrefix,
// reaches the client, whether the response was buffered (it then goes
// chunked) or streamed; fields a trailer may not carry are dropped.
func TestFromHTTPTrailer(t *testing.T) {
	m := NewMux()
	// GET /std: a net/http handler's trailer, declared and in the
	// TrailerPrefix form; flushed first with stream=1; with cl=1 the
	// handler also sets a Content-Length, and the declared trailer still
	// makes the body chunked on HTTP/1.1 (the trailer is known before the
	// head).
	m.Handle("GET /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		if r.URL.Query().Get("cl") == "1" {
			w.Header().Set("Content-Length", "10")
		}
		_, _ = io.WriteString(w, "hello")
		if r.URL.Query().Get("stream") == "1" {
			w.(http.Flusher).Flush()
		}
		_, _ = io.WriteString(w, "world")
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
		w.Header().Set(http.TrailerPrefix+"Content-Length", "5") // dropped, as net/http drops it
	})))
	ts := startServer(t, m, Config{})
	for _, c := range []*http.Client{client(t), h2Client(t)} {
		for _, q := range []string{"", "stream=1", "cl=1", "cl=1&stream=1"} {
			resp, body := h2Do(t, c, "GET", ts.url+"/std?"+q, nil)
			assert.Equal(t, "helloworld", body)
			assert.Equal(t, http.Header{"X-Sum": {"42"}, "X-Late": {"late"}}, resp.Trailer, "%s %s", resp.Proto, q)
			assert.Empty(t, resp.Header.Get("X-Sum"))
		}
	}
	ts.atRest(t)
}

package httpd

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optionsStar sends "OPTIONS *" with c and returns the response and its
// body.
func optionsStar(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("OPTIONS", url, nil)
	require.NoError(t, err)
	req.URL.Opaque = "*" // the request target "*", HTTP/2's :path "*"
	resp, b := do(t, c, req)
	return resp, string(b)
}

// "OPTIONS *" asks about the server, not a resource (RFC 9110 §9.3.7): the
// server answers it itself with 200 and Content-Length 0 before any
// handler, as net/http's Server does (its globalOptionsHandler), over
// HTTP/1.1 and HTTP/2 (RFC 9113 §8.3.1: ":path" "*"), and the connection
// goes on. Config.DisableGeneralOptionsHandler hands it to the handler.
func TestOptionsStar(t *testing.T) {
	var calls atomic.Int32
	h := HandlerFunc(func(r *Request) Reply {
		calls.Add(1)
		return Text(http.StatusTeapot, r.Method()+" "+r.Target())
	})
	ts := startServer(t, h, Config{})

	for name, c := range map[string]*http.Client{"HTTP/1.1": client(t), "HTTP/2": h2Client(t)} {
		resp, b := optionsStar(t, c, ts.url)
		assert.Equal(t, 200, resp.StatusCode, name)
		assert.Equal(t, "0", resp.Header.Get("Content-Length"), name)
		assert.Empty(t, b, name)
	}
	assert.Zero(t, calls.Load(), "the handler saw OPTIONS *")

	raw := dialRaw(t, ts.addr)
	raw.send("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := raw.read("OPTIONS")
	assert.Equal(t, 200, resp.status)
	assert.Equal(t, []string{"0"}, resp.header["Content-Length"])
	assert.False(t, resp.close)
	assert.Equal(t, "GET /next", raw.read("GET").body, "the connection goes on")
	ts.atRest(t)

	own := startServer(t, h, Config{DisableGeneralOptionsHandler: true})
	for name, c := range map[string]*http.Client{"HTTP/1.1": client(t), "HTTP/2": h2Client(t)} {
		resp, b := optionsStar(t, c, own.url)
		assert.Equal(t, http.StatusTeapot, resp.StatusCode, name)
		assert.Equal(t, "OPTIONS *", b, name)
	}
	own.atRest(t)
}

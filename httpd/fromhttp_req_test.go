package httpd

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The *http.Request FromHTTP makes says which HTTP it came by as net/http
// says it: ProtoMajor 2 for HTTP/2 (gRPC's ServeHTTP and ProtoAtLeast
// checks look at it), 1 and the minor for HTTP/1.x.
func TestFromHTTPRequestProto(t *testing.T) {
	m := NewMux()
	m.Handle("GET /proto", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d.%d %v", r.Proto, r.ProtoMajor, r.ProtoMinor, r.ProtoAtLeast(1, 1))
	})))
	ts := startServer(t, m, Config{})

	_, b := get(t, client(t), ts.url+"/proto")
	assert.Equal(t, "HTTP/1.1 1.1 true", b)
	_, b = get(t, h2Client(t), ts.url+"/proto")
	assert.Equal(t, "HTTP/2.0 2.0 true", b)

	raw := dialRaw(t, ts.addr)
	raw.send("GET /proto HTTP/1.0\r\nHost: x\r\n\r\n")
	assert.Equal(t, "HTTP/1.0 1.0 false", raw.read("GET").body)
	ts.atRest(t)
}

// The *http.Request FromHTTP makes says whether the client asked to close
// the connection after this response (Close) as net/http reads it: an
// HTTP/1.1 request with "Connection: close", an HTTP/1.0 one without
// "Connection: keep-alive". Handlers read it (a proxy passes it on).
func TestFromHTTPRequestClose(t *testing.T) {
	m := NewMux()
	m.Handle("GET /close", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%v", r.Close)
	})))
	ts := startServer(t, m, Config{})

	for _, tc := range []struct{ req, want string }{
		{"GET /close HTTP/1.1\r\nHost: x\r\n\r\n", "false"},
		{"GET /close HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "true"},
		{"GET /close HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n", "true"},
		{"GET /close HTTP/1.0\r\nHost: x\r\n\r\n", "true"},
		{"GET /close HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", "false"},
	} {
		raw := dialRaw(t, ts.addr)
		raw.send(tc.req)
		assert.Equal(t, tc.want, raw.read("GET").body, "%q", tc.req)
	}
	_, b := get(t, h2Client(t), ts.url+"/close")
	assert.Equal(t, "false", b, "HTTP/2")
	ts.atRest(t)
}

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

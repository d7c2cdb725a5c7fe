package httpd

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A net/http handler that refuses a request without reading its body
// gets no "100 Continue" sent for it, as net/http sends none: the client
// that asked (Expect: 100-continue) is spared the upload. One that reads
// the body gets it sent when it starts.
func TestFromHTTPExpectContinue(t *testing.T) {
	m := NewMux()
	m.Handle("PUT /refuse", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", 401)
	})))
	m.Handle("PUT /take", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n, err)
	})))
	ts := startServer(t, m, Config{})
	const n = 1 << 20 // streams: more than half an arena
	head := "Host: x\r\nExpect: 100-continue\r\nContent-Length: " + itoa(n) + "\r\n\r\n"

	raw := dialRaw(t, ts.addr)
	raw.send("PUT /refuse HTTP/1.1\r\n" + head)
	resp := raw.read("PUT")
	assert.Equal(t, 401, resp.status)
	assert.True(t, resp.close)

	raw = dialRaw(t, ts.addr)
	raw.send("PUT /take HTTP/1.1\r\n" + head)
	assert.Equal(t, 100, raw.read("PUT").status)
	raw.send(strings.Repeat("x", n))
	resp = raw.read("PUT")
	assert.Equal(t, 200, resp.status)
	assert.Equal(t, itoa(n)+" <nil>", resp.body)
	ts.atRest(t)
}

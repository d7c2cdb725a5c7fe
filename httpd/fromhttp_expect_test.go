package httpd

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// expectMux serves PUT /refuse, a net/http handler that answers 401
// without reading the body, and PUT /take, one that reads it all and
// answers with its length.
func expectMux() *Mux {
	m := NewMux()
	m.Handle("PUT /refuse", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", 401)
	})))
	m.Handle("PUT /take", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n, err)
	})))
	return m
}

// A net/http handler that refuses a request without reading its body
// gets no "100 Continue" sent for it, as net/http sends none: the client
// that asked (Expect: 100-continue) is spared the upload. One that reads
// the body gets it sent when it starts.
func TestFromHTTPExpectContinue(t *testing.T) {
	m := expectMux()
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

// putExpecting opens stream id with a PUT of path, a body of clen bytes to
// follow, and "expect: 100-continue".
func (c *h2Raw) putExpecting(id uint32, path string, clen int) {
	c.t.Helper()
	c.open(id, "PUT", path, false, "content-length", itoa(clen), "expect", "100-continue")
}

// sendBody sends n bytes on stream id in DATA frames of the default
// SETTINGS_MAX_FRAME_SIZE at most, the last one ending the stream.
func (c *h2Raw) sendBody(id uint32, n int) {
	c.t.Helper()
	for n > 0 {
		k := min(n, 16<<10)
		n -= k
		require.NoError(c.t, c.fr.WriteData(id, n == 0, make([]byte, k)))
	}
}

// Over HTTP/2 as over HTTP/1.1, a client that waits for "100 Continue"
// (Go's with ExpectContinueTimeout, curl) is asked for its body: at once
// for a body buffered before the handler starts, when the handler first
// reads for one that streams to it, and never for a handler that answers
// without reading. Before, no 100 went out on HTTP/2, and such a client
// sent its body only after its own timeout (Go's: 1 s by default).
func TestH2ExpectContinue(t *testing.T) {
	m := expectMux()
	m.HandleFunc("PUT /native", func(r *Request) Reply { b, _ := r.Body().Bytes(); return Text(200, itoa(len(b))) })
	m.Handle("PUT /small", MaxBytesHandler(HandlerFunc(func(r *Request) Reply { return Text(200, "taken") }), 100))
	ts := startServer(t, m, Config{})
	const streamed = 50_000 // over half an arena, within the stream's window

	for _, tc := range []struct {
		path string
		size int
		want string
	}{{"/take", 5, "5 <nil>"}, {"/take", streamed, itoa(streamed) + " <nil>"}, {"/native", 5, "5"}} {
		c := dialH2(t, ts.addr)
		c.putExpecting(1, tc.path, tc.size)
		f, ok := c.next().(*http2.MetaHeadersFrame)
		require.True(t, ok, "%s %d: a HEADERS frame first", tc.path, tc.size)
		require.Equal(t, "100", f.PseudoValue("status"), "%s %d", tc.path, tc.size)
		require.False(t, f.StreamEnded())
		c.sendBody(1, tc.size)
		c.expect(1, "200", tc.want)
	}

	c := dialH2(t, ts.addr)
	c.putExpecting(1, "/refuse", streamed)
	c.expect(1, "401", "no\n") // no 100 before it

	// A body its route's MaxBytesHandler refuses, small enough to be
	// buffered: refused at once, with no 100 asking for it (it waited
	// for a body its client held back, until HeaderTimeout's 408).
	c = dialH2(t, ts.addr)
	c.putExpecting(1, "/small", 1000)
	st, _ := c.response(1)
	require.Equal(t, "413", st)
	ts.atRest(t)
}

// A body that arrives before the handler asks for it needs no 100
// Continue: the client sent it without waiting.
func TestH2ExpectContinueNotAfterTheBody(t *testing.T) {
	var held *Request                // owned by the loop
	var reply *aio.Promise[Response] // owned by the loop
	m := NewMux()
	m.HandleFunc("PUT /late", func(r *Request) Reply {
		held, reply = r, aio.NewPromise[Response](r.Loop())
		return Later(reply.Handle())
	})
	m.HandleFunc("GET /ping", func(r *Request) Reply { return Text(200, "pong") })
	ts := startServer(t, m, Config{})
	const size = 50_000 // over half an arena: it streams to the handler
	c := dialH2(t, ts.addr)
	c.putExpecting(1, "/late", size)
	c.sendBody(1, size)
	c.get(3, "/ping") // answered after the server has read the body's frames
	c.expect(3, "200", "pong")
	ts.onLoop(t, func() {
		n := 0
		held.Body().OnData(func(p []byte, end bool) {
			if n += len(p); end {
				reply.Resolve(Response{Status: 200, Body: []byte(itoa(n))})
			}
		})
	})
	f, ok := c.next().(*http2.MetaHeadersFrame)
	require.True(t, ok)
	require.Equal(t, "200", f.PseudoValue("status"), "no 100 after the body")
	d, ok := c.next().(*http2.DataFrame)
	require.True(t, ok)
	require.Equal(t, itoa(size), string(d.Data()))
	ts.atRest(t)
}

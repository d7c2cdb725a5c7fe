package httpd

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// postTrailer sends on stream id a POST to path of n bytes, without
// content-length, in DATA frames, then a trailer HEADERS block (END_STREAM)
// of fields (name, value pairs).
func (c *h2Raw) postTrailer(id uint32, path string, n int, fields ...string) {
	c.t.Helper()
	c.open(id, "POST", path, false)
	for left := n; left > 0; left -= 16384 {
		require.NoError(c.t, c.fr.WriteData(id, false, []byte(strings.Repeat("a", min(left, 16384)))))
	}
	c.hb.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}))
	}
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true}))
}

// trailerMux answers POST /native and POST /std with the body's length
// and its trailer, as the native API and net/http's see them.
func trailerMux() *Mux {
	m := NewMux()
	m.HandleFunc("POST /native", func(r *Request) Reply {
		return afterBody(r, func(n int) Response {
			var all []string
			for name, value := range r.Trailers() {
				all = append(all, name+"="+value)
			}
			return TextResponse(200, fmt.Sprintf("%d %s %v", n, r.Trailer("X-Sum"), all))
		})
	})
	m.Handle("POST /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprintf(w, "%d %s %d", n, r.Trailer.Get("X-Sum"), len(r.Trailer))
	})))
	return m
}

// An HTTP/2 request's trailer HEADERS reach the handler as a chunked
// body's do, buffered or streamed: native (Request.Trailer) or net/http's
// (Request.Trailer after EOF); fields a trailer may not carry are dropped,
// and a later stream on the connection sees none of them.
func TestH2RequestTrailer(t *testing.T) {
	ts := startServer(t, trailerMux(), Config{})
	c := dialH2(t, ts.addr)
	trailer := []string{"x-sum", "42", "content-type", "text/html", "if-match", "*", "x-more", "yes"}
	id := uint32(1)
	for _, n := range []int{5, 40000} { // buffered, streamed
		c.postTrailer(id, "/native", n, trailer...)
		c.expect(id, "200", fmt.Sprintf("%d 42 [x-sum=42 x-more=yes]", n))
		c.postTrailer(id+2, "/std", n, trailer...)
		c.expect(id+2, "200", fmt.Sprintf("%d 42 2", n))
		c.postTrailer(id+4, "/native", n)
		c.expect(id+4, "200", fmt.Sprintf("%d  []", n))
		id += 6
	}
	ts.atRest(t)
}

// A trailer past h1.DefaultMaxTrailer resets its stream, and the
// connection goes on.
func TestH2RequestTrailerTooLarge(t *testing.T) {
	ts := startServer(t, trailerMux(), Config{})
	c := dialH2(t, ts.addr)
	c.postTrailer(1, "/native", 5, "x-big", strings.Repeat("b", 5000))
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)
	c.postTrailer(3, "/native", 5, "x-sum", "1")
	c.expect(3, "200", "5 1 [x-sum=1]")
	ts.atRest(t)
}

// Go's HTTP/2 Transport sends a request's Trailer as trailer HEADERS.
func TestH2RequestTrailerTransport(t *testing.T) {
	ts := startServer(t, trailerMux(), Config{})
	c := h2Client(t)
	for _, path := range []string{"/native", "/std"} {
		pr, pw := io.Pipe()
		req, err := http.NewRequest("POST", ts.url+path, pr)
		require.NoError(t, err)
		req.Trailer = http.Header{"X-Sum": nil}
		go func() {
			_, _ = io.WriteString(pw, "hello")
			req.Trailer.Set("X-Sum", "7")
			_ = pw.Close()
		}()
		resp, err := c.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		if path == "/native" {
			assert.Equal(t, "5 7 [x-sum=7]", string(b))
		} else {
			assert.Equal(t, "5 7 1", string(b))
		}
	}
	ts.atRest(t)
}

// A trailer block ends a malformed request as DATA with END_STREAM would:
// a body short of its content-length, or a connection-specific field in
// the trailer, resets the stream (PROTOCOL_ERROR) and the connection goes
// on; no handler sees the body's end.
func TestH2RequestTrailerMalformed(t *testing.T) {
	ts := startServer(t, trailerMux(), Config{})
	c := dialH2(t, ts.addr)
	trailer := func(id uint32, fields ...string) {
		c.hb.Reset()
		for i := 0; i+1 < len(fields); i += 2 {
			require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}))
		}
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
			BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true}))
	}
	c.open(1, "POST", "/native", false, "content-length", "10")
	require.NoError(t, c.fr.WriteData(1, false, []byte("short")))
	trailer(1, "x-sum", "1")
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)

	c.open(3, "POST", "/native", false)
	require.NoError(t, c.fr.WriteData(3, false, []byte("body")))
	trailer(3, "connection", "close")
	id, code = c.rst()
	assert.Equal(t, uint32(3), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)

	c.postTrailer(5, "/native", 5, "x-sum", "1")
	c.expect(5, "200", "5 1 [x-sum=1]")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Requests, "a handler saw a malformed body end")
}

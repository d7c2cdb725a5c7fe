package httpd

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// maxBytesMux is bodyLimitMux with PUT /small (a body of 100 bytes at
// most) and PUT /mid (40000: more than a default arena buffers, so a body
// over it streams to its handler first), each answering its body's length
// as /count does, and reporting its context's cause once the request
// ends; PUT /nested is /small behind a looser MaxBytesHandler.
func maxBytesMux(causes chan<- error) *Mux {
	m := bodyLimitMux()
	count := HandlerFunc(func(r *Request) Reply {
		ctx := r.Context()
		go func() {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}()
		return afterBody(r, func(n int) Response { return TextResponse(200, itoa(n)) })
	})
	m.Handle("PUT /small", MaxBytesHandler(count, 100))
	m.Handle("PUT /mid", MaxBytesHandler(count, 40000))
	m.Handle("PUT /nested", MaxBytesHandler(MaxBytesHandler(count, 100), 1<<20))
	return m
}

// requireMaxBytes asserts that err is net/http's MaxBytesError of limit.
func requireMaxBytes(t *testing.T, err error, limit int64) {
	t.Helper()
	var mbe *http.MaxBytesError
	require.True(t, errors.As(err, &mbe), "cause %v", err)
	assert.Equal(t, limit, mbe.Limit)
}

// MaxBytesHandler on HTTP/1.1: a body within the limit reaches the
// handler; one that arrived over it with its request (Content-Length or
// chunked) is answered 413 without the handler, and the connection goes
// on, the body read; a lower limit behind a looser one holds.
func TestMaxBytesHandlerBuffered(t *testing.T) {
	causes := make(chan error, 4)
	ts := startServer(t, maxBytesMux(causes), Config{})
	c := dialRaw(t, ts.addr)
	c.send("PUT /small HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("a", 100))
	assert.Equal(t, "100", c.read("PUT").body)
	assert.ErrorIs(t, recvT(t, causes), context.Canceled, "a request that ends well")
	for _, req := range []string{
		"PUT /small HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + strings.Repeat("a", 101),
		"PUT /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n" + strings.Repeat("a", 101) + "\r\n0\r\n\r\n",
		"PUT /nested HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + strings.Repeat("a", 101),
	} {
		c.send(req)
		resp := c.read("PUT")
		assert.Equal(t, 413, resp.status)
		assert.False(t, resp.close, "the body was read: the connection can go on")
	}
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(5), st.Requests, "refused at the handler's start, counted as requests")
	assert.Zero(t, st.BadRequests)
	assert.Empty(t, causes, "a handler that never ran made no context")
}

// MaxBytesHandler on HTTP/1.1 with a body that streams: a Content-Length
// over the limit is answered 413 at once, Connection: close, and the
// client writes the rest of its body without a reset (the lingering
// close); a chunked body that outgrows the limit as the handler reads it
// cancels the handler, whose context's cause is the MaxBytesError, and
// 413 is the answer in its place.
func TestMaxBytesHandlerStreamed(t *testing.T) {
	causes := make(chan error, 4)
	ts := startServer(t, maxBytesMux(causes), Config{})

	c := dialRaw(t, ts.addr)
	c.send("PUT /mid HTTP/1.1\r\nHost: x\r\nContent-Length: 98304\r\n\r\n")
	wrote := make(chan error, 1)
	go func() {
		_, err := c.Conn.Write(make([]byte, 98304))
		wrote <- err
	}()
	resp := c.read("PUT")
	assert.Equal(t, 413, resp.status)
	assert.True(t, resp.close, "Connection: close: the body was not read")
	require.NoError(t, recvT(t, wrote), "the server reset the connection on the rest of the body")

	c = dialRaw(t, ts.addr)
	c.send("PUT /mid HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent := sendChunked(c, 6, 16<<10) // the handler starts at about 32 KiB, within the limit
	resp = c.read("PUT")
	assert.Equal(t, 413, resp.status)
	assert.True(t, resp.close)
	require.NoError(t, recvT(t, sent))
	requireMaxBytes(t, recvT(t, causes), 40000)

	c = dialRaw(t, ts.addr)
	c.send("PUT /mid HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent = sendChunked(c, 2, 16<<10+1000)
	assert.Equal(t, itoa(2*(16<<10+1000)), c.read("PUT").body, "within the limit")
	require.NoError(t, recvT(t, sent))
	assert.ErrorIs(t, recvT(t, causes), context.Canceled)
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// A client that waits for 100 Continue before it sends a body whose
// Content-Length is over its route's limit gets the 413 instead, never a
// 100 asking for a body the route will refuse: the limit is found on the
// route at the head, through Muxes and a Duplex handler. Within the limit
// the 100 comes.
func TestMaxBytesHandlerExpect(t *testing.T) {
	causes := make(chan error, 4)
	m := maxBytesMux(causes)
	api := NewMux()
	api.Handle("PUT /api/duplex", Duplex(MaxBytesHandler(HandlerFunc(echoHandler), 10)))
	m.Handle("/api/", api)
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/small", "/nested", "/api/duplex"} {
		c := dialRaw(t, ts.addr)
		c.send("PUT " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nExpect: 100-continue\r\n\r\n")
		resp := c.read("PUT")
		assert.Equal(t, 413, resp.status, path)
		assert.True(t, resp.close, path)
	}
	c := dialRaw(t, ts.addr)
	c.send("PUT /small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
	assert.Equal(t, 100, c.read("PUT").status)
	c.send("hello")
	assert.Equal(t, "5", c.read("PUT").body)
	ts.atRest(t)
}

// MaxBytesHandler on HTTP/2: a body over the limit that arrived with the
// request, a content-length over it (the handler would stream it), and a
// body without one that outgrows it while the handler reads are each
// answered 413; the stream still sending is reset with NO_ERROR; the
// connection goes on.
func TestMaxBytesHandlerH2(t *testing.T) {
	causes := make(chan error, 4)
	ts := startServer(t, maxBytesMux(causes), Config{})
	c := dialH2(t, ts.addr)
	c.open(1, "PUT", "/small", false, "content-length", "101")
	require.NoError(t, c.fr.WriteData(1, true, make([]byte, 101)))
	c.expect(1, "413", statusBody(413))

	c.open(3, "PUT", "/mid", false, "content-length", "40001")
	c.expect(3, "413", statusBody(413))
	c.expectReset(3, http2.ErrCodeNo)

	piece := c.outgrow(5, "/mid")
	requireMaxBytes(t, recvT(t, causes), 40000)

	c.open(7, "PUT", "/small", false)
	require.NoError(t, c.fr.WriteData(7, true, piece[:100]))
	c.expect(7, "200", "100")
	assert.ErrorIs(t, recvT(t, causes), context.Canceled)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(4), st.Requests)
	assert.Equal(t, uint64(1), st.Cancelled, "stream 5's handler")
}

// The Server's MaxBodyBytes holds under a looser MaxBytesHandler.
func TestMaxBytesHandlerLooser(t *testing.T) {
	causes := make(chan error, 4)
	ts := startServer(t, maxBytesMux(causes), Config{MaxBodyBytes: 50})
	c := dialRaw(t, ts.addr)
	c.send("PUT /small HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n" + strings.Repeat("a", 60))
	assert.Equal(t, 413, c.read("PUT").status)
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().BadRequests, "refused by the server, before the handler")
}

// MaxBytesHandler of a nil handler panics at once, as Duplex does.
func TestMaxBytesHandlerNil(t *testing.T) {
	assert.PanicsWithValue(t, "httpd: MaxBytesHandler of a nil handler", func() { MaxBytesHandler(nil, 1) })
}

package httpd

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// block encodes fields (name, value pairs) with c's encoder, its dynamic
// table included, and returns a copy.
func (c *h2Raw) block(fields ...string) []byte {
	c.t.Helper()
	c.hb.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}))
	}
	return bytes.Clone(c.hb.Bytes())
}

// A malformed header block is a stream PROTOCOL_ERROR whatever is wrong
// with it, and the connection's header table keeps step: the next request
// on it, whose fields are the table's, is served.
func TestH2MalformedBlocks(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	id := uint32(1)
	for _, bad := range [][]string{
		{":method", "GET", ":scheme", "http", ":path", "/health", "X-Upper", "1"},        // not lowercase
		{":method", "GET", ":scheme", "http", "a", "1", ":path", "/health"},              // pseudo after regular
		{":method", "GET", ":scheme", "http", ":path", "/health", ":nope", "1"},          // unknown pseudo
		{":method", "GET", ":scheme", "http", ":path", "/health", ":path", "/health"},    // repeated
		{":method", "GET", ":scheme", "http", ":path", "/health", ":status", "200"},      // a response's
		{":method", "GET", ":scheme", "http", ":path", "/health", "a", "x\x00y"},         // invalid value
		{":method", "GET", ":scheme", "http", ":path", "/health", "te", "gzip"},          // te other than trailers
		{":method", "GET", ":scheme", "http", ":path", "/health", "content-length", "x"}, // not a number
		{":method", "GET", ":scheme", "http"},                                            // no :path
	} {
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
			BlockFragment: c.block(bad...), EndStream: true, EndHeaders: true}))
		sid, code := c.rst()
		assert.Equal(t, id, sid, "%q", bad)
		assert.Equal(t, http2.ErrCodeProtocol, code, "%q", bad)
		id += 2
	}
	c.get(id, "/health")
	c.expect(id, "200", "ok")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Requests)
}

// Trailers carry no pseudo-headers (RFC 9113 §8.1): a stream
// PROTOCOL_ERROR; trailers without are the body's end.
func TestH2TrailerPseudo(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteData(1, false, []byte("body")))
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1,
		BlockFragment: c.block(":path", "/x"), EndStream: true, EndHeaders: true}))
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)

	c.open(3, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteData(3, false, []byte("body")))
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3,
		BlockFragment: c.block("x-sum", "1"), EndStream: true, EndHeaders: true}))
	c.expect(3, "200", "body")
	ts.atRest(t)
}

// A block is decoded across its CONTINUATION frames, a field cut between
// two of them; a block that ends within a field is a connection
// COMPRESSION_ERROR.
func TestH2BlockFragments(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	b := c.block(":method", "GET", ":scheme", "http", ":authority", "x", ":path", "/health", "x-long", "0123456789abcdef")
	cut := len(b) - 5
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1,
		BlockFragment: b[:cut], EndStream: true}))
	require.NoError(t, c.fr.WriteContinuation(1, true, b[cut:]))
	c.expect(1, "200", "ok")

	b = c.block(":method", "GET", ":scheme", "http", ":authority", "x", ":path", "/health", "x-other", "0123456789abcdef")
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3,
		BlockFragment: b[:len(b)-5], EndStream: true, EndHeaders: true}))
	f := c.next()
	ga, ok := f.(*http2.GoAwayFrame)
	require.True(t, ok, "not a GOAWAY: %v", f)
	assert.Equal(t, http2.ErrCodeCompression, ga.ErrCode)
	assert.True(t, c.eof())
	ts.atRest(t)
}

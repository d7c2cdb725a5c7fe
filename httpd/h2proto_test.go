package httpd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// open opens stream id with a request of method for path, its END_STREAM
// set when end; extra fields follow the pseudo-headers.
func (c *h2Raw) open(id uint32, method, path string, end bool, extra ...string) {
	c.t.Helper()
	c.hb.Reset()
	fields := append([]string{":method", method, ":scheme", "http", ":authority", "x", ":path", path}, extra...)
	for i := 0; i+1 < len(fields); i += 2 {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]}))
	}
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndStream: end, EndHeaders: true}))
}

// A stream reset, or a connection closed, while its body is still being
// buffered (its handler not started) gives its arena back.
func TestH2ResetWhileBuffering(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteData(1, false, []byte("part")))
	eventually(t, func() bool { return ts.Stats().ArenasInUse == 1 }, "no arena taken")
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	ts.atRest(t)
	c.get(3, "/health")
	c.expect(3, "200", "ok")

	c.open(5, "POST", "/echo", false, "content-length", "10")
	require.NoError(t, c.fr.WriteData(5, false, []byte("part")))
	eventually(t, func() bool { return ts.Stats().ArenasInUse == 1 }, "no arena taken")
	require.NoError(t, c.nc.Close())
	ts.atRest(t)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
	assert.Equal(t, uint64(1), ts.Stats().Requests, "only /health started a handler")
}

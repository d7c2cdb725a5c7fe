package httpd

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A stream's buffer is kept in its Request for the next stream on that
// arena, but not past streamPendMax: a handler that wrote far more than
// the client took at once (its window shut, or it read slowly) kept that
// much for every arena it ever had, for good, after the streams ended.
// With one arena, every request has the same Request: /kept tells what
// the one before left in it.
func TestStreamBufferKeptBounded(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	m := NewMux()
	m.HandleFunc("GET /big", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.Write(big) // all at once, Full or not: it waits for the window
		s.End()
		return s.Reply()
	})
	m.HandleFunc("GET /kept", func(r *Request) Reply {
		return Text(200, strconv.Itoa(cap(r.stream.pend)))
	})
	ts := startServer(t, m, Config{Arenas: 1})
	for _, c := range []*http.Client{client(t), h2Client(t)} {
		resp, err := c.Get(ts.url + "/big")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Len(t, b, len(big))
		ts.atRest(t)
		code, kept := get(t, c, ts.url+"/kept")
		require.Equal(t, 200, code)
		require.LessOrEqual(t, atoi(kept), streamPendMax)
	}
}

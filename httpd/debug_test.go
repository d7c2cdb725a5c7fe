//go:build aiodebug

package httpd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Under the aiodebug tag, a Stream or Body used off its request's loop
// panics at the call, before it touches anything, instead of racing.
func TestOffLoopUsePanics(t *testing.T) {
	streams := make(chan *Stream, 1)
	m := testMux()
	m.HandleFunc("GET /held", func(r *Request) Reply {
		s := r.Stream(200, nil)
		streams <- s
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /held HTTP/1.1\r\nHost: x\r\n\r\n")
	s := recvT(t, streams)
	const want = "httpd: a Request, its Body or its Stream used off the request's loop"
	assert.PanicsWithValue(t, want, func() { _, _ = s.WriteString("off the loop") })
	assert.PanicsWithValue(t, want, func() { s.End() })
	assert.PanicsWithValue(t, want, func() { _ = s.Full() })
	assert.PanicsWithValue(t, want, func() { s.r.Body().Pause() })
	ts.onLoop(t, func() {
		_, _ = s.WriteString("on the loop")
		s.End()
	})
	resp := c.read("GET")
	require.Equal(t, 200, resp.status)
	assert.Equal(t, "on the loop", resp.body)
	ts.atRest(t)
}

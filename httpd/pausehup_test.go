package httpd

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// A client that resets a connection whose reads the server has paused
// (here: the pipeline is full, so the requests past MaxPipeline wait
// unread in the socket) cancels every pending handler at once, and the
// arenas come back: the reset is not left unnoticed until a response
// write fails, which for these handlers would be never.
func TestResetWhilePipelineFullCancelsAll(t *testing.T) {
	const requests = 20 // more than DefaultMaxPipeline
	started := make(chan struct{}, requests)
	ended := make(chan error, requests)
	m := testMux()
	m.HandleFunc("GET /backend", func(r *Request) Reply {
		return Later(aio.Work(r.Loop(), func(ctx context.Context) (Response, error) {
			started <- struct{}{}
			<-ctx.Done() // a backend that answers only when cancelled
			ended <- ctx.Err()
			return Response{}, ctx.Err()
		}))
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send(strings.Repeat("GET /backend?ms=2000 HTTP/1.1\r\nHost: x\r\n\r\n", requests))
	for range DefaultMaxPipeline {
		recvT(t, started)
	}
	eventually(t, func() bool { return ts.Stats().HandlersPending == DefaultMaxPipeline },
		"the handlers are not pending: %+v", ts.Stats())
	require.Empty(t, started, "more handlers than MaxPipeline started")

	require.NoError(t, c.Conn.(*net.TCPConn).SetLinger(0))
	require.NoError(t, c.Close()) // RST
	for range DefaultMaxPipeline {
		assert.ErrorIs(t, recvT(t, ended), context.Canceled)
	}
	ts.atRest(t)
	st := ts.Stats()
	assert.Zero(t, st.ArenasInUse)
	assert.Equal(t, uint64(DefaultMaxPipeline), st.Cancelled)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
}

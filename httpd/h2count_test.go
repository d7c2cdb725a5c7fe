package httpd

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// A stream the client resets no longer counts toward
// MAX_CONCURRENT_STREAMS, even while its handler, cancelled, has not
// settled yet (a Work that does not watch its context): a client with
// h2MaxStreams streams open that resets some may open as many new ones
// at once, and none is refused. The reset streams' cleanup still runs
// when their handlers settle, and everything comes back.
func TestH2ResetStreamsCountOut(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, h2MaxStreams)
	m := testMux()
	m.HandleFunc("GET /stuck", func(r *Request) Reply {
		return Later(aio.Work(r.Loop(), func(context.Context) (Response, error) {
			started <- struct{}{}
			<-release // deaf to its context: its handle settles late
			return TextResponse(200, "released"), nil
		}))
	})
	// Arenas for every stream, reset or new, beside the reserve (an eighth)
	// that one connection holding arenas cannot take.
	ts := startServer(t, m, Config{Arenas: (h2MaxStreams + 16) * 8 / 7, ArenaSize: 8 << 10})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's shutdown, which waits for the Works
	c := dialH2(t, ts.addr)
	for i := range h2MaxStreams {
		c.get(uint32(2*i+1), "/stuck")
	}
	const resets = 10
	for range resets { // the first Works run (the pool takes them in order)
		recvT(t, started)
	}
	eventually(t, func() bool { return ts.Stats().HandlersPending == h2MaxStreams }, "the handlers are not pending")
	// The resets and the new streams in one write, so in one read: the
	// reset streams' handles settle only after it.
	var batch bytes.Buffer
	fr := c.fr
	c.fr = http2.NewFramer(&batch, nil)
	for i := range resets {
		require.NoError(t, c.fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel))
	}
	next := uint32(2*h2MaxStreams + 1)
	for i := range resets {
		c.get(next+uint32(2*i), "/health")
	}
	c.fr = fr
	_, err := c.nc.Write(batch.Bytes())
	require.NoError(t, err)
	for ended := 0; ended < resets; {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			assert.Equal(t, "200", f.PseudoValue("status"))
		case *http2.DataFrame:
			assert.Equal(t, "ok", string(f.Data()))
			if f.StreamEnded() {
				ended++
			}
		default:
			require.Failf(t, "unexpected frame", "%v", f)
		}
	}
	assert.Equal(t, uint64(0), ts.Stats().Refused)

	free()
	for ended := 0; ended < h2MaxStreams-resets; { // the reset ones send nothing
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			assert.Greater(t, f.StreamID, uint32(2*resets))
		case *http2.DataFrame:
			if f.StreamEnded() {
				ended++
			}
		default:
			require.Failf(t, "unexpected frame", "%v", f)
		}
	}
	ts.atRest(t)
	assert.True(t, ts.anyConn(t, func(hc *h1conn) bool {
		return hc.h2 != nil && hc.h2.open == 0 && len(hc.h2.streams) == 0
	}), "the connection still counts streams open")
	st := ts.Stats()
	assert.Equal(t, uint64(resets), st.Cancelled)
	assert.Equal(t, st.Requests, st.ArenaReleases)
}

// One connection cannot take a loop's last arenas while it holds others:
// a client pipelining MaxPipeline requests (or opening streams) that its
// handlers hold does not leave a new client waiting for an arena. Here 16
// arenas keep 2 for connections that hold none.
func TestArenaShareH1(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 16})
	hog := dialRaw(t, ts.addr)
	for range 16 {
		hog.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	var held []*aio.Promise[Response]
	for range 14 {
		held = append(held, recvT(t, p.promises))
	}
	eventually(t, func() bool { return ts.Stats().Refused > 0 }, "the hog is not held back: %+v", ts.Stats())
	assert.Equal(t, int64(14), ts.Stats().HandlersPending)

	other := dialRaw(t, ts.addr)
	require.NoError(t, other.SetDeadline(time.Now().Add(5*time.Second)))
	other.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", other.read("GET").body, "a new client is served")

	for _, pr := range held { // the hog's last two get arenas as these come back
		require.True(t, pr.Resolve(TextResponse(200, "p")))
	}
	p.drain(t)
	for range 16 {
		assert.Equal(t, 200, hog.read("GET").status)
	}
	ts.atRest(t)
}

// The same over HTTP/2: a stream past the share is refused
// (REFUSED_STREAM, which a client retries), and a new client is served.
func TestArenaShareH2(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 16})
	hog := dialH2(t, ts.addr)
	for i := range 16 {
		hog.get(uint32(2*i+1), "/promise")
	}
	var held []*aio.Promise[Response]
	for range 14 {
		held = append(held, recvT(t, p.promises))
	}
	hog.expectReset(29, http2.ErrCodeRefusedStream)
	hog.expectReset(31, http2.ErrCodeRefusedStream)

	other := dialRaw(t, ts.addr)
	require.NoError(t, other.SetDeadline(time.Now().Add(5*time.Second)))
	other.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", other.read("GET").body, "a new client is served")

	for _, pr := range held {
		require.True(t, pr.Resolve(TextResponse(200, "p")))
	}
	ts.atRest(t)
}

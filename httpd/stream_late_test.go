package httpd

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// endedStreamMux: /s (any method) is a stream ended inside its handler,
// which returns its Reply: pump writes it whole before its handle ends.
func endedStreamMux() *Mux {
	m := testMux()
	m.HandleFunc("/s", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("hi")
		s.End()
		return s.Reply()
	})
	return m
}

// Streams whose end is written before their handle ends (a Stream ended
// inside its handler; FromHTTP's, whose Work returns after the End): the
// handle's end must not make the HTTP/1.1 engine decide again what the
// connection does, which it may no longer know (a review of the first
// fix, which ran pump there, found both cases below).

// An h2c upgrade pipelined behind a stream ended in its handler: when
// the stream's handle ends, the connection speaks HTTP/2, stream 1 in
// progress. It used to be put on IdleTimeout then, and its idle close
// sent GOAWAY and a FIN while stream 1's response was owed.
func TestUpgradeBehindAStreamEndedInItsHandler(t *testing.T) {
	ts := startServer(t, endedStreamMux(), Config{IdleTimeout: 200 * time.Millisecond, HeaderTimeout: 5 * time.Second, H2CUpgrade: true})
	rc := dialRaw(t, ts.addr)
	rc.send("GET /s HTTP/1.1\r\nHost: x\r\n\r\n" + upgradeReq("GET", "/slow?ms=600", settingsPayload(), ""))
	assert.Equal(t, "hi", rc.read("GET").body)
	c, _ := upgradedOn(t, rc)
	_, err := io.WriteString(c.nc, http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings())
	sf, ok := c.next().(*http2.SettingsFrame)
	require.True(t, ok && !sf.IsAck(), "the server's SETTINGS come first")
	c.expect(1, "200", "waited 600 ms") // stream 1's response: owed, never idle
	ts.atRest(t)
}

// lateStreamMux: GET /late replies Later with a promise the test holds;
// the test then streams the response from the loop (as FromHTTP's
// streamOut.start does, from a posted job) and ends the handle after it
// (as FromHTTP's Work returns after its stream's End).
func lateStreamMux(reqs chan<- *Request, proms chan<- *aio.Promise[Response]) *Mux {
	m := testMux()
	m.HandleFunc("GET /late", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		reqs <- r
		proms <- p
		return Later(p.Handle())
	})
	return m
}

// A kept-alive connection's next head waits for an arena (the only one
// is held by a request whose stream is written, its handle not ended),
// and Shutdown comes: drain keeps the waiting head to answer it with
// Connection: close. The handle's end gives the arena to that head,
// which is answered; it used to finish the connection instead (nothing
// queued, closing), a FIN while a response was owed.
func TestShutdownServesAHeadWaitingBehindALateHandle(t *testing.T) {
	reqs, proms := make(chan *Request, 4), make(chan *aio.Promise[Response], 4)
	ts := startServer(t, lateStreamMux(reqs, proms), Config{Arenas: 1})
	c := dialRaw(t, ts.addr)
	c.send("GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
	r, p := recvT(t, reqs), recvT(t, proms)
	ts.onLoop(t, func() {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("hi")
		s.End()
	})
	assert.Equal(t, "hi", c.read("GET").body)
	refused := ts.Stats().Refused
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, func() bool { return ts.Stats().Refused > refused }, "the head does not wait for an arena")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	eventually(t, func() bool { return ts.anyConn(t, func(hc *h1conn) bool { return hc.closeAft }) }, "not draining")
	ts.onLoop(t, func() { p.Resolve(Response{}) })
	resp := c.read("GET") // the waiting head is served, with Connection: close
	assert.Equal(t, "ok", resp.body)
	assert.True(t, resp.close)
	assert.True(t, c.closed())
	require.NoError(t, recvT(t, done))
	ts.atRest(t)
}

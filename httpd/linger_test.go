package httpd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/testpeer"
	"golang.org/x/net/http2"
)

// bigBody is a response large enough to wait in the client's socket,
// unread, when its next request crosses the server's FIN.
var bigBody = strings.Repeat("0123456789abcdef", 16<<10)

// lingerMux is testMux with GET /big, which answers bigBody.
func lingerMux() *Mux {
	m := testMux()
	m.HandleFunc("GET /big", func(r *Request) Reply { return Text(200, bigBody) })
	return m
}

// sendBig sends GET /big on a new connection, with the extra header
// lines, and waits until the server has written the response, which the
// client has not read.
func sendBig(t *testing.T, ts *testServer, extra string) *rawConn {
	t.Helper()
	c := dialRaw(t, ts.addr)
	out := ts.l.Stats().TCPBytesOut
	c.send("GET /big HTTP/1.1\r\nHost: x\r\n" + extra + "\r\n")
	eventually(t, func() bool { return ts.l.Stats().TCPBytesOut-out > uint64(len(bigBody)) }, "the response is not out")
	return c
}

// readAllAfterLate sends a late request on c, whose response to GET /big
// the server has written and ended with its FIN, then reads what c has:
// the whole response, then EOF, never a reset (which would make c's kernel
// drop what c has not read yet).
func readAllAfterLate(t *testing.T, c *rawConn) {
	t.Helper()
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n") // crosses the FIN
	resp := c.read("GET")
	assert.Equal(t, bigBody, resp.body)
	rest, err := io.ReadAll(c.br)
	require.NoError(t, err, "a reset: the server closed on the late request")
	assert.Empty(t, rest, "the late request is not answered")
	require.NoError(t, c.Close())
}

// After a Connection: close response the connection lingers: a pipelined
// request that arrives after its FIN is read and dropped, and the client
// reads the whole response; the connection closes at its EOF.
func TestLingerAfterConnectionClose(t *testing.T) {
	ts := startServer(t, lingerMux(), Config{})
	fds := fdCount()
	c := sendBig(t, ts, "Connection: close\r\n")
	readAllAfterLate(t, c)
	ts.atBaseline(t, fds)
}

// On Shutdown an idle kept-alive connection ends with a lingering close
// too: its client, which has not read its last response yet and sends
// another request, still reads the whole response; Shutdown returns at
// the client's EOF.
func TestLingerOnShutdown(t *testing.T) {
	ts := startServer(t, lingerMux(), Config{})
	fds := fdCount()
	c := sendBig(t, ts, "")
	done := shutdownInBackground(ts)
	eventually(t, func() bool {
		var fin bool
		ts.onLoop(t, func() {
			ls := ts.loopStates()[0]
			fin = ls.conns.head == nil || ls.conns.head.finished
		})
		return fin
	}, "Shutdown does not end the idle connection")
	readAllAfterLate(t, c)
	require.NoError(t, recvT(t, done))
	ts.atBaseline(t, fds)
}

// After Shutdown's final GOAWAY and FIN, frames the client sends (they
// crossed the GOAWAY) are read and dropped: the client reads every frame
// the server sent, then EOF, and its EOF ends the connection.
func TestH2LingerAfterGoAway(t *testing.T) {
	ts, c, pr, done := promiseThenShutdown(t)
	c.goAway(1<<31 - 1)
	c.goAway(1)
	body := bigBody
	require.NoError(t, c.fr.WriteWindowUpdate(0, uint32(len(body))))
	require.NoError(t, c.fr.WriteWindowUpdate(1, uint32(len(body))))
	require.True(t, pr.Resolve(TextResponse(200, body)))
	eventually(t, func() bool { return ts.Stats().StreamsOpen == 0 }, "the stream does not end")
	require.NoError(t, c.fr.WritePing(false, [8]byte{'l', 'a', 't', 'e'})) // crosses the FIN
	s, b := c.response(1)
	assert.Equal(t, "200", s)
	assert.Equal(t, body, b)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "a reset: the server closed on the late PING")
			break
		}
		_, ping := f.(*http2.PingFrame)
		assert.False(t, ping, "the late PING is answered")
	}
	require.NoError(t, c.nc.Close())
	require.NoError(t, recvT(t, done))
	ts.atRest(t)
}

// A client that sends "Connection: close" and then keeps sending, while it
// does not read the response, is not read at line rate: nothing after the
// last request is anyone's before the FIN, so the server stops reading
// until its response has reached the kernel and the FIN is out (the
// linger reads and drops after that). Reading on would burn a core per
// such client until WriteTimeout; stopped, the client's writes block once
// the kernel buffers are full.
func TestConnectionCloseStopsReadingUntilTheFIN(t *testing.T) {
	huge := strings.Repeat("x", 16<<20) // more than the kernel buffers hold
	m := testMux()
	m.HandleFunc("GET /huge", func(r *Request) Reply { return Text(200, huge) })
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /huge HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

	const limit = 128 << 20
	written := testpeer.WriteUntilBlocked(t, c, limit, 2*time.Second)
	// The kernel buffers (Linux autotunes up to 6 MiB to receive and
	// 4 MiB to send) and one read buffer hold far less than the limit.
	require.Less(t, written, limit/2, "the server read on, past the request, at line rate")

	require.NoError(t, c.SetDeadline(time.Now().Add(waitTimeout)))
	resp := c.read("GET") // the client reads at last: the response is whole
	require.Equal(t, len(huge), len(resp.body))
	require.True(t, resp.close)
	require.NoError(t, c.Close())
	ts.atRest(t)
}

// A last response (Response.Close) with work behind it, which gets
// nothing, ends the connection lingering too, as any last response: a
// pipelined request already queued (its handler is cancelled), a later
// request whose body is still arriving, or a refusal's answer still owed
// (a head too large). Closing at once instead, as the first fix did,
// reset the connection on the client's late bytes, and its kernel dropped
// the response itself.
func TestLingerAfterALastResponseWithWorkBehindIt(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	for _, c := range []struct {
		name, tail, late string
		in               func(hc *h1conn) bool
	}{
		{"queued", "GET /wait HTTP/1.1\r\nHost: x\r\n\r\n", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
			func(hc *h1conn) bool { return hc.nq == 2 }},
		{"body arriving", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc", strings.Repeat("d", 97),
			func(hc *h1conn) bool { return hc.cur != nil && hc.buffering }},
		{"refusal owed", "GET /x HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("y", 40<<10), strings.Repeat("y", 1000),
			func(hc *h1conn) bool { return hc.errStatus == 431 }},
	} {
		fds := fdCount()
		conn := dialRaw(t, ts.addr)
		conn.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" + c.tail)
		pr := recvT(t, p.promises)
		eventually(t, func() bool { return ts.anyConn(t, c.in) }, "%s: the request behind is not in", c.name)
		out := ts.l.Stats().TCPBytesOut
		require.True(t, pr.Resolve(Response{Body: []byte(bigBody), Close: true}))
		eventually(t, func() bool { return ts.l.Stats().TCPBytesOut-out > uint64(len(bigBody)) }, "%s: the response is not out", c.name)
		eventually(t, func() bool {
			return ts.Stats().ConnsOpen == 0 || ts.anyConn(t, func(hc *h1conn) bool { return hc.finished })
		}, "%s: the connection does not end", c.name)
		conn.send(c.late) // crosses the FIN
		resp := conn.read("GET")
		assert.Equal(t, bigBody, resp.body, c.name)
		assert.True(t, resp.close, c.name)
		rest, err := io.ReadAll(conn.br)
		require.NoError(t, err, "%s: a reset: the server closed on the late bytes", c.name)
		assert.Empty(t, rest, c.name)
		require.NoError(t, conn.Close())
		ts.closedAll(t, fds) // (a request that never reached its handler has an arena but no count in Requests)
	}
}

// A stream that is the connection's last response because its own body
// is unread (its handler ended it without reading) ends the connection
// lingering once its handle ends. Nothing did: pump had written its end
// before the handle ended, and the handle's end called no pump, so the
// connection read and dropped for as long as its client kept it open.
func TestLingerAfterAStreamWithItsBodyUnread(t *testing.T) {
	ts := startServer(t, endedStreamMux(), Config{}) // POST /s: its body unread

	fds := fdCount()
	c := dialRaw(t, ts.addr)
	c.send("POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc")
	resp := c.read("POST")
	assert.Equal(t, "hi", resp.body)
	assert.True(t, resp.close)
	assert.True(t, c.closed(), "the server's FIN")
	require.NoError(t, c.Close())
	ts.closedAll(t, fds)
}

// A handler may end the stream that is its connection's last response
// (a broadcast ending every subscriber, its own connection's among them):
// its own request, pipelined behind, is dropped while it runs. It still
// ends: its arena comes back, a handle it replied with is cancelled (it
// held the FIN, which waits for the connection's handles, and the
// close-delimited body never ended), and the connection closes.
func TestRequestDroppedDuringItsOwnHandler(t *testing.T) {
	var streams []*Stream // on the loop only
	m := testMux()
	m.HandleFunc("GET /sub", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("a")
		streams = append(streams, s)
		return s.Reply()
	})
	endAll := func() {
		for _, s := range streams {
			s.End()
		}
		streams = nil
	}
	m.HandleFunc("GET /endall", func(r *Request) Reply {
		endAll()
		return Text(200, "ended")
	})
	m.HandleFunc("GET /endall-later", func(r *Request) Reply {
		endAll()
		return Later(aio.NewPromise[Response](r.Loop()).Handle()) // answered some day
	})
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/endall", "/endall-later"} {
		fds := fdCount()
		c := dialRaw(t, ts.addr)
		c.send("GET /sub HTTP/1.1\r\nHost: x\r\n\r\n" +
			"GET /sub HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + // close-delimited: the last response
			"GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		assert.Equal(t, "a", c.read("GET").body, path)
		last := c.read("GET") // to the server's FIN
		assert.Equal(t, "a", last.body, path)
		assert.True(t, last.close, path)
		require.NoError(t, c.Close())
		ts.closedAll(t, fds)
	}
}

// The context of a request dropped after its connection's last response
// says why.
func TestDroppedRequestCause(t *testing.T) {
	p := newProbe()
	m := p.mux()
	causes := make(chan error, 1)
	m.HandleFunc("GET /ctx", func(r *Request) Reply {
		ctx := r.Context()
		context.AfterFunc(ctx, func() { causes <- context.Cause(ctx) })
		return Later(aio.NewPromise[Response](r.Loop()).Handle())
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\nGET /ctx HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.Stats().HandlersPending == 2 }, "/ctx is not in")
	require.True(t, pr.Resolve(Response{Body: []byte("x"), Close: true}))
	assert.Equal(t, "x", c.read("GET").body)
	assert.ErrorIs(t, recvT(t, causes), errAfterLast)
	require.NoError(t, c.Close())
	ts.atRest(t)
}

// A stream that is its connection's last response because its body was
// unread when its head went out ends the connection once all is done,
// whatever comes first: its body's end or its handle's. Ended inside its
// handler with the rest of its body in the same read, the body ended
// after pump had written the stream's end and before its handle ended,
// and nothing finished the connection: no FIN (an HTTP/1.0 client's
// close-delimited body never ended) and no timeout.
func TestLingerAfterAStreamWhoseBodyEndsFirst(t *testing.T) {
	m := testMux()
	m.HandleFunc("POST /s", func(r *Request) Reply {
		s := r.Stream(200, nil)
		r.Body().OnData(func([]byte, bool) {})
		_, _ = s.WriteString("hi")
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{ArenaSize: 4096}) // the body streams: over half the arena
	for _, v := range []string{"HTTP/1.1\r\nHost: x", "HTTP/1.0\r\nConnection: keep-alive"} {
		fds := fdCount()
		c := dialRaw(t, ts.addr)
		c.send("POST /s " + v + "\r\nContent-Length: 3000\r\n\r\n" + strings.Repeat("b", 3000))
		resp := c.read("POST") // HTTP/1.0: close-delimited, to the server's FIN
		assert.Equal(t, "hi", resp.body, v)
		assert.True(t, resp.close, v)
		assert.True(t, c.closed(), "%q: the server's FIN", v)
		require.NoError(t, c.Close())
		ts.closedAll(t, fds)
	}
}

// A stream ended inside its handler, which then replies with something
// else (or panics), is the response: it went out whole, the connection
// goes on, and the request's arena comes back. Before, the request,
// already off the queue, was never released.
func TestStreamEndedThenAnotherReply(t *testing.T) {
	m := okAfter(NewMux())
	m.HandleFunc("GET /other", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("hi")
		s.End()
		return Text(200, "other")
	})
	m.HandleFunc("GET /panic", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("hi")
		s.End()
		panic("after End")
	})
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/other", "/panic"} {
		assert.Equal(t, "hi", pipelineOK(t, ts, path).body, path)
		ts.atRest(t)
	}
}

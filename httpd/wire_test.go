package httpd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/testpeer"
	"golang.org/x/net/http2"
)

// Limits and malformed requests: each is answered with its status and the
// connection closes, even when more requests follow on it.
func TestRefusals(t *testing.T) {
	ts := startServer(t, testMux(), Config{MaxBodyBytes: 1000})
	const next = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tc := range []struct {
		name   string
		req    string
		status int
	}{
		{"head too large", "GET /health HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 20<<10) + "\r\n\r\n", 431},
		{"too many fields", "GET /health HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: y\r\n", 101) + "\r\n", 431},
		{"URI too long", "GET /" + strings.Repeat("a", 9<<10) + " HTTP/1.1\r\nHost: x\r\n\r\n", 414},
		{"body too large", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", 413},
		{"chunked body too large", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n" + strings.Repeat("a", 1001) + "\r\n0\r\n\r\n", 413},
		{"garbage", "HELLO\r\n\r\n", 400},
		{"HTTP/2.0", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505},
		{"unknown expectation", "GET /health HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n", 417},
		// smuggling vectors
		{"CL and TE", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"differing CLs", "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nhello", 400},
		{"TE not ending in chunked", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 400},
		{"bad chunk size", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400},
		{"chunk size overflow", "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 400},
		{"obs-fold", "GET /health HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", 400},
		{"space before colon", "GET /health HTTP/1.1\r\nHost : x\r\n\r\n", 400},
		{"CR in value", "GET /health HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", 400},
		{"NUL in value", "GET /health HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", 400},
		{"no Host in 1.1", "GET /health HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET /health HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n", 400},
		{"TE in 1.0", "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts.addr)
			c.send(tc.req + next)
			resp := c.read("GET")
			assert.Equal(t, tc.status, resp.status)
			assert.True(t, resp.close, "Connection: close")
			assert.True(t, c.closed(), "the connection must close")
		})
	}
	ts.atRest(t)
}

// A request line whose version is not HTTP/<digit>.<digit> is not HTTP/1:
// no answer, the connection closes (after the responses owed before it),
// counted as a bad request. An invalid HTTP/2 preface is one.
func TestNotHTTP1Closes(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	for _, line := range []string{"INVALID CONNECTION PREFACE\r\n\r\n", "GET / http/1.1\r\nHost: x\r\n\r\n",
		"GET / HTTP/1.1.1\r\nHost: x\r\n\r\n"} {
		c := dialRaw(t, ts.addr)
		c.send(line)
		assert.True(t, c.closed(), "%q: the connection must close without an answer", line)
	}
	c := dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\nPRI * HTTP/2.X\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
	assert.True(t, c.closed(), "nothing after the response owed")
	assert.Equal(t, uint64(4), ts.Stats().BadRequests)
	ts.atRest(t)
}

// Responses go out in request order, whichever finishes first: an async
// response that is ready early waits for its turn.
func TestPipelineOrder(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /slow?ms=60 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
		"GET /slow?ms=1 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"HEAD /users/9 HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /users/8 HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "waited 60 ms", c.read("GET").body)
	assert.Equal(t, "ok", c.read("GET").body)
	assert.Equal(t, "waited 1 ms", c.read("GET").body)
	head := c.read("HEAD")
	assert.Equal(t, "", head.body)
	assert.Equal(t, "10", head.header.Get("Content-Length"))
	assert.Equal(t, "abc", c.read("POST").body)
	assert.Equal(t, `{"id":"8"}`, c.read("GET").body)
	ts.atRest(t)
}

// HTTP/1.0: kept alive when asked, closed otherwise; Connection: close in
// HTTP/1.1 closes.
func TestConnectionHeaders(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialRaw(t, ts.addr)
	for range 3 {
		c.send("GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
		resp := c.read("GET")
		assert.Equal(t, "ok", resp.body)
		assert.Equal(t, "keep-alive", resp.header.Get("Connection"))
	}
	c.send("GET /health HTTP/1.0\r\n\r\n")
	resp := c.read("GET")
	assert.Equal(t, "ok", resp.body)
	assert.True(t, resp.close, "Connection: close")
	assert.True(t, c.closed())

	c = dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	resp = c.read("GET")
	assert.True(t, resp.close, "Connection: close")
	assert.True(t, c.closed(), "nothing after Connection: close")
	ts.atRest(t)
}

// Expect: 100-continue gets its interim response, buffered or streamed.
func TestExpectContinue(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	tr := &http.Transport{ExpectContinueTimeout: waitTimeout}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: waitTimeout}
	for _, n := range []int{10, 200 << 10} {
		got100 := false
		trace := &httptrace.ClientTrace{Got100Continue: func() { got100 = true }}
		body := bytes.Repeat([]byte("x"), n)
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "POST", ts.url+"/echo", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Expect", "100-continue")
		resp, got := do(t, c, req)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, n, len(got))
		assert.True(t, got100, "no 100 Continue for %d bytes", n)
	}
	ts.atRest(t)
}

// A pipelined request that expects 100-continue gets its interim response
// only after the final responses before it: a client takes a 1xx for the
// answer to its oldest request still unanswered. A body sent without
// waiting needs none, and the connection lives on.
func TestExpectContinuePipelined(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	for _, framing := range []string{"Content-Length: 5", "Transfer-Encoding: chunked"} {
		body := "hello"
		if framing[0] == 'T' {
			body = "5\r\nhello\r\n0\r\n\r\n"
		}
		post := "POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n" + framing + "\r\n\r\n"
		// the body waits for the 100
		c := dialRaw(t, ts.addr)
		c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" + post)
		pr := recvT(t, p.promises)
		eventually(t, func() bool { return ts.Stats().StreamsOpen == 2 }, "the POST's head is not read")
		pr.Resolve(TextResponse(200, "first"))
		assert.Equal(t, "first", c.read("GET").body, framing)
		assert.Equal(t, 100, c.read("POST").status, framing)
		c.send(body)
		resp := c.read("POST")
		assert.Equal(t, "hello", resp.body, framing)
		assert.False(t, resp.close, framing)
		// the body follows at once
		requests := ts.Stats().Requests
		c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" + post + body)
		pr = recvT(t, p.promises)
		eventually(t, func() bool { return ts.Stats().Requests == requests+2 }, "the POST is not dispatched")
		pr.Resolve(TextResponse(200, "first"))
		assert.Equal(t, "first", c.read("GET").body, framing)
		resp = c.read("POST")
		assert.Equal(t, 200, resp.status, framing)
		assert.Equal(t, "hello", resp.body, framing)
		assert.False(t, resp.close, framing)
		c.Close()
	}
	ts.atRest(t)
}

// A slow client's head times out (slowloris), and so does an idle
// kept-alive connection.
func TestTimeouts(t *testing.T) {
	ts := startServer(t, testMux(), Config{HeaderTimeout: 100 * time.Millisecond, IdleTimeout: 150 * time.Millisecond})
	c := dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\n")
	start := time.Now()
	// A byte now and then, until the server closes, does not keep it open:
	// were each byte to restart the timeout, the connection would stay
	// open and closed() would time out. The sleep paces a slow client.
	trickle := make(chan struct{})
	go func() {
		defer close(trickle)
		for {
			time.Sleep(20 * time.Millisecond)
			if _, err := c.Write([]byte("X")); err != nil {
				return
			}
		}
	}()
	assert.True(t, c.closed(), "a head that takes too long closes the connection")
	assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
	c.Close()
	<-trickle

	c = dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
	start = time.Now()
	assert.True(t, c.closed(), "an idle connection closes")
	assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)

	c = dialRaw(t, ts.addr) // nothing sent at all
	assert.True(t, c.closed())
	ts.atRest(t)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "connections open")
}

// A request whose body is too large for the arena and that expects
// 100-continue, pipelined, gets its 100 when its turn comes, before the
// head of the stream that echoes the body.
func TestExpectContinuePipelinedStream(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<12) // 64 KiB: streamed
	c := dialRaw(t, ts.addr)
	c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.Stats().Requests == 2 }, "the POST's handler has not started")
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", c.read("GET").body)
	require.Equal(t, 100, c.read("POST").status)
	c.send(string(body))
	resp := c.read("POST")
	assert.Equal(t, 200, resp.status)
	assert.True(t, bytes.Equal(body, []byte(resp.body)), "%d bytes back", len(resp.body))
	c.Close()
	ts.atRest(t)
}

// A body small enough to wait in the arena for its handler may not pause
// for longer than HeaderTimeout either: a client that sends a head and
// never its body would hold an arena for good, and enough of them every
// arena of the loop. Sent in its turn, a 100 Continue starts its body's
// time afresh.
func TestBufferedBodyTimeout(t *testing.T) {
	p := newProbe()
	const timeout = 200 * time.Millisecond // room for the client's steps below
	ts := startServer(t, p.mux(), Config{HeaderTimeout: timeout})
	for _, framing := range []string{"Content-Length: 10", "Transfer-Encoding: chunked"} {
		for _, keptAlive := range []bool{false, true} {
			c := dialRaw(t, ts.addr)
			if keptAlive { // waiting for its next request: the idle timeout runs
				c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
				assert.Equal(t, "ok", c.read("GET").body)
			}
			ts.atRest(t)
			before := ts.Stats()
			c.send("POST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n")
			assert.True(t, c.closed(), "%s, kept alive %v: a body that never comes closes the connection", framing, keptAlive)
			ts.atRest(t)
			after := ts.Stats()
			// An arena is taken only for a whole head: the head was read and
			// the body's wait timed out (not the head's). Counted, not polled:
			// the open stream lasts only until the timeout.
			assert.Equal(t, before.ArenaReleases+1, after.ArenaReleases, "the head was not read")
			assert.Equal(t, before.Requests, after.Requests, "no handler started")
		}
	}

	// A body that waits for its 100 Continue, in turn after a response
	// that takes longer than HeaderTimeout, is not timed out meanwhile.
	c := dialRaw(t, ts.addr)
	c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /echo HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.Stats().StreamsOpen == 2 }, "the POST's head is not read")
	// A bounded negative check: no event tells that a timeout did not
	// fire, so wait past it (the sweep runs every timeout/4).
	time.Sleep(2 * timeout)
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", c.read("GET").body)
	assert.Equal(t, 100, c.read("POST").status)
	c.send("hello")
	assert.Equal(t, "hello", c.read("POST").body)
	c.Close()
	ts.atRest(t)
}

// A buffered body's first pause is bounded from the end of its head, as
// each later one is from the piece before it: not by what is left of the
// head's own time, which on a connection's first request counts from the
// connection's start. A client that opens the connection, sends the head
// late within HeaderTimeout, and the body in a write of its own within a
// HeaderTimeout of the head, keeps to every bound and gets its answer.
// Before, the connection stayed under the head's deadline and closed
// unanswered while the body was on its way.
func TestBufferedBodyPauseFromHead(t *testing.T) {
	const timeout = time.Second
	const pause = timeout * 7 / 10 // each pause is within timeout; both are well past it
	// IdleTimeout only makes the sweep (every min(HeaderTimeout,
	// IdleTimeout)/4) run often, so that a deadline that has passed closes
	// at once: no connection here is idle.
	ts := startServer(t, testMux(), Config{HeaderTimeout: timeout, BodyTimeout: 10 * timeout, IdleTimeout: 40 * time.Millisecond})
	framings := [...][2]string{
		{"Content-Length: 5", "hello"},
		{"Transfer-Encoding: chunked", "5\r\nhello\r\n0\r\n\r\n"},
	}
	var cs [len(framings)]*rawConn
	for i := range cs {
		cs[i] = dialRaw(t, ts.addr)
	}
	eventually(t, func() bool { return ts.Stats().ConnsOpen == int64(len(cs)) }, "not accepted")
	time.Sleep(pause) // paces a slow client: the head comes late in its time
	for i, c := range cs {
		c.send("POST /echo HTTP/1.1\r\nHost: x\r\n" + framings[i][0] + "\r\n\r\n")
	}
	eventually(t, func() bool { return ts.Stats().ArenasInUse == int64(len(cs)) }, "the heads are not read")
	time.Sleep(pause) // and the body late after it: the connection is still open
	for i, c := range cs {
		c.send(framings[i][1])
	}
	for i, c := range cs {
		resp := c.read("POST")
		assert.Equal(t, 200, resp.status, "%s", framings[i][0])
		assert.Equal(t, "hello", resp.body, "%s", framings[i][0])
		c.Close()
	}
	ts.atRest(t)
}

// A body small enough to wait in the arena may take longer than
// HeaderTimeout in all, as a streamed one may: each piece restarts the
// time; only a pause longer than HeaderTimeout ends it (TestBufferedBodyTimeout).
// A slow client's small upload is not cut for being slow.
func TestBufferedBodySlowButSteady(t *testing.T) {
	const timeout = 500 * time.Millisecond // see TestStreamedBodyTimeout
	const pace = timeout / 10
	ts := startServer(t, testMux(), Config{HeaderTimeout: timeout})
	for _, chunked := range []bool{false, true} {
		const pieces, size = 20, 100 // 20 paces: twice the timeout
		framing := "Content-Length: " + itoa(pieces*size)
		if chunked {
			framing = "Transfer-Encoding: chunked"
		}
		c := dialRaw(t, ts.addr)
		in := ts.l.Stats().TCPBytesIn
		head := "POST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n"
		c.send(head)
		sent := uint64(len(head))
		for range pieces {
			piece := strings.Repeat("x", size)
			if chunked {
				piece = fmt.Sprintf("%x\r\n%s\r\n", size, piece)
			}
			c.send(piece)
			sent += uint64(len(piece))
			eventually(t, func() bool { return ts.l.Stats().TCPBytesIn-in == sent }, "the piece is not read")
			time.Sleep(pace) // paces a slow client
		}
		if chunked {
			c.send("0\r\n\r\n")
		}
		resp := c.read("POST")
		assert.Equal(t, 200, resp.status, "chunked %v", chunked)
		assert.Equal(t, strings.Repeat("x", pieces*size), resp.body, "chunked %v", chunked)
		c.Close()
	}
	ts.atRest(t)
}

// A body that waits in the arena must arrive whole within BodyTimeout,
// however steadily it trickles (the slow POST): past it the request is
// answered 408, its handler never starts, its arena comes back and the
// connection closes.
func TestBufferedBodyWholeTimeout(t *testing.T) {
	const bodyTimeout = 600 * time.Millisecond
	ts := startServer(t, testMux(), Config{HeaderTimeout: 400 * time.Millisecond, BodyTimeout: bodyTimeout})
	for _, chunked := range []bool{false, true} {
		framing := "Content-Length: 5000" // 100 s at the pace below
		if chunked {
			framing = "Transfer-Encoding: chunked"
		}
		ts.atRest(t)
		before := ts.Stats()
		c := dialRaw(t, ts.addr)
		c.send("POST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n")
		start := time.Now()
		piece := []byte("x") // a byte, or a one-byte chunk, every 50 ms: never a pause
		if chunked {
			piece = []byte("1\r\nx\r\n")
		}
		stop := testpeer.Trickle(c, piece, 50*time.Millisecond)
		resp := c.read("POST")
		stop()
		assert.Equal(t, 408, resp.status, "chunked %v", chunked)
		assert.GreaterOrEqual(t, time.Since(start), bodyTimeout-50*time.Millisecond, "chunked %v", chunked)
		assert.True(t, c.closed(), "chunked %v: the connection closes after the 408", chunked)
		c.Close()
		ts.atRest(t)
		after := ts.Stats()
		assert.Equal(t, before.Requests, after.Requests, "no handler started")
		assert.Equal(t, before.BadRequests+1, after.BadRequests)
		assert.Equal(t, before.ArenaReleases+1, after.ArenaReleases)
	}
}

// A streamed echo pipelined behind a pending response writes ahead until
// streamPendMax, then its body stalls; when its turn comes the body flows
// again, whole, with Content-Length and chunked.
func TestStreamedEchoWaitsItsTurn(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, chunked := range []bool{false, true} {
		c := dialRaw(t, ts.addr)
		framing, wire := "Content-Length: "+itoa(len(body)), body
		if chunked {
			framing = "Transfer-Encoding: chunked"
			wire = append([]byte(strconv.FormatInt(int64(len(body)), 16)+"\r\n"), body...)
			wire = append(wire, "\r\n0\r\n\r\n"...)
		}
		c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\nPOST /echo HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n")
		pr := recvT(t, p.promises)
		sent := make(chan error, 1)
		go func() { _, err := c.Write(wire); sent <- err }()
		eventually(t, func() bool {
			return ts.anyConn(t, func(hc *h1conn) bool { return hc.stall&stallBody != 0 })
		}, "chunked %v: the body did not stall on streamPendMax", chunked)
		pr.Resolve(TextResponse(200, "first"))
		assert.Equal(t, "first", c.read("GET").body)
		resp := c.read("POST")
		require.NoError(t, recvT(t, sent))
		assert.True(t, bytes.Equal(body, []byte(resp.body)), "chunked %v: %d bytes back", chunked, len(resp.body))
		c.Close()
	}
	ts.atRest(t)
}

// A handler that answers later without reading a large body: once the
// response is out, the rest of the body is read and dropped, so that a
// client that sends it all before it reads gets its response and a clean
// close, not a write stalled until the linger runs out.
func TestUnreadBodyIsDiscarded(t *testing.T) {
	m := testMux()
	m.HandleFunc("POST /later", func(r *Request) Reply {
		return Later(aio.Delay(r.Loop(), 10*time.Millisecond, func() (Response, error) {
			return TextResponse(200, "later"), nil
		}))
	})
	ts := startServer(t, m, Config{HeaderTimeout: time.Minute})
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB: more than the kernel buffers
	c := dialRaw(t, ts.addr)
	c.send("POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n")
	_, err := c.Write(body) // the server reads it only after the response
	require.NoError(t, err, "the rest of the body is not read")
	resp := c.read("POST")
	assert.Equal(t, "later", resp.body)
	assert.True(t, resp.close, "Connection: close")
	require.NoError(t, c.Conn.(interface{ CloseWrite() error }).CloseWrite())
	assert.True(t, c.closed())
	ts.atRest(t)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
}

// A body too large for the arena streams in to its handler; a client that
// stops sending it while the handler reads is timed out (HeaderTimeout,
// restarted by each piece), and its handler cancelled. One that only stops
// reading the echo, and so holds the server's reading back, is not.
func TestStreamedBodyTimeout(t *testing.T) {
	// The client sends a piece pace after the handler has read the last
	// one, for longer than timeout: only the restarts keep it open. The
	// gap between two pieces is pace plus the machine's delays, which run
	// to hundreds of milliseconds under -race on a loaded CI machine:
	// timeout leaves them nine tenths of itself.
	const timeout = 500 * time.Millisecond
	const pace = timeout / 10
	var read atomic.Int64 // body bytes the handler has had; any goroutine
	m := testMux()
	m.HandleFunc("POST /count", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		n := 0
		r.Body().OnData(func(b []byte, end bool) {
			read.Add(int64(len(b)))
			if n += len(b); end {
				p.Resolve(TextResponse(200, itoa(n)))
			}
		})
		return Later(p.Handle())
	})
	ts := startServer(t, m, Config{HeaderTimeout: timeout})
	for i, framing := range []string{"Content-Length: 1000000", "Transfer-Encoding: chunked"} {
		read.Store(0)
		c := dialRaw(t, ts.addr)
		c.send("POST /count HTTP/1.1\r\nHost: x\r\n" + framing + "\r\n\r\n")
		sent := int64(0)
		for start := time.Now(); time.Since(start) <= timeout+pace; { // progress keeps it open
			if framing[0] == 'T' {
				c.send("10000\r\n" + strings.Repeat("x", 0x10000) + "\r\n")
			} else {
				c.send(strings.Repeat("x", 0x10000))
			}
			sent += 0x10000
			eventually(t, func() bool { return read.Load() == sent }, "%s: the handler has not read the piece", framing)
			time.Sleep(pace) // paces a slow client
		}
		assert.Equal(t, uint64(i+1), ts.Stats().Requests)
		assert.True(t, c.closed(), "%s: a body that stops coming closes the connection", framing)
		ts.atRest(t)
		assert.Equal(t, uint64(i+1), ts.Stats().Cancelled)
	}

	// A client that sends a large body but reads its echo only later.
	body := bytes.Repeat([]byte("0123456789abcdef"), 2<<20) // 32 MiB: more than the buffers hold
	c := dialRaw(t, ts.addr)
	c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n")
	sent := make(chan error, 1)
	go func() { _, err := c.Write(body); sent <- err }()
	eventually(t, func() bool {
		return ts.anyConn(t, func(hc *h1conn) bool { return hc.c.Full() })
	}, "the echo did not fill the write queue")
	time.Sleep(3 * timeout) // a bounded negative check: the timeout does not fire meanwhile
	resp := c.read("POST")
	require.NoError(t, recvT(t, sent))
	assert.True(t, bytes.Equal(body, []byte(resp.body)), "%d bytes back", len(resp.body))
	c.Close()
	ts.atRest(t)
}

// A body of 8 MiB streams through the echo handler both ways, byte for
// byte, with Content-Length and chunked.
func TestStreamedEchoBig(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := client(t)
	body := make([]byte, 8<<20)
	for i := range body {
		body[i] = byte(i*7 + i>>11)
	}
	for _, chunked := range []bool{false, true} {
		var r io.Reader = bytes.NewReader(body)
		if chunked {
			r = io.MultiReader(r)
		}
		_, got := post(t, c, ts.url+"/echo", r)
		require.Equal(t, len(body), len(got))
		require.True(t, bytes.Equal(body, got), "chunked=%v: bytes differ", chunked)
	}
	ts.atRest(t)
}

// sseMux has /events: n events every ms, from an Every adopted into the
// request's scope.
func sseMux() *Mux {
	m := testMux()
	m.HandleFunc("GET /events", func(r *Request) Reply {
		n, ms := atoi(r.Query("n")), atoi(r.Query("ms"))
		s := r.Stream(200, []Field{{"Content-Type", "text/event-stream"}})
		i := 0
		aio.Adopt(r.Scope(), aio.Every(r.Loop(), time.Duration(ms)*time.Millisecond, func() {
			if i == n {
				s.End()
				return
			}
			b := r.Arena().Alloc(32)[:0]
			b = append(b, "data: "...)
			b = append(b, itoa(i)...)
			b = append(b, "\n\n"...)
			_, _ = s.Write(b)
			i++
		}))
		return s.Reply()
	})
	return m
}

// Server-sent events: a stream ends when the handler ends it, and when its
// client goes away, which stops the timer feeding it.
func TestEventStream(t *testing.T) {
	ts := startServer(t, sseMux(), Config{})
	st, body := get(t, client(t), ts.url+"/events?n=3&ms=1")
	assert.Equal(t, 200, st)
	assert.Equal(t, "data: 0\n\ndata: 1\n\ndata: 2\n\n", body)
	ts.atRest(t)
	timers := ts.l.Stats().Timers

	c := dialRaw(t, ts.addr)
	c.send("GET /events?n=1000000&ms=2 HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	buf := make([]byte, 18)
	_, err = io.ReadFull(resp.Body, buf)
	require.NoError(t, err)
	assert.Equal(t, "data: 0\n\ndata: 1\n\n", string(buf))
	c.Close()
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
	eventually(t, func() bool { return ts.l.Stats().Timers == timers }, "the stream's timer still runs")
}

// A Stream's head goes out as soon as the handler returns it (in its
// turn), not with its first bytes: an event stream whose first event
// comes in a minute is open at once for its client (EventSource's open
// event), on HTTP/1.1 as on HTTP/2.
func TestStreamHeadGoesAtOnce(t *testing.T) {
	ts := startServer(t, sseMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /events?n=1&ms=60000 HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	require.NoError(t, err, "the head waits for the first event")
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	c.Close()

	h2 := dialH2(t, ts.addr)
	h2.get(1, "/events?n=1&ms=60000")
	f := h2.next()
	hf, ok := f.(*http2.MetaHeadersFrame)
	require.True(t, ok, "not HEADERS: %v", f)
	assert.Equal(t, "200", hf.PseudoValue("status"))
	assert.False(t, hf.StreamEnded())
	require.NoError(t, h2.nc.Close())
	ts.atRest(t)
}

// arenaWait takes ts's one arena with a pending request on a (whose
// promise it returns) and has b's whole head wait for it.
func arenaWait(t *testing.T, ts *testServer, p *probe) (a, b *rawConn, pr *aio.Promise[Response]) {
	t.Helper()
	a = dialRaw(t, ts.addr)
	a.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n")
	pr = recvT(t, p.promises)
	b = dialRaw(t, ts.addr)
	b.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	eventually(t, func() bool { return ts.Stats().Refused == 1 }, "not waiting: %+v", ts.Stats())
	return a, b, pr
}

// With one arena, a second connection's request waits, its reading
// paused, until the first request ends; then it is served.
func TestNoArena(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1})
	a, b, pr := arenaWait(t, ts, p)
	assert.Equal(t, uint64(1), ts.Stats().Requests)
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", a.read("GET").body)
	assert.Equal(t, "ok", b.read("GET").body)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(2), st.Requests)
	assert.Equal(t, int64(1), st.ArenasCapacity)
}

// A connection whose whole head waits for an arena waits on the server,
// not on its client: HeaderTimeout does not cut it (here much shorter
// than the wait); IdleTimeout bounds the wait, counted from its start,
// after which it closes without an answer.
func TestNoArenaWaitIsNotAHeadTimeout(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1, HeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Hour})
	a, b, pr := arenaWait(t, ts, p)
	b.staysOpen(300 * time.Millisecond) // six times HeaderTimeout: a close in that time is the bug
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", a.read("GET").body)
	assert.Equal(t, "ok", b.read("GET").body)

	ts2 := startServer(t, p.mux(), Config{Arenas: 1, HeaderTimeout: time.Hour, IdleTimeout: 100 * time.Millisecond})
	a, b, pr = arenaWait(t, ts2, p)
	assert.True(t, b.closed(), "IdleTimeout bounds the wait")
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", a.read("GET").body)
	ts.atRest(t)
	ts2.atRest(t)
}

// A pipelined head that came in pieces (HeaderTimeout started) and then
// waits, whole, for an arena while its connection's first request holds
// the only one: the wait is not a head in progress, and the connection,
// its request in progress included, is not cut.
func TestNoArenaPipelinedWaitIsNotAHeadTimeout(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1, HeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Hour})
	first, piece := "GET /promise HTTP/1.1\r\nHost: x\r\n\r\n", "GET /health HTTP/1.1\r\n"
	a := dialRaw(t, ts.addr)
	a.send(first)
	pr := recvT(t, p.promises)
	a.send(piece) // a head begun: HeaderTimeout runs
	eventually(t, func() bool { return ts.l.Stats().TCPBytesIn == uint64(len(first+piece)) }, "the piece was not read")
	a.send("Host: x\r\n\r\n") // whole now: it waits for the one arena
	eventually(t, func() bool { return ts.Stats().Refused == 1 }, "not waiting: %+v", ts.Stats())
	a.staysOpen(300 * time.Millisecond) // six times HeaderTimeout: a close in that time is the bug
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", a.read("GET").body)
	assert.Equal(t, "ok", a.read("GET").body)
	ts.atRest(t)
}

// Shutdown does not take a connection whose whole head waits for an
// arena for an idle one: its request is served once the arena comes
// back, with Connection: close, before the connection ends.
func TestShutdownServesAHeadWaitingForAnArena(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1})
	a, b, pr := arenaWait(t, ts, p)
	done := shutdownInBackground(ts)
	eventually(t, func() bool { return ts.l.Stats().TCPListeners == 0 }, "the drain has not begun")
	b.staysOpen(100 * time.Millisecond) // ending it unanswered now is the bug
	pr.Resolve(TextResponse(200, "first"))
	resp := a.read("GET")
	assert.Equal(t, "first", resp.body)
	assert.True(t, resp.close)
	resp = b.read("GET")
	assert.Equal(t, "ok", resp.body)
	assert.True(t, resp.close, "Connection: close during the drain")
	require.NoError(t, a.Close())
	require.NoError(t, b.Close())
	require.NoError(t, recvT(t, done))
}

// A connection that ends (here: Shutdown's last response, then a linger
// its client does not cut short) stops waiting for an arena: one freed
// meanwhile is not handed to it, to hold until the linger ends, but goes
// back for whoever else waits.
func TestFinishedConnectionWaitsForNoArena(t *testing.T) {
	p := newProbe()
	cfg := Config{Arenas: 1}
	cfg.Listen.Conn.Linger = time.Hour
	ts := startServer(t, p.mux(), cfg)
	a := dialRaw(t, ts.addr)
	a.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.Stats().Refused == 1 }, "the pipelined head does not wait: %+v", ts.Stats())
	done := shutdownInBackground(ts)
	eventually(t, func() bool { return ts.l.Stats().TCPListeners == 0 }, "the drain has not begun")
	pr.Resolve(TextResponse(200, "first"))
	resp := a.read("GET")
	assert.Equal(t, "first", resp.body)
	assert.True(t, resp.close)
	eventually(t, func() bool { return ts.Stats().ArenasInUse == 0 }, "a lingering connection holds an arena: %+v", ts.Stats())
	require.NoError(t, a.Close())
	require.NoError(t, recvT(t, done))
}

// A client that pipelines requests and never reads the responses: the
// server stops reading it once its write queue is full, so what it holds
// for the client stays bounded.
func TestPipelineNeverReads(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialRaw(t, ts.addr)
	req := []byte("GET /users/" + strings.Repeat("x", 200) + " HTTP/1.1\r\nHost: x\r\n\r\n")
	batch := bytes.Repeat(req, 100)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(2*time.Second)))
	sent := 0
	for {
		n, err := c.Write(batch)
		sent += n
		if err != nil {
			break // the server stopped reading: the kernel buffers are full
		}
		require.Less(t, sent, 1<<30, "the server reads on")
	}
	st := ts.l.Stats()
	t.Logf("sent %d bytes; the server queues %d bytes, answered %d requests", sent, st.TCPWriteQueued, ts.Stats().Requests)
	assert.Less(t, st.TCPWriteQueued, 2<<20, "the write queue grows without bound")
	assert.LessOrEqual(t, ts.Stats().ArenasInUse, int64(DefaultMaxPipeline))
	c.Close()
	ts.atRest(t)
}

// Shutdown lets the request in progress finish (its response says
// Connection: close), ends idle connections, and returns once all are
// closed (each lingers after its FIN until its client's EOF, as a client
// closes at the server's); past its deadline it cancels what is left.
func TestShutdown(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	idle := dialRaw(t, ts.addr)
	idle.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.read("GET")
	busy := dialRaw(t, ts.addr)
	busy.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)

	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(context.Background()) }()
	assert.True(t, idle.closed(), "an idle connection ends at once")
	require.NoError(t, idle.Close())
	pr.Resolve(TextResponse(200, "last"))
	resp := busy.read("GET")
	assert.Equal(t, "last", resp.body)
	assert.True(t, resp.close, "Connection: close")
	assert.True(t, busy.closed())
	require.NoError(t, busy.Close())
	require.NoError(t, recvT(t, done))
	_, err := client(t).Get(ts.url + "/health")
	assert.Error(t, err, "the listener is closed")
	ts.atRest(t)
}

// Shutdown with a nil context is bad input: it says so, and the server
// goes on serving, instead of a panic after the drain has begun.
func TestShutdownNilContext(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	err := ts.Shutdown(nil) // the bad input under test
	require.ErrorIs(t, err, aio.ErrInvalidArgument)
	require.ErrorContains(t, err, "nil context")
	code, body := get(t, client(t), ts.url+"/health")
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok", body)
}

func TestShutdownDeadline(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	busy := dialRaw(t, ts.addr)
	busy.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
	recvT(t, p.started)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, ts.Shutdown(ctx), context.DeadlineExceeded)
	assert.True(t, busy.closed())
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
	recvT(t, p.workEnded)
}

// Shutdown called in a handler, on the server's loop, would wait for that
// loop: it starts the shutdown and returns aio.ErrAwaitOnLoop at once.
// The loop goes on: a pending request on another connection is answered
// (Connection: close), and the deadline still holds for the rest.
func TestShutdownOnLoop(t *testing.T) {
	p := newProbe()
	m := p.mux()
	srv := &Server{Handler: m}
	cancels := make(chan context.CancelFunc, 1)
	m.HandleFunc("GET /stop", func(r *Request) Reply {
		// The shutdown outlives the handler: so must its context.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		cancels <- cancel
		if err := srv.Shutdown(ctx); !errors.Is(err, aio.ErrAwaitOnLoop) {
			return Text(500, fmt.Sprint(err))
		}
		return Text(200, "stopping")
	})
	ts := serveTest(t, srv)
	busy := dialRaw(t, ts.addr)
	busy.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)
	stuck := dialRaw(t, ts.addr)
	stuck.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
	recvT(t, p.started)

	c := dialRaw(t, ts.addr)
	c.send("GET /stop HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "stopping", c.read("GET").body)
	defer recvT(t, cancels)()
	assert.True(t, c.closed(), "an idle connection ends")
	pr.Resolve(TextResponse(200, "served"))
	assert.Equal(t, "served", busy.read("GET").body, "the loop went on")
	assert.True(t, stuck.closed(), "the deadline closes what is left")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
	recvT(t, p.workEnded)
}

// A server with nothing to drain has shut down in time, even under a
// context that has ended already, as net/http's Shutdown of a server at
// rest returns nil.
func TestShutdownAtRest(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.NoError(t, ts.Shutdown(ctx))
}

// OnDrain runs when a stream stops being Full, and only then: not from
// within the handler's first Write (which starts the stream), nor when
// the head goes out, for a stream that never said Full; for one that
// waited its turn behind a pending response (Full meanwhile), once its
// turn comes.
func TestStreamOnDrainOnlyAfterFull(t *testing.T) {
	p := newProbe()
	m := p.mux()
	var drains atomic.Int64 // any goroutine
	m.HandleFunc("GET /once", func(r *Request) Reply {
		s := r.Stream(200, nil)
		s.OnDrain(func() { drains.Add(1) })
		if s.Full() { // behind a pending response: not its turn
			s.OnDrain(func() {
				drains.Add(1)
				_, _ = s.WriteString("late")
				s.End()
			})
			return s.Reply()
		}
		_, _ = s.WriteString("at once")
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /once HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "at once", c.read("GET").body)
	assert.Zero(t, drains.Load(), "OnDrain of a stream that never was Full")

	c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\nGET /once HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.Stats().Requests == 3 }, "the second request has not started")
	pr.Resolve(TextResponse(200, "first"))
	assert.Equal(t, "first", c.read("GET").body)
	assert.Equal(t, "late", c.read("GET").body)
	assert.Equal(t, int64(1), drains.Load(), "OnDrain once its turn came")
	ts.atRest(t)
}

// A handler that starts a Stream, writes to it, and then replies with
// something else has broken its response: its head is out. The
// connection (HTTP/1.1) or the stream (HTTP/2, RST_STREAM INTERNAL_ERROR)
// ends, a handle it replied with is cancelled, and the request's arena
// comes back, however the reply was made.
func TestStreamStartedButNotReplied(t *testing.T) {
	var orphans []*aio.Promise[Response] // owned by the loop
	m := testMux()
	m.HandleFunc("GET /now", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("begun")
		return Text(200, "other")
	})
	m.HandleFunc("GET /later", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("begun")
		p := aio.NewPromise[Response](r.Loop())
		orphans = append(orphans, p)
		return Later(p.Handle())
	})
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/now", "/later"} {
		c := dialRaw(t, ts.addr)
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
		require.NoError(t, err)
		_, err = io.ReadAll(resp.Body)
		assert.Error(t, err, "%s: the body must be cut", path) // never ended
		ts.atRest(t)

		h2 := dialH2(t, ts.addr)
		h2.get(1, path)
		_, ok := h2.next().(*http2.MetaHeadersFrame)
		require.True(t, ok)
		_, ok = h2.next().(*http2.DataFrame)
		require.True(t, ok)
		h2.expectReset(1, http2.ErrCodeInternal)
		ts.atRest(t)
	}
	ts.onLoop(t, func() {
		for _, p := range orphans {
			assert.Equal(t, aio.Cancelled, p.Handle().Status(), "the reply's handle runs on, owned by nobody")
		}
	})
	assert.Len(t, orphans, 2)
}

// A Stream whose header declares a Content-Length takes that many bytes:
// a Write past it fails with ErrContentLength and sends nothing of them,
// and the response, ended, is the declared body, on both protocols.
func TestStreamContentLength(t *testing.T) {
	writeErr := make(chan error, 2)
	m := testMux()
	m.HandleFunc("GET /five", func(r *Request) Reply {
		s := r.Stream(200, []Field{{Name: "Content-Length", Value: "5"}})
		_, _ = s.WriteString("hel")
		_, err := s.WriteString("lo!")
		writeErr <- err
		_, _ = s.WriteString("lo")
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	st, body := get(t, client(t), ts.url+"/five")
	assert.Equal(t, 200, st)
	assert.Equal(t, "hello", body)
	assert.ErrorIs(t, recvT(t, writeErr), ErrContentLength)

	c := dialH2(t, ts.addr)
	c.get(1, "/five")
	c.expect(1, "200", "hello")
	assert.ErrorIs(t, recvT(t, writeErr), ErrContentLength)
	ts.atRest(t)
}

// IdleTimeout is the wait for the next request once the last response has
// reached the kernel, not once it was queued: a large response that a
// slow client reads for longer than IdleTimeout, steadily, arrives whole
// (a client that stops reading is WriteTimeout's); then the kept-alive
// connection is closed after IdleTimeout. On HTTP/2 as well: a full write
// queue is the kernel's pace, not a stall of the client's window.
func TestIdleTimeoutStartsAfterTheResponse(t *testing.T) {
	const idle = 300 * time.Millisecond
	big := strings.Repeat("x", 8<<20) // more than the kernel buffers hold
	m := testMux()
	m.HandleFunc("GET /big", func(r *Request) Reply { return Text(200, big) })
	ts := startServer(t, m, Config{IdleTimeout: idle})
	c := dialRaw(t, ts.addr)
	c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	n := 0
	for start := time.Now(); ; {
		k, err := resp.Body.Read(buf)
		n += k
		if err != nil {
			require.ErrorIs(t, err, io.EOF, "cut after %d bytes, %v", n, time.Since(start))
			break
		}
		time.Sleep(idle / 20) // paces a slow reader: 8 MiB take several idle timeouts
	}
	assert.Equal(t, len(big), n)
	assert.True(t, c.closed(), "the idle connection is not closed")

	h2 := dialH2(t, ts.addr)
	h2.openWindows()
	h2.get(1, "/big")
	assert.Equal(t, len(big), h2.download(1, idle/60))
	assert.True(t, h2.eof(), "the idle HTTP/2 connection is not closed")
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "a connection is still open")
	assert.Zero(t, ts.Stats().WriteTimeouts)
}

// A pipelined stream whose OnDrain, run when its turn comes, writes and
// ends it is ended once: its End runs a pump of its own, and the pump
// that started the stream goes on after it (it used to end and pop the
// stream again: a second last chunk on the wire, and a queue of -1).
func TestStreamEndedByOnDrainInItsTurn(t *testing.T) {
	m := testMux()
	m.HandleFunc("GET /drainend", func(r *Request) Reply {
		s := r.Stream(200, nil)
		write := func() {
			if s.Full() {
				return // OnDrain goes on
			}
			_, _ = s.WriteString("hello")
			s.End()
		}
		s.OnDrain(write)
		write()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /slow?ms=100 HTTP/1.1\r\nHost: x\r\n\r\nGET /drainend HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "waited 100 ms", c.read("GET").body)
	assert.Equal(t, "hello", c.read("GET").body)
	var nq int
	ts.onLoop(t, func() {
		for hc := ts.loopStates()[0].conns.head; hc != nil; hc = hc.links[linkAll].next {
			nq = hc.nq
		}
	})
	assert.Equal(t, 0, nq, "queue length")
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body, "the next response")
}

// A Stream that answers a streamed upload once it has read it keeps the
// connection alive: its head waits for its first Write, after the body
// (sent at once, while the body is unread, it would have to close).
func TestStreamAfterUploadKeepsAlive(t *testing.T) {
	m := testMux()
	m.HandleFunc("POST /count", func(r *Request) Reply {
		s := r.Stream(200, nil)
		n := 0
		r.Body().OnData(func(p []byte, end bool) {
			n += len(p)
			if end {
				_, _ = s.WriteString(itoa(n))
				s.End()
			}
		})
		return s.Reply()
	})
	ts := startServer(t, m, Config{ArenaSize: 4096})
	c := dialRaw(t, ts.addr)
	body := strings.Repeat("x", 10000)
	c.send("POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 10000\r\n\r\n" + body)
	resp := c.read("POST")
	assert.Equal(t, "10000", resp.body)
	assert.False(t, resp.close, "the connection is closed after a streamed upload answered by a Stream")
}

// Empty lines before a request-line are ignored (RFC 9112 §2.2), as
// net/http's server ignores them after a POST: old clients send a CRLF
// after a body that its length does not count. Up to four CR or LF bytes,
// arriving with the body or alone; more are garbage, refused.
func TestEmptyLinesBeforeRequest(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	for _, c := range []struct{ after, next string }{
		{"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\r\n", ""},
		{"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\n", ""},
		{"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", "\r\n\r\n"},
		{"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n"}, // a read of its own
	} {
		rc := dialRaw(t, ts.addr)
		rc.send(c.after)
		rc.read("GET") // HEAD alone reads differently
		if c.next != "" {
			rc.send(c.next)
		}
		rc.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp := rc.read("GET")
		assert.Equal(t, 200, resp.status, "%q", c.after+c.next)
		assert.False(t, resp.close)
	}
	// More than four bytes, or a CR without its LF (RFC 9112 §2.2: a bare
	// CR is invalid), are no empty lines.
	for _, garbage := range []string{"\r\n\r\n\r\n", "\r", "\r\r\r\r", "\n\r", "\r\n\r"} {
		rc := dialRaw(t, ts.addr)
		rc.send(garbage + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		resp := rc.read("GET")
		assert.Equal(t, 400, resp.status, "%q", garbage)
		assert.True(t, rc.closed())
	}
	// A CRLF the reads cut in two is still an empty line.
	rc := dialRaw(t, ts.addr)
	in := ts.l.Stats().TCPBytesIn
	rc.send("\r")
	eventually(t, func() bool { return ts.l.Stats().TCPBytesIn == in+1 }, "the CR is not read alone")
	rc.send("\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, 200, rc.read("GET").status)
	ts.atRest(t)
}

// math.MaxInt64 is "never" for HeaderTimeout and IdleTimeout: their
// deadlines saturate rather than wrap into the past, which the sweep (a
// second apart at most) would take for passed.
func TestTimeoutsOfMaxInt64(t *testing.T) {
	ts := startServer(t, testMux(), Config{HeaderTimeout: math.MaxInt64, IdleTimeout: math.MaxInt64})
	idle, begun := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	idle.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", idle.read("GET").body)
	begun.send("GET /health HTTP/1.1\r\nHost: x\r\n")
	idle.staysOpen(2500 * time.Millisecond) // two sweeps: a close in that time is the bug
	begun.staysOpen(time.Millisecond)       // it was open as long, and has had its sweeps
	begun.send("\r\n")
	assert.Equal(t, "ok", begun.read("GET").body)
}

// Empty lines alone, after a response, are no head begun: the connection
// stays idle (IdleTimeout, here far off), not timed as a head in progress
// (HeaderTimeout).
func TestEmptyLinesStayIdle(t *testing.T) {
	ts := startServer(t, testMux(), Config{HeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Hour})
	c := dialRaw(t, ts.addr)
	c.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello\r\n")
	assert.Equal(t, "hello", c.read("POST").body)
	c.staysOpen(300 * time.Millisecond) // six times HeaderTimeout: a close in that time is the bug
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
}

// A client may send the body of an Expect: 100-continue request without
// waiting for the 100 (RFC 9110 §10.1.1). Read whole by its handler while
// it waits for its turn, it owes no 100 and no close: its response keeps
// the connection, and the request pipelined after it is answered. Before,
// the expectation stayed set, and the response closed the connection as
// if its body were unread.
func TestExpectBodySentAtOnceKeepsTheConnection(t *testing.T) {
	p := newProbe()
	m := p.mux()
	m.HandleFunc("POST /count", func(r *Request) Reply {
		pr := aio.NewPromise[Response](r.Loop())
		n := 0
		r.Body().OnData(func(b []byte, end bool) {
			if n += len(b); end {
				pr.Resolve(TextResponse(200, itoa(n)))
			}
		})
		return Later(pr.Handle())
	})
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /count HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\nExpect: 100-continue\r\n\r\n" +
		strings.Repeat("x", 100000) + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	pr := recvT(t, p.promises)
	eventually(t, func() bool { return ts.anyConn(t, func(hc *h1conn) bool { return hc.nq == 3 }) },
		"the POST's body is not read whole")
	require.True(t, pr.Resolve(TextResponse(200, "first")))
	assert.Equal(t, "first", c.read("GET").body)
	second := c.read("POST")
	assert.Equal(t, 200, second.status, "no 100 after the body")
	assert.Equal(t, "100000", second.body)
	assert.False(t, second.close, "the body was read whole")
	assert.Equal(t, "ok", c.read("GET").body)
	ts.atRest(t)
}

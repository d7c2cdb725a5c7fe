package httpd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
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
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Requests, "only /health started a handler")
	assert.Equal(t, uint64(3), st.ArenaReleases, "each stream took an arena, handler or not")
}

// rst reads the next frame, a RST_STREAM, and returns its stream and code.
func (c *h2Raw) rst() (uint32, http2.ErrCode) {
	c.t.Helper()
	f := c.next()
	rf, ok := f.(*http2.RSTStreamFrame)
	require.True(c.t, ok, "not a RST_STREAM: %v", f)
	return rf.StreamID, rf.ErrCode
}

// expectReset reads the next frame, a RST_STREAM, and checks its stream
// and code.
func (c *h2Raw) expectReset(id uint32, code http2.ErrCode) {
	c.t.Helper()
	gotID, gotCode := c.rst()
	assert.Equal(c.t, id, gotID)
	assert.Equal(c.t, code, gotCode)
}

// After the client's RST_STREAM, DATA or HEADERS on the stream are a
// stream error STREAM_CLOSED, answered once (h2spec 5.1/8, 5.1/9); the
// connection goes on.
func TestH2FramesAfterClientReset(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	require.NoError(t, c.fr.WriteData(1, true, []byte("late")))
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeStreamClosed, code)
	require.NoError(t, c.fr.WriteData(1, true, []byte("later"))) // answered already: ignored
	c.get(3, "/health")
	c.expect(3, "200", "ok")

	c.open(5, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteRSTStream(5, http2.ErrCodeCancel))
	c.get(7, "/health")
	c.expect(7, "200", "ok") // stream 5 is forgotten (its handler never started), remembered as reset
	c.open(5, "POST", "/echo", true)
	id, code = c.rst()
	assert.Equal(t, uint32(5), id)
	assert.Equal(t, http2.ErrCodeStreamClosed, code)
	c.get(9, "/health")
	c.expect(9, "200", "ok")
	ts.atRest(t)
}

// Frames on a stream we reset are ignored: the client sent them before
// our RST_STREAM reached it (RFC 9113 §5.1 closed).
func TestH2FramesAfterOurReset(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/echo", false, "connection", "x") // malformed: reset by us
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)
	require.NoError(t, c.fr.WriteData(1, false, []byte("in flight")))
	c.open(1, "POST", "/echo", true) // trailers
	c.get(3, "/health")
	c.expect(3, "200", "ok") // the first frame after the reset is stream 3's
	ts.atRest(t)
}

// A stream cannot depend on itself: HEADERS or PRIORITY saying so is a
// stream error PROTOCOL_ERROR (h2spec 5.3.1/1, 5.3.1/2).
func TestH2SelfDependency(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/health"}} {
		require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.hb.Bytes(),
		EndStream: true, EndHeaders: true, Priority: http2.PriorityParam{StreamDep: 1, Weight: 15}}))
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)

	c.open(3, "POST", "/echo", false)
	require.NoError(t, c.fr.WritePriority(3, http2.PriorityParam{StreamDep: 3, Weight: 15}))
	id, code = c.rst()
	assert.Equal(t, uint32(3), id)
	assert.Equal(t, http2.ErrCodeProtocol, code)

	c.get(5, "/health") // the header table kept step
	c.expect(5, "200", "ok")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Requests)
}

// An HTTP/2 client whose preface is wrong sees the connection close, with
// no HTTP/1 answer (h2spec 3.5/2).
func TestH2InvalidPreface(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send("INVALID CONNECTION PREFACE\r\n\r\n")
	assert.True(t, c.closed())
	ts.atRest(t)
}

// frame reads the next frame, whatever it is.
func (c *h2Raw) frame() http2.Frame {
	c.t.Helper()
	f, err := c.fr.ReadFrame()
	require.NoError(c.t, err)
	return f
}

// goAway reads the next frame other than WINDOW_UPDATE, PING and a
// SETTINGS ack, a GOAWAY, and checks its last stream id and NO_ERROR.
func (c *h2Raw) goAway(last uint32) {
	c.t.Helper()
	f := c.next()
	ga, ok := f.(*http2.GoAwayFrame)
	require.True(c.t, ok, "not a GOAWAY: %v", f)
	assert.Equal(c.t, last, ga.LastStreamID)
	assert.Equal(c.t, http2.ErrCodeNo, ga.ErrCode)
}

// promiseThenShutdown starts a server, opens stream 1 on a /promise
// handler that waits, and starts Shutdown (shutdownInBackground).
func promiseThenShutdown(t *testing.T) (*testServer, *h2Raw, *aio.Promise[Response], <-chan error) {
	t.Helper()
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	return ts, c, pr, shutdownInBackground(ts)
}

// shutdownInBackground runs ts.Shutdown, bounded by waitTimeout, on
// another goroutine; its result comes on the channel.
func shutdownInBackground(ts *testServer) <-chan error {
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	return done
}

// Shutdown's two GOAWAYs: the first, with the largest id, then a PING;
// a stream opened before the PING's answer is served; the PING's answer
// brings the final GOAWAY with the last stream, after which new streams
// are refused; the streams in progress finish, and the connection ends.
func TestH2ShutdownTwoStep(t *testing.T) {
	ts, c, pr, done := promiseThenShutdown(t)
	c.goAway(1<<31 - 1)
	var ping *http2.PingFrame
	for ping == nil {
		if f, ok := c.frame().(*http2.PingFrame); ok && !f.IsAck() {
			ping = f
		}
	}
	c.get(3, "/health") // between the two GOAWAYs: served
	require.NoError(t, c.fr.WritePing(true, ping.Data))
	c.expect(3, "200", "ok")
	c.goAway(3)
	c.get(5, "/health") // after the final GOAWAY: refused
	id, code := c.rst()
	assert.Equal(t, uint32(5), id)
	assert.Equal(t, http2.ErrCodeRefusedStream, code)
	require.True(t, pr.Resolve(TextResponse(200, "finished")))
	c.expect(1, "200", "finished")
	assert.True(t, c.eof())
	require.NoError(t, c.nc.Close()) // the server lingers until this EOF
	require.NoError(t, recvT(t, done))
	assert.Equal(t, uint64(0), ts.Stats().Cancelled)
	ts.atRest(t)
}

// An HTTP/2 connection closed for idling says GOAWAY(last stream,
// NO_ERROR) first, then FIN.
func TestH2IdleGoAway(t *testing.T) {
	ts := startServer(t, testMux(), Config{IdleTimeout: 50 * time.Millisecond})
	c := dialH2(t, ts.addr)
	c.get(1, "/health")
	c.expect(1, "200", "ok")
	c.goAway(1)
	assert.True(t, c.eof())
	require.NoError(t, c.nc.Close())
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")

	c = dialH2(t, ts.addr) // no stream at all
	c.goAway(0)
	assert.True(t, c.eof())
	ts.atRest(t)
}

// A stream answered before its body has all arrived (half-closed, local)
// is reset (NO_ERROR: stop sending) and forgotten: it stops counting
// toward MaxConcurrentStreams, so a client whose uploads are refused early
// (401, 405) keeps its connection usable past that many, and the rest of
// a body that crossed the reset is dropped.
func TestH2EarlyAnswerThenBodyEnd(t *testing.T) {
	ts := startServer(t, testMux(), Config{ArenaSize: 1024}) // a 1000-byte body streams: the handler starts at once
	c := dialH2(t, ts.addr)
	body := make([]byte, 1000)
	for i := range uint32(h2MaxStreams + 10) {
		id := 2*i + 1
		c.open(id, "POST", "/health", false, "content-length", "1000")
		s, _ := c.response(id)
		require.Equal(t, "405", s, "stream %d", id)
		c.expectReset(id, http2.ErrCodeNo)
		require.NoError(t, c.fr.WriteData(id, true, body))
	}
	c.get(2*(h2MaxStreams+10)+1, "/health")
	c.expect(2*(h2MaxStreams+10)+1, "200", "ok")
	var streams, open int
	ts.onLoop(t, func() {
		for _, ls := range ts.loopStates() {
			for hc := ls.conns.head; hc != nil; hc = hc.links[linkAll].next {
				if hc.h2 != nil {
					streams, open = len(hc.h2.streams), hc.h2.open
				}
			}
		}
	})
	assert.Zero(t, streams, "streams kept")
	assert.Zero(t, open, "streams counted open")
	ts.atRest(t)
}

// The request limits hold on HTTP/2 as on HTTP/1.1: a target longer than
// MaxURIBytes is answered 414 (a head over MaxHeadBytes 431, a body over
// MaxBodyBytes 413: TestH2BodyOverLimit) without a handler; a request
// whose body is still coming is then told to stop (RST_STREAM NO_ERROR),
// and the connection goes on.
func TestH2URITooLong(t *testing.T) {
	ts := startServer(t, testMux(), Config{MaxURIBytes: 1024})
	long := "/health?" + strings.Repeat("q", 1100)
	c := dialH2(t, ts.addr)
	c.get(1, long)
	c.expect(1, "414", statusBody(414))
	c.open(3, "POST", long, false)
	c.expect(3, "414", statusBody(414))
	c.expectReset(3, http2.ErrCodeNo)
	c.get(5, "/health?"+strings.Repeat("q", 1000))
	c.expect(5, "200", "ok")
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Requests)
	assert.Equal(t, uint64(2), st.BadRequests)

	h1 := dialRaw(t, ts.addr)
	h1.send("GET " + long + " HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, 414, h1.read("GET").status)
}

// A refused HEAD gets the refusal's head alone, as any answer to HEAD.
func TestH2HeadURITooLongHasNoBody(t *testing.T) {
	ts := startServer(t, testMux(), Config{MaxURIBytes: 1024})
	c := dialH2(t, ts.addr)
	c.open(1, "HEAD", "/health?"+strings.Repeat("q", 1100), true)
	c.expect(1, "414", "")
	ts.atRest(t)
}

// A response made whole before the body has all arrived, by a handler
// that does not read it, ends the stream: RST_STREAM(NO_ERROR) asks the
// client to stop sending (RFC 9113 §8.1), and the connection, its last
// stream gone, is idle again and ends at IdleTimeout. (A client that
// declared a long body, sent part and went quiet held the connection
// open for good.)
func TestH2AnswerBeforeTheBodyEndsResetsNoError(t *testing.T) {
	m := NewMux()
	m.HandleFunc("POST /unread", func(r *Request) Reply { return Text(200, "early") })
	ts := startServer(t, m, Config{IdleTimeout: 100 * time.Millisecond})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/unread", false, "content-length", "1000000")
	for range 3 {
		require.NoError(t, c.fr.WriteData(1, false, make([]byte, 16<<10)))
	}
	c.expect(1, "200", "early")
	c.expectReset(1, http2.ErrCodeNo)
	require.NoError(t, c.fr.WriteData(1, false, make([]byte, 5000))) // crossed the reset: dropped
	ga, ok := c.next().(*http2.GoAwayFrame)
	require.True(t, ok, "the idle connection says GOAWAY")
	assert.Equal(t, http2.ErrCodeNo, ga.ErrCode)
	ts.atRest(t)
}

// earlyAnswers serves POST /unread, answered 401 without reading its body
// (which streams: the arena is small), and GET /health, to an HTTP/2
// connection it opens.
func earlyAnswers(t *testing.T) (*testServer, *h2Raw) {
	m := NewMux()
	m.HandleFunc("POST /unread", func(r *Request) Reply { return Text(401, "no") })
	m.HandleFunc("GET /health", func(r *Request) Reply { return Text(200, "ok") })
	ts := startServer(t, m, Config{ArenaSize: 1024})
	return ts, dialH2(t, ts.addr)
}

// Many streams answered early at once (a client uploading 64 bodies to a
// handler that answers 401 unread), then the DATA that crossed their
// resets: it is ignored however many streams were reset, not answered
// STREAM_CLOSED (which spent the rapid-reset budget until the client got
// GOAWAY(ENHANCE_YOUR_CALM) in its seventh round), and the connection
// goes on.
func TestH2ManyEarlyAnswersCrossingData(t *testing.T) {
	ts, c := earlyAnswers(t)
	const batch = 64
	chunk := make([]byte, 100)
	id := uint32(1)
	for round := range 20 {
		first := id
		for range batch {
			c.open(id, "POST", "/unread", false, "content-length", "100000")
			id += 2
		}
		for sid := first; sid < id; sid += 2 {
			s, _ := c.response(sid)
			require.Equal(t, "401", s, "round %d stream %d", round, sid)
			c.expectReset(sid, http2.ErrCodeNo)
		}
		for range 2 {
			for sid := first; sid < id; sid += 2 {
				require.NoError(t, c.fr.WriteData(sid, false, chunk))
			}
		}
		c.get(id, "/health")
		for {
			f := c.next()
			if ga, ok := f.(*http2.GoAwayFrame); ok {
				t.Fatalf("round %d: GOAWAY(%v)", round, ga.ErrCode)
			}
			if rf, ok := f.(*http2.RSTStreamFrame); ok {
				t.Fatalf("round %d: RST_STREAM(%v) on stream %d, which the server had reset", round, rf.ErrCode, rf.StreamID)
			}
			mh, ok := f.(*http2.MetaHeadersFrame)
			require.True(t, ok, "round %d: %v", round, f)
			require.Equal(t, id, mh.StreamID)
			break
		}
		c.next() // its DATA
		id += 2
	}
	assert.Zero(t, ts.Stats().Abusive)
	ts.atRest(t)
}

// Trailers (HEADERS with END_STREAM, as gRPC's) that cross the resets of
// more streams than the ring of resets remembers are ignored, not a
// connection error.
func TestH2TrailersCrossingEarlyAnswers(t *testing.T) {
	ts, c := earlyAnswers(t)
	const n = 2 * h2ResetMemory
	for i := range uint32(n) {
		c.open(2*i+1, "POST", "/unread", false, "content-length", "100000")
	}
	for i := range uint32(n) {
		s, _ := c.response(2*i + 1)
		require.Equal(t, "401", s)
		c.expectReset(2*i+1, http2.ErrCodeNo)
	}
	for i := range uint32(n) {
		trailer := c.block("grpc-status", "0")
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2*i + 1, BlockFragment: trailer, EndStream: true, EndHeaders: true}))
	}
	c.get(2*n+1, "/health")
	c.expect(2*n+1, "200", "ok")
	ts.atRest(t)
}

// The streams reset early are remembered until the client answers the
// PING the server sends after their resets, and no longer.
func TestH2EarlyResetsForgottenAfterPing(t *testing.T) {
	ts, c := earlyAnswers(t)
	c.open(1, "POST", "/unread", false, "content-length", "100000")
	crossing := func() (n int) { // the streams remembered, and the list's room
		ts.onLoop(t, func() {
			for _, ls := range ts.loopStates() {
				for hc := ls.conns.head; hc != nil; hc = hc.links[linkAll].next {
					if hc.h2 != nil {
						n += len(hc.h2.crossing) + cap(hc.h2.crossing)
					}
				}
			}
		})
		return n
	}
	var ping *http2.PingFrame
	for ping == nil {
		f, err := c.fr.ReadFrame()
		require.NoError(t, err)
		if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
			ping = p
		}
	}
	assert.NotZero(t, crossing(), "remembered until the PING comes back")
	require.NoError(t, c.fr.WritePing(true, ping.Data))
	eventually(t, func() bool { return crossing() == 0 }, "still remembered, or its room kept, after the PING's answer")
	ts.atRest(t)
}

// expectGoAway reads frames up to a GOAWAY and checks its code.
func (c *h2Raw) expectGoAway(code http2.ErrCode) {
	c.t.Helper()
	for {
		if g, ok := c.next().(*http2.GoAwayFrame); ok {
			assert.Equal(c.t, code, g.ErrCode)
			return
		}
	}
}

// A HEADERS frame whose padding is longer than its payload ends the
// connection (RFC 9113 §6.2), because its header block is never decoded:
// resetting the stream alone, as before, left the decoder's table behind
// the client's, and the next request was read with the wrong fields (a
// GET of /big served as one of /health).
func TestH2HeadersBadPaddingEndsTheConnection(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c := dialH2(t, ts.addr)
	// GET /health, :path added to the table (index 62)
	require.NoError(t, c.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 1,
		[]byte("\x82\x86\x44\x07/health")))
	c.expect(1, "200", "ok")
	// GET /big, :path added (index 62 now, /health 63), padded past the payload
	blk := []byte("\x82\x86\x44\x04/big")
	require.NoError(t, c.fr.WriteRawFrame(http2.FrameHeaders,
		http2.FlagHeadersPadded|http2.FlagHeadersEndHeaders|http2.FlagHeadersEndStream, 3,
		append([]byte{byte(len(blk) + 1)}, blk...)))
	c.expectGoAway(http2.ErrCodeProtocol)
	assert.True(t, c.eof())
	ts.atRest(t)
}

// A request whose HEADERS ends the stream while its content-length is
// not 0 is malformed (RFC 9113 §8.1.1), as one whose DATA falls short of
// it is: a stream error PROTOCOL_ERROR, and no handler runs.
func TestH2ContentLengthWithEndStreamOnHeaders(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c := dialH2(t, ts.addr)
	before := ts.Stats().Requests
	c.open(1, "POST", "/echo", true, "content-length", "5")
	c.expectReset(1, http2.ErrCodeProtocol)
	c.open(3, "POST", "/echo", true, "content-length", "0")
	c.expect(3, "200", "")
	assert.Equal(t, before+1, ts.Stats().Requests)
	ts.atRest(t)
}

// A WINDOW_UPDATE of zero on a stream still idle is a connection error
// (RFC 9113 §5.1, §6.4: no RST_STREAM for an idle stream). It was answered
// by a reset that used the stream up, so the client's next valid stream,
// below it, ended the connection instead.
func TestH2ZeroWindowUpdateOnIdleStream(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c := dialH2(t, ts.addr)
	require.NoError(t, c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 9, []byte{0, 0, 0, 0}))
	c.expectGoAway(http2.ErrCodeProtocol)

	c = dialH2(t, ts.addr) // on an open stream it is a stream error, as before
	c.open(1, "POST", "/echo", false)
	require.NoError(t, c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 1, []byte{0, 0, 0, 0}))
	c.expectReset(1, http2.ErrCodeProtocol)
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	ts.atRest(t)
}

// A CONNECT carries :authority and neither :scheme nor :path (RFC 9113
// §8.5); one that breaks that is malformed and reset, not served with a
// :path nobody checked (HTTP/1.1 answers 400 to "CONNECT /users/%"). A
// well-formed one reaches the handler, which sees its authority.
func TestH2ConnectPseudoHeaders(t *testing.T) {
	var seen atomic.Value
	ts := startServer(t, HandlerFunc(func(r *Request) Reply {
		seen.Store(r.Method() + " " + r.Target())
		return Text(405, "")
	}), Config{})
	c := dialH2(t, ts.addr)
	send := func(id uint32, fields ...string) {
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
			BlockFragment: c.block(fields...), EndStream: true, EndHeaders: true}))
	}
	c.open(1, "CONNECT", "/users/%", true) // :scheme and :path besides :authority
	c.expectReset(1, http2.ErrCodeProtocol)
	send(3, ":method", "CONNECT", ":path", "/x", ":authority", "x:443")
	c.expectReset(3, http2.ErrCodeProtocol)
	send(5, ":method", "CONNECT") // no :authority
	c.expectReset(5, http2.ErrCodeProtocol)
	send(7, ":method", "CONNECT", ":authority", "")
	c.expectReset(7, http2.ErrCodeProtocol)
	id := uint32(9)
	// Authorities an HTTP/1.1 CONNECT is refused with 400.
	for _, a := range []string{"/users/%", "x", "user@x:443", "x:", "x%41:443"} {
		send(id, ":method", "CONNECT", ":authority", a)
		s, _ := c.response(id)
		assert.Equal(t, "400", s, "%q", a)
		id += 2
	}
	assert.Nil(t, seen.Load(), "a malformed CONNECT reached the handler")
	send(id, ":method", "CONNECT", ":authority", "x:443")
	s, _ := c.response(id)
	assert.Equal(t, "405", s)
	assert.Equal(t, "CONNECT x:443", seen.Load())
	ts.atRest(t)
}

// The host a request is routed by is the host its handler reads (RFC 9113
// §8.3.1): a host field naming another authority than :authority, or two
// host fields, make a malformed request, reset as x/net/http2's server
// resets it; a host HTTP/1.1 answers 400 (httpguts's ValidHostHeader) is
// answered 400 here too, from :authority or from the host field that
// stands in for it when :authority is absent or empty.
func TestH2HostAndAuthority(t *testing.T) {
	var seen atomic.Value
	ts := startServer(t, HandlerFunc(func(r *Request) Reply {
		seen.Store(r.Host())
		return Text(200, r.Host())
	}), Config{})
	c := dialH2(t, ts.addr)
	send := func(id uint32, fields ...string) {
		fields = append([]string{":method", "GET", ":scheme", "http", ":path", "/"}, fields...)
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
			BlockFragment: c.block(fields...), EndStream: true, EndHeaders: true}))
	}
	send(1, ":authority", "a.example", "host", "b.example")
	c.expectReset(1, http2.ErrCodeProtocol)
	send(3, ":authority", "a.example", "host", "a.example", "host", "a.example")
	c.expectReset(3, http2.ErrCodeProtocol)
	send(5, "host", "a.example", "host", "b.example")
	c.expectReset(5, http2.ErrCodeProtocol)
	id := uint32(7)
	for _, bad := range [][]string{
		{":authority", "a b"}, {":authority", "user@a.example"}, {":authority", "a/b"},
		{"host", "a<b"}, {":authority", "", "host", "a b"},
	} {
		send(id, bad...)
		s, _ := c.response(id)
		assert.Equal(t, "400", s, "%q", bad)
		id += 2
	}
	assert.Nil(t, seen.Load(), "a request with a bad host reached the handler")
	for _, good := range []struct {
		fields []string
		host   string
	}{
		{[]string{":authority", "a.example:8080", "host", "a.example:8080"}, "a.example:8080"},
		{[]string{"host", "b.example"}, "b.example"},
		{[]string{":authority", "", "host", "c.example"}, "c.example"},
		{[]string{":authority", "[::1]:80"}, "[::1]:80"},
		{nil, ""},
	} {
		send(id, good.fields...)
		c.expect(id, "200", good.host)
		id += 2
	}
	ts.atRest(t)
}

package httpd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Raw is a raw HTTP/2 client over one TCP connection: x/net/http2's
// Framer driven by the test, for what a Transport does not do on demand
// (resets, GOAWAY, a close with streams open).
type h2Raw struct {
	t  testing.TB
	nc net.Conn
	fr *http2.Framer
	hb bytes.Buffer
	he *hpack.Encoder

	maxStreams uint32 // the server's SETTINGS_MAX_CONCURRENT_STREAMS (dialH2)
}

// dialH2 connects, sends the preface and SETTINGS, and reads the server's
// SETTINGS (acknowledged).
func dialH2(t testing.TB, addr string) *h2Raw {
	t.Helper()
	c := openH2(t, addr)
	require.NoError(t, c.fr.WriteSettings())
	f := c.next()
	sf, ok := f.(*http2.SettingsFrame)
	require.True(t, ok && !sf.IsAck(), "first frame %v", f)
	v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
	require.True(t, ok)
	c.maxStreams = v
	require.NoError(t, c.fr.WriteSettingsAck())
	return c
}

// openH2 connects and sends the preface alone.
func openH2(t testing.TB, addr string) *h2Raw {
	t.Helper()
	nc := dialRaw(t, addr).Conn
	c := &h2Raw{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.he = hpack.NewEncoder(&c.hb)
	_, err := io.WriteString(nc, http2.ClientPreface)
	require.NoError(t, err)
	return c
}

// get opens stream id with a GET of path.
func (c *h2Raw) get(id uint32, path string) {
	c.t.Helper()
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndStream: true, EndHeaders: true}))
}

// next returns the next frame other than WINDOW_UPDATE, PING and a
// SETTINGS ack.
func (c *h2Raw) next() http2.Frame {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		require.NoError(c.t, err)
		switch f := f.(type) {
		case *http2.WindowUpdateFrame, *http2.PingFrame:
			continue
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
		}
		return f
	}
}

// response reads the response of stream id: its status and body.
func (c *h2Raw) response(id uint32) (string, string) {
	c.t.Helper()
	var status string
	var body []byte
	for {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			require.Equal(c.t, id, f.StreamID)
			status = f.PseudoValue("status")
			if f.StreamEnded() {
				return status, string(body)
			}
		case *http2.DataFrame:
			require.Equal(c.t, id, f.StreamID)
			body = append(body, f.Data()...)
			if f.StreamEnded() {
				return status, string(body)
			}
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
	}
}

// expect reads the response of stream id and checks its status and body.
func (c *h2Raw) expect(id uint32, status, body string) {
	c.t.Helper()
	s, b := c.response(id)
	assert.Equal(c.t, status, s)
	assert.Equal(c.t, body, b)
}

// quiet checks that the server has answered everything sent before with
// nothing but flow control: a PING's ack comes before anything else it
// sends (frames are handled in order), not a reset or a GOAWAY.
func (c *h2Raw) quiet() {
	c.t.Helper()
	require.NoError(c.t, c.fr.WritePing(false, [8]byte{'q', 'u', 'i', 'e', 't'}))
	for {
		switch f := c.frame().(type) {
		case *http2.PingFrame:
			if f.IsAck() {
				return
			}
		case *http2.SettingsFrame, *http2.WindowUpdateFrame:
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
	}
}

// stillServes checks that the connection still serves a request, on
// stream id, then closes it.
func (c *h2Raw) stillServes(id uint32) {
	c.t.Helper()
	c.get(id, "/health")
	c.expect(id, "200", "ok")
	require.NoError(c.t, c.nc.Close())
}

// eof reports whether the server closed the connection: reading ends
// with EOF or a reset, after frames other than HEADERS and DATA.
func (c *h2Raw) eof() bool {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
		switch f.(type) {
		case *http2.MetaHeadersFrame, *http2.DataFrame:
			c.t.Logf("unexpected frame %v", f)
			return false
		}
	}
}

// The server offers as many concurrent streams as a connection can have
// arenas for: h2MaxStreams, or Config.Arenas if fewer. A client that keeps
// to it is never refused for want of an arena while it is the only one.
func TestH2MaxStreamsFollowsArenas(t *testing.T) {
	for _, tc := range []struct{ arenas, want int }{{0, h2MaxStreams}, {h2MaxStreams + 1, h2MaxStreams}, {4, 4}} {
		ts := startServer(t, testMux(), Config{Arenas: tc.arenas})
		c := dialH2(t, ts.addr)
		assert.Equal(t, uint32(tc.want), c.maxStreams, "arenas %d", tc.arenas)
	}
}

// RST_STREAM cancels the stream's pending handler (its timer stopped, its
// Work's context done, its arena back), and the stream sends nothing; the
// connection and its other streams go on.
func TestH2ResetCancelsHandler(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	c := dialH2(t, ts.addr)
	timers := ts.l.Stats().Timers
	c.get(1, "/wait")
	recvT(t, p.started)
	eventually(t, func() bool { return ts.l.Stats().Timers == timers+1 }, "the handler's timer is not armed")
	assert.Equal(t, int64(1), ts.Stats().ArenasInUse)
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	assert.ErrorIs(t, recvT(t, p.workEnded), context.Canceled)
	ts.atRest(t)
	eventually(t, func() bool { return ts.l.Stats().Timers == timers }, "the handler's timer is still armed")
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled)
	assert.Equal(t, uint64(1), st.ResponsesSuppressed)
	assert.Equal(t, int32(1), p.cancelled.Load())

	c.get(3, "/health") // the connection goes on; nothing of stream 1 comes
	c.expect(3, "200", "ok")
	assert.Equal(t, int64(1), ts.Stats().ConnsOpen)
	ts.atRest(t)
}

// A handle that ends after its stream was reset sends nothing.
func TestH2ResetThenResolveSendsNothing(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	eventually(t, func() bool { return ts.Stats().Cancelled == 1 }, "not cancelled")
	assert.False(t, pr.Resolve(TextResponse(200, "late")))
	c.get(3, "/health")
	c.expect(3, "200", "ok") // the first frame after the reset is stream 3's
	ts.atRest(t)
}

// Closing the connection cancels every stream's handler.
func TestH2CloseCancelsAll(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/wait")
	c.get(3, "/wait")
	c.get(5, "/promise")
	recvT(t, p.started)
	recvT(t, p.started)
	recvT(t, p.promises)
	// The Works start in their handlers, before the server counts their
	// handles: wait for that too.
	eventually(t, func() bool { return ts.Stats().HandlersPending == 3 }, "the handlers are not pending")
	c.nc.Close()
	recvT(t, p.workEnded)
	recvT(t, p.workEnded)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(3), st.Cancelled)
	assert.Equal(t, uint64(3), st.ResponsesSuppressed)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
}

// A client's GOAWAY with an error abandons its streams: their handlers
// are cancelled and the connection closes. With NO_ERROR they finish.
func TestH2ClientGoAway(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})

	c := dialH2(t, ts.addr)
	c.get(1, "/wait")
	recvT(t, p.started)
	require.NoError(t, c.fr.WriteGoAway(0, http2.ErrCodeInternal, nil))
	recvT(t, p.workEnded)
	assert.True(t, c.eof())
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)

	c = dialH2(t, ts.addr)
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	require.NoError(t, c.fr.WriteGoAway(0, http2.ErrCodeNo, nil))
	c.goAway(1)
	require.True(t, pr.Resolve(TextResponse(200, "done")))
	c.expect(1, "200", "done")
	assert.True(t, c.eof(), "the connection ends after its last stream")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)

	// An unknown error code is no error the server knows: it drains as
	// for NO_ERROR, and what the client sends after it is read, not reset.
	c = dialH2(t, ts.addr)
	require.NoError(t, c.fr.WriteGoAway(0, 0xff, nil))
	c.goAway(0)
	require.NoError(t, c.fr.WritePing(false, [8]byte{}))
	var err error
	for err == nil {
		_, err = c.fr.ReadFrame()
	}
	assert.ErrorIs(t, err, io.EOF, "the connection ends with a FIN, not a reset")
	ts.atRest(t)
}

// With no arena free, a stream is refused with REFUSED_STREAM after its
// header block is decoded (the next block, which refers to the dynamic
// table, still decodes), and counted.
func TestH2RefusedWithoutArena(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1})
	c := dialH2(t, ts.addr)
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	c.get(3, "/health")
	id, code := c.rst()
	assert.Equal(t, uint32(3), id)
	assert.Equal(t, http2.ErrCodeRefusedStream, code)
	assert.Equal(t, uint64(1), ts.Stats().Refused)
	require.True(t, pr.Resolve(TextResponse(200, "done")))
	c.expect(1, "200", "done")
	c.get(5, "/health") // the encoder indexed these fields: the server's table kept step
	c.expect(5, "200", "ok")
	ts.atRest(t)
}

// Shutdown sends GOAWAY, twice: the final one after h2GoAwayWait here,
// as this client does not answer the PING; the stream in progress
// finishes, and the connection closes after it.
func TestH2Shutdown(t *testing.T) {
	ts, c, pr, done := promiseThenShutdown(t)
	c.goAway(1<<31 - 1)
	c.goAway(1)
	require.True(t, pr.Resolve(TextResponse(200, "finished")))
	c.expect(1, "200", "finished")
	assert.True(t, c.eof())
	require.NoError(t, c.nc.Close()) // the server lingers until this EOF
	require.NoError(t, recvT(t, done))
	st := ts.Stats()
	assert.Equal(t, uint64(0), st.Cancelled)
	assert.Equal(t, int64(0), st.ArenasInUse)
}

// Shutdown's deadline cancels the streams still in progress.
func TestH2ShutdownDeadline(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/wait")
	recvT(t, p.started)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, ts.Shutdown(ctx), context.DeadlineExceeded)
	recvT(t, p.workEnded)
	assert.True(t, c.eof())
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// Protocol errors end the connection with GOAWAY and the right code.
func TestH2ProtocolErrors(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	goaway := func(c *h2Raw) http2.ErrCode {
		t.Helper()
		ga, ok := c.next().(*http2.GoAwayFrame)
		require.True(t, ok, "no GOAWAY")
		assert.True(t, c.eof())
		return ga.ErrCode
	}
	c := dialH2(t, ts.addr) // an even stream
	c.get(2, "/health")
	assert.Equal(t, http2.ErrCodeProtocol, goaway(c))

	c = dialH2(t, ts.addr) // a stream id going down
	c.get(5, "/health")
	c.expect(5, "200", "ok")
	c.get(3, "/health")
	assert.Equal(t, http2.ErrCodeProtocol, goaway(c))

	c = dialH2(t, ts.addr) // a window past 2^31-1
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<31-1))
	assert.Equal(t, http2.ErrCodeFlowControl, goaway(c))

	c = dialH2(t, ts.addr) // a frame past MAX_FRAME_SIZE
	require.NoError(t, c.fr.WriteRawFrame(http2.FrameData, 0, 1, make([]byte, h2MaxFrame+1)))
	assert.Equal(t, http2.ErrCodeFrameSize, goaway(c))

	c = openH2(t, ts.addr) // a SETTINGS frame must come first
	require.NoError(t, c.fr.WritePing(false, [8]byte{}))
	_, ok := c.next().(*http2.SettingsFrame)
	require.True(t, ok)
	assert.Equal(t, http2.ErrCodeProtocol, goaway(c))
	ts.atRest(t)
}

// A stream refused because the loop has no arena free is the server's
// shortage, not the client's doing: it spends no rapid-reset token, and a
// client that keeps within SETTINGS_MAX_CONCURRENT_STREAMS keeps its
// connection however often the arenas run out. (One past that limit does
// spend: TestH2StreamsPastTheLimit.)
func TestH2ArenaRefusalsSpendNoResetBudget(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1})
	holder := dialH2(t, ts.addr)
	holder.get(1, "/promise") // takes the only arena
	pr := recvT(t, p.promises)
	c := dialH2(t, ts.addr)
	require.Equal(t, uint32(1), c.maxStreams)
	for i := range uint32(h2ResetBurst + 200) {
		c.get(2*i+1, "/health") // one at a time: within the limit
		c.expectReset(2*i+1, http2.ErrCodeRefusedStream)
	}
	require.True(t, pr.Resolve(TextResponse(200, "done")))
	holder.expect(1, "200", "done")
	c.get(2*(h2ResetBurst+200)+1, "/health")
	c.expect(2*(h2ResetBurst+200)+1, "200", "ok")
	assert.Zero(t, ts.Stats().Abusive)
	ts.atRest(t)
}

// postHead opens stream id with the head of a POST of path whose body,
// of clen bytes, is still to come.
func (c *h2Raw) postHead(id uint32, path string, clen int) {
	c.t.Helper()
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"},
		{":path", path}, {"content-length", itoa(clen)}} {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndHeaders: true}))
}

// A body that waits in the arena is timed on HTTP/2 as on HTTP/1.1: a
// stream whose body never comes is answered 408 after HeaderTimeout, one
// that trickles after BodyTimeout, and each is then reset (NO_ERROR); the
// connection and its other streams go on, and the arenas come back.
// Before, such a stream held its arena for as long as the connection
// lived.
func TestH2BufferedBodyTimeouts(t *testing.T) {
	const headerTimeout, bodyTimeout = 300 * time.Millisecond, 800 * time.Millisecond
	ts := startServer(t, testMux(), Config{HeaderTimeout: headerTimeout, BodyTimeout: bodyTimeout})
	c := dialH2(t, ts.addr)
	before := ts.Stats()

	start := time.Now()
	c.postHead(1, "/echo", 100) // and nothing more
	c.expect(1, "408", "408 Request Timeout\n")
	assert.GreaterOrEqual(t, time.Since(start), headerTimeout-50*time.Millisecond)
	rst, ok := c.next().(*http2.RSTStreamFrame)
	require.True(t, ok, "the body is stopped")
	assert.Equal(t, http2.ErrCodeNo, rst.ErrCode)

	// The answers, read by a goroutine of their own while the test
	// writes: a frame is valid until the next read, so only the stream
	// and status of each HEADERS are passed on.
	type answer struct {
		id     uint32
		status string
	}
	answers := make(chan answer, 8)
	go func() {
		defer close(answers)
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			if h, ok := f.(*http2.MetaHeadersFrame); ok {
				answers <- answer{h.StreamID, h.PseudoValue("status")}
			}
		}
	}()
	start = time.Now()
	c.postHead(3, "/echo", 1000)
	trickle := time.NewTicker(50 * time.Millisecond) // paces a slow client: a byte per tick, never a pause
	defer trickle.Stop()
	var got answer
	for got.id == 0 {
		select {
		case <-trickle.C:
			require.NoError(t, c.fr.WriteData(3, false, []byte("x")))
		case got = <-answers:
		case <-time.After(waitTimeout):
			t.Fatal("no answer to the trickled body")
		}
	}
	assert.Equal(t, answer{3, "408"}, got)
	assert.GreaterOrEqual(t, time.Since(start), bodyTimeout-50*time.Millisecond)

	c.get(5, "/health") // the connection goes on
	assert.Equal(t, answer{5, "200"}, recvT(t, answers))
	c.nc.Close()
	for range answers { // the reader ends with the connection
	}
	ts.atRest(t)
	after := ts.Stats()
	assert.Equal(t, before.BadRequests+2, after.BadRequests)
	assert.Equal(t, before.Requests+1, after.Requests, "only /health's handler started")
}

// A :path that HTTP/1.1 would refuse as a request-target (a bad
// %-escape, a space, no leading slash, "*" without OPTIONS) gets 400 over
// HTTP/2 too, not a handler that sees it; the connection goes on.
func TestH2BadPathAs400(t *testing.T) {
	var handled atomic.Int32
	ts := startServer(t, HandlerFunc(func(r *Request) Reply {
		handled.Add(1)
		return Text(200, r.Path())
	}), Config{})
	c := dialH2(t, ts.addr)
	id := uint32(1)
	for _, path := range []string{"/users/%", "/users/%u2028", "/a b", "users", "*", "http://x/y"} {
		c.get(id, path)
		s, _ := c.response(id)
		assert.Equal(t, "400", s, "%q", path)
		id += 2
	}
	c.get(id, "/users/%E2%80%A8")
	c.expect(id, "200", "/users/%E2%80%A8")
	assert.Equal(t, int32(1), handled.Load())
	ts.atRest(t)
}

// Streams refused for the server's shortage, whose DATA their client sent
// before it read the refusal, are refused once: the DATA crossing the
// refusals is ignored (RFC 9113 §5.1), however many streams were refused
// at once. Past the 32 resets a connection remembers, it used to be
// answered RST_STREAM(STREAM_CLOSED), a reset token spent for each, until
// a client uploading through an arena shortage, within every limit, got
// ENHANCE_YOUR_CALM.
func TestH2RefusedUploadsCrossTheirRefusals(t *testing.T) {
	ts := startServer(t, testMux(), Config{Arenas: 64})
	holder := dialH2(t, ts.addr)
	const held = 64 - 64/8 // the rest is the reserve, for connections with no stream
	for i := range uint32(held + 1) {
		holder.get(2*i+1, "/slow?ms=600000")
	}
	holder.expectReset(2*held+1, http2.ErrCodeRefusedStream)
	c := dialH2(t, ts.addr)
	c.get(1, "/slow?ms=600000") // a connection's first stream takes a reserved arena
	const n = 50                // refused at once, past the 32 remembered
	for i := range uint32(n) {
		c.postHead(2*i+3, "/echo", 2000)
	}
	for i := range uint32(n) { // the bodies, sent before the refusals are read
		require.NoError(t, c.fr.WriteData(2*i+3, false, make([]byte, 1000)))
		require.NoError(t, c.fr.WriteData(2*i+3, true, make([]byte, 1000)))
	}
	require.NoError(t, c.fr.WritePing(false, [8]byte{'e', 'n', 'd'}))
	refused := 0
	for done := false; !done; {
		switch f := c.frame().(type) {
		case *http2.RSTStreamFrame:
			if assert.Equal(t, http2.ErrCodeRefusedStream, f.ErrCode, "stream %d", f.StreamID) {
				refused++
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				require.NoError(t, c.fr.WritePing(true, f.Data)) // ends the memory of the refusals
			}
			done = f.IsAck() && f.Data == [8]byte{'e', 'n', 'd'}
		case *http2.WindowUpdateFrame, *http2.SettingsFrame:
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	assert.Equal(t, n, refused)
	assert.Zero(t, ts.Stats().Abusive)
}

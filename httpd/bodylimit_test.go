package httpd

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/testpeer"
	"golang.org/x/net/http2"
)

// bodyLimitMux is testMux with two handlers that read a streamed body to
// its end: PUT /count answers its length once it has it; PUT /stream
// starts its streamed response first, then ends it at the body's end.
func bodyLimitMux() *Mux {
	m := testMux()
	m.HandleFunc("PUT /count", func(r *Request) Reply {
		return afterBody(r, func(n int) Response { return TextResponse(200, itoa(n)) })
	})
	m.HandleFunc("PUT /stream", streamUntilBodyEnd)
	return m
}

// streamUntilBodyEnd starts a streamed response at once and ends it at
// the end of the request's body, which it reads and drops.
func streamUntilBodyEnd(r *Request) Reply {
	s := r.Stream(200, nil)
	_, _ = s.WriteString("started\n")
	r.Body().OnData(func(b []byte, end bool) {
		if end {
			s.End()
		}
	})
	return s.Reply()
}

// afterBody reads r's body to its end and replies with what answer makes
// of its length then.
func afterBody(r *Request, answer func(n int) Response) Reply {
	p := aio.NewPromise[Response](r.Loop())
	n := 0
	r.Body().OnData(func(b []byte, end bool) {
		n += len(b)
		if end {
			p.Resolve(answer(n))
		}
	})
	return Later(p.Handle())
}

// sendChunked sends a chunked body of n chunks of size bytes, its last
// chunk, and the end of the client's side, from a goroutine: the server
// reads while it does. The result is the first write error.
func sendChunked(c *rawConn, n, size int) <-chan error {
	done := make(chan error, 1)
	go func() {
		chunk := fmt.Sprintf("%x\r\n%s\r\n", size, strings.Repeat("a", size))
		var err error
		for i := 0; i < n && err == nil; i++ {
			_, err = io.WriteString(c.Conn, chunk)
		}
		if err == nil {
			_, err = io.WriteString(c.Conn, "0\r\n\r\n")
		}
		if err == nil {
			err = c.Conn.(*net.TCPConn).CloseWrite()
		}
		done <- err
	}()
	return done
}

// A chunked body that outgrows MaxBodyBytes while its handler reads it
// (too large for the arena, so it streams) is refused as a small one is:
// the handler is cancelled (its OnData never sees the end), the client
// gets 413 and Connection: close in the response's turn, and the
// connection lingers, dropping the rest of the body, until the client's
// EOF: the client writes its whole body without a reset and reads the
// answer.
func TestStreamedChunkedBodyOverLimit(t *testing.T) {
	ts := startServer(t, bodyLimitMux(), Config{MaxBodyBytes: 64 << 10})
	c := dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + // a response before it, owed first
		"PUT /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent := sendChunked(c, 6, 16<<10)
	assert.Equal(t, "ok", c.read("GET").body)
	resp := c.read("PUT")
	assert.Equal(t, 413, resp.status)
	assert.True(t, resp.close, "Connection: close")
	require.NoError(t, recvT(t, sent), "the server reset the connection on the rest of the body")
	assert.True(t, c.closed(), "the connection must close at the client's EOF")
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled, "the handler that read the body is cancelled")
	assert.Equal(t, uint64(1), st.BadRequests)
}

// A HEAD whose streamed body is refused gets the 413's head alone, as
// any answer to HEAD: no body follows it before the close.
func TestStreamedChunkedBodyOverLimitHead(t *testing.T) {
	m := bodyLimitMux()
	m.HandleFunc("HEAD /count", func(r *Request) Reply {
		return afterBody(r, func(n int) Response { return TextResponse(200, itoa(n)) })
	})
	ts := startServer(t, m, Config{MaxBodyBytes: 64 << 10})
	c := dialRaw(t, ts.addr)
	c.send("HEAD /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent := sendChunked(c, 6, 16<<10)
	resp := c.read("HEAD")
	assert.Equal(t, 413, resp.status)
	require.NoError(t, recvT(t, sent))
	rest, err := io.ReadAll(c.br)
	require.NoError(t, err)
	assert.Empty(t, string(rest), "bytes after the head of an answer to HEAD")
	ts.atRest(t)
}

// When the response to the request has begun (a Stream's head is out),
// no 413 can take its place: the handler is cancelled and the connection
// closes after what was written, the body of the response cut short.
func TestStreamedChunkedBodyOverLimitAfterHead(t *testing.T) {
	ts := startServer(t, bodyLimitMux(), Config{MaxBodyBytes: 64 << 10})
	c := dialRaw(t, ts.addr)
	c.send("PUT /stream HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sent := sendChunked(c, 6, 16<<10)
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "PUT"})
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	assert.Equal(t, "started\n", string(b))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the body must be cut short")
	<-sent // a reset may end the writes: the connection is cut
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// HTTP/2 enforces MaxBodyBytes too: a content-length over it is answered
// 413 before any handler runs; a body without one that outgrows it while
// its handler reads is answered 413 in its handler's place (cancelled).
// Either way the response is complete and RST_STREAM(NO_ERROR) asks the
// client to stop sending (RFC 9113 §8.1); the connection goes on.
func TestH2BodyOverLimit(t *testing.T) {
	ts := startServer(t, bodyLimitMux(), Config{MaxBodyBytes: 40000})
	c := dialH2(t, ts.addr)
	c.open(1, "PUT", "/count", false, "content-length", "40001")
	c.expect(1, "413", statusBody(413))
	c.expectReset(1, http2.ErrCodeNo)

	piece := c.outgrow(3, "/count")
	require.NoError(t, c.fr.WriteData(3, true, piece[:10])) // crossed the reset: ignored

	c.open(5, "PUT", "/count", false)
	require.NoError(t, c.fr.WriteData(5, false, piece))
	require.NoError(t, c.fr.WriteData(5, false, piece))
	require.NoError(t, c.fr.WriteData(5, true, piece)) // crosses the limit and ends the body
	c.expect(5, "413", statusBody(413))                // and no RST_STREAM: the body has ended

	c.open(7, "PUT", "/count", false)
	require.NoError(t, c.fr.WriteData(7, true, piece))
	c.expect(7, "200", itoa(len(piece)))
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(3), st.Requests, "stream 1's handler never ran")
	assert.Equal(t, uint64(2), st.Cancelled, "the handlers of streams 3 and 5 are cancelled")
	assert.Equal(t, uint64(3), st.BadRequests)
}

// outgrow opens stream id to path with a body without a length, and sends
// three 16 KiB pieces of it: the second outgrows a default arena (the
// handler starts), the third a limit of 40000, which must be answered
// 413 in the handler's place, then RST_STREAM(NO_ERROR). It returns a
// piece, for more.
func (c *h2Raw) outgrow(id uint32, path string) []byte {
	c.t.Helper()
	c.open(id, "PUT", path, false)
	piece := make([]byte, 16<<10)
	for range 3 {
		require.NoError(c.t, c.fr.WriteData(id, false, piece))
	}
	c.expect(id, "413", statusBody(413))
	c.expectReset(id, http2.ErrCodeNo)
	return piece
}

// A malformed chunk in a body that streams to its handler is a 400 like
// any other framing error: the handler is cancelled, the 400 is its
// answer, and the connection closes once it is out, with no lingering
// close (the Linger here is longer than the test would wait): what
// follows a framing error is not to be trusted to be anything.
func TestStreamedChunkedBodyMalformed(t *testing.T) {
	cfg := Config{}
	cfg.Listen.Conn.Linger = time.Hour
	ts := startServer(t, bodyLimitMux(), cfg)
	c := dialRaw(t, ts.addr)
	c.send("PUT /count HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 16<<10, strings.Repeat("a", 16<<10))
	for range 4 { // outgrows the arena: the handler reads it
		c.send(chunk)
	}
	eventually(t, func() bool { return ts.Stats().Requests == 1 }, "the handler does not start")
	c.send("zz\r\nGET /health HTTP/1.1\r\nHost: x\r\n\r\n") // a bad chunk size
	resp := c.read("PUT")
	assert.Equal(t, 400, resp.status)
	assert.True(t, resp.close, "Connection: close")
	assert.True(t, c.closed(), "nothing after the 400")
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection lingers after a 400")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// A handler that made its whole answer before the body crossed the
// limit (a 401 that does not read the upload) keeps it: its DATA, held
// back by the client's window, still goes out to its END_STREAM, with no
// 413 and no CANCEL; RST_STREAM(NO_ERROR) then stops the upload.
func TestH2BodyOverLimitKeepsACompleteAnswer(t *testing.T) {
	m := bodyLimitMux()
	big := strings.Repeat("b", 100<<10) // more than the client's initial window
	m.HandleFunc("PUT /early", func(r *Request) Reply { return Text(401, big) })
	ts := startServer(t, m, Config{MaxBodyBytes: 40000})
	c := dialH2(t, ts.addr)
	c.open(1, "PUT", "/early", false)
	piece := make([]byte, 16<<10)
	require.NoError(t, c.fr.WriteData(1, false, piece))
	require.NoError(t, c.fr.WriteData(1, false, piece)) // outgrows the arena: the handler answers
	got := 0
	f := c.next()
	hf, ok := f.(*http2.MetaHeadersFrame)
	require.True(t, ok, "not HEADERS: %v", f)
	require.Equal(t, "401", hf.PseudoValue("status"))
	for got < 65535 { // all the initial window lets out
		df, ok := c.next().(*http2.DataFrame)
		require.True(t, ok)
		got += len(df.Data())
	}
	require.NoError(t, c.fr.WriteData(1, false, piece)) // crosses the limit
	require.NoError(t, c.fr.WriteWindowUpdate(1, 1<<20))
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<20))
	for ended := false; !ended; {
		df, ok := c.next().(*http2.DataFrame)
		require.True(t, ok, "the complete answer was cut after %d of %d bytes", got, len(big))
		got += len(df.Data())
		ended = df.StreamEnded()
	}
	assert.Equal(t, len(big), got)
	c.expectReset(1, http2.ErrCodeNo)
	ts.atRest(t)
}

// The RST_STREAM(NO_ERROR) after a 413 is the server's own choice, not a
// reset the client provoked: it spends no rapid-reset token, and a client
// whose uploads are all refused keeps its connection.
func TestH2RefusalsSpendNoResetBudget(t *testing.T) {
	ts := startServer(t, bodyLimitMux(), Config{MaxBodyBytes: 1000})
	c := dialH2(t, ts.addr)
	const n = h2ResetBurst + 20
	blocks := make([][]byte, n)
	for i := range blocks {
		blocks[i] = c.block(":method", "PUT", ":scheme", "http", ":authority", "x", ":path", "/count",
			"content-length", "2000")
	}
	written := make(chan error, 1)
	go func() { // the client reads the answers while it sends: nothing piles up unread
		var err error
		for i := 0; i < n && err == nil; i++ {
			err = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1),
				BlockFragment: blocks[i], EndHeaders: true})
		}
		written <- err
	}()
	for i := range uint32(n) {
		c.expect(2*i+1, "413", statusBody(413))
		id, code := c.rst()
		require.Equal(t, 2*i+1, id)
		require.Equal(t, http2.ErrCodeNo, code)
	}
	require.NoError(t, recvT(t, written))
	c.get(2*n+1, "/health")
	c.expect(2*n+1, "200", "ok")
	assert.Zero(t, ts.Stats().Abusive)
	ts.atRest(t)
}

// The bytes a client sends after its body was refused are dropped and
// not given back: the stream's window closes on them, so a client whose
// 413 waits for its own window (here, an initial window of 0) cannot go
// on uploading meanwhile. The connection's window is given back: the
// other streams go on.
func TestH2RefusedBodyGetsNoWindow(t *testing.T) {
	ts := startServer(t, bodyLimitMux(), Config{MaxBodyBytes: 40000})
	c := dialH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}))
	c.open(1, "PUT", "/count", false)
	piece := make([]byte, 16<<10)
	for range 3 { // the third crosses the limit
		require.NoError(t, c.fr.WriteData(1, false, piece))
	}
	f := c.next()
	hf, ok := f.(*http2.MetaHeadersFrame)
	require.True(t, ok, "not HEADERS: %v", f)
	require.Equal(t, "413", hf.PseudoValue("status"))
	require.NoError(t, c.fr.WriteData(1, false, piece)) // dropped, within the window's 65535
	require.NoError(t, c.fr.WritePing(false, [8]byte{'s', 'y', 'n', 'c'}))
	for pinged := false; !pinged; {
		switch f := c.frame().(type) {
		case *http2.WindowUpdateFrame:
			assert.NotEqual(t, uint32(1), f.StreamID, "window given back to the refused stream")
		case *http2.PingFrame:
			pinged = f.IsAck()
		}
	}
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535}))
	c.expectBody(1, statusBody(413))
	c.expectReset(1, http2.ErrCodeNo)
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	ts.atRest(t)
}

// expectBody reads the DATA of stream id up to its END_STREAM: body.
func (c *h2Raw) expectBody(id uint32, body string) {
	c.t.Helper()
	var got []byte
	for {
		df, ok := c.next().(*http2.DataFrame)
		require.True(c.t, ok)
		require.Equal(c.t, id, df.StreamID)
		got = append(got, df.Data()...)
		if df.StreamEnded() {
			assert.Equal(c.t, body, string(got))
			return
		}
	}
}

// sink is an io.Writer for CopyTo's Work goroutine: it keeps what it is
// given, fails once it holds failAt bytes (if > 0), and, if gate is not
// nil, blocks every Write until gate closes.
type sink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	failAt int
	gate   chan struct{}
	writes chan struct{} // signalled (if room) at every Write's start
}

var errSink = errors.New("sink: disk full")

func (s *sink) Write(p []byte) (int, error) {
	select {
	case s.writes <- struct{}{}:
	default:
	}
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAt > 0 && s.buf.Len()+len(p) >= s.failAt {
		return 0, errSink
	}
	return s.buf.Write(p)
}

func (s *sink) sum() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("%d %x", s.buf.Len(), sha256.Sum256(s.buf.Bytes()))
}

// copyToMux answers PUT /copy with "n sha256" of what CopyTo wrote, or
// 500 and the error's text.
func copyToMux() *Mux {
	m := NewMux()
	m.HandleFunc("PUT /copy", func(r *Request) Reply {
		s := &sink{}
		h := aio.Then(r.Body().CopyTo(s), func(n int64) (Response, error) {
			sum := s.sum()
			if !strings.HasPrefix(sum, itoa(int(n))+" ") {
				return TextResponse(500, "CopyTo's count "+itoa(int(n))+" is not the bytes written: "+sum), nil
			}
			return TextResponse(200, sum), nil
		})
		return Later(h)
	})
	m.HandleFunc("PUT /fail", func(r *Request) Reply {
		h := aio.Then(r.Body().CopyTo(&sink{failAt: 1 << 20}), func(n int64) (Response, error) {
			return TextResponse(200, itoa(int(n))), nil
		})
		return Later(aio.Catch(h, func(err error) (Response, error) {
			return TextResponse(500, err.Error()), nil
		}))
	})
	m.HandleFunc("PUT /twice", func(r *Request) Reply {
		first := r.Body().CopyTo(io.Discard)
		second := r.Body().CopyTo(io.Discard)
		h := aio.Then(aio.AllSettled(first, second), func(o []aio.Outcome[int64]) (Response, error) {
			return TextResponse(200, fmt.Sprintf("%d %v", o[0].Value, errors.Is(o[1].Err, ErrBodyRead))), nil
		})
		return Later(h)
	})
	return m
}

// unsized hides a reader's length from net/http's client, so that the
// body goes chunked on HTTP/1.1.
type unsized struct{ io.Reader }

// TestBodyCopyTo copies bodies that arrive with the request, stream in
// with a Content-Length, and stream in chunked, over HTTP/1.1 and
// HTTP/2: every byte reaches the writer, in order, and the handle gives
// their count.
func TestBodyCopyTo(t *testing.T) {
	ts := startServer(t, copyToMux(), Config{})
	for _, proto := range protoClients(t) {
		for _, size := range []int{0, 100, 40 << 10, 4 << 20} {
			for _, chunked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/chunked=%v", proto.name, size, chunked), func(t *testing.T) {
					body := make([]byte, size)
					for i := range body {
						body[i] = byte(i * 7 / 3)
					}
					var rd io.Reader = bytes.NewReader(body)
					if chunked {
						rd = unsized{rd}
					}
					req, err := http.NewRequest("PUT", ts.url+"/copy", rd)
					require.NoError(t, err)
					resp, got := do(t, proto.c, req)
					require.Equal(t, 200, resp.StatusCode, string(got))
					assert.Equal(t, fmt.Sprintf("%d %x", size, sha256.Sum256(body)), string(got))
				})
			}
		}
	}
	ts.atRest(t)
}

// TestBodyCopyToWriterError: the writer's error fails the handle, the
// handler answers, and the rest of the body is dropped.
func TestBodyCopyToWriterError(t *testing.T) {
	ts := startServer(t, copyToMux(), Config{})
	req, err := http.NewRequest("PUT", ts.url+"/fail", bytes.NewReader(make([]byte, 8<<20)))
	require.NoError(t, err)
	resp, got := do(t, h2Client(t), req)
	assert.Equal(t, 500, resp.StatusCode)
	assert.Equal(t, errSink.Error(), string(got))
	ts.atRest(t)
}

// TestBodyCopyToTwice: a body has one reader; a second CopyTo fails at
// once with ErrBodyRead and leaves the first alone.
func TestBodyCopyToTwice(t *testing.T) {
	ts := startServer(t, copyToMux(), Config{})
	req, err := http.NewRequest("PUT", ts.url+"/twice", strings.NewReader("hello"))
	require.NoError(t, err)
	resp, got := do(t, client(t), req)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "5 true", string(got))
	ts.atRest(t)
}

// TestBodyCopyToHoldsASlowWriterBack: while the writer blocks, the
// server stops reading, so the client's sending blocks too, far short of
// its body. A client that then resets the connection cancels the copy at
// once; one that closes with a FIN is cancelled once the copy has read up
// to it (the bytes before a FIN come first). Either way the request gives
// everything back.
func TestBodyCopyToHoldsASlowWriterBack(t *testing.T) {
	for _, reset := range []bool{true, false} {
		t.Run(map[bool]string{true: "reset", false: "fin"}[reset], func(t *testing.T) {
			gate := make(chan struct{})
			copies := make(chan *aio.Handle[int64], 1)
			s := &sink{gate: gate, writes: make(chan struct{}, 1)}
			m := NewMux()
			m.HandleFunc("PUT /slow", func(r *Request) Reply {
				h := r.Body().CopyTo(s)
				copies <- h
				return Later(aio.Then(h, func(n int64) (Response, error) { return TextResponse(200, itoa(int(n))), nil }))
			})
			ts := startServer(t, m, Config{WriteTimeout: time.Minute})
			const size = 256 << 20
			c := dialRaw(t, ts.addr)
			c.send("PUT /slow HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(size) + "\r\n\r\n")
			sent := testpeer.WriteUntilBlocked(t, c.Conn, size, 500*time.Millisecond)
			t.Logf("the client sent %d bytes before its writes blocked", sent)
			assert.Less(t, sent, 32<<20, "the server read on while its writer blocked (the kernel buffers held 4–7 MiB here)")
			select {
			case <-s.writes:
			case <-time.After(waitTimeout):
				t.Fatal("the writer got nothing")
			}
			if reset {
				require.NoError(t, c.Conn.(*net.TCPConn).SetLinger(0))
			}
			require.NoError(t, c.Close())
			if !reset {
				close(gate) // the copy reads on, to the FIN
			}
			h := <-copies
			select {
			case <-h.Done():
				_, err := h.Result()
				assert.ErrorIs(t, err, aio.ErrCancelled, "the copy ended otherwise than cancelled")
			case <-time.After(waitTimeout):
				t.Fatal("the copy did not end when its client went away")
			}
			if reset {
				close(gate) // the Write that was running returns; the copy stops there
			}
			eventually(t, func() bool { return ts.Stats().Cancelled == 1 }, "the handler was not cancelled")
			ts.atRest(t)
		})
	}
}

// countingReader counts what a client has read of its body to send.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// tokenWriter lets one Write end per token, and counts what they took.
type tokenWriter struct {
	tokens  chan struct{}
	written atomic.Int64
}

func (w *tokenWriter) Write(p []byte) (int, error) {
	<-w.tokens
	w.written.Add(int64(len(p)))
	return len(p), nil
}

// settled returns f's value once it has not changed for quiet: a count
// that stops growing when a flow has stalled.
func settled(t testing.TB, f func() int64, quiet time.Duration) int64 {
	t.Helper()
	v, since, deadline := f(), time.Now(), time.Now().Add(waitTimeout)
	for time.Since(since) < quiet {
		require.True(t, time.Now().Before(deadline), "the count did not settle")
		time.Sleep(5 * time.Millisecond)
		if nv := f(); nv != v {
			v, since = nv, time.Now()
		}
	}
	return v
}

// CopyTo holds at most 256 KiB (pipeHigh) for a slow writer, in all: the
// chunks it took and is writing count until the writer has them. Over
// HTTP/2 what the client could send is what the server took plus the
// stream's window, so the client's count bounds what the server holds.
// The copy takes every chunk waiting when a Write returns: once the
// first one has, the second batch is pipeHigh, and a pipe that forgot it
// let pipeHigh more in while the writer worked through it.
func TestBodyCopyToHoldsAtMostPipeHigh(t *testing.T) {
	w := &tokenWriter{tokens: make(chan struct{}, 64)}
	m := NewMux()
	m.HandleFunc("PUT /slow", func(r *Request) Reply {
		return Later(aio.Then(r.Body().CopyTo(w), func(n int64) (Response, error) {
			return TextResponse(200, itoa(int(n))), nil
		}))
	})
	ts := startServer(t, m, Config{})
	const size = 16 << 20
	body := &countingReader{r: bytes.NewReader(make([]byte, size))}
	done := make(chan error, 1)
	go func() {
		req, err := http.NewRequest("PUT", ts.url+"/slow", body)
		if err == nil {
			req.ContentLength = size
			var resp *http.Response
			if resp, err = h2Client(t).Do(req); err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
		}
		done <- err
	}()
	held := func() int64 { return body.n.Load() - w.written.Load() }
	bound := int64(pipeHigh + h2StreamWindow + 2*h2MaxFrame)
	for i := range 3 {
		v := settled(t, held, 300*time.Millisecond)
		t.Logf("step %d: %d bytes sent and not yet written", i, v)
		assert.LessOrEqual(t, v, bound, "step %d: more than pipeHigh waited for the writer", i)
		w.tokens <- struct{}{} // one more Write ends
	}
	close(w.tokens)
	require.NoError(t, recvT(t, done))
	assert.Equal(t, int64(size), w.written.Load())
	ts.atRest(t)
}

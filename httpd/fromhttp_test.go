package httpd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// FromHTTP runs net/http handlers: path values, headers, buffered and
// streamed bodies; a client that goes away cancels their context.
func TestFromHTTP(t *testing.T) {
	m := testMux()
	m.Handle("GET /std/{name}", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Name", r.PathValue("name"))
		w.WriteHeader(202)
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("X-In"))
	})))
	m.Handle("POST /std/echo", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(w, r.Body)
	})))
	ctxDone := make(chan error, 1)
	m.Handle("GET /std/wait", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctxDone <- nil
		<-r.Context().Done()
		ctxDone <- r.Context().Err()
	})))
	ts := startServer(t, m, Config{})
	c := client(t)

	req, err := http.NewRequest("GET", ts.url+"/std/bob", nil)
	require.NoError(t, err)
	req.Header.Set("X-In", "hi")
	resp, b := do(t, c, req)
	assert.Equal(t, 202, resp.StatusCode)
	assert.Equal(t, "bob", resp.Header.Get("X-Name"))
	assert.Equal(t, "GET /std/bob hi", string(b))

	for _, n := range []int{5, 3 << 20} {
		body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
		_, got := post(t, c, ts.url+"/std/echo", bytes.NewReader(body))
		assert.True(t, bytes.Equal(body, got), "%d bytes: %d back", n, len(got))
	}

	raw := dialRaw(t, ts.addr)
	raw.send("GET /std/wait HTTP/1.1\r\nHost: x\r\n\r\n")
	recvT(t, ctxDone)
	raw.Close()
	assert.ErrorIs(t, recvT(t, ctxDone), context.Canceled)
	ts.atRest(t)
}

// streamMux serves net/http handlers that stream: /sse sends an event,
// flushes, and waits for next before the following one; /big?n= writes n
// bytes of pattern in 32 KiB writes (with a Content-Length if cl=1);
// /forever writes until a Write fails, and reports that error and its
// context's.
func streamMux(next <-chan struct{}, gone chan<- [2]error) *Mux {
	m := NewMux()
	m.Handle("GET /sse", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush() // the head goes out before any event
		for i := range 3 {
			if i > 0 {
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
			}
			_, _ = fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
		}
	})))
	m.Handle("GET /big", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Get("cl") == "1" {
			w.Header().Set("Content-Length", itoa(n))
		}
		buf := make([]byte, 32<<10)
		for off := 0; off < n; off += len(buf) {
			b := buf[:min(len(buf), n-off)]
			fillPattern(b, off)
			if _, err := w.Write(b); err != nil {
				return
			}
		}
	})))
	m.Handle("GET /forever", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := w.Write(buf); err != nil {
				gone <- [2]error{err, r.Context().Err()}
				return
			}
		}
	})))
	return m
}

// fillPattern fills b with the bytes of a position-dependent pattern from
// offset off.
func fillPattern(b []byte, off int) {
	for i := range b {
		b[i] = byte((off + i) * 7 >> 3)
	}
}

// patternReader checks that what is written to it is the pattern.
type patternReader struct {
	off int
	bad int // offset of the first wrong byte + 1
}

func (p *patternReader) Write(b []byte) (int, error) {
	for i, c := range b {
		if c != byte((p.off+i)*7>>3) && p.bad == 0 {
			p.bad = p.off + i + 1
		}
	}
	p.off += len(b)
	return len(b), nil
}

// A net/http server-sent-events handler streams through FromHTTP: each
// event reaches the client (HTTP/1.1 and HTTP/2, and curl) before the
// handler goes on, so before it ends.
func TestFromHTTPStreamEvents(t *testing.T) {
	next := make(chan struct{})
	ts := startServer(t, streamMux(next, nil), Config{})
	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		t.Run(name, func(t *testing.T) {
			resp, err := c.Get(ts.url + "/sse")
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
			assert.Equal(t, int64(-1), resp.ContentLength)
			br := bufio.NewReader(resp.Body)
			for i := range 3 {
				if i > 0 {
					next <- struct{}{} // the handler waits for this: the event came first
				}
				line, err := br.ReadString('\n')
				require.NoError(t, err)
				assert.Equal(t, fmt.Sprintf("data: %d\n", i), line)
				_, err = br.ReadString('\n')
				require.NoError(t, err)
			}
			rest, err := io.ReadAll(br)
			require.NoError(t, err)
			assert.Empty(t, rest)
		})
	}
	t.Run("curl", func(t *testing.T) {
		path, err := exec.LookPath("curl")
		require.NoError(t, err, "curl is missing: make tools installs it")
		cmd := exec.CommandContext(t.Context(), path, "-sSN", "--max-time", "10", ts.url+"/sse")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		br := bufio.NewReader(out)
		for i := range 3 {
			if i > 0 {
				next <- struct{}{}
			}
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("data: %d\n", i), line)
			_, _ = br.ReadString('\n')
		}
		_, _ = io.Copy(io.Discard, br)
		require.NoError(t, cmd.Wait())
	})
	ts.atRest(t)
}

// A large net/http response streams byte-exact, chunked or with the
// Content-Length its handler set, on HTTP/1.1 and HTTP/2, without ever
// sitting in memory whole: the heap stays far below its size.
func TestFromHTTPStreamLarge(t *testing.T) {
	const n = 16 << 20
	ts := startServer(t, streamMux(nil, nil), Config{})
	for _, tc := range []struct {
		name string
		c    *http.Client
		cl   string
	}{{"h1", client(t), "0"}, {"h1 Content-Length", client(t), "1"}, {"h2", h2Client(t), "0"}} {
		t.Run(tc.name, func(t *testing.T) {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			peak := sampleHeap(t)
			resp, err := tc.c.Get(ts.url + "/big?n=" + itoa(n) + "&cl=" + tc.cl)
			require.NoError(t, err)
			defer resp.Body.Close()
			if tc.cl == "1" {
				assert.Equal(t, int64(n), resp.ContentLength)
			} else {
				assert.Equal(t, int64(-1), resp.ContentLength)
			}
			var p patternReader
			_, err = io.Copy(&p, resp.Body)
			require.NoError(t, err)
			assert.Equal(t, n, p.off)
			assert.Zero(t, p.bad, "first wrong byte at %d", p.bad-1)
			grew := int64(peak()) - int64(base)
			t.Logf("heap peak %d KiB above the start for a %d MiB body", grew>>10, n>>20)
			assert.Less(t, grew, int64(n/2), "the body sat in memory")
		})
	}
	ts.atRest(t)
}

// sampleHeap samples the live heap every millisecond until the returned
// function is called, which returns the largest sample.
func sampleHeap(t *testing.T) func() uint64 {
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		return recvT(t, done)
	}
}

// A client that goes away mid-stream cancels the handler's context and
// unblocks its Write, which fails; everything comes back.
func TestFromHTTPStreamClientGone(t *testing.T) {
	gone := make(chan [2]error, 1)
	ts := startServer(t, streamMux(nil, gone), Config{})
	raw := dialRaw(t, ts.addr)
	raw.send("GET /forever HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := raw.read("HEAD") // the head only: the handler is writing
	assert.Equal(t, 200, resp.status)
	_, err := io.ReadFull(raw.br, make([]byte, 1<<20))
	require.NoError(t, err)
	raw.Close()
	errs := recvT(t, gone)
	assert.ErrorIs(t, errs[0], ErrStreamClosed)
	assert.ErrorIs(t, errs[1], context.Canceled)
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().Cancelled)
}

// An HTTP/2 client that closes its connection once it has read a whole
// streamed FromHTTP response (its END_STREAM), as x/net's client does
// after GOAWAY, has not gone away from anything: the handler, whose end
// its goroutine reports after the END_STREAM, finishes and is not counted
// cancelled, as on HTTP/1.1.
func TestFromHTTPStreamClientClosesAfterEnd(t *testing.T) {
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello")
		w.(http.Flusher).Flush() // a stream: END_STREAM goes when ServeHTTP returns
	}))
	ts := startServer(t, h, Config{})
	for range 50 {
		c := dialH2(t, ts.addr)
		c.get(1, "/")
		c.expect(1, "200", "hello")
		require.NoError(t, c.nc.Close())
	}
	ts.atRest(t)
	assert.Zero(t, ts.Stats().Cancelled)
}

// FromHTTP of a nil handler panics at once, as Mux.Handle of one does,
// rather than answering 500 to every request it would get.
func TestFromHTTPNil(t *testing.T) {
	assert.PanicsWithValue(t, "httpd: FromHTTP of a nil handler", func() { FromHTTP(nil) })
}

// causeMux serves /std (a net/http handler) and /native (a native handler
// whose Work waits on Request.Context), each of which waits until its
// context ends and reports context.Cause; PUT /std/body reads the body
// first; /native/done answers at once and reports its context's cause
// once the request has ended.
func causeMux(started chan<- struct{}, causes chan<- error) *Mux {
	m := NewMux()
	wait := func(ctx context.Context) {
		started <- struct{}{}
		<-ctx.Done()
		causes <- context.Cause(ctx)
	}
	m.Handle("GET /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait(r.Context())
	})))
	m.Handle("PUT /std/body", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
		causes <- context.Cause(r.Context())
	})))
	m.HandleFunc("GET /native", func(r *Request) Reply {
		ctx := r.Context()
		return Later(aio.Work(r.Loop(), func(context.Context) (Response, error) {
			wait(ctx)
			return TextResponse(200, "late"), nil
		}))
	})
	m.HandleFunc("GET /native/done", func(r *Request) Reply {
		ctx := r.Context()
		go func() {
			<-ctx.Done()
			causes <- context.Cause(ctx)
		}()
		return Text(200, "ok")
	})
	return m
}

// A request's context, native or net/http's, says why it ended
// (context.Cause): the client went away (closed, reset the connection, or
// reset its HTTP/2 stream), Shutdown's deadline came, the body was refused
// as it streamed, or the request simply ended.
//
// Each cause is also context.Canceled to errors.Is, as the context's Err
// is: code written for net/http's server, whose request contexts have no
// other cause, tests that on what its calls return (net/http's client
// returns the cause; httputil.ReverseProxy logs an error that is not
// context.Canceled).
func TestContextCause(t *testing.T) {
	started, causes := make(chan struct{}, 4), make(chan error, 4)
	cfg := Config{MaxBodyBytes: 64 << 10}
	ts := startServer(t, causeMux(started, causes), cfg)
	recvCause := func() error {
		t.Helper()
		cause := recvT(t, causes)
		assert.ErrorIs(t, cause, context.Canceled, "%v", cause)
		return cause
	}

	for _, path := range []string{"/std", "/native"} {
		c := dialRaw(t, ts.addr)
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		recvT(t, started)
		c.Close()
		cause := recvCause()
		assert.ErrorIs(t, cause, ErrClientGone, path+": closed")
		assert.Equal(t, ErrClientGone.Error(), cause.Error(), path+": the cause's text is its own")

		c = dialRaw(t, ts.addr)
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		recvT(t, started)
		require.NoError(t, c.Conn.(*net.TCPConn).SetLinger(0))
		c.Close()
		cause = recvCause()
		assert.ErrorIs(t, cause, ErrClientGone, path+": reset")
		assert.ErrorIs(t, cause, syscall.ECONNRESET, path+": reset")

		h2 := dialH2(t, ts.addr)
		h2.get(1, path)
		recvT(t, started)
		require.NoError(t, h2.fr.WriteRSTStream(1, http2.ErrCodeCancel))
		assert.ErrorIs(t, recvCause(), ErrClientGone, path+": RST_STREAM")
	}

	c := dialRaw(t, ts.addr)
	c.send("PUT /std/body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
	sendChunked(c, 6, 16<<10)
	var mbe *http.MaxBytesError
	require.ErrorAs(t, recvCause(), &mbe, "a streamed body refused (413)")
	assert.Equal(t, cfg.MaxBodyBytes, mbe.Limit)
	assert.Equal(t, 413, c.read("PUT").status)

	c = dialRaw(t, ts.addr)
	chunk := fmt.Sprintf("%x\r\n%s\r\n", 16<<10, bytes.Repeat([]byte("z"), 16<<10))
	c.send("PUT /std/body HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strings.Repeat(chunk, 3) + "zz\r\n") // the handler starts on the first 48 KiB
	assert.ErrorIs(t, recvCause(), ErrBadBody, "a malformed chunk (400)")
	assert.Equal(t, 400, c.read("PUT").status)

	_, body := get(t, client(t), ts.url+"/native/done")
	assert.Equal(t, "ok", body)
	assert.Equal(t, context.Canceled, recvCause(), "a request that ended as usual")
	ts.atRest(t)

	h2 := causePending(t, ts, started)
	h2.get(1, "/native") // an HTTP/2 stream too
	recvT(t, started)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, ts.Shutdown(ctx), context.DeadlineExceeded)
	for range 3 {
		assert.ErrorIs(t, recvCause(), ErrServerClosed, "Shutdown's deadline")
	}
}

// A net/http handler's Content-Length is the length of its response, as
// net/http holds it, buffered or streamed: a body short of it is cut (the
// client sees it cut, not a whole response of another length), and Write
// takes no byte past it (http.ErrContentLength). A first Write too large
// to buffer is sniffed for a Content-Type as a small one is.
func TestFromHTTPContentLengthIsKept(t *testing.T) {
	writeErrs := make(chan error, 8)
	m := NewMux()
	lengthHandler := func(declared, n int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", itoa(declared))
			w.Header().Set("Content-Type", "text/plain")
			got, err := w.Write(bytes.Repeat([]byte("x"), n))
			assert.Equal(t, min(declared, n), got)
			writeErrs <- err
		})
	}
	m.Handle("GET /long", FromHTTP(lengthHandler(100, 10)))
	m.Handle("GET /long-big", FromHTTP(lengthHandler(200<<10, 100<<10)))
	m.Handle("GET /short", FromHTTP(lengthHandler(5, 10)))
	m.Handle("GET /short-big", FromHTTP(lengthHandler(100<<10, 200<<10)))
	html := append([]byte("<html><body>"), bytes.Repeat([]byte("x"), 100<<10)...)
	m.Handle("GET /sniff-big", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(html)
	})))
	ts := startServer(t, m, Config{})

	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		for _, path := range []string{"/long", "/long-big"} {
			resp, err := c.Get(ts.url + path)
			require.NoError(t, err, name+path)
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Error(t, err, name+path+": a body short of its Content-Length must be seen cut")
			assert.NoError(t, recvT(t, writeErrs), name+path)
		}
		for path, n := range map[string]int{"/short": 5, "/short-big": 100 << 10} {
			resp, body := do(t, c, newRequest(t, "GET", ts.url+path))
			assert.Equal(t, int64(n), resp.ContentLength, name+path)
			assert.Equal(t, n, len(body), name+path)
			assert.ErrorIs(t, recvT(t, writeErrs), http.ErrContentLength, name+path)
		}
		resp, body := do(t, c, newRequest(t, "GET", ts.url+"/sniff-big"))
		assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), name)
		assert.Equal(t, len(html), len(body), name)
	}
	ts.atRest(t)
}

// newRequest is http.NewRequest of a request without a body.
func newRequest(t testing.TB, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	return req
}

// http.ResponseController on a FromHTTP handler: Flush works,
// EnableFullDuplex does (its handlers start at the head), and the
// deadlines, which the loop owns, are refused with http.ErrNotSupported
// rather than ignored (Hijack: hijack_test.go).
func TestFromHTTPResponseController(t *testing.T) {
	m := NewMux()
	m.Handle("GET /rc", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		res := []error{rc.EnableFullDuplex(), rc.SetWriteDeadline(time.Time{}), rc.SetReadDeadline(time.Time{})}
		for _, err := range res {
			fmt.Fprintf(w, "%v|", errors.Is(err, http.ErrNotSupported))
		}
		fmt.Fprint(w, rc.Flush())
	})))
	ts := startServer(t, m, Config{})
	for name, want := range map[string]string{"h1": "false|true|true|<nil>", "h2": "false|true|true|<nil>"} {
		c := client(t)
		if name == "h2" {
			c = h2Client(t)
		}
		_, body := get(t, c, ts.url+"/rc")
		assert.Equal(t, want, body, name)
	}
}

// causePending leaves a request to /std and one to /native pending, each
// on its own HTTP/1.1 connection, and returns an HTTP/2 connection for
// more.
func causePending(t *testing.T, ts *testServer, started <-chan struct{}) *h2Raw {
	for _, path := range []string{"/std", "/native"} {
		c := dialRaw(t, ts.addr)
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		recvT(t, started)
	}
	return dialH2(t, ts.addr)
}

// Stopping the loop (the runtime's shutdown) cancels the requests in
// progress: context.Cause says aio.ErrStopped.
func TestContextCauseLoopStop(t *testing.T) {
	started, causes := make(chan struct{}, 4), make(chan error, 4)
	ts := startServer(t, causeMux(started, causes), Config{})
	causePending(t, ts, started)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_ = ts.rt.Shutdown(ctx)
	for range 2 {
		assert.ErrorIs(t, recvT(t, causes), aio.ErrStopped, "the loop stopped")
	}
}

// Request.Context and Scope called after the request ended (from a timer
// that outlived it, before the Request serves another) give a context
// that is done and a scope that is closed, not live ones that nothing
// would end; the next request starts with neither.
func TestContextAfterEnd(t *testing.T) {
	var ended *Request           // owned by the loop
	scopes := make(chan bool, 1) // whether the Request holds a scope
	m := NewMux()
	m.HandleFunc("GET /after", func(r *Request) Reply {
		ended = r
		return Text(200, "ok")
	})
	m.HandleFunc("GET /next", func(r *Request) Reply {
		scopes <- r.scope != nil // a fresh request: no scope made yet
		return Text(200, "next")
	})
	ts := startServer(t, m, Config{Arenas: 1})
	a := dialRaw(t, ts.addr)
	a.send("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, 200, a.read("GET").status)
	ts.atRest(t) // the request has ended, its Request back in the slab
	var ctx context.Context
	var adoptedCancelled, kept bool
	ts.onLoop(t, func() { // late, as a timer that outlived the request would be
		ctx = ended.Context()
		adoptedCancelled = aio.Adopt(ended.Scope(), aio.Sleep(ended.Loop(), time.Hour)).Cancelled()
		kept = ended.scope != nil
	})
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "Context after the request's end is done")
	assert.True(t, adoptedCancelled, "what is adopted into a late Scope is cancelled at once")
	assert.False(t, kept, "a late Scope is not kept")

	b := dialRaw(t, ts.addr)
	b.send("GET /next HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "next", b.read("GET").body)
	assert.False(t, recvT(t, scopes), "the next request starts with no scope")
	ts.atRest(t)
}

// gatedFailWriter takes its first Write once gate is closed (the body
// piles up in the pipe meanwhile), then fails every Write: a disk that
// filled up.
type gatedFailWriter struct {
	gate <-chan struct{}
	n    int
}

func (w *gatedFailWriter) Write(p []byte) (int, error) {
	w.n++
	if w.n == 1 {
		<-w.gate
		return len(p), nil
	}
	return 0, errors.New("disk full")
}

// A net/http handler whose copy of the body fails (io.Copy uses the
// pipe's WriteTo) and that then drains the rest, as handlers do to keep
// the connection, reaches the body's end: the chunks the failed WriteTo
// took and never wrote do not stay counted as waiting, which would keep
// the pipe paused for good.
func TestFromHTTPWriteToErrorThenDrain(t *testing.T) {
	gate := make(chan struct{})
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(&gatedFailWriter{gate: gate}, r.Body)
		n, err2 := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%v; drained %v, %v", err, n > 0, err2)
	}))
	ts := startServer(t, h, Config{})
	bodies := make(chan string, 1)
	go func() {
		resp, err := client(t).Post(ts.url+"/", "", bytes.NewReader(make([]byte, 4<<20)))
		if err != nil {
			bodies <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		bodies <- string(b)
	}()
	eventually(t, func() bool { // the pipe is full: the first Write holds a batch
		return ts.anyConn(t, func(hc *h1conn) bool { return hc.cur != nil && hc.cur.body.paused })
	}, "the body never paused")
	close(gate)
	assert.Equal(t, "disk full; drained true, <nil>", recvT(t, bodies))
	ts.atRest(t)
}

// A net/http handler that answers 204, or 304 with the Content-Length of
// the resource, and flushes (a middleware that always flushes) gets the
// same answer as without the Flush, on a connection that stays open, as
// with net/http; a Write there is refused (http.ErrBodyNotAllowed), and
// an interim status (103) is sent before the final one, not taken for it.
func TestFromHTTPFlushNoContent(t *testing.T) {
	writes := make(chan error, 4)
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(103)
		if r.URL.Path == "/304" {
			w.Header().Set("Content-Length", "1234")
			w.WriteHeader(304)
		} else {
			w.WriteHeader(204)
		}
		w.(http.Flusher).Flush()
		_, err := w.Write([]byte("x"))
		writes <- err
	}))
	ts := startServer(t, h, Config{})
	c := dialRaw(t, ts.addr)
	for _, path := range []string{"/204", "/304", "/204"} {
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n")
		assert.Equal(t, 103, c.read("GET").status, path)
		resp := c.read("GET")
		assert.Equal(t, atoi(path[1:]), resp.status, path)
		assert.False(t, resp.close, path)
		assert.Empty(t, resp.header.Values("Content-Length"), path)
		assert.ErrorIs(t, recvT(t, writes), http.ErrBodyNotAllowed, path)
	}
	ts.atRest(t)
}

// The Content-Length that counts is the one set when the head is written,
// as net/http has it: one set later is ignored, streamed or not, and the
// answer to HEAD states the declared one whatever the handler wrote.
func TestFromHTTPContentLengthAtTheHead(t *testing.T) {
	m := NewMux()
	m.Handle("GET /late", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.Header().Set("Content-Length", "7") // after the head: ignored
		_, _ = w.Write(bytes.Repeat([]byte("y"), 100<<10))
	})))
	m.Handle("GET /decl", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte("ten bytes."))
	})))
	ts := startServer(t, m, Config{})
	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		_, body := get(t, c, ts.url+"/late")
		assert.Equal(t, 100<<10, len(body), name)
		resp, _ := do(t, c, newRequest(t, "HEAD", ts.url+"/decl"))
		assert.Equal(t, int64(1000), resp.ContentLength, name)
	}
	ts.atRest(t)
}

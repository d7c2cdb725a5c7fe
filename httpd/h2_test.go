package httpd

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Client returns an HTTP/2 client speaking h2c by prior knowledge (Go's
// x/net/http2 Transport over plain TCP), its connections closed at the
// end.
func h2Client(t testing.TB) *http.Client {
	tr := &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitTimeout}
}

// protoClient is a client of one protocol, named for subtests.
type protoClient struct {
	name string
	c    *http.Client
}

// protoClients returns an HTTP/1.1 client and an HTTP/2 (h2c) one, for a
// test that runs the same requests over both.
func protoClients(t testing.TB) []protoClient {
	return []protoClient{{"h1", client(t)}, {"h2", h2Client(t)}}
}

// h2Mux is testMux with the routes the HTTP/2 tests add: /events streams
// server-sent events, /big an 1 MiB body.
func h2Mux() *Mux {
	m := testMux()
	m.HandleFunc("GET /events", func(r *Request) Reply {
		s := r.Stream(200, []Field{{"Content-Type", "text/event-stream"}})
		n := 0
		tick := aio.Every(r.Loop(), time.Millisecond, func() {
			n++
			_, _ = s.WriteString("data: " + itoa(n) + "\n\n")
			if n == 3 {
				s.End()
			}
		})
		aio.Adopt(r.Scope(), tick)
		return s.Reply()
	})
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	m.HandleFunc("GET /big", func(r *Request) Reply { return Bytes(200, big) })
	return m
}

// h2Do does a request of method and returns the response and its whole
// body (see do).
func h2Do(t testing.TB, c *http.Client, method, url string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	resp, b := do(t, c, req)
	return resp, string(b)
}

func TestH2Basics(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c := h2Client(t)

	resp, body := h2Do(t, c, "GET", ts.url+"/health", nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "HTTP/2.0", resp.Proto)
	assert.Equal(t, "ok", body)
	assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Equal(t, "2", resp.Header.Get("Content-Length"))
	assert.NotEmpty(t, resp.Header.Get("Date"))

	_, body = h2Do(t, c, "GET", ts.url+"/users/7", nil)
	assert.Equal(t, `{"id":"7"}`, body)
	_, body = h2Do(t, c, "GET", ts.url+"/query?a=1&b%20c=2", nil)
	assert.Equal(t, "1|2", body)
	resp, _ = h2Do(t, c, "GET", ts.url+"/nothing", nil)
	assert.Equal(t, 404, resp.StatusCode)
	resp, _ = h2Do(t, c, "GET", ts.url+"/fail", nil)
	assert.Equal(t, 500, resp.StatusCode)
	resp, _ = h2Do(t, c, "GET", ts.url+"/panic", nil)
	assert.Equal(t, 500, resp.StatusCode)
	resp, body = h2Do(t, c, "HEAD", ts.url+"/health", nil)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "", body)
	assert.Equal(t, int64(2), resp.ContentLength)
	_, body = h2Do(t, c, "GET", ts.url+"/slow?ms=2", nil)
	assert.Equal(t, "waited 2 ms", body)

	// a small POST body arrives buffered; one without a length too
	_, body = h2Do(t, c, "POST", ts.url+"/echo", strings.NewReader("hello"))
	assert.Equal(t, "hello", body)
	_, body = h2Do(t, c, "POST", ts.url+"/echo", io.MultiReader(strings.NewReader("hel"), strings.NewReader("lo")))
	assert.Equal(t, "hello", body)
	// a body without a length that outgrows the arena streams from there
	long := strings.Repeat("x", 100<<10)
	_, body = h2Do(t, c, "POST", ts.url+"/echo", io.MultiReader(strings.NewReader(long)))
	assert.True(t, long == body, "echo of %d bytes differs", len(long))

	// a response larger than the client's windows
	_, body = h2Do(t, c, "GET", ts.url+"/big", nil)
	assert.True(t, strings.Repeat("0123456789abcdef", 1<<16) == body, "/big differs (%d bytes)", len(body))

	// a streamed response
	resp, body = h2Do(t, c, "GET", ts.url+"/events", nil)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	assert.Equal(t, "data: 1\n\ndata: 2\n\ndata: 3\n\n", body)

	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, int64(1), st.ConnsOpen, "every request on one connection")
	assert.Equal(t, uint64(1), st.Panics)
}

// Many concurrent streams on one connection, each answered.
func TestH2ConcurrentStreams(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c := h2Client(t)
	_, body := h2Do(t, c, "GET", ts.url+"/health", nil) // one connection, then its streams
	require.Equal(t, "ok", body)
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			url := ts.url + "/users/" + itoa(i)
			if i%2 == 1 {
				url = ts.url + "/slow?ms=" + itoa(1+i%5)
			}
			resp, err := c.Get(url)
			if !assert.NoError(t, err) {
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.NoError(t, err)
			if i%2 == 1 {
				assert.Equal(t, "waited "+itoa(1+i%5)+" ms", string(b))
			} else {
				assert.Equal(t, `{"id":"`+itoa(i)+`"}`, string(b))
			}
		})
	}
	wg.Wait()
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, int64(1), st.ConnsOpen)
	assert.Equal(t, uint64(n+1), st.Requests)
}

// An 8 MiB body echoed byte-exact: it streams through both directions'
// flow control, both sides' WINDOW_UPDATEs counted on the wire (the
// Transport grants 4 MiB per stream, the server 64 KiB).
func TestH2LargeEcho(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	c, in, out := h2SniffClient(t)
	body := make([]byte, 8<<20)
	for i := range body {
		body[i] = byte(i * 7 >> 3)
	}
	resp, got := h2Do(t, c, "POST", ts.url+"/echo", bytes.NewReader(body))
	assert.Equal(t, 200, resp.StatusCode)
	assert.True(t, bytes.Equal(body, []byte(got)), "the echo differs (%d bytes back)", len(got))
	ts.atRest(t)
	sc, ss := in.counts(http2.FrameWindowUpdate)
	cc, cs := out.counts(http2.FrameWindowUpdate)
	t.Logf("WINDOW_UPDATE from the server: %d conn, %d stream; from the client: %d conn, %d stream", sc, ss, cc, cs)
	assert.Greater(t, ss, len(body)/h2StreamWindow/2, "the server gives the stream's window back as it reads")
	assert.Greater(t, sc, len(body)/h2ConnWindow/2, "and the connection's")
	assert.Positive(t, cs, "the client gives the stream's window back as it reads")
}

// The HTTP/1.1 port serves HTTP/1.1 and HTTP/2 side by side.
func TestH2BesideH1(t *testing.T) {
	ts := startServer(t, h2Mux(), Config{})
	st, body := get(t, client(t), ts.url+"/health")
	assert.Equal(t, 200, st)
	assert.Equal(t, "ok", body)
	_, body = h2Do(t, h2Client(t), "GET", ts.url+"/health", nil)
	assert.Equal(t, "ok", body)
	// a request whose method begins as the preface does is HTTP/1.1's
	c := dialRaw(t, ts.addr)
	c.send("PUT /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, 405, c.read("PUT").status)
	ts.atRest(t)
}

func TestH2Curl(t *testing.T) {
	run := curlRunner(t, "--http2-prior-knowledge")
	ts := startServer(t, h2Mux(), Config{})
	// one URL a run: curl 7.88 fails its second request on a reused
	// prior-knowledge connection (against Go's server too)
	assert.Equal(t, "ok 2 200\n", run("-w", " %{http_version} %{http_code}\n", ts.url+"/health"))
	assert.Equal(t, `{"id":"5"}`, run(ts.url+"/users/5"))
	body, file := curlBody(t)
	assert.True(t, body == run("--data-binary", "@"+file, ts.url+"/echo"), "echo differs")
	ts.atRest(t)
}

// A response without content (204, 304) has no content-length on either
// protocol (RFC 9110 §8.6: 204 must not, 304's must not unless it is
// the 200's length, which the server does not know).
func TestNoContentLengthWithoutContent(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	for name, c := range map[string]*http.Client{"h1": client(t), "h2": h2Client(t)} {
		for _, code := range []string{"204", "304"} {
			resp, err := c.Get(ts.url + "/status/" + code)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, atoi(code), resp.StatusCode, name)
			assert.Empty(t, resp.Header.Values("Content-Length"), name+" "+code)
		}
	}
}

// A Duplex handler, and a FromHTTP one (as net/http's HTTP/2 handlers),
// also behind a Mux that the Server's Mux routes to or behind a
// MaxBytesHandler, starts at its
// request's head on HTTP/2: a client that waits for each line's echo
// before it sends the next gets them, where a handler that waited for the
// small body to arrive whole would wait for the client, and the client
// for it.
func TestH2DuplexStartsAtTheHead(t *testing.T) {
	m := NewMux()
	nativeEcho := Duplex(HandlerFunc(echoHandler)) // its body streams: the echo is a Stream
	m.Handle("POST /native", nativeEcho)
	api := NewMux() // a Mux routed to by the Server's Mux
	api.Handle("POST /api/{name}", Duplex(HandlerFunc(func(r *Request) Reply {
		assert.Equal(t, "nested", r.PathValue("name"), "the path values are the nested Mux's")
		return nativeEcho.ServeAIO(r)
	})))
	m.Handle("/api/", api)
	m.Handle("POST /limited", MaxBytesHandler(nativeEcho, 1<<20)) // seen through
	m.Handle("POST /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = io.WriteString(w, line)
			w.(http.Flusher).Flush()
		}
	})))
	m.Handle("POST /duplex-small", Duplex(HandlerFunc(func(r *Request) Reply {
		b, ok := r.Body().Bytes()
		assert.True(t, ok, "a body that came whole with its head is buffered, Duplex or not")
		return Bytes(200, b)
	})))
	m.HandleFunc("POST /buffered", func(r *Request) Reply {
		b, ok := r.Body().Bytes()
		assert.True(t, ok, "a small body arrives with the request, for a handler that is not Duplex")
		return Bytes(200, b)
	})
	ts := startServer(t, m, Config{})
	c := h2Client(t)
	for _, path := range []string{"/native", "/std", "/api/nested", "/limited"} {
		pr, pw := io.Pipe()
		lines := make(chan string, 1)
		lines <- "one\n"
		go func() {
			for line := range lines {
				_, _ = io.WriteString(pw, line)
			}
			pw.Close()
		}()
		req, err := http.NewRequestWithContext(t.Context(), "POST", ts.url+path, pr)
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err, path+": no response head while the body is open")
		br := bufio.NewReader(resp.Body)
		for _, line := range []string{"one\n", "two\n", "three\n"} {
			if line != "one\n" {
				lines <- line
			}
			echo, err := br.ReadString('\n')
			require.NoError(t, err, path)
			assert.Equal(t, line, echo, path)
		}
		close(lines)
		rest, err := io.ReadAll(br)
		require.NoError(t, err, path)
		assert.Empty(t, rest, path)
		resp.Body.Close()
	}
	_, b := post(t, c, ts.url+"/buffered", strings.NewReader("small"))
	assert.Equal(t, "small", string(b))

	// A head and a whole body in one write are read at once: a Duplex
	// handler gets that body buffered, as any other.
	raw := dialH2(t, ts.addr)
	raw.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/duplex-small"}} {
		require.NoError(t, raw.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	var both bytes.Buffer
	fr := http2.NewFramer(&both, nil)
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: raw.hb.Bytes(), EndHeaders: true}))
	require.NoError(t, fr.WriteData(1, true, []byte("small")))
	_, err := raw.nc.Write(both.Bytes())
	require.NoError(t, err)
	raw.expect(1, "200", "small")
	ts.atRest(t)
}

// A Duplex handler started after the read that brought its head (the
// body still open) gets its answer out at once: an immediate reply, or a
// Stream's head, is not left unsent until the client's next frame.
func TestH2DuplexAnswerIsFlushed(t *testing.T) {
	m := NewMux()
	m.Handle("POST /at-once", Duplex(HandlerFunc(func(r *Request) Reply { return Text(200, "at once") })))
	m.Handle("POST /stream", Duplex(HandlerFunc(streamUntilBodyEnd)))
	ts := startServer(t, m, Config{})
	c := dialH2(t, ts.addr)
	for i, path := range []string{"/at-once", "/stream"} {
		id := uint32(2*i + 1)
		c.open(id, "POST", path, false)
		f := c.next()
		if rf, ok := f.(*http2.RSTStreamFrame); ok && rf.StreamID < id {
			f = c.next() // the early answer's reset of the stream before
		}
		mh, ok := f.(*http2.MetaHeadersFrame)
		require.True(t, ok, "%s: no response head while the body is open: %v", path, f)
		assert.Equal(t, "200", mh.PseudoValue("status"), path)
		require.NoError(t, c.fr.WriteData(id, true, nil))
		for f := c.next(); ; f = c.next() {
			if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
				break
			}
		}
	}
	ts.atRest(t)
}

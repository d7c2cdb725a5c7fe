package httpd

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/internal/testpeer"
	"golang.org/x/net/http2"
)

// Responses that a handler gets wrong are never mis-framed: whatever it
// asks for, each request gets one well-framed answer, and nothing of one
// response is read as part of another (response splitting). Each test
// pipelines GET /ok behind the request under test: its answer must be
// the next response, whole.

// okAfter adds GET /ok (the pipelined probe) to m.
func okAfter(m *Mux) *Mux {
	m.HandleFunc("GET /ok", func(*Request) Reply { return Text(200, "ok") })
	return m
}

// pipelineOK sends GET path then GET /ok on one connection and returns
// the first response; the second must be /ok's.
func pipelineOK(t *testing.T, ts *testServer, path string) rawResponse {
	t.Helper()
	c := dialRaw(t, ts.addr)
	c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	first := c.read("GET")
	second := c.read("GET")
	assert.Equal(t, 200, second.status, "%s: the next response is /ok's", path)
	assert.Equal(t, "ok", second.body, path)
	return first
}

// A stream whose head cannot be sent is answered 500 in its place, and
// nothing the handler wrote to it goes out: not a field with CR/LF, a
// status that is not final (1xx), a Content-Length that is not digits or
// on a status without content. Before, the refused head was dropped and
// the handler's bytes went out raw, as a response of the client's choosing.
func TestStreamRefusedHeadAnswers500(t *testing.T) {
	const injected = "HTTP/1.1 200 OK\r\nContent-Length: 8\r\nX-Injected: 1\r\n\r\ninjected"
	writes := make(chan error, 16)
	m := okAfter(NewMux())
	for path, start := range map[string]func(r *Request) *Stream{
		"/crlf":  func(r *Request) *Stream { return r.Stream(200, []Field{{"X-Bad", "a\r\nb"}}) },
		"/owned": func(r *Request) *Stream { return r.Stream(200, []Field{{"Connection", "close"}}) },
		"/103":   func(r *Request) *Stream { return r.Stream(103, nil) },
		"/plus":  func(r *Request) *Stream { return r.Stream(200, []Field{{"Content-Length", "+8"}}) },
		"/twice": func(r *Request) *Stream {
			return r.Stream(200, []Field{{"Content-Length", "8"}, {"Content-Length", "8"}})
		},
		"/204len": func(r *Request) *Stream { return r.Stream(204, []Field{{"Content-Length", "8"}}) },
	} {
		m.HandleFunc("GET "+path, func(r *Request) Reply {
			s := start(r)
			_, err := s.WriteString(injected)
			writes <- err
			s.End()
			return s.Reply()
		})
	}
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/crlf", "/owned", "/103", "/plus", "/twice", "/204len"} {
		first := pipelineOK(t, ts, path)
		assert.Equal(t, 500, first.status, path)
		assert.Empty(t, first.header.Get("X-Injected"), path)
		assert.ErrorIs(t, recvT(t, writes), ErrStreamClosed, path)

		resp, body := do(t, h2Client(t), mustRequest(t, "GET", ts.url+path))
		assert.Equal(t, 500, resp.StatusCode, "h2 %s", path)
		assert.NotContains(t, string(body), "injected", "h2 %s", path)
		assert.ErrorIs(t, recvT(t, writes), ErrStreamClosed, "h2 %s", path)
	}
	ts.atRest(t)
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	return req
}

// A stream of a status without content (204, 304) is its head: no
// chunked framing, no body, on HTTP/1.1 (where a body would be read as
// the next response) and HTTP/2 (no DATA); Write says so.
func TestStreamWithoutContent(t *testing.T) {
	writes := make(chan error, 16)
	m := okAfter(NewMux())
	m.HandleFunc("GET /s/{status}", func(r *Request) Reply {
		s := r.Stream(atoi(r.PathValue("status")), []Field{{"ETag", `"v1"`}})
		_, err := s.WriteString("HTTP/1.1 200 OK\r\nX-Injected: 1\r\nContent-Length: 0\r\n\r\n")
		writes <- err
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	for _, status := range []int{204, 304} {
		path := "/s/" + itoa(status)
		first := pipelineOK(t, ts, path)
		assert.Equal(t, status, first.status)
		assert.Empty(t, first.header.Get("Transfer-Encoding"), path)
		assert.Equal(t, `"v1"`, first.header.Get("ETag"), path)
		assert.Empty(t, first.body, path)
		assert.ErrorIs(t, recvT(t, writes), http.ErrBodyNotAllowed, path)

		resp, body := do(t, h2Client(t), mustRequest(t, "GET", ts.url+path))
		assert.Equal(t, status, resp.StatusCode, "h2 %s", path)
		assert.Empty(t, body, "h2 %s", path)
		assert.ErrorIs(t, recvT(t, writes), http.ErrBodyNotAllowed, "h2 %s", path)
	}
	ts.atRest(t)
}

// An interim status (1xx) is no final answer: a Response of one is
// refused with 500, as any it cannot send. On HTTP/1.1 a 103 sent as the
// answer made the client take the next response for this one's; on
// HTTP/2 it was HEADERS(103) with END_STREAM, which RFC 9113 §8.1 calls
// malformed.
func TestInterimStatusRefused(t *testing.T) {
	m := okAfter(NewMux())
	m.HandleFunc("GET /hints", func(*Request) Reply { return Respond(Response{Status: 103}) })
	m.HandleFunc("GET /99", func(*Request) Reply { return Respond(Response{Status: 99}) })
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/hints", "/99"} {
		assert.Equal(t, 500, pipelineOK(t, ts, path).status, path)
		resp, _ := do(t, h2Client(t), mustRequest(t, "GET", ts.url+path))
		assert.Equal(t, 500, resp.StatusCode, "h2 %s", path)
	}
}

// A Connection field is the server's on HTTP/1.1 too: a handler's
// "Connection: close" was sent, and the server went on answering the
// requests after it, which RFC 9112 §9.6 forbids. It is refused (500),
// as the Response docs say and as HTTP/2 does.
func TestConnectionFieldRefused(t *testing.T) {
	m := okAfter(NewMux())
	m.HandleFunc("GET /bye", func(*Request) Reply {
		return Respond(Response{Header: []Field{{"Connection", "close"}}, Body: []byte("bye")})
	})
	ts := startServer(t, m, Config{})
	assert.Equal(t, 500, pipelineOK(t, ts, "/bye").status)
}

// A response that ends the connection is the last one written: requests
// pipelined after it get nothing. Before, a stream cut short of its
// Content-Length (native or FromHTTP), or an HTTP/1.0 stream delimited by
// the connection's end, was followed by the next response, which the
// client read as the rest of the first one's body.
func TestNothingAfterTheLastResponse(t *testing.T) {
	streams := make(chan *Stream, 4)
	release := make(chan struct{})
	m := NewMux()
	m.HandleFunc("GET /ok", func(*Request) Reply { return Text(200, "SECOND") })
	m.HandleFunc("GET /short", func(r *Request) Reply {
		s := r.Stream(200, []Field{{"Content-Length", "100"}})
		_, _ = s.WriteString("abc")
		streams <- s
		return s.Reply()
	})
	m.Handle("GET /fromhttp", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release // until /ok has been answered (queued behind this)
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "abc")
	})))
	m.Handle("GET /open", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		<-release
		_, _ = io.WriteString(w, "streamed")
		w.(http.Flusher).Flush() // HTTP/1.0: no length, so the connection's end delimits it
	})))
	ts := startServer(t, m, Config{})
	for _, c := range []struct{ path, version, want string }{
		{"/short", "HTTP/1.1", "abc"},
		{"/open", "HTTP/1.0", "streamed"},
		{"/fromhttp", "HTTP/1.1", "abc"},
	} {
		before := ts.Stats().Requests
		conn := dialRaw(t, ts.addr)
		head := " " + c.version + "\r\nHost: x\r\nConnection: keep-alive\r\n\r\n"
		conn.send("GET " + c.path + head + "GET /ok" + head)
		eventually(t, func() bool { return ts.Stats().Requests == before+2 }, "%s: both handlers started", c.path)
		if c.path == "/short" {
			s := recvT(t, streams)
			ts.onLoop(t, s.End)
		} else {
			release <- struct{}{}
		}
		got, err := io.ReadAll(conn.br)
		require.NoError(t, err, c.path)
		assert.Contains(t, string(got), c.want, c.path)
		assert.NotContains(t, string(got), "SECOND", "%s: a response after the last one", c.path)
	}
	ts.atRest(t)
}

// On HTTP/2 a Stream's Content-Length goes out as the server writes it
// (digits, checked by Request.Stream), not as the handler spelled it.
func TestH2StreamContentLengthCanonical(t *testing.T) {
	m := NewMux()
	m.HandleFunc("GET /s", func(r *Request) Reply {
		s := r.Stream(200, []Field{{"content-length", "005"}})
		_, _ = s.WriteString("hello")
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/s")
	f, ok := c.next().(*http2.MetaHeadersFrame)
	require.True(t, ok)
	var lengths []string
	for _, hf := range f.RegularFields() {
		if hf.Name == "content-length" {
			lengths = append(lengths, hf.Value)
		}
	}
	assert.Equal(t, []string{"5"}, lengths)
}

// Response.Close, and a FromHTTP handler's "Connection: close", end the
// connection after the response as net/http does: HTTP/1.1 says
// Connection: close, answers nothing pipelined after it and closes;
// HTTP/2 sends GOAWAY and the stream still completes.
func TestResponseClose(t *testing.T) {
	m := okAfter(NewMux())
	m.HandleFunc("GET /bye", func(*Request) Reply { return Respond(Response{Body: []byte("bye"), Close: true}) })
	m.Handle("GET /nethttp", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})))
	m.Handle("GET /flushed", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
		w.(http.Flusher).Flush() // a stream
	})))
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/bye", "/nethttp", "/flushed"} {
		c := dialRaw(t, ts.addr)
		c.send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\nGET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		first := c.read("GET")
		assert.Equal(t, "bye", first.body, path)
		assert.True(t, first.close, "%s: Connection: close", path)
		assert.True(t, c.closed(), "%s: nothing after it, then the close", path)

		h2 := dialH2(t, ts.addr)
		h2.get(1, path)
		var goaway bool
		var body string
		for done := false; !done; {
			switch f := h2.next().(type) {
			case *http2.GoAwayFrame:
				goaway = true
			case *http2.MetaHeadersFrame:
				assert.Equal(t, "200", f.PseudoValue("status"), path)
				done = f.StreamEnded()
			case *http2.DataFrame:
				body += string(f.Data())
				done = f.StreamEnded()
			}
		}
		assert.Equal(t, "bye", body, "h2 %s", path)
		for !goaway {
			_, goaway = h2.next().(*http2.GoAwayFrame)
		}
	}
	ts.atRest(t)
}

// A FromHTTP handler's header is cleaned as net/http cleans it, not
// refused: CR and LF in a value become spaces, a name that is not a token
// and a value still not valid are dropped (net/http's HTTP/2 server drops
// it), buffered or streamed, on HTTP/1.1 as on HTTP/2. Before, such a
// field made the whole response a 500.
func TestFromHTTPCleansHeaderFields(t *testing.T) {
	m := okAfter(NewMux())
	for _, path := range []string{"/small", "/flushed"} {
		m.Handle("GET "+path, FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["X-Lf"] = []string{"a\r\nb"}
			w.Header()["X Bad"] = []string{"dropped"}
			w.Header()["X-Ctl"] = []string{"a\x01b"}
			w.Header().Set("X-Ok", "kept")
			_, _ = io.WriteString(w, "hello")
			if r.URL.Path == "/flushed" {
				w.(http.Flusher).Flush()
			}
			_, _ = io.WriteString(w, "more")
		})))
	}
	ts := startServer(t, m, Config{})
	for name, c := range map[string]*http.Client{"HTTP/1.1": client(t), "HTTP/2": h2Client(t)} {
		for _, path := range []string{"/small", "/flushed"} {
			resp, body := do(t, c, mustRequest(t, "GET", ts.url+path))
			require.Equal(t, 200, resp.StatusCode, "%s %s", name, path)
			assert.Equal(t, "hellomore", string(body))
			assert.Equal(t, []string{"a  b"}, resp.Header["X-Lf"], "%s %s", name, path)
			assert.Equal(t, "kept", resp.Header.Get("X-Ok"))
			assert.NotContains(t, resp.Header, "X-Ctl")
			assert.NotContains(t, resp.Header, "X Bad")
		}
	}
	ts.atRest(t)
}

// A FromHTTP handler's head is its header as it was at WriteHeader or the
// first Write, as net/http's: a field set later (Connection: close
// included) is not sent, whether the response is buffered or not, and a
// Trailer set later declares nothing; a nil Content-Type asks for no
// sniffed one, and none is sniffed over a Content-Encoding.
func TestFromHTTPHeadAsWritten(t *testing.T) {
	m := okAfter(NewMux())
	m.Handle("GET /late", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "body")
		w.Header().Set("X-Late", "1")
		w.Header().Set("Connection", "close")
	})))
	m.Handle("GET /untyped", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Content-Type"] = nil
		_, _ = io.WriteString(w, "<html>hi")
	})))
	m.Handle("GET /encoded", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write([]byte("\x1f\x8b\x08\x00\x00\x00\x00\x00")) // no sniffing over an encoding
	})))
	m.Handle("GET /late-trailer", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-T", "early")
		_, _ = io.WriteString(w, "body")
		w.Header().Set("Trailer", "X-T") // after the head: declares nothing
		w.Header().Set("X-T", "late")
	})))
	ts := startServer(t, m, Config{})
	late := pipelineOK(t, ts, "/late") // and the connection goes on to /ok
	assert.Equal(t, "body", late.body)
	assert.Empty(t, late.header.Get("X-Late"))
	assert.False(t, late.close)
	untyped := pipelineOK(t, ts, "/untyped")
	assert.Equal(t, "<html>hi", untyped.body)
	assert.NotContains(t, untyped.header, "Content-Type")
	encoded := pipelineOK(t, ts, "/encoded")
	assert.NotContains(t, encoded.header, "Content-Type")
	lateTrailer := pipelineOK(t, ts, "/late-trailer")
	assert.Equal(t, "early", lateTrailer.header.Get("X-T"))
	assert.Equal(t, "4", lateTrailer.header.Get("Content-Length"), "no trailer: not chunked")
	ts.atRest(t)
}

// A stream whose head the engine refuses when its turn comes, after its
// handler has ended it (End with no Write, or writes that waited for
// their turn behind a pending response), is answered 500 all the same:
// before, HTTP/1.1 wrote nothing in its place, so the next response was
// read as its answer, and HTTP/2 left the stream open with its arena for
// good. GET and HEAD. (A FromHTTP handler's fields are cleaned, not
// refused: TestFromHTTPCleansHeaderFields.)
func TestRefusedStreamEndedBeforeItsTurn(t *testing.T) {
	p := newProbe()
	m := okAfter(p.mux())
	m.HandleFunc("/owned", func(r *Request) Reply { // GET and HEAD
		s := r.Stream(200, []Field{{"Connection", "close"}})
		s.End()
		return s.Reply()
	})
	m.HandleFunc("GET /crlf", func(r *Request) Reply {
		s := r.Stream(200, []Field{{"X-Bad", "a\r\nb"}})
		_, _ = s.WriteString("injected")
		s.End()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})

	for _, req := range []string{"GET /owned", "HEAD /owned", "GET /crlf"} {
		method := req[:len(req)-len(" /owned")]
		if req[0] == 'G' {
			method = "GET"
		}
		c := dialRaw(t, ts.addr)
		c.send("GET /promise HTTP/1.1\r\nHost: x\r\n\r\n" + req + " HTTP/1.1\r\nHost: x\r\n\r\n" +
			"GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
		pr := recvT(t, p.promises)
		// The stream under test has ended (its handler, or FromHTTP's at
		// the handler's return) while it waits behind /promise.
		eventually(t, func() bool {
			return ts.anyConn(t, func(hc *h1conn) bool {
				r := hc.qhead
				return r != nil && r.next != nil && r.next.stream.ended
			})
		}, "%s: the stream has not ended", req)
		require.True(t, pr.Resolve(TextResponse(200, "first")))
		assert.Equal(t, "first", c.read("GET").body, req)
		assert.Equal(t, 500, c.read(method).status, req)
		ok := c.read("GET")
		assert.Equal(t, "ok", ok.body, "%s: the next response is /ok's", req)
	}

	c := dialH2(t, ts.addr)
	c.get(1, "/owned")
	c.expect(1, "500", "500 Internal Server Error\n")
	ts.atRest(t)
}

// After a response that ends the connection (an HTTP/1.0 stream, which
// its close delimits), nothing more is written: not the answer of a
// request whose buffered body was still arriving, nor a refusal's answer,
// nor what a later stream writes; the connection closes after it.
func TestNothingAfterACloseDelimitedBody(t *testing.T) {
	p := newProbe()
	streams := make(chan *Stream, 4)
	m := p.mux()
	m.HandleFunc("GET /s", func(r *Request) Reply {
		s := r.Stream(200, nil)
		streams <- s
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	const keep = " HTTP/1.0\r\nConnection: keep-alive\r\n"
	for _, third := range []string{
		"POST /echo" + keep + "Content-Length: 4\r\n\r\nab", // its body still arriving
		"GET /x HTTP/1.0\r\nBad Field\r\n\r\n",              // refused: a 400 owed
		"GET /s" + keep + "\r\n",                            // a stream of its own, written to
	} {
		c := dialRaw(t, ts.addr)
		badBefore := ts.Stats().BadRequests
		c.send("GET /promise" + keep + "\r\n" + "GET /s" + keep + "\r\n" + third)
		pr := recvT(t, p.promises)
		s := recvT(t, streams)
		var later *Stream
		switch third[:4] {
		case "POST":
			eventually(t, func() bool { return ts.anyConn(t, func(hc *h1conn) bool { return hc.cur != nil }) },
				"the POST's body is not being buffered")
		case "GET ":
			if third[5] == 'x' {
				eventually(t, func() bool { return ts.Stats().BadRequests == badBefore+1 }, "not refused")
			} else {
				later = recvT(t, streams)
			}
		}
		require.True(t, pr.Resolve(TextResponse(200, "first")))
		assert.Equal(t, "first", c.read("GET").body)
		ts.onLoop(t, func() {
			_, _ = s.WriteString("body")
			s.End() // the last response: the connection closes after it
			if later != nil {
				_, err := later.WriteString("two")
				assert.ErrorIs(t, err, ErrStreamClosed)
			}
		})
		second := c.read("GET") // close-delimited: read to EOF
		assert.Equal(t, "body", second.body, "%q: bytes after a close-delimited body", third)
	}
	ts.atRest(t)
}

// The 408 that answers a HEAD whose body trickled past BodyTimeout has no
// body: its bytes would follow a response that frames none.
func TestBodyTimeoutAnswersHEADWithoutBody(t *testing.T) {
	ts := startServer(t, testMux(), Config{BodyTimeout: 300 * time.Millisecond})
	c := dialRaw(t, ts.addr)
	c.send("HEAD /health HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
	stop := testpeer.Trickle(c, []byte("x"), 50*time.Millisecond)
	resp := c.read("HEAD")
	stop()
	assert.Equal(t, 408, resp.status)
	assert.True(t, c.closed(), "nothing follows the answer to HEAD")
	ts.atRest(t)
}

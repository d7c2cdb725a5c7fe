package httpd

import (
	"bytes"
	"errors"
	"log"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// lockedBuffer is a log destination the loop writes and the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (lb *lockedBuffer) Write(p []byte) (int, error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.b.Write(p)
}

func (lb *lockedBuffer) String() string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.b.String()
}

// What the server cannot tell a client goes to Server.ErrorLog, as with
// net/http: a handler's panic, one in a continuation of its handle or in
// a FromHTTP handler (each with its stack; not http.ErrAbortHandler), a
// response refused for a field that would split it or a Content-Length
// its body lacks, or a Stream's head refused for those or for a status
// that is not final, the error of a handle that failed, a reply dropped
// because a Stream went out first, and a second Request.Stream (the first
// stream is kept). The client gets its 500 (or a cut response) all the
// same.
func TestErrorLog(t *testing.T) {
	m := testMux()
	m.HandleFunc("GET /boom", func(r *Request) Reply { panic("boom in the handler") })
	m.HandleFunc("GET /later-panic", func(r *Request) Reply {
		return Later(aio.Then(aio.Sleep(r.Loop(), 0), func(struct{}) (Response, error) {
			panic("boom in a continuation")
		}))
	})
	m.Handle("GET /std-panic", FromHTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom in net/http code")
	})))
	m.Handle("GET /abort", FromHTTP(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	})))
	m.HandleFunc("GET /abort-native", func(r *Request) Reply { panic(http.ErrAbortHandler) })
	m.HandleFunc("GET /abort-stream", func(r *Request) Reply {
		_, _ = r.Stream(200, nil).WriteString("begun")
		panic(http.ErrAbortHandler) // cut, and not logged as a reply dropped for the Stream
	})
	var dropped *Stream // owned by the loop
	m.HandleFunc("GET /stream-unstarted", func(r *Request) Reply {
		dropped = r.Stream(200, nil) // never written: dropped for the reply
		return Text(200, "instead")
	})
	m.HandleFunc("GET /bad-field", func(r *Request) Reply {
		return Respond(Response{Status: 200, Header: []Field{{Name: "X", Value: "a\r\nInjected: yes"}}, Body: []byte("x")})
	})
	m.HandleFunc("GET /bad-length", func(r *Request) Reply {
		return Respond(Response{Status: 200, Header: []Field{{Name: "Content-Length", Value: "10"}}, Body: []byte("x")})
	})
	m.HandleFunc("GET /stream-twice", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("a")
		again := r.Stream(201, nil)
		_, _ = again.WriteString("b")
		again.End()
		return s.Reply()
	})
	m.HandleFunc("GET /stream-dropped", func(r *Request) Reply {
		s := r.Stream(200, nil)
		_, _ = s.WriteString("begun")
		return Text(200, "other")
	})
	m.HandleFunc("GET /stream-bad-status", func(r *Request) Reply { return r.Stream(101, nil).Reply() })
	m.HandleFunc("GET /stream-bad-field", func(r *Request) Reply {
		return r.Stream(200, []Field{{Name: "X", Value: "a\r\nInjected: yes"}}).Reply()
	})
	m.HandleFunc("GET /failed", func(r *Request) Reply {
		return Later(aio.Fail[Response](r.Loop(), errors.New("the database is down")))
	})
	var logged lockedBuffer
	ts := serveTest(t, &Server{Handler: m, ErrorLog: log.New(&logged, "", 0)})
	c := client(t)
	for _, path := range []string{"/boom", "/later-panic", "/std-panic", "/bad-field", "/bad-length",
		"/stream-bad-status", "/stream-bad-field", "/failed"} {
		st, _ := get(t, c, ts.url+path)
		assert.Equal(t, 500, st, path)
	}
	st, body := get(t, c, ts.url+"/stream-twice")
	assert.Equal(t, 200, st)
	assert.Equal(t, "ab", body)
	st, body = get(t, c, ts.url+"/stream-unstarted")
	assert.Equal(t, 200, st)
	assert.Equal(t, "instead", body)
	ts.onLoop(t, func() { // a Stream dropped for the reply is closed, not broken
		_, err := dropped.WriteString("late")
		assert.ErrorIs(t, err, ErrStreamClosed)
		assert.False(t, dropped.Full())
		dropped.End()
	})
	// A fresh connection each: Go's client retries a GET whose reused
	// connection closes with no response, which would run a handler twice.
	once := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: waitTimeout}
	for _, path := range []string{"/abort", "/abort-native", "/abort-stream", "/stream-dropped"} {
		// http.ErrAbortHandler aborts the response, as net/http does:
		// the client sees it cut, not a 500.
		require.Error(t, getCut(once, ts.url+path), "%s: the response must be cut", path)
	}
	h2 := h2Client(t) // over HTTP/2, the stream is reset INTERNAL_ERROR, as net/http's
	for _, path := range []string{"/abort", "/abort-native", "/abort-stream"} {
		require.ErrorContains(t, getCut(h2, ts.url+path), "INTERNAL_ERROR", path)
	}
	ts.atRest(t)

	out := logged.String()
	for _, want := range []string{
		"httpd: panic serving GET /boom: boom in the handler\n",
		"httpd: panic serving GET /later-panic: boom in a continuation\n",
		"httpd: panic serving GET /std-panic: boom in net/http code\n",
		"httpd: response to GET /bad-field refused: ",
		"httpd: response to GET /bad-length refused: ",
		"httpd: GET /stream-dropped: a Stream went out, and the handler replied with something else",
		"httpd: GET /stream-twice: Request.Stream called again: the first stream is kept\n",
		"httpd: response to GET /stream-bad-status refused: ",
		"httpd: response to GET /stream-bad-field refused: ",
		"httpd: GET /failed: the handler's handle failed: the database is down\n",
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, 1, strings.Count(out, "/stream-bad-status"), "a refused Stream logged as its handle's failure too:\n%s", out)
	assert.Equal(t, uint64(3), ts.Stats().Failed, "the failed handle and the refused Streams' (not the panics)")
	assert.Len(t, regexp.MustCompile(`(?m)^goroutine \d+ \[`).FindAllString(out, -1), 3, "a stack with each panic:\n%s", out)
	assert.NotContains(t, out, "/abort")
	assert.Equal(t, uint64(9), ts.Stats().Panics, "the handlers', their continuation's, net/http code's, aborts too")
}

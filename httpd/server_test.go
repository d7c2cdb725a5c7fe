package httpd

import (
	"bytes"
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/sys/unix"
)

// testMux is the routes most tests use.
func testMux() *Mux {
	m := NewMux()
	m.HandleFunc("GET /health", func(r *Request) Reply { return Text(200, "ok") })
	m.HandleFunc("GET /users/{id}", func(r *Request) Reply {
		b := r.Arena().Buffer()
		b = append(b, `{"id":"`...)
		b = append(b, r.PathValue("id")...)
		b = append(b, `"}`...)
		return JSON(200, b)
	})
	m.HandleFunc("GET /slow", func(r *Request) Reply {
		ms := 20
		if q := r.Query("ms"); q != "" {
			ms = atoi(q)
		}
		return Later(aio.Delay(r.Loop(), time.Duration(ms)*time.Millisecond, func() (Response, error) {
			return TextResponse(200, "waited "+itoa(ms)+" ms"), nil
		}))
	})
	m.HandleFunc("POST /echo", echoHandler)
	m.HandleFunc("GET /fail", func(r *Request) Reply {
		return Later(aio.Fail[Response](r.Loop(), io.ErrUnexpectedEOF))
	})
	m.HandleFunc("GET /panic", func(r *Request) Reply { panic("boom") })
	m.HandleFunc("GET /query", func(r *Request) Reply { return Text(200, r.Query("a")+"|"+r.Query("b c")) })
	m.HandleFunc("GET /status/{code}", func(r *Request) Reply { return Text(atoi(r.PathValue("code")), "") })
	return m
}

// echoHandler sends the body back: at once when it arrived with the
// request, else as a stream fed by the body.
func echoHandler(r *Request) Reply {
	if b, ok := r.Body().Bytes(); ok {
		return Bytes(200, b)
	}
	s := r.Stream(200, nil)
	r.Body().OnData(func(p []byte, end bool) {
		_, _ = s.Write(p)
		if end {
			s.End()
		}
	})
	return s.Reply()
}

func TestServeBasics(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := client(t)

	st, body := get(t, c, ts.url+"/health")
	assert.Equal(t, 200, st)
	assert.Equal(t, "ok", body)

	st, body = get(t, c, ts.url+"/users/7")
	assert.Equal(t, 200, st)
	assert.Equal(t, `{"id":"7"}`, body)

	st, body = get(t, c, ts.url+"/slow?ms=5")
	assert.Equal(t, 200, st)
	assert.Equal(t, "waited 5 ms", body)

	st, _ = get(t, c, ts.url+"/nothing")
	assert.Equal(t, 404, st)

	st, _ = get(t, c, ts.url+"/fail")
	assert.Equal(t, 500, st)

	st, _ = get(t, c, ts.url+"/panic")
	assert.Equal(t, 500, st)
	st, _ = get(t, c, ts.url+"/health") // the loop lives on
	assert.Equal(t, 200, st)

	st, body = get(t, c, ts.url+"/query?a=1&b+c=x%20y")
	assert.Equal(t, 200, st)
	assert.Equal(t, "1|x y", body)

	st, _ = get(t, c, ts.url+"/status/204")
	assert.Equal(t, 204, st)

	resp, err := c.Post(ts.url+"/health", "text/plain", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 405, resp.StatusCode)
	assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = noRedirect.Get(ts.url + "/a/../health?x=1")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 307, resp.StatusCode)
	assert.Equal(t, "/health?x=1", resp.Header.Get("Location"))

	st2 := ts.Stats()
	assert.Equal(t, int64(DefaultArenas), st2.ArenasCapacity)
	assert.Equal(t, uint64(1), st2.Panics)
	ts.atRest(t)
}

func TestHead(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	req, err := http.NewRequest("HEAD", ts.url+"/health", nil)
	require.NoError(t, err)
	resp, b := do(t, client(t), req)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, int64(2), resp.ContentLength)
	assert.Empty(t, b)
	assert.NotEmpty(t, resp.Header.Get("Date"))
}

func TestKeepAliveReuse(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := client(t)
	reused := 0
	for i := 0; i < 10; i++ {
		trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
			if info.Reused {
				reused++
			}
		}}
		path := "/health"
		if i%2 == 1 {
			path = "/slow?ms=1"
		}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", ts.url+path, nil)
		require.NoError(t, err)
		resp, _ := do(t, c, req)
		require.Equal(t, 200, resp.StatusCode)
	}
	assert.Equal(t, 9, reused)
	assert.Equal(t, uint64(1), ts.l.Stats().TCPAccepted)
}

func TestPost(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := client(t)
	for _, n := range []int{0, 1, 100, 20 << 10, 100 << 10, 1 << 20} {
		body := bytes.Repeat([]byte("abcdefghij"), n/10+1)[:n]
		// Content-Length
		resp, got := post(t, c, ts.url+"/echo", bytes.NewReader(body))
		require.Equal(t, 200, resp.StatusCode, "CL %d", n)
		require.True(t, bytes.Equal(body, got), "CL %d: %d bytes back", n, len(got))
		// chunked: a reader of unknown length
		resp, got = post(t, c, ts.url+"/echo", io.MultiReader(bytes.NewReader(body)))
		require.Equal(t, 200, resp.StatusCode, "chunked %d", n)
		require.True(t, bytes.Equal(body, got), "chunked %d: %d bytes back", n, len(got))
	}
	ts.atRest(t)
}

// A Serve that fails (here on an address it cannot listen on) leaves a
// server that Shutdown ends at once, and that Serve refuses to start again.
func TestServeFails(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "httpd-test"})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	srv := &Server{}
	assert.ErrorIs(t, srv.ServeLoops("127.0.0.1:0"), ErrNoLoops)
	assert.Error(t, srv.ServeLoops("nowhere", l))
	require.NoError(t, srv.ServeLoops("127.0.0.1:0", l), "a failed Serve leaves the Server as it was")
	assert.ErrorIs(t, srv.ServeLoops("127.0.0.1:0", l), ErrServing)
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	assert.NoError(t, recvT(t, done))
	assert.Zero(t, srv.Stats().ConnsOpen)
	assert.ErrorIs(t, srv.ServeLoops("127.0.0.1:0", l), ErrServerClosed, "Serve after Shutdown")

	unserved := &Server{} // shut down before it ever served, as net/http allows
	require.NoError(t, unserved.Shutdown(context.Background()))
	require.NoError(t, unserved.Shutdown(context.Background()))
	assert.ErrorIs(t, unserved.ServeLoops("127.0.0.1:0", l), ErrServerClosed)
}

// RegisterOnShutdown's functions run when Shutdown begins: an event
// stream, which Shutdown cannot end by itself, is ended from one (posted
// to its loop), its client reads the whole body to its end, and Shutdown
// returns well before its deadline.
func TestRegisterOnShutdownEndsAStream(t *testing.T) {
	var open []*Stream // owned by the loop
	m := testMux()
	m.HandleFunc("GET /events", func(r *Request) Reply {
		s := r.Stream(200, []Field{{Name: "Content-Type", Value: "text/event-stream"}})
		_, _ = s.WriteString("data: hello\n\n")
		open = append(open, s)
		return s.Reply()
	})
	srv := &Server{Handler: m}
	ts := serveTest(t, srv)
	srv.RegisterOnShutdown(func() {
		_ = ts.l.Post(func() {
			for _, s := range open {
				_, _ = s.WriteString("data: bye\n\n")
				s.End()
			}
		})
	})
	c := dialRaw(t, ts.addr)
	c.send("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	require.NoError(t, err)
	eventually(t, func() bool { return ts.Stats().HandlersPending == 1 }, "the stream is not open")
	done := shutdownInBackground(ts)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "data: hello\n\ndata: bye\n\n", string(body))
	require.NoError(t, c.Close())
	require.NoError(t, recvT(t, done), "Shutdown waited for its deadline")
}

// Shutdown in the middle of a first Serve waits for it to be done, and
// then ends it: no listener is left open, and nothing Serve was making
// is read half made (the race detector watches).
func TestShutdownRacingServe(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "httpd-test"})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	for range 20 {
		srv := &Server{Handler: testMux()}
		served := make(chan error, 1)
		go func() { served <- srv.ServeLoops("127.0.0.1:0", l) }()
		for srv.state.Load() == 0 { // Serve has begun: Shutdown comes in the middle of it
			runtime.Gosched()
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		require.NoError(t, srv.Shutdown(ctx))
		cancel()
		require.NoError(t, recvT(t, served))
		eventually(t, func() bool { return l.Stats().TCPListeners == 0 }, "a listener is left open")
	}
}

// A Serve that fails (its address is taken) leaves the Server as it was:
// no listener open, no address, and a later Serve serves.
func TestServeAgainAfterAFailure(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "httpd-test"})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	taken, err := net.Listen("tcp", "127.0.0.1:0") // no SO_REUSEPORT: the port is not shared
	require.NoError(t, err)
	srv := &Server{Handler: testMux()}
	require.ErrorIs(t, srv.ServeLoops(taken.Addr().String(), l), unix.EADDRINUSE)
	assert.False(t, srv.Addr().IsValid())
	require.NoError(t, taken.Close())
	require.NoError(t, srv.ServeLoops(taken.Addr().String(), l))
	resp, err := client(t).Get("http://" + srv.Addr().String() + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	require.NoError(t, srv.Shutdown(context.Background()))
}

// A Serve that fails on a later loop undoes what it did on the others,
// connections their listeners accepted meanwhile included: nothing would
// sweep, count or shut them down. (unserve is that undoing, called here
// on a Server that serves, with a connection, as the failure would find.)
func TestServeUndoneClosesItsConnections(t *testing.T) {
	srv := &Server{Handler: testMux()}
	ts := serveTest(t, srv)
	c := dialRaw(t, ts.addr)
	c.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "ok", c.read("GET").body)
	srv.serveMu.Lock()
	srv.unserve()
	srv.serveMu.Unlock()
	assert.True(t, c.closed(), "a connection outlives the Serve undone")
	eventually(t, func() bool { return ts.l.Stats().TCPOpen == 0 }, "open: %+v", ts.l.Stats())
}

// Each immediate Reply helper has a Response twin for a handle's value,
// with the same status, Content-Type and body on the wire.
func TestReplyHelpersHaveResponseTwins(t *testing.T) {
	body := []byte("hi")
	twins := []struct {
		path, ctype string
		reply       Reply
		resp        Response
	}{
		{"/text", "text/plain; charset=utf-8", Text(201, "hi"), TextResponse(201, "hi")},
		{"/json", "application/json", JSON(201, body), JSONResponse(201, body)},
		{"/bytes", "application/octet-stream", Bytes(201, body), BytesResponse(201, body)},
	}
	m := NewMux()
	for _, tw := range twins {
		m.HandleFunc("GET "+tw.path, func(r *Request) Reply { return tw.reply })
		m.HandleFunc("GET /later"+tw.path, func(r *Request) Reply {
			return Later(aio.Delay(r.Loop(), time.Millisecond, func() (Response, error) { return tw.resp, nil }))
		})
	}
	ts := startServer(t, m, Config{})
	c := client(t)
	for _, tw := range twins {
		for _, path := range []string{tw.path, "/later" + tw.path} {
			req, err := http.NewRequest("GET", ts.url+path, nil)
			require.NoError(t, err)
			resp, got := do(t, c, req)
			assert.Equal(t, 201, resp.StatusCode, path)
			assert.Equal(t, tw.ctype, resp.Header.Get("Content-Type"), path)
			assert.Equal(t, "hi", string(got), path)
		}
	}
}

// Arenas and ArenaSize past their bounds are taken as the bounds: a loop
// makes its Requests for every arena at Serve, and each arena's block at
// its first request, so math.MaxInt would stop the process out of memory.
func TestConfigBoundsArenas(t *testing.T) {
	cfg := Config{Arenas: math.MaxInt, ArenaSize: math.MaxInt}.withDefaults()
	assert.Equal(t, MaxArenas, cfg.Arenas)
	assert.Equal(t, MaxArenaSize, cfg.ArenaSize)
	cfg = Config{Arenas: MaxArenas, ArenaSize: MaxArenaSize}.withDefaults()
	assert.Equal(t, MaxArenas, cfg.Arenas, "the bound itself is kept")
	assert.Equal(t, MaxArenaSize, cfg.ArenaSize, "the bound itself is kept")
}

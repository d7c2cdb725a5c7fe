package httpd

import (
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// hint is the field of the Early Hints the tests send.
var hint = Field{Name: "Link", Value: "</app.css>; rel=preload; as=style"}

// informThenAnswer sends 103 Early Hints and answers 1 ms later, from a
// timer: the final response comes after the hint, from later work.
func informThenAnswer(r *Request) Reply {
	if err := r.Inform(http.StatusEarlyHints, []Field{hint}); err != nil {
		return Text(500, err.Error())
	}
	h := aio.Then(aio.Sleep(r.Loop(), time.Millisecond), func(struct{}) (Response, error) {
		return TextResponse(200, "final"), nil
	})
	return Later(h)
}

// got1xx does a GET with c and returns the interim responses its client
// saw (status and Link), and the final response's status and body.
func got1xx(t *testing.T, c *http.Client, url string) (interim []string, status int, body string) {
	t.Helper()
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		interim = append(interim, itoa(code)+" "+h.Get("Link"))
		return nil
	}}
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, b := do(t, c, req)
	return interim, resp.StatusCode, string(b)
}

// TestInformEarlyHints: a handler's 103 reaches Go's client, on HTTP/1.1
// and on HTTP/2, before the final response, natively and through
// FromHTTP (whose header stays for the final response, as net/http's).
func TestInformEarlyHints(t *testing.T) {
	mux := NewMux()
	mux.HandleFunc("GET /native", informThenAnswer)
	mux.HandleFunc("GET /sync", func(r *Request) Reply {
		if err := r.Inform(http.StatusEarlyHints, []Field{hint}); err != nil {
			return Text(500, err.Error())
		}
		return Text(200, "final")
	})
	mux.Handle("GET /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Link", hint.Value)
		w.Header().Set("Content-Length", "5") // not an interim response's
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusContinue) // the server's own: not sent
		_, _ = w.Write([]byte("final"))
	})))
	ts := startServer(t, mux, Config{})
	want := []string{"103 " + hint.Value}
	for _, tc := range []struct {
		name string
		c    *http.Client
	}{{"HTTP/1.1", client(t)}, {"HTTP/2", h2Client(t)}} {
		for _, path := range []string{"/native", "/sync", "/std"} {
			interim, status, body := got1xx(t, tc.c, ts.url+path)
			assert.Equal(t, want, interim, "%s %s", tc.name, path)
			assert.Equal(t, 200, status, "%s %s", tc.name, path)
			assert.Equal(t, "final", body, "%s %s", tc.name, path)
		}
	}
	// curl shows the interim response's head before the final one's.
	run := curlRunner(t, "-i")
	for _, opt := range []string{"--http1.1", "--http2-prior-knowledge"} {
		out := run(opt, ts.url+"/native")
		hints := strings.Index(out, " 103")
		final := strings.Index(out, " 200")
		assert.True(t, hints > 0 && final > hints, "%s: %q", opt, out)
		assert.Contains(t, strings.ToLower(out), "link: "+strings.ToLower(hint.Value), opt)
		assert.True(t, strings.HasSuffix(out, "\r\n\r\nfinal"), "%s: %q", opt, out)
	}
	ts.atRest(t)
}

// TestInformWire: on HTTP/1.1 the interim response goes out whole before
// the final one; not to an HTTP/1.0 client, nor for a request whose
// turn has not come (pipelined behind one still at work).
func TestInformWire(t *testing.T) {
	mux := NewMux()
	mux.HandleFunc("GET /hint", informThenAnswer)
	got := make(chan error, 1)
	var first *aio.Promise[Response] // /slow's answer, given once /behind has run; owned by the loop
	mux.HandleFunc("GET /slow", func(r *Request) Reply {
		first = aio.NewPromise[Response](r.Loop())
		return Later(first.Handle())
	})
	mux.HandleFunc("GET /behind", func(r *Request) Reply {
		got <- r.Inform(http.StatusEarlyHints, []Field{hint})
		return Text(200, "behind")
	})
	ts := startServer(t, mux, Config{})

	c := dialRaw(t, ts.addr)
	c.send("GET /hint HTTP/1.1\r\nHost: x\r\n\r\n")
	line, err := c.br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 103 Early Hints\r\n", line)
	tp := textproto.NewReader(c.br)
	h, err := tp.ReadMIMEHeader()
	require.NoError(t, err)
	assert.Equal(t, textproto.MIMEHeader{"Link": {hint.Value}}, h)
	resp := c.read("GET")
	assert.Equal(t, 200, resp.status)
	assert.Equal(t, "final", resp.body)

	c10 := dialRaw(t, ts.addr)
	c10.send("GET /hint HTTP/1.0\r\nHost: x\r\n\r\n")
	all := mustRest(t, c10)
	assert.True(t, strings.HasPrefix(all, "HTTP/1.1 200 OK\r\n"), "HTTP/1.0: the final response only: %q", all)
	assert.NotContains(t, all, "103")

	cp := dialRaw(t, ts.addr)
	cp.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /behind HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-got:
		assert.NoError(t, err, "not its turn: not sent, not an error")
	case <-time.After(waitTimeout):
		t.Fatal("the pipelined handler did not run")
	}
	ts.onLoop(t, func() { first.Resolve(TextResponse(200, "slow")) })
	assert.Equal(t, "slow", cp.read("GET").body)
	assert.Equal(t, "behind", cp.read("GET").body, "no 103 between them")
	ts.atRest(t)
}

// mustRest reads what c sends until the server closes it.
func mustRest(t *testing.T, c *rawConn) string {
	t.Helper()
	var b strings.Builder
	_, err := c.br.WriteTo(&b)
	require.NoError(t, err)
	return b.String()
}

// TestInformRefused: what cannot be an interim response, or comes after
// the final one, gets an error and sends nothing.
func TestInformRefused(t *testing.T) {
	type result struct {
		name string
		err  error
	}
	results := make(chan []result, 1)
	mux := NewMux()
	mux.HandleFunc("GET /", func(r *Request) Reply {
		var rs []result
		for _, status := range []int{0, 99, 100, 101, 200, 1103} {
			rs = append(rs, result{"status " + itoa(status), r.Inform(status, nil)})
		}
		for _, f := range []Field{
			{Name: "Content-Length", Value: "0"}, {Name: "transfer-encoding", Value: "chunked"},
			{Name: "Connection", Value: "close"}, {Name: "Upgrade", Value: "h2c"},
			{Name: "Bad Name", Value: "x"}, {Name: "Link", Value: "a\r\nb"},
		} {
			rs = append(rs, result{"field " + f.Name, r.Inform(103, []Field{f})})
		}
		s := r.Stream(200, nil)
		rs = append(rs, result{"after Stream", r.Inform(103, []Field{hint})})
		results <- rs
		_, _ = s.Write([]byte("ok"))
		s.End()
		return s.Reply()
	})
	ts := startServer(t, mux, Config{})
	for _, tc := range []struct {
		name string
		c    *http.Client
	}{{"HTTP/1.1", client(t)}, {"HTTP/2", h2Client(t)}} {
		interim, status, body := got1xx(t, tc.c, ts.url+"/")
		assert.Empty(t, interim, tc.name)
		assert.Equal(t, 200, status, tc.name)
		assert.Equal(t, "ok", body, tc.name)
		for _, res := range <-results {
			if res.name == "after Stream" {
				assert.ErrorIs(t, res.err, ErrHeadSent, "%s: %s", tc.name, res.name)
				continue
			}
			assert.ErrorIs(t, res.err, aio.ErrInvalidArgument, "%s: %s", tc.name, res.name)
		}
	}
	ts.atRest(t)
}

// TestInformAfterClientGone: a hint from the cancellation of a request
// whose client went away is not sent: ErrClientGone.
func TestInformAfterClientGone(t *testing.T) {
	got := make(chan error, 1)
	started := make(chan struct{})
	mux := NewMux()
	mux.HandleFunc("GET /", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		p.Handle().OnCancel(func() { got <- r.Inform(103, []Field{hint}) })
		close(started)
		return Later(p.Handle())
	})
	ts := startServer(t, mux, Config{})
	c := dialRaw(t, ts.addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	<-started
	require.NoError(t, c.Close())
	select {
	case err := <-got:
		assert.ErrorIs(t, err, ErrClientGone)
	case <-time.After(waitTimeout):
		t.Fatal("the handler was not cancelled")
	}
	ts.atRest(t)
}

package httpd

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// waitTimeout bounds every wait of a test.
const waitTimeout = 10 * time.Second

// testServer is a server on one loop of its own runtime, for a test.
type testServer struct {
	*Server
	rt   *aio.Runtime
	l    *aio.Loop
	addr string // host:port
	url  string // http://host:port
}

// startServer serves h with cfg on a new loop; the test's end shuts the
// server and the runtime down and checks that every arena came back.
func startServer(t testing.TB, h Handler, cfg Config) *testServer {
	t.Helper()
	return serveTest(t, &Server{Handler: h, Config: cfg})
}

// serveTest is startServer for a Server made by the test.
func serveTest(t testing.TB, srv *Server) *testServer {
	t.Helper()
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "httpd-test", WorkPool: 64})
	require.NoError(t, err)
	if err := srv.ServeLoops("127.0.0.1:0", l); err != nil {
		_ = rt.Shutdown(context.Background())
		require.NoError(t, err)
	}
	ts := &testServer{Server: srv, rt: rt, l: l, addr: srv.Addr().String()}
	ts.url = "http://" + ts.addr
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		require.NoError(t, rt.Shutdown(ctx))
	})
	return ts
}

// client returns an HTTP client of its own for the test, its idle
// connections closed at the end.
func client(t testing.TB) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitTimeout}
}

// get does a GET and returns the status and body.
func get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	require.NoError(t, err)
	resp, b := do(t, c, req)
	return resp.StatusCode, string(b)
}

// getCut does a GET and reads its whole body, returning the error of a
// response the server cut (a closed connection, a reset stream), nil for
// a whole one.
func getCut(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

// post does a POST of body and returns the response and its whole body.
func post(t testing.TB, c *http.Client, url string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/octet-stream")
	return do(t, c, req)
}

// do sends req and returns the response with its whole body read (an
// error reading it fails the test) and closed.
func do(t testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// rawConn is a plain TCP connection to the server, for the tests that
// speak the wire format themselves.
type rawConn struct {
	t testing.TB
	net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, Conn: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) send(s string) {
	c.t.Helper()
	_, err := io.WriteString(c.Conn, s)
	require.NoError(c.t, err)
}

// rawResponse is a response read off a rawConn.
type rawResponse struct {
	status int
	header http.Header
	body   string
	close  bool // Connection: close
}

// read reads one response (to a request of method).
func (c *rawConn) read(method string) rawResponse {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	require.NoError(c.t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	resp.Body.Close()
	return rawResponse{resp.StatusCode, resp.Header, string(b), resp.Close}
}

// closed reports whether the server closed the connection: a read gets
// EOF (or a reset) with nothing more.
func (c *rawConn) closed() bool {
	c.t.Helper()
	b, err := c.br.ReadByte()
	if err == nil {
		c.t.Logf("unexpected byte %q", b)
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// staysOpen requires that c neither ends nor gets a byte for d: a
// timeout the server must not apply would close it (a negative check,
// bounded by d, not a synchronisation). The read deadline is put back.
func (c *rawConn) staysOpen(d time.Duration) {
	c.t.Helper()
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(d)))
	_, err := c.br.Peek(1)
	var ne net.Error
	require.True(c.t, errors.As(err, &ne) && ne.Timeout(), "the connection ended or answered: %v", err)
	require.NoError(c.t, c.SetReadDeadline(time.Now().Add(waitTimeout)))
}

// eventually waits for cond, which only counters reveal.
func eventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	require.Eventually(t, cond, waitTimeout, time.Millisecond, append([]any{msg}, args...)...)
}

// atRest waits until no request is in progress and every arena is back.
func (ts *testServer) atRest(t testing.TB) {
	t.Helper()
	eventually(t, func() bool {
		st := ts.Stats()
		return st.ArenasInUse == 0 && st.StreamsOpen == 0 && st.HandlersPending == 0
	}, "not at rest: %+v", ts.Stats())
}

// onLoop runs fn on the server's loop and waits for it: the tests look
// at the engine's state there, where it is owned.
func (ts *testServer) onLoop(t testing.TB, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, ts.l.Post(func() { fn(); close(done) }))
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("the loop does not run a posted job")
	}
}

// anyConn reports whether cond holds for one of the server's
// connections, looked at on the loop.
func (ts *testServer) anyConn(t testing.TB, cond func(hc *h1conn) bool) bool {
	var found bool
	ts.onLoop(t, func() {
		for _, ls := range ts.loopStates() {
			for hc := ls.conns.head; hc != nil && !found; hc = hc.links[linkAll].next {
				found = cond(hc)
			}
		}
	})
	return found
}

func itoa(n int) string { return strconv.Itoa(n) }

// atoi is strconv.Atoi for the test handlers' numbers: 0 when s is not one.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/valkyria/aio/examples/internal/blackbox"
	"github.com/valkyria/aio/internal/testpeer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The webserver is tested as a black box, as the checks of WEBSERVER.md
// drive it: the binary is built, run with flags, read on its standard
// output, spoken to with net/http's client and curl, and signalled.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait of the tests.
const timeout = blackbox.Timeout

// TestWebserver builds the webserver once and runs every subtest on it in
// parallel, each with a server process of its own.
func TestWebserver(t *testing.T) {
	bin := blackbox.Build(t)
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, bin string)
	}{
		{"Routes", testRoutes},
		{"BadParams", testBadParams},
		{"StatsAtRest", testStatsAtRest},
		{"Echo", testEcho},
		{"EchoFlowControl", testEchoFlowControl},
		{"EventsClientLeaves", testEventsClientLeaves},
		{"Metrics", testMetrics},
		{"Curl", testCurl},
		{"H2C", testH2C},
		{"TLS", testTLS},
		{"ShutdownLetsSlowFinish", testShutdownLetsSlowFinish},
		{"ShutdownCutsStream", testShutdownCutsStream},
		{"BadFlags", testBadFlags},
		{"BodyTimeout", testBodyTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, bin)
		})
	}
}

// server is a running webserver process.
type server struct {
	*blackbox.Proc
	url    string       // http://ADDR, from its "listening on ADDR" line
	client *http.Client // the test's own, its idle connections closed at the end
}

// run runs the webserver with -addr 127.0.0.1:0 and args, and returns
// once it has said where it listens (see blackbox.Start).
func run(t *testing.T, bin string, args ...string) *server {
	t.Helper()
	p := blackbox.Start(t, bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &server{Proc: p, url: "http://" + p.Addr, client: &http.Client{Transport: tr, Timeout: timeout}}
}

// reply is a response read whole.
type reply struct {
	status int
	header http.Header
	body   string
	close  bool // the response said Connection: close
}

// get does a GET of path and reads the response whole.
func (s *server) get(t *testing.T, path string) reply {
	t.Helper()
	resp, err := s.client.Get(s.url + path)
	require.NoError(t, err, "GET %s", path)
	return readReply(t, resp)
}

func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, resp.Header, string(b), resp.Close}
}

// statsKeys are the keys of /stats that WEBSERVER.md names.
var statsKeys = []string{"conns_open", "streams_open", "requests", "handlers_pending", "cancelled",
	"responses_suppressed", "arenas_in_use", "arenas_capacity", "refused"}

// stats reads /stats: JSON whose every value is an integer, with every key
// of statsKeys.
func (s *server) stats(t *testing.T) map[string]int64 {
	t.Helper()
	r := s.get(t, "/stats")
	require.Equal(t, 200, r.status)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.UseNumber()
	var raw map[string]any
	require.NoError(t, dec.Decode(&raw), "%s", r.body)
	out := make(map[string]int64, len(raw))
	for k, v := range raw {
		num, ok := v.(json.Number)
		require.True(t, ok, "%s: %v is not a number", k, v)
		n, err := strconv.ParseInt(string(num), 10, 64)
		require.NoError(t, err, "%s: not an integer", k)
		out[k] = n
	}
	for _, k := range statsKeys {
		require.Contains(t, out, k)
	}
	return out
}

// atRest waits until /stats shows nothing in progress but itself: the
// connections of the requests before it may still be closing.
func (s *server) atRest(t *testing.T) map[string]int64 {
	t.Helper()
	var st map[string]int64
	require.Eventually(t, func() bool {
		st = s.stats(t)
		return st["arenas_in_use"] == 1 && st["streams_open"] == 1 && st["handlers_pending"] == 0
	}, timeout, 5*time.Millisecond, "not at rest: %v", &st)
	return st
}

// metric reads /metrics and returns the sum of the series of family name
// (the loops' gauges have one series per loop).
func (s *server) metric(t *testing.T, name string) float64 {
	t.Helper()
	r := s.get(t, "/metrics")
	require.Equal(t, 200, r.status)
	sum, found := 0.0, false
	for _, line := range strings.Split(r.body, "\n") {
		m := metricLine.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, "%q", line)
		sum, found = sum+v, true
	}
	require.True(t, found, "no %s in /metrics", name)
	return sum
}

// Every route with its status and body, on two loops.
func testRoutes(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2", "-api-timeout", "200ms")

	const text, js, sse = "text/plain; charset=utf-8", "application/json", "text/event-stream"
	for _, tc := range []struct {
		path, contentType, body string
		status                  int
	}{
		{"/health", text, "ok", 200},
		{"/slow?ms=30", text, "waited 30 ms", 200},
		{"/users/42", js, `{"id":"42","name":"user 42"}`, 200},
		{"/users/a%22b%5C", js, `{"id":"a\"b\\","name":"user a\"b\\"}`, 200}, // an id JSON must escape
		{"/api/slow?ms=10", text, "data after 10 ms", 200},
		{"/api/slow", text, "data after 100 ms", 200}, // the default, within the 200 ms timeout
		{"/api/slow?ms=10000", text, "timeout", 504},
		{"/events?n=3&ms=5", sse, "data: 0\n\ndata: 1\n\ndata: 2\n\n", 200},
		{"/events?n=0", sse, "", 200},
	} {
		r := s.get(t, tc.path)
		assert.Equal(t, tc.status, r.status, tc.path)
		assert.Equal(t, tc.contentType, r.header.Get("Content-Type"), tc.path)
		assert.Equal(t, tc.body, r.body, tc.path)
	}

	r := s.get(t, "/dashboard")
	assert.Equal(t, 200, r.status)
	var dash struct {
		Posts []map[string]any `json:"posts"`
		Stats map[string]any   `json:"stats"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.body), &dash), r.body)
	assert.NotEmpty(t, dash.Posts)
	assert.NotEmpty(t, dash.Stats)

	resp, err := s.client.Post(s.url+"/echo", "text/plain", strings.NewReader("hello"))
	require.NoError(t, err)
	r = readReply(t, resp)
	assert.Equal(t, 200, r.status)
	assert.Equal(t, "hello", r.body)

	for _, path := range []string{"/", "/nope", "/users", "/users/1/2", "/health/x", "/statsx"} {
		assert.Equal(t, 404, s.get(t, path).status, path)
	}
	// A known path with a method its route does not take is "anything
	// else" too: 404, not ServeMux's 405. HEAD goes with GET.
	for _, mp := range [][2]string{{"POST", "/health"}, {"DELETE", "/users/1"}, {"GET", "/echo"}, {"PUT", "/stats"}, {"HEAD", "/health"}} {
		req, err := http.NewRequest(mp[0], s.url+mp[1], nil)
		require.NoError(t, err)
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		want := 404
		if mp[0] == "HEAD" {
			want = 200
		}
		assert.Equal(t, want, readReply(t, resp).status, mp)
	}

	st := s.atRest(t)
	assert.GreaterOrEqual(t, st["requests"], int64(17))
	assert.Zero(t, st["cancelled"])
	assert.Equal(t, int64(2*1024), st["arenas_capacity"])
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// A query value that is not a number, negative or too large is a 400 that
// says what is wanted; the server goes on serving.
func testBadParams(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "1")
	for _, path := range []string{
		"/slow?ms=abc", "/slow?ms=-1", "/slow?ms=60001", "/slow?ms=99999999999999999999999", "/slow?ms=1.5",
		"/api/slow?ms=x", "/api/slow?ms=-5", "/api/slow?ms=1e9",
		"/events?n=-1", "/events?n=10001", "/events?ms=0", "/events?n=2&ms=abc", "/events?ms=60001",
	} {
		r := s.get(t, path)
		assert.Equal(t, 400, r.status, path)
		assert.Contains(t, r.body, "want an integer from", path)
	}
	assert.Equal(t, 200, s.get(t, "/health").status)
	st := s.atRest(t)
	assert.Zero(t, st["handlers_pending"])
	code, _ := s.Signal(t, syscall.SIGINT)
	assert.Zero(t, code)
}

// A server that has served nothing shows, in /stats, only the /stats
// request itself: one arena, one stream, no handler pending.
func testStatsAtRest(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2", "-arenas", "8", "-arena-size", "4096")
	st := s.stats(t)
	assert.Equal(t, int64(1), st["arenas_in_use"], "%v", st)
	assert.Equal(t, int64(1), st["streams_open"], "%v", st)
	assert.Equal(t, int64(0), st["handlers_pending"], "%v", st)
	assert.Equal(t, int64(1), st["requests"], "%v", st)
	assert.Equal(t, int64(1), st["conns_open"], "%v", st)
	assert.Equal(t, int64(16), st["arenas_capacity"], "%v", st)
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// randomBytes returns n bytes of the random stream seed.
func randomBytes(seed, n int) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return b
}

// POST /echo sends back 8 MiB byte-exact, with a Content-Length, and a
// chunked body of 1 MiB: both far larger than the arena, so they stream.
func testEcho(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2")
	big := randomBytes(1, 8<<20)
	resp, err := s.client.Post(s.url+"/echo", "application/octet-stream", bytes.NewReader(big))
	require.NoError(t, err)
	assert.Equal(t, int64(len(big)), resp.ContentLength)
	r := readReply(t, resp)
	require.Equal(t, 200, r.status)
	require.True(t, bytes.Equal(big, []byte(r.body)), "the echo of 8 MiB differs (%d bytes back)", len(r.body))

	chunked := randomBytes(2, 1<<20)
	resp, err = s.client.Post(s.url+"/echo", "application/octet-stream", struct{ io.Reader }{bytes.NewReader(chunked)})
	require.NoError(t, err)
	r = readReply(t, resp)
	require.Equal(t, 200, r.status)
	require.True(t, bytes.Equal(chunked, []byte(r.body)), "the echo of a chunked 1 MiB differs (%d bytes back)", len(r.body))

	s.atRest(t)
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// A client that sends a large body to /echo and does not read the echo is
// held back: the server stops reading it once the echo's write queue is
// full, so the client's write stalls with the server holding little of it.
// Once the client reads, the rest flows, byte-exact.
func testEchoFlowControl(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "1")
	const total = 32 << 20
	body := randomBytes(4, total)
	nc, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), timeout)
	require.NoError(t, err)
	defer nc.Close()
	_, err = fmt.Fprintf(nc, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", total)
	require.NoError(t, err)

	// The write stalls: the kernel's buffers both ways and the server's
	// write queue hold a few MiB at most, never the 32.
	require.NoError(t, nc.SetWriteDeadline(time.Now().Add(time.Second)))
	n, err := nc.Write(body)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the whole body went in without the echo being read")
	assert.Less(t, n, total/2)
	queued := s.metric(t, "aio_tcp_write_queued_bytes")
	assert.Less(t, queued, float64(4<<20), "the server holds the body")

	require.NoError(t, nc.SetDeadline(time.Now().Add(timeout)))
	sent := make(chan error, 1)
	go func() {
		_, err := nc.Write(body[n:])
		sent <- err
	}()
	resp, err := http.ReadResponse(bufio.NewReader(nc), &http.Request{Method: "POST"})
	require.NoError(t, err)
	r := readReply(t, resp)
	require.NoError(t, <-sent)
	require.Equal(t, 200, r.status)
	require.True(t, bytes.Equal(body, []byte(r.body)), "the echo differs (%d bytes back)", len(r.body))
	require.NoError(t, nc.Close())
	s.atRest(t)
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// readEvent reads one server-sent event from br and checks it is number i.
func readEvent(t *testing.T, br *bufio.Reader, i int) {
	t.Helper()
	want := fmt.Sprintf("data: %d\n\n", i)
	got := make([]byte, len(want))
	_, err := io.ReadFull(br, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// A client that goes away in the middle of /events cancels its handler:
// /stats shows it cancelled, nothing pending, and its arena back.
func testEventsClientLeaves(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "1")
	before := s.stats(t)
	timers := s.metric(t, "aio_loop_timers") // the server's own
	resp, err := s.client.Get(s.url + "/events?n=10000&ms=5")
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	br := bufio.NewReader(resp.Body)
	readEvent(t, br, 0)
	readEvent(t, br, 1)
	mid := s.stats(t)
	assert.Equal(t, timers+1, s.metric(t, "aio_loop_timers"), "the stream's ticker")
	assert.Equal(t, int64(1), mid["handlers_pending"], "%v", mid)
	assert.Equal(t, int64(2), mid["streams_open"], "%v", mid)
	require.NoError(t, resp.Body.Close()) // unread: the transport closes the connection

	var st map[string]int64
	require.Eventually(t, func() bool {
		st = s.stats(t)
		return st["cancelled"] == before["cancelled"]+1
	}, timeout, 5*time.Millisecond, "the stream was not cancelled: %v", &st)
	st = s.atRest(t)
	assert.Equal(t, int64(0), st["handlers_pending"])
	require.Eventually(t, func() bool { // the loop publishes its gauges every millisecond or so
		return s.metric(t, "aio_loop_timers") == timers
	}, timeout, 5*time.Millisecond, "the ticker was not stopped")
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// The grammar of the Prometheus text format, version 0.0.4, as far as a
// scraper needs it.
var (
	metricLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")*\})? (\S+)$`)
	commentRE  = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)
)

// /metrics is Prometheus text: every line in the grammar, a TYPE before its
// samples, every /stats key as aio_httpd_<key>, exactly (counters too),
// and the loops' counters beside them.
func testMetrics(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2")
	require.Equal(t, 200, s.get(t, "/health").status)
	r := s.get(t, "/metrics")
	require.Equal(t, 200, r.status)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", r.header.Get("Content-Type"))

	types := map[string]string{}   // family: type
	values := map[string]float64{} // series without labels: value
	families := map[string]bool{}  // families with samples
	for i, line := range strings.Split(strings.TrimSuffix(r.body, "\n"), "\n") {
		if m := commentRE.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				require.Contains(t, []string{"counter", "gauge", "histogram", "summary", "untyped"}, m[3], "line %d: %q", i+1, line)
				require.NotContains(t, types, m[2], "line %d: a second TYPE", i+1)
				types[m[2]] = m[3]
			}
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		require.NotNil(t, m, "line %d out of the grammar: %q", i+1, line)
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, "line %d: %q", i+1, line)
		family := m[1]
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(family, suffix); ok && types[base] == "histogram" {
				family = base
			}
		}
		require.Contains(t, types, family, "line %d: a sample before its TYPE", i+1)
		families[family] = true
		if m[2] == "" {
			values[m[1]] = v
		}
	}
	counters := map[string]bool{"requests": true, "cancelled": true, "responses_suppressed": true, "refused": true}
	for _, k := range statsKeys {
		name, typ := "aio_httpd_"+k, "gauge"
		if counters[k] {
			typ = "counter"
		}
		assert.Equal(t, typ, types[name], name)
		assert.Contains(t, values, name)
	}
	assert.GreaterOrEqual(t, values["aio_httpd_requests"], 2.0)
	assert.Equal(t, 2048.0, values["aio_httpd_arenas_capacity"])
	assert.True(t, families["aio_loop_busy_seconds_total"], "the loops' metrics are there")
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// curl, the client of the black-box checks, gets every kind of answer:
// immediate, from Work, streamed both ways, 404 and 400. curl must be
// installed: the test fails without it.
func testCurl(t *testing.T, bin string) {
	curlPath, err := exec.LookPath("curl")
	require.NoError(t, err, "curl is needed (apt-get install curl)")
	s := run(t, bin, "-loops", "2")
	curl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(curlPath, append([]string{"-sS", "--max-time", "20"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "curl %v: %s", args, stderr.String())
		return string(out)
	}
	status := []string{"-o", "/dev/null", "-w", "%{http_code}"}

	assert.Equal(t, "ok", curl(s.url+"/health"))
	assert.Equal(t, `{"id":"7","name":"user 7"}`, curl(s.url+"/users/7"))
	assert.Equal(t, "waited 5 ms", curl(s.url+"/slow?ms=5"))
	assert.Equal(t, "data: 0\n\ndata: 1\n\n", curl("-N", s.url+"/events?n=2&ms=5"))
	assert.Equal(t, "404", curl(append(status, s.url+"/nope")...))
	assert.Equal(t, "400", curl(append(status, s.url+"/slow?ms=abc")...))
	// h2c three ways on the one port (WEBSERVER.md): curl --http2 asks
	// for Upgrade: h2c, which the webserver turns on.
	for flag, want := range map[string]string{"--http1.1": "1.1", "--http2": "2", "--http2-prior-knowledge": "2"} {
		assert.Equal(t, "ok "+want, curl(flag, "-w", " %{http_version}", s.url+"/health"), flag)
	}

	body := randomBytes(3, 2<<20)
	file := t.TempDir() + "/body"
	require.NoError(t, os.WriteFile(file, body, 0o600))
	got := curl("--data-binary", "@"+file, "-H", "Content-Type: application/octet-stream", s.url+"/echo")
	require.True(t, bytes.Equal(body, []byte(got)), "curl's echo of 2 MiB differs (%d bytes back)", len(got))

	s.atRest(t)
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// A /slow in flight when SIGTERM comes finishes within -grace: its
// response arrives, saying Connection: close, and the server exits 0
// without waiting for the rest of the grace.
func testShutdownLetsSlowFinish(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2", "-grace", "1h")
	done := make(chan reply, 1)
	go func() {
		resp, err := s.client.Get(s.url + "/slow?ms=300")
		if err != nil {
			done <- reply{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			b = []byte(err.Error())
		}
		done <- reply{resp.StatusCode, resp.Header, string(b), resp.Close}
	}()
	var st map[string]int64
	require.Eventually(t, func() bool {
		st = s.stats(t)
		return st["handlers_pending"] == 1
	}, timeout, time.Millisecond, "the /slow request is not in flight: %v", &st)

	begin := time.Now()
	s.Send(t, syscall.SIGTERM)
	var r reply
	select {
	case r = <-done:
	case <-time.After(timeout):
		t.Fatal("no response")
	}
	assert.Equal(t, 200, r.status, r.body)
	assert.Equal(t, "waited 300 ms", r.body)
	assert.True(t, r.close, "the response during the drain says Connection: close")
	code, took := s.Wait(t, begin)
	assert.Zero(t, code)
	assert.Less(t, took, timeout, "the hour of grace was not waited for")
}

// A stream that goes on past -grace is cut at the deadline: the client sees
// its body end short, and the server exits 0.
func testShutdownCutsStream(t *testing.T, bin string) {
	const grace = 300 * time.Millisecond
	s := run(t, bin, "-loops", "1", "-grace", grace.String())
	resp, err := s.client.Get(s.url + "/events?n=10000&ms=10")
	require.NoError(t, err)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readEvent(t, br, 0)

	code, took := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
	assert.GreaterOrEqual(t, took, grace, "the stream was not given the grace")
	rest, err := io.ReadAll(br)
	require.Error(t, err, "the stream ended short, not with its last chunk")
	assert.True(t, errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset"), "%v", err)
	assert.Less(t, strings.Count(string(rest), "data: "), 10000-1)
}

// Bad flags are a clear error on standard error and a nonzero status,
// before anything listens.
func testBadFlags(t *testing.T, bin string) {
	for _, args := range [][]string{
		{"-loops", "0"},
		{"-arenas", "0"},
		{"-arena-size", "100"},
		{"-arenas", "99999999999"},        // past httpd.MaxArenas, which would cap it
		{"-arena-size", "99999999999999"}, // past httpd.MaxArenaSize
		{"-grace", "-1s"},
		{"-api-timeout", "0s"},
		{"-header-timeout", "-1s"},
		{"-body-timeout", "0s"},
		{"-idle-timeout", "0"},
		{"-addr", "nowhere"},
		{"-tls-cert", "x.pem"},
		{"-tls-self-signed", "-tls-key", "k.pem"},
		{"-tls-cert", "/nonexistent.pem", "-tls-key", "/nonexistent.pem"},
		{"-nope"},
		{"extra"},
		{"-loops", "4097"}, // more than a Runtime runs
		{"-loops", "2147483647"},
	} {
		code, stderr := blackbox.Refused(t, bin, 0, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
		assert.NotZero(t, code, "%v", args)
		// It names what is wrong: each duration flag used to be refused
		// with one message naming all five.
		assert.Contains(t, stderr, strings.TrimPrefix(args[0], "-"), "%v", args)
		if strings.HasSuffix(args[0], "timeout") {
			assert.NotContains(t, stderr, "grace", "%v", args)
		}
	}
	// Fewer fds than the loops need: the start fails with EMFILE, said.
	code, stderr := blackbox.Refused(t, bin, 64, "-addr", "127.0.0.1:0", "-loops", "20")
	assert.NotZero(t, code)
	assert.Contains(t, stderr, "too many open files")
	// A second server on a port the first has: refused, not a silent share
	// of its connections (SO_REUSEPORT).
	first := run(t, bin, "-loops", "2")
	code, stderr = blackbox.Refused(t, bin, 0, "-addr", strings.TrimPrefix(first.url, "http://"), "-loops", "2")
	assert.NotZero(t, code)
	assert.Contains(t, stderr, "address already in use")
}

// The routes answer over HTTP/2 by prior knowledge on the same port
// (WEBSERVER.md: h2c from the HTTP/2 issue on), through Go's x/net/http2
// client: a plain answer, a Work answer, a stream and a body echoed.
func testH2C(t *testing.T, bin string) {
	s := run(t, bin, "-loops", "2")
	tr := &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}}
	t.Cleanup(tr.CloseIdleConnections)
	h2 := &http.Client{Transport: tr, Timeout: timeout}
	get := func(path string) reply {
		t.Helper()
		resp, err := h2.Get(s.url + path)
		require.NoError(t, err, "GET %s", path)
		require.Equal(t, "HTTP/2.0", resp.Proto, "GET %s", path)
		return readReply(t, resp)
	}
	for _, tc := range []struct{ path, body string }{
		{"/health", "ok"},
		{"/users/7", `{"id":"7","name":"user 7"}`},
		{"/events?n=3&ms=10", "data: 0\n\ndata: 1\n\ndata: 2\n\n"},
	} {
		r := get(tc.path)
		assert.Equal(t, 200, r.status, tc.path)
		assert.Equal(t, tc.body, r.body, tc.path)
	}
	big := randomBytes(3, 1<<20)
	resp, err := h2.Post(s.url+"/echo", "application/octet-stream", bytes.NewReader(big))
	require.NoError(t, err)
	r := readReply(t, resp)
	require.Equal(t, 200, r.status)
	require.True(t, bytes.Equal(big, []byte(r.body)), "the echo of 1 MiB over h2c differs (%d bytes back)", len(r.body))

	s.atRest(t)
	code, _ := s.Signal(t, syscall.SIGTERM)
	assert.Zero(t, code)
}

// -body-timeout bounds a small body that trickles in: a client sending a
// byte every 50 ms, never pausing, gets 408 once it has passed, and the
// server is at rest again.
func testBodyTimeout(t *testing.T, bin string) {
	const bodyTimeout = 400 * time.Millisecond
	s := run(t, bin, "-loops", "1", "-body-timeout", bodyTimeout.String())
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(timeout)))
	_, err = io.WriteString(nc, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	start := time.Now()
	stop := testpeer.Trickle(nc, []byte("x"), 50*time.Millisecond)
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	stop()
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(start), bodyTimeout-50*time.Millisecond)
	require.Eventually(t, func() bool {
		st := s.stats(t)
		// At rest: the one arena in use is /stats' own.
		return st["arenas_in_use"] == 1 && st["streams_open"] == 1 && st["bad_requests"] == 1
	}, timeout, time.Millisecond, "not at rest")
}

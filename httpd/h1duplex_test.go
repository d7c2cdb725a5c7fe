package httpd

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockStep sends lines on a chunked HTTP/1.1 body with Go's client and
// reads each one's echo before it sends the next, as a client streaming
// both ways does; it returns the echoes.
func lockStep(t *testing.T, url string, lines ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	context.AfterFunc(ctx, func() { pr.CloseWithError(ctx.Err()) })
	go func() { _, _ = pw.Write([]byte(lines[0] + "\n")) }()
	req, err := http.NewRequestWithContext(ctx, "POST", url, pr)
	require.NoError(t, err)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err, "the response's head does not come before the body's end")
	defer resp.Body.Close()
	assert.True(t, resp.Close, "a response begun before its body was read keeps the connection")
	br := bufio.NewReader(resp.Body)
	var got []string
	for i := range lines {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "echo %d", i)
		got = append(got, line[:len(line)-1])
		if i+1 < len(lines) {
			go func() { _, _ = pw.Write([]byte(lines[i+1] + "\n")) }()
		}
	}
	return got
}

// A Duplex handler starts at its request's head on HTTP/1.1 too, as on
// HTTP/2, and its stream's head goes out at once: a client that waits for
// each part of the response before it sends the next part of its body
// (Go's client does this) is answered, as net/http's server answers it
// once the handler asks for EnableFullDuplex. So is a FromHTTP handler.
// The response says Connection: close (its body was not read whole).
func TestDuplexStreamsBothWaysOverHTTP1(t *testing.T) {
	m := NewMux()
	m.Handle("POST /echo", Duplex(HandlerFunc(echoHandler)))
	m.Handle("POST /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if !assert.NoError(t, rc.EnableFullDuplex()) {
			return
		}
		w.WriteHeader(200)
		_ = rc.Flush()
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadString('\n')
			_, _ = io.WriteString(w, line)
			_ = rc.Flush()
			if err != nil {
				return
			}
		}
	})))
	ts := startServer(t, m, Config{})
	for _, path := range []string{"/echo", "/std"} {
		assert.Equal(t, []string{"one", "two", "three"}, lockStep(t, ts.url+path, "one", "two", "three"), path)
	}
	ts.atRest(t)
}

// A small body of a declared length still arrives before a Duplex handler
// (FromHTTP's) starts on HTTP/1.1, even when it comes after the head in a
// write of its own: a handler that ignores it (a 204, a redirect) keeps
// the connection, as net/http's does.
func TestFromHTTPIgnoredSmallBodyKeepsTheConnection(t *testing.T) {
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(204)
	}))
	ts := startServer(t, h, Config{})
	c := dialRaw(t, ts.addr)
	c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n")
	eventually(t, func() bool { return ts.Stats().StreamsOpen == 1 }, "the head is not read")
	c.send("0123456789")
	resp := c.read("POST")
	assert.Equal(t, 204, resp.status)
	assert.False(t, resp.close, "the connection is not kept after a 10-byte body")
	ts.atRest(t)
}

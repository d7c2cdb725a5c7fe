package httpd

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
)

// A WebSocket library written for net/http runs under FromHTTP: it
// hijacks the connection after its handshake (x/net/websocket, server and
// client), and the connection is the handler's from then on.
func TestFromHTTPHijackServesWebSocket(t *testing.T) {
	m := NewMux()
	m.Handle("GET /ws", FromHTTP(websocket.Handler(func(ws *websocket.Conn) {
		var msg string
		for websocket.Message.Receive(ws, &msg) == nil {
			if websocket.Message.Send(ws, "echo: "+msg) != nil {
				return
			}
		}
	})))
	ts := startServer(t, m, Config{})
	ws, err := websocket.Dial("ws://"+ts.addr+"/ws", "", "http://"+ts.addr)
	require.NoError(t, err)
	for _, msg := range []string{"one", "two", string(make([]byte, 100<<10))} {
		require.NoError(t, websocket.Message.Send(ws, msg))
		var got string
		require.NoError(t, websocket.Message.Receive(ws, &got))
		assert.Equal(t, "echo: "+msg, got)
	}
	assert.Zero(t, ts.Stats().ConnsOpen, "a hijacked connection is the handler's, not the server's")
	require.NoError(t, ws.Close())
	ts.atRest(t) // the handler saw the close, returned, and its request ended
}

// Hijack hands over the connection with what the client sent after the
// request (here in the same write) first; the server no longer counts,
// drains or closes it, so Shutdown returns at once while it stays open.
// A second Hijack, and Write after one, return http.ErrHijacked; on
// HTTP/2 Hijack is not supported, as with net/http; nor is it while
// another request is pipelined behind.
func TestFromHTTPHijack(t *testing.T) {
	results := make(chan error, 4)
	m := NewMux()
	m.Handle("GET /tunnel", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			results <- err
			http.Error(w, err.Error(), 500)
			return
		}
		_, err = w.Write([]byte("late"))
		results <- err
		_, _, err = w.(http.Hijacker).Hijack()
		results <- err
		go func() { // the connection outlives the handler, as with net/http
			defer nc.Close()
			_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
			_ = brw.Flush()
			for {
				line, err := brw.ReadString('\n')
				if err != nil {
					return
				}
				_, _ = brw.WriteString(line)
				_ = brw.Flush()
			}
		}()
	})))
	m.HandleFunc("GET /other", func(r *Request) Reply { return Text(200, "other") })
	ts := startServer(t, m, Config{})

	c := dialRaw(t, ts.addr)
	c.send("GET /tunnel HTTP/1.1\r\nHost: x\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\nearly\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	assert.Equal(t, 101, resp.StatusCode)
	assert.ErrorIs(t, recvT(t, results), http.ErrHijacked, "Write after Hijack")
	assert.ErrorIs(t, recvT(t, results), http.ErrHijacked, "a second Hijack")
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "early\n", line, "the bytes sent with the request come first")

	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	require.NoError(t, ts.Shutdown(ctx), "Shutdown waits for no hijacked connection")
	c.send("after the shutdown\n")
	line, err = br.ReadString('\n')
	require.NoError(t, err, "Shutdown closed a hijacked connection")
	assert.Equal(t, "after the shutdown\n", line)
	require.NoError(t, c.Close())
	ts.atRest(t)
}

// Hijack is refused, with an error the handler can answer, on HTTP/2 and
// while another request is pipelined behind the one that asks.
func TestFromHTTPHijackRefused(t *testing.T) {
	errs := make(chan error, 2)
	m := NewMux()
	m.Handle("GET /h", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, _, err := http.NewResponseController(w).Hijack()
		errs <- err
		if err == nil {
			_ = nc.Close() // the connection is ours: left open, it would hold Runtime.Shutdown
			return
		}
		_, _ = io.WriteString(w, "not hijacked")
	})))
	m.HandleFunc("GET /plain", func(r *Request) Reply { return Text(200, "plain") })
	ts := startServer(t, m, Config{})

	st, body := get(t, h2Client(t), ts.url+"/h")
	assert.Equal(t, 200, st)
	assert.Equal(t, "not hijacked", body)
	assert.ErrorIs(t, recvT(t, errs), http.ErrNotSupported, "HTTP/2")

	// Both requests are read in one go: /plain is queued before /h's
	// Hijack reaches the loop.
	c := dialRaw(t, ts.addr)
	c.send("GET /h HTTP/1.1\r\nHost: x\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.ErrorIs(t, recvT(t, errs), errHijackState, "a request pipelined behind")
	assert.Equal(t, "not hijacked", c.read("GET").body)
	assert.Equal(t, "plain", c.read("GET").body)

	// A request that asks to switch protocols holds what follows it
	// unparsed, for a handler that takes the connection; one that does
	// not leaves it to be served in its turn.
	c = dialRaw(t, ts.addr)
	c.send("GET /plain HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nGET /plain HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, "plain", c.read("GET").body)
	assert.Equal(t, "plain", c.read("GET").body)

	c = dialRaw(t, ts.addr)
	c.send("GET /h HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.NoError(t, recvT(t, errs), "alone, it may")
	assert.True(t, c.closed(), "the handler closed the connection it took")
	ts.atRest(t)
}

// The server's deadlines leave a hijacked connection, as net/http clears
// them on Hijack: Config.WriteTimeout no longer cuts a reader that is
// slow to start (here it waits 4 WriteTimeouts) from the handler's 8 MiB.
func TestFromHTTPHijackedConnectionHasNoWriteTimeout(t *testing.T) {
	const size = 8 << 20
	written := make(chan error, 1)
	m := NewMux()
	m.Handle("GET /big", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			written <- err
			return
		}
		go func() {
			defer nc.Close()
			_, err := nc.Write(bytes.Repeat([]byte("x"), size))
			written <- err
		}()
	})))
	ts := startServer(t, m, Config{WriteTimeout: 100 * time.Millisecond})
	c := dialRaw(t, ts.addr)
	c.send("GET /big HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n")
	time.Sleep(400 * time.Millisecond) // a reader slow to start, not a synchronisation
	n, err := io.Copy(io.Discard, c.br)
	require.NoError(t, err)
	assert.EqualValues(t, size, n, "the hijacked connection was cut")
	assert.NoError(t, recvT(t, written))
	ts.atRest(t)
}

// A request that asks to switch protocols holds what follows it for its
// handler even when it is its connection's last (HTTP/1.0, Connection:
// close), where what follows a request is read and dropped. One that
// does not ask (here the bytes after it were read as HTTP and refused)
// is not handed over with a hole in its stream: Hijack says why.
func TestFromHTTPHijackKeepsOrRefusesWhatFollows(t *testing.T) {
	errs := make(chan error, 1)
	m := NewMux()
	m.Handle("/", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nc, brw, err := http.NewResponseController(w).Hijack()
		errs <- err
		if err != nil {
			http.Error(w, "not hijacked", 500)
			return
		}
		go func() {
			defer nc.Close()
			b, _ := io.ReadAll(io.LimitReader(brw, 6))
			_, _ = nc.Write(append([]byte("got:"), b...))
		}()
	})))
	ts := startServer(t, m, Config{})
	c := dialRaw(t, ts.addr)
	c.send("CONNECT example.com:443 HTTP/1.0\r\n\r\ntunnel")
	require.NoError(t, recvT(t, errs))
	b, err := io.ReadAll(c.br)
	require.NoError(t, err)
	assert.Equal(t, "got:tunnel", string(b), "HTTP/1.0 CONNECT")

	c = dialRaw(t, ts.addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n\x16\x03\x01 not http\r\n\r\n")
	eventually(t, func() bool { return ts.Stats().BadRequests == 1 }, "the bytes after are not refused")
	assert.ErrorIs(t, recvT(t, errs), errHijackLost)
	assert.Equal(t, 500, c.read("GET").status)
	ts.atRest(t)
}

package httpd

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"testing"

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

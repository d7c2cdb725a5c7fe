package httpd

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FromHTTP request body read after the handler returned fails with
// http.ErrBodyReadAfterClose, as net/http's does: a goroutine the handler
// left reading (an http.TimeoutHandler's, say) gets an error, where it
// used to wait for good for bytes nobody would send (a leaked goroutine
// that outlived Shutdown). So does one the handler closed, and so for a
// body small enough to arrive with the request, which used to stay
// readable.
func TestFromHTTPBodyReadAfterReturn(t *testing.T) {
	reads := make(chan chan struct{}, 1) // each request's signal that its response is in
	res := make(chan error, 1)
	m := NewMux()
	m.Handle("POST /late", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rd := <-reads
		go func() {
			<-rd // once the response is in: the handler has returned
			_, err := io.Copy(io.Discard, r.Body)
			res <- err
		}()
	})))
	m.Handle("POST /closed", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.Body.Close())
		_, err := io.Copy(io.Discard, r.Body)
		res <- err
	})))
	ts := startServer(t, m, Config{})
	for _, size := range []int{5, 1 << 20} { // buffered; streamed: over half an arena
		read := make(chan struct{})
		reads <- read
		resp, _ := post(t, client(t), ts.url+"/late", bytes.NewReader(make([]byte, size)))
		require.Equal(t, 200, resp.StatusCode)
		close(read)
		assert.ErrorIs(t, recvT(t, res), http.ErrBodyReadAfterClose, "%d bytes, after the handler returned", size)
		resp, _ = post(t, client(t), ts.url+"/closed", bytes.NewReader(make([]byte, size)))
		require.Equal(t, 200, resp.StatusCode)
		assert.ErrorIs(t, recvT(t, res), http.ErrBodyReadAfterClose, "%d bytes, after Close", size)
	}
	ts.atRest(t)
}

// A reader blocked on the body when the handler returns wakes with an
// error: http.TimeoutHandler answers 503 and returns while its inner
// handler still reads a body that comes slowly.
func TestFromHTTPBodyReaderWokenAtReturn(t *testing.T) {
	res := make(chan error, 1)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		res <- err
	})
	ts := startServer(t, FromHTTP(http.TimeoutHandler(inner, 100*time.Millisecond, "timeout")), Config{})
	c := dialRaw(t, ts.addr)
	c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("x", 64<<10))
	require.Equal(t, 503, c.read("POST").status)
	err := recvT(t, res)
	assert.True(t, errors.Is(err, http.ErrBodyReadAfterClose) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
	c.Close()
	ts.atRest(t)
}

// A body that has arrived whole before its client went away is read
// whole, as net/http hands it: before, the client's going cancelled the
// request and dropped what waited in the pipe, and the next Read said
// io.EOF, so a handler saving the upload stored a file cut short with no
// error. A body cut short still ends with io.ErrUnexpectedEOF.
func TestFromHTTPBodyArrivedBeforeTheClientLeft(t *testing.T) {
	const n = 60000 // streams (over half an arena), within a window and the pipe
	for _, whole := range []bool{true, false} {
		pipes := make(chan *bodyPipe, 1)
		res := make(chan string, 1)
		h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			first := make([]byte, 1)
			_, _ = io.ReadFull(r.Body, first)
			pipes <- r.Body.(*bodyPipe)
			<-r.Context().Done() // the client went away while the handler was busy
			rest, err := io.ReadAll(r.Body)
			res <- strings.Join([]string{itoa(1 + len(rest)), errString(err)}, " ")
		}))
		ts := startServer(t, h, Config{})
		sent := n
		if !whole {
			sent = n / 2
		}
		c := dialRaw(t, ts.addr)
		c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + itoa(n) + "\r\n\r\n" + strings.Repeat("x", sent))
		p := recvT(t, pipes)
		eventually(t, func() bool { // what was sent is in the pipe
			p.mu.Lock()
			defer p.mu.Unlock()
			return 1+p.n == sent
		}, "the body has not arrived")
		c.Close()
		if whole {
			assert.Equal(t, itoa(n)+" <nil>", recvT(t, res))
		} else {
			assert.Equal(t, itoa(n/2)+" "+io.ErrUnexpectedEOF.Error(), recvT(t, res))
		}
		ts.atRest(t)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

package httpd

import (
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// A body that streams to its handler is timed on HTTP/2 as on HTTP/1.1:
// while the handler reads it, its client may pause for HeaderTimeout at
// most, after which the request is answered 408 (the handler cancelled)
// and the body stopped; the connection goes on. Before, such a stream was
// never timed: a few HEADERS held arenas, and FromHTTP's Work goroutines,
// for as long as the connection lived.
func TestH2StreamedBodyPause(t *testing.T) {
	const headerTimeout = 300 * time.Millisecond
	m := testMux()
	m.HandleFunc("POST /count", countHandler)
	m.Handle("POST /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
	})))
	ts := startServer(t, m, Config{HeaderTimeout: headerTimeout, IdleTimeout: time.Hour})
	c := dialH2(t, ts.addr)

	start := time.Now()
	c.postHead(1, "/count", 1<<20) // past the arena's room: it streams
	require.NoError(t, c.fr.WriteData(1, false, make([]byte, 1000)))
	c.expect(1, "408", "408 Request Timeout\n")
	assert.GreaterOrEqual(t, time.Since(start), headerTimeout-50*time.Millisecond)
	c.expectReset(1, http2.ErrCodeNo)

	c.postHead(3, "/std", 10) // a Duplex handler: it reads from the head on
	c.expect(3, "408", "408 Request Timeout\n")
	c.expectReset(3, http2.ErrCodeNo)
	eventually(t, func() bool { return ts.l.Stats().WorkRunning == 0 }, "FromHTTP's Work still waits for the body")

	c.get(5, "/health") // the connection goes on
	c.expect(5, "200", "ok")
	ts.atRest(t)
}

// countHandler answers with the length of the body, read as it streams.
func countHandler(r *Request) Reply {
	p := aio.NewPromise[Response](r.Loop())
	n := 0
	r.Body().OnData(func(b []byte, end bool) {
		if n += len(b); end {
			p.Resolve(TextResponse(200, strconv.Itoa(n)))
		}
	})
	return Later(p.Handle())
}

// A pause is the client's only while the handler reads: one the handler
// makes (Pause), however long, is not timed, and the client that waited
// through it goes on once the handler resumes.
func TestH2StreamedBodyHandlerPause(t *testing.T) {
	const headerTimeout = 200 * time.Millisecond
	paused := make(chan Body, 1)
	m := testMux()
	m.HandleFunc("POST /pause", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		n, body := 0, r.Body()
		body.OnData(func(b []byte, end bool) {
			if n == 0 {
				body.Pause()
				paused <- body
			}
			if n += len(b); end {
				p.Resolve(TextResponse(200, strconv.Itoa(n)))
			}
		})
		return Later(p.Handle())
	})
	ts := startServer(t, m, Config{HeaderTimeout: headerTimeout})
	c := dialH2(t, ts.addr)
	const size = 60 << 10 // past the arena's room, within the stream's window
	c.postHead(1, "/pause", size)
	require.NoError(t, c.fr.WriteData(1, false, make([]byte, 1000)))
	body := recvT(t, paused)
	c.staysQuiet(4 * headerTimeout) // the handler's pause: no 408 in this time
	ts.onLoop(t, body.Resume)
	for sent := 1000; sent < size; sent += 10000 {
		n := min(10000, size-sent)
		require.NoError(t, c.fr.WriteData(1, sent+n == size, make([]byte, n)))
	}
	c.expect(1, "200", strconv.Itoa(size))
	ts.atRest(t)
}

// staysQuiet checks that the server sends nothing but flow control,
// PINGs and a SETTINGS ack for d.
func (c *h2Raw) staysQuiet(d time.Duration) {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(d)))
	defer func() { require.NoError(c.t, c.nc.SetReadDeadline(time.Time{})) }()
	for {
		f, err := c.fr.ReadFrame()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return
		}
		require.NoError(c.t, err)
		switch f := f.(type) {
		case *http2.WindowUpdateFrame, *http2.PingFrame:
		case *http2.SettingsFrame:
			require.True(c.t, f.IsAck(), "unexpected frame %v", f)
		case *http2.GoAwayFrame:
			c.t.Fatalf("unexpected GOAWAY %v %s", f.ErrCode, f.DebugData())
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
	}
}

// What a connection holds for handlers that do not read their bodies is
// bounded by the connection's window: the window is given back for bytes
// a handler takes, or that are dropped, not as they arrive. Given back on
// arrival, 256 such streams parked 16 MiB per connection on the heap (x/net's server holds 1 MiB).
func TestH2HeldBodiesSpendTheConnectionWindow(t *testing.T) {
	bodies := make(chan Body, 32)
	m := testMux()
	m.HandleFunc("POST /later", func(r *Request) Reply {
		bodies <- r.Body() // read when the test says
		return Later(aio.NewPromise[Response](r.Loop()).Handle())
	})
	ts := startServer(t, m, Config{})
	c := dialH2(t, ts.addr)
	require.Equal(t, int64(h2ConnWindow-h2DefaultWindow), c.connCredit(), "the window the server grants")
	const streams = h2ConnWindow / h2StreamWindow // their windows fill the connection's
	chunk := make([]byte, h2MaxFrame)
	for i := range uint32(streams) {
		id := 2*i + 1
		c.postHead(id, "/later", 1<<30)
		for sent := 0; sent < h2StreamWindow; sent += len(chunk) {
			require.NoError(t, c.fr.WriteData(id, false, chunk[:min(len(chunk), h2StreamWindow-sent)]))
		}
	}
	held := make([]Body, streams)
	for i := range held {
		held[i] = recvT(t, bodies)
	}
	assert.Zero(t, c.connCredit(), "the connection's window was given back for bytes nobody took")

	const reading = 9     // past half the window: given back at once
	ts.onLoop(t, func() { // these handlers read: what was held is theirs
		for _, b := range held[:reading] {
			b.OnData(func([]byte, bool) {})
		}
	})
	assert.Equal(t, int64(reading*h2StreamWindow), c.connCredit())
	for i := reading; i < streams; i++ { // and what the others held is dropped
		require.NoError(t, c.fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel))
	}
	eventually(t, func() bool {
		return ts.anyConn(t, func(hc *h1conn) bool {
			return hc.h2 != nil && hc.h2.recvWin+hc.h2.recvUnacked == h2ConnWindow
		})
	}, "the connection's window is not whole again")
	for i := range reading {
		require.NoError(t, c.fr.WriteRSTStream(uint32(2*i+1), http2.ErrCodeCancel))
	}
	ts.atRest(t)
}

// connCredit sends a PING and returns what the connection's window grew
// by (WINDOW_UPDATE on stream 0) until its answer.
func (c *h2Raw) connCredit() int64 {
	c.t.Helper()
	require.NoError(c.t, c.fr.WritePing(false, [8]byte{'c', 'r', 'e', 'd', 'i', 't'}))
	var n int64
	for {
		switch f := c.frame().(type) {
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				n += int64(f.Increment)
			}
		case *http2.PingFrame:
			if f.IsAck() && f.Data == [8]byte{'c', 'r', 'e', 'd', 'i', 't'} {
				return n
			}
		case *http2.SettingsFrame:
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
	}
}

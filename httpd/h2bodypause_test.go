package httpd

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
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

// More FromHTTP uploads on one HTTP/2 connection than the loop's Work pool
// runs at once all finish: the handlers waiting for the pool hold their
// streams' bodies, and the connection's window must not wait for them, or
// the running handlers would wait for bytes the client may not send. A
// window given back only as held bodies were consumed deadlocked 16
// uploads on the default pool of 4.
func TestH2UploadsPastTheWorkPool(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "httpd-test-pool", WorkPool: 4})
	require.NoError(t, err)
	srv := &Server{Handler: FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strconv.FormatInt(n, 10))
	}))}
	require.NoError(t, srv.ServeLoops("127.0.0.1:0", l))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		require.NoError(t, rt.Shutdown(ctx))
	})
	c := h2Client(t) // one connection, the uploads its streams
	const uploads, size = 16, 256 << 10
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var done atomic.Int32
	for range uploads {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, "POST", "http://"+srv.Addr().String()+"/", bytes.NewReader(make([]byte, size)))
			if !assert.NoError(t, err) {
				return
			}
			resp, err := c.Do(req)
			if !assert.NoError(t, err) {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if assert.NoError(t, err) && assert.Equal(t, strconv.Itoa(size), string(b)) {
				done.Add(1)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(uploads), done.Load(), "uploads done")
}

// Once its response has begun, a streamed body's pauses are no longer
// timed on HTTP/2: a client streaming both ways (Duplex, as gRPC's
// bidirectional streams) may wait for what the response says before it
// sends more, longer than HeaderTimeout. Timed, such a conversation was
// reset (CANCEL) mid-answer.
func TestH2DuplexConversationNotTimed(t *testing.T) {
	const headerTimeout = 200 * time.Millisecond
	const parts = 6
	m := testMux()
	m.Handle("POST /chat", Duplex(HandlerFunc(func(r *Request) Reply {
		s := r.Stream(200, nil)
		r.Body().OnData(func(p []byte, end bool) {
			if end {
				s.End()
				return
			}
			for i := range parts { // an answer that takes longer than HeaderTimeout
				aio.Adopt(r.Scope(), aio.Delay(r.Loop(), time.Duration(i+1)*headerTimeout/2, func() (struct{}, error) {
					_, _ = s.WriteString("part" + strconv.Itoa(i) + ";")
					return struct{}{}, nil
				}))
			}
		})
		return s.Reply()
	})))
	ts := startServer(t, m, Config{HeaderTimeout: headerTimeout, IdleTimeout: time.Hour})
	c := dialH2(t, ts.addr)
	c.open(1, "POST", "/chat", false)
	require.NoError(t, c.fr.WriteData(1, false, []byte("hello")))
	var got []byte
	for len(got) < parts*len("partN;") {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
		case *http2.DataFrame:
			got = append(got, f.Data()...)
		default:
			t.Fatalf("unexpected frame %v after %q", f, got)
		}
	}
	require.NoError(t, c.fr.WriteData(1, true, nil)) // the client's turn
	for ended := false; !ended; {
		df, ok := c.next().(*http2.DataFrame)
		require.True(t, ok, "not the end of the answer")
		ended = df.StreamEnded()
	}
	ts.atRest(t)
}

// What a paused body held is let go once its handler has it: a stream
// does not keep the largest buffer it ever needed for the next pause.
func TestH2HeldBodyLetGoOnResume(t *testing.T) {
	paused := make(chan Body, 1)
	got := make(chan int, 1)
	m := testMux()
	m.HandleFunc("POST /pause", func(r *Request) Reply {
		n, body := 0, r.Body()
		body.OnData(func(b []byte, end bool) {
			if n == 0 {
				body.Pause()
				paused <- body
			}
			n += len(b)
			if n == 40000 {
				got <- n
			}
		})
		return Later(aio.NewPromise[Response](r.Loop()).Handle())
	})
	ts := startServer(t, m, Config{})
	c := dialH2(t, ts.addr)
	c.postHead(1, "/pause", 1<<20)
	require.NoError(t, c.fr.WriteData(1, false, make([]byte, 1000)))
	body := recvT(t, paused)
	for range 3 {
		require.NoError(t, c.fr.WriteData(1, false, make([]byte, 13000)))
	}
	// A PING's answer: the server has read them, held for the paused handler.
	require.NoError(t, c.fr.WritePing(false, [8]byte{'r', 'e', 'a', 'd'}))
	for {
		if pf, ok := c.frame().(*http2.PingFrame); ok && pf.IsAck() {
			break
		}
	}
	ts.onLoop(t, body.Resume)
	assert.Equal(t, 40000, recvT(t, got))
	assert.False(t, ts.anyConn(t, func(hc *h1conn) bool {
		return hc.h2 != nil && hc.h2.streams[1] != nil && cap(hc.h2.streams[1].rbuf) > 0
	}), "the stream keeps its held body's buffer")
	c.nc.Close()
	ts.atRest(t)
}

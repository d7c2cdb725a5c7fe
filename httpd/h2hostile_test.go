package httpd

import (
	"bytes"
	"errors"
	"math"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Hostile HTTP/2 clients (h2limits.go): each is ended, or refused, within
// a budget, while a well-behaved client beside it is served, and every
// arena and handler comes back.

// hostileMux is testMux with a large buffered body (/big, the same bytes
// every time) and a streamed one that writes while its Stream is not Full
// (/pump, which reports what it wrote before it had to stop).
func hostileMux(big []byte, pumped *atomic.Int64) *Mux {
	m := testMux()
	m.HandleFunc("GET /big", func(r *Request) Reply { return Bytes(200, big) })
	m.HandleFunc("GET /pump", func(r *Request) Reply {
		s := r.Stream(200, nil)
		chunk := make([]byte, 16<<10)
		var pump func()
		pump = func() {
			for !s.Full() {
				if _, err := s.Write(chunk); err != nil {
					return
				}
				if pumped.Add(int64(len(chunk))) >= 4<<20 {
					s.End()
					return
				}
			}
		}
		s.OnDrain(pump)
		pump()
		return s.Reply()
	})
	return m
}

// served checks that a second, well-behaved client is answered.
func served(t *testing.T, ts *testServer) {
	t.Helper()
	c := dialH2(t, ts.addr)
	c.get(1, "/health")
	c.expect(1, "200", "ok")
	c.nc.Close()
}

// calmed reads until the server closes the connection and returns the
// code of the GOAWAY it sent, -1 when the close (a reset, as the client
// had sent bytes the server never read) took it away.
func calmed(t *testing.T, c *h2Raw) http2.ErrCode {
	t.Helper()
	code := http2.ErrCode(1 << 31)
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the connection")
			return code
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			code = ga.ErrCode
		}
	}
}

// assertCalm checks a GOAWAY code from calmed: ENHANCE_YOUR_CALM, or none.
func assertCalm(t *testing.T, code http2.ErrCode) {
	t.Helper()
	if code != 1<<31 {
		assert.Equal(t, http2.ErrCodeEnhanceYourCalm, code)
	}
}

// flood writes frames with write (n of them at most, or until the
// connection fails) on a goroutine of its own; wait for it with the
// returned channel, which gives the number written.
func flood(c *h2Raw, n int, write func(i int) error) <-chan int {
	done := make(chan int, 1)
	go func() {
		i := 0
		for ; i < n; i++ {
			if write(i) != nil {
				break
			}
		}
		done <- i
	}()
	return done
}

// Rapid reset (CVE-2023-44487): streams opened and reset at once spend the
// reset budget; past it, GOAWAY(ENHANCE_YOUR_CALM) and the connection
// closes. Every handler started was cancelled and its arena is back.
func TestH2RapidReset(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	done := flood(c, 3*h2ResetBurst, func(i int) error {
		id := uint32(2*i + 1)
		c.head("/slow?ms=10000")
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hb.Bytes(),
			EndStream: true, EndHeaders: true}); err != nil {
			return err
		}
		return c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	})
	assertCalm(t, calmed(t, c))
	recvT(t, done)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Abusive)
	// A reset stream counts against the concurrent streams until its
	// handler has ended: some were refused, which spends the budget too.
	spent := st.Cancelled + st.Refused
	assert.GreaterOrEqual(t, spent, uint64(h2ResetBurst))
	assert.LessOrEqual(t, spent, uint64(h2ResetBurst+h2ResetRate*int(waitTimeout/time.Second)+1))
	assert.Equal(t, st.Requests, st.Cancelled)
	served(t, ts)
	ts.atRest(t)
}

// Resets below the budget cost nothing else: the connection goes on.
func TestH2ResetsWithinBudget(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	for i := range h2ResetBurst / 2 {
		id := uint32(2*i + 1)
		c.get(id, "/slow?ms=10000")
		require.NoError(t, c.fr.WriteRSTStream(id, http2.ErrCodeCancel))
	}
	// A reset stream counts against the concurrent ones until its handler
	// has ended: some were refused. Then the connection goes on.
	eventually(t, func() bool { st := ts.Stats(); return st.Requests+st.Refused == h2ResetBurst/2 },
		"the streams were not all read")
	ts.atRest(t)
	id := uint32(h2ResetBurst + 1)
	c.get(id, "/health")
	for {
		f := c.next()
		if rst, ok := f.(*http2.RSTStreamFrame); ok && rst.StreamID < id && rst.ErrCode == http2.ErrCodeRefusedStream {
			continue
		}
		mh, ok := f.(*http2.MetaHeadersFrame)
		require.True(t, ok, "unexpected frame %v", f)
		assert.Equal(t, id, mh.StreamID)
		assert.Equal(t, "200", mh.PseudoValue("status"))
		break
	}
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
}

// head begins a header block of a GET of path in c.hb.
func (c *h2Raw) head(path string) {
	c.t.Helper()
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", path}} {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
}

// writeBlockStart writes a HEADERS frame of a GET without END_HEADERS.
func (c *h2Raw) writeBlockStart(id uint32) {
	c.t.Helper()
	c.head("/health")
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndStream: true}))
}

// A CONTINUATION flood, of many frames or of many bytes, ends the
// connection (GOAWAY(ENHANCE_YOUR_CALM)) as soon as the frame headers show
// it, never buffering more than the bound: the server reads on and drops.
func TestH2ContinuationFlood(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
	}{{"empty frames", 0}, {"large frames", h2MaxFrame}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, testMux(), Config{})
			c := dialH2(t, ts.addr)
			c.writeBlockStart(1)
			frag := make([]byte, tc.size) // zeros: indexed field 0, an HPACK error if it were decoded
			done := flood(c, 10000, func(int) error { return c.fr.WriteContinuation(1, false, frag) })
			assertCalm(t, calmed(t, c))
			recvT(t, done)
			assert.Equal(t, uint64(1), ts.Stats().Abusive)
			ts.atRest(t)
			served(t, ts)
		})
	}
}

// A header block in a few CONTINUATION frames, within the bounds, is a
// request like any other.
func TestH2ContinuationWithinBounds(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.head("/health")
	require.NoError(t, c.he.WriteField(hpack.HeaderField{Name: "x-long", Value: strings.Repeat("v", 12<<10)}))
	block := c.hb.Bytes()
	k := len(block) / 4
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:k], EndStream: true}))
	for i := 1; i < 4; i++ {
		end := (i + 1) * k
		if i == 3 {
			end = len(block)
		}
		require.NoError(t, c.fr.WriteContinuation(1, i == 3, block[i*k:end]))
	}
	c.expect(1, "200", "ok")
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
	ts.atRest(t)
}

// An HPACK bomb: a block of 12 KiB that names one 4 KiB entry of the
// dynamic table 8000 times (32 MB decoded) is answered 431 without the
// expansion being allocated (not even the fields' list: unbounded, it
// takes over 1 MiB); the block was decoded to its end, so the table is in
// step and the connection goes on.
func TestH2HPACKBomb(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	c.head("/health")
	bomb := hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)}
	for range 8000 {
		require.NoError(t, c.he.WriteField(bomb)) // the first adds it to the table, the others name it
	}
	require.Less(t, c.hb.Len(), h2MaxFrame)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.hb.Bytes(),
		EndStream: true, EndHeaders: true}))
	c.expect(1, "431", statusBody(431))
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(512<<10), "the expansion was allocated")
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
	ts.atRest(t)
}

// controlFlood sends control frames (write) until the server ends the
// connection, and never reads: the server's queue for the connection
// stays bounded, and the connection is ended with ENHANCE_YOUR_CALM;
// another client is served meanwhile.
func controlFlood(t *testing.T, write func(c *h2Raw) error) {
	// A small kernel buffer, so that the kernel does not take all the
	// client leaves unread.
	ts := startServer(t, testMux(), Config{Listen: aio.ListenConfig{Conn: aio.ConnConfig{WriteBuffer: 16 << 10}}})
	c := dialH2(t, ts.addr)
	// The frames go out a thousand to a write, for as long as the server
	// reads them: the client's receive buffer, which the kernel grows,
	// sometimes took every answer to a fixed 100,000 frames, and the
	// server never had one queued. The write deadline bounds the flood.
	var batch bytes.Buffer
	bc := &h2Raw{t: t, fr: http2.NewFramer(&batch, nil)}
	for range 1000 {
		require.NoError(t, write(bc))
	}
	done := flood(c, math.MaxInt, func(int) error { _, err := c.nc.Write(batch.Bytes()); return err })
	var most int
	deadline := time.Now().Add(waitTimeout)
	for ts.Stats().Abusive == 0 {
		require.True(t, time.Now().Before(deadline), "the connection was not ended; most queued %d", most)
		ts.anyConn(t, func(hc *h1conn) bool {
			if hc.h2 != nil {
				most = max(most, hc.c.Buffered())
			}
			return false
		})
	}
	served(t, ts)
	c.nc.Close()
	recvT(t, done)
	assert.Equal(t, uint64(1), ts.Stats().Abusive)
	assert.Less(t, most, 64<<10+17*h2MaxQueuedControl, "the control queue grew past its bound")
	t.Logf("most queued: %d bytes", most)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
	ts.atRest(t)
}

// A client that sends 100k PINGs and reads none of the answers.
func TestH2PingFlood(t *testing.T) {
	controlFlood(t, func(c *h2Raw) error { return c.fr.WritePing(false, [8]byte{1}) })
}

// A client that sends 100k SETTINGS and reads none of the answers.
func TestH2SettingsFlood(t *testing.T) {
	controlFlood(t, func(c *h2Raw) error { return c.fr.WriteSettings() })
}

// A client that grants no window (INITIAL_WINDOW_SIZE 0, no WINDOW_UPDATE)
// to many large responses: a buffered body waits as itself (no copy), a
// streamed one stops at Full, and the stall ends the connection after the
// idle timeout; another client is served meanwhile.
func TestH2ZeroWindow(t *testing.T) {
	big := make([]byte, 1<<20)
	var pumped atomic.Int64
	ts := startServer(t, hostileMux(big, &pumped), Config{IdleTimeout: 300 * time.Millisecond})
	c := openH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}))
	const n = 32
	for i := range n {
		c.get(uint32(2*i+1), "/big")
	}
	c.get(2*n+1, "/pump")
	heads := 0
	for heads < n+1 {
		if _, ok := c.next().(*http2.MetaHeadersFrame); ok {
			heads++
		}
	}
	eventually(t, func() bool { return pumped.Load() > 0 }, "the stream did not write")
	ts.onLoop(t, func() {
		for hc := ts.loopStates()[0].conns.head; hc != nil; hc = hc.links[linkAll].next {
			if hc.h2 == nil {
				continue
			}
			for _, st := range hc.h2.streams {
				if st.id <= 2*n {
					assert.Same(t, &big[0], &st.out[0], "a waiting body was copied")
				}
			}
		}
	})
	assert.LessOrEqual(t, pumped.Load(), int64(streamPendMax+16<<10), "the stream wrote past Full")
	served(t, ts)
	assert.True(t, c.eof(), "the stalled connection was not ended")
	ts.atRest(t)
	// served's client closed as it left: the loop may not have read its FIN yet.
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "connections left open: %+v", ts.Stats())
}

// Past SETTINGS_MAX_CONCURRENT_STREAMS a stream is refused with
// REFUSED_STREAM (RFC 9113 §5.1.2 allows PROTOCOL_ERROR too; REFUSED_STREAM
// tells the client that nothing was processed and it may retry), after
// its header block is decoded: the table stays in step.
func TestH2TooManyStreams(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	for i := range h2MaxStreams {
		c.get(uint32(2*i+1), "/slow?ms=10000")
	}
	eventually(t, func() bool { return ts.Stats().StreamsOpen == h2MaxStreams }, "the streams are not open")
	over := uint32(2*h2MaxStreams + 1)
	c.get(over, "/health?refused") // a new field, in both tables
	id, code := c.rst()
	assert.Equal(t, over, id)
	assert.Equal(t, http2.ErrCodeRefusedStream, code)
	assert.Equal(t, uint64(1), ts.Stats().Refused)

	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	eventually(t, func() bool { return ts.Stats().StreamsOpen == h2MaxStreams-1 }, "stream 1 is still open")
	c.get(over+2, "/health?refused") // named from the table now
	c.expect(over+2, "200", "ok")
	c.nc.Close()
	ts.atRest(t)
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
}

// Frames on the wrong stream or in the wrong state end the connection
// with GOAWAY and the code RFC 9113 gives, beyond those of
// TestH2ProtocolErrors.
func TestH2WrongStreamOrState(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	for _, tc := range []struct {
		name string
		send func(c *h2Raw) error
		code http2.ErrCode
	}{
		{"DATA on an idle stream", func(c *h2Raw) error { return c.fr.WriteData(1, true, []byte("x")) },
			http2.ErrCodeProtocol},
		{"DATA on stream 0", func(c *h2Raw) error {
			return c.fr.WriteRawFrame(http2.FrameData, http2.FlagDataEndStream, 0, []byte("x"))
		}, http2.ErrCodeProtocol},
		{"RST_STREAM on an idle stream", func(c *h2Raw) error { return c.fr.WriteRSTStream(1, http2.ErrCodeCancel) },
			http2.ErrCodeProtocol},
		{"WINDOW_UPDATE on an idle stream", func(c *h2Raw) error { return c.fr.WriteWindowUpdate(1, 1) },
			http2.ErrCodeProtocol},
		{"CONTINUATION without HEADERS", func(c *h2Raw) error { return c.fr.WriteContinuation(1, true, nil) },
			http2.ErrCodeProtocol},
		{"a PING inside a header block", func(c *h2Raw) error {
			c.writeBlockStart(1)
			return c.fr.WritePing(false, [8]byte{})
		}, http2.ErrCodeProtocol},
		{"PUSH_PROMISE from a client", func(c *h2Raw) error {
			return c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true})
		}, http2.ErrCodeProtocol},
		{"PING on a stream", func(c *h2Raw) error {
			return c.fr.WriteRawFrame(http2.FramePing, 0, 1, make([]byte, 8))
		}, http2.ErrCodeProtocol},
		{"SETTINGS on a stream", func(c *h2Raw) error {
			return c.fr.WriteRawFrame(http2.FrameSettings, 0, 1, nil)
		}, http2.ErrCodeProtocol},
		{"INITIAL_WINDOW_SIZE past 2^31-1", func(c *h2Raw) error {
			return c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31})
		}, http2.ErrCodeFlowControl},
		{"a HEADERS frame on stream 0", func(c *h2Raw) error {
			return c.fr.WriteRawFrame(http2.FrameHeaders, http2.FlagHeadersEndHeaders, 0, []byte{0x82})
		}, http2.ErrCodeProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialH2(t, ts.addr)
			require.NoError(t, tc.send(c))
			ga, ok := c.next().(*http2.GoAwayFrame)
			require.True(t, ok, "no GOAWAY")
			assert.Equal(t, tc.code, ga.ErrCode)
			assert.True(t, c.eof())
		})
	}
	ts.atRest(t)
	assert.Equal(t, uint64(0), ts.Stats().Abusive)
}

// A stalled stream reset by its client no longer holds the connection to
// the stall's timeout: a stream beside it, whose handler takes longer,
// is still answered.
func TestH2StallEndsWithItsStream(t *testing.T) {
	p := newProbe()
	m := p.mux()
	big := make([]byte, 1<<20)
	m.HandleFunc("GET /big", func(r *Request) Reply { return Bytes(200, big) })
	const idle = 100 * time.Millisecond
	ts := startServer(t, m, Config{IdleTimeout: idle})
	c := openH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}))
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	c.get(3, "/big")
	f := c.next()
	if _, ok := f.(*http2.SettingsFrame); ok {
		f = c.next() // the server's SETTINGS came first
	}
	mh, ok := f.(*http2.MetaHeadersFrame)
	require.True(t, ok && mh.StreamID == 3, "no response head for stream 3: %v", f)
	require.NoError(t, c.fr.WriteRSTStream(3, http2.ErrCodeCancel))
	eventually(t, func() bool { return ts.Stats().StreamsOpen == 1 }, "stream 3 is still open")
	time.Sleep(3 * idle) // what must not happen: the stall's timeout closing the connection
	require.True(t, pr.Resolve(TextResponse(200, "done")))
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 16}))
	c.expect(1, "200", "done")
	ts.atRest(t)
}

// A header block left unfinished (HEADERS without END_HEADERS, then
// nothing) is a request head being sent: HeaderTimeout bounds it, as it
// bounds an HTTP/1.1 head, not IdleTimeout (an hour here). The connection
// gets GOAWAY and closes. One finished in time is served, and the
// connection goes back to its idle timeout.
func TestH2UnfinishedHeaderBlockTimesOut(t *testing.T) {
	ts := startServer(t, testMux(), Config{HeaderTimeout: 200 * time.Millisecond, IdleTimeout: time.Hour})
	c := dialH2(t, ts.addr)
	c.get(1, "/health")
	c.expect(1, "200", "ok")
	c.head("/health")
	half := len(c.hb.Bytes()) / 2
	block := bytes.Clone(c.hb.Bytes())
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block[:half], EndStream: true}))
	require.NoError(t, c.fr.WriteContinuation(3, true, block[half:]))
	c.expect(3, "200", "ok")
	c.writeBlockStart(5) // and nothing more
	assert.True(t, c.eof(), "the unfinished head holds the connection")
	require.NoError(t, c.nc.Close()) // ends the lingering close at once
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
}

// A client that has sent the preface and no SETTINGS has not finished
// beginning: HeaderTimeout bounds the wait for them, as it bounds an
// HTTP/1.1 head, not IdleTimeout (an hour here); x/net's server allows
// 2 s. Once they arrive, the connection is on its idle timeout.
func TestH2PrefaceWithoutSettingsTimesOut(t *testing.T) {
	const head = 200 * time.Millisecond
	ts := startServer(t, testMux(), Config{HeaderTimeout: head, IdleTimeout: time.Hour})
	c := openH2(t, ts.addr) // the preface, and nothing more
	assert.True(t, c.eof(), "a preface without SETTINGS holds the connection")
	require.NoError(t, c.nc.Close())

	// Its SETTINGS and a header block begun, read at once: the block's
	// bound goes on (it runs from the preface).
	c = openH2(t, ts.addr)
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	require.NoError(t, fr.WriteSettings())
	c.head("/health")
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.hb.Bytes(), EndStream: true}))
	_, err := c.nc.Write(b.Bytes())
	require.NoError(t, err)
	assert.True(t, c.eof(), "an unfinished head after the SETTINGS holds the connection")
	require.NoError(t, c.nc.Close())

	c = dialH2(t, ts.addr)
	require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(3*head)))
	assert.False(t, c.eof(), "the connection ended though its client's SETTINGS came")
	require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(waitTimeout)))
	c.get(1, "/health")
	c.expect(1, "200", "ok")
	require.NoError(t, c.nc.Close())
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "a connection is still open")
}

// pendingH2 serves with HeaderTimeout head (and an hour's IdleTimeout) and
// opens an HTTP/2 connection whose stream 1 waits for the promise it
// returns.
func pendingH2(t *testing.T, head time.Duration) (*testServer, *h2Raw, *aio.Promise[Response]) {
	t.Helper()
	p := newProbe()
	ts := startServer(t, p.mux(), Config{HeaderTimeout: head, IdleTimeout: time.Hour})
	c := dialH2(t, ts.addr)
	c.get(1, "/promise")
	return ts, c, recvT(t, p.promises)
}

// An unfinished header block stays under HeaderTimeout when another
// stream of the connection ends meanwhile (its end used to put the
// connection back on IdleTimeout, an hour here).
func TestH2UnfinishedBlockAfterAStreamEnds(t *testing.T) {
	ts, c, pr := pendingH2(t, 200*time.Millisecond)
	c.writeBlockStart(3) // and nothing more
	eventually(t, func() bool {
		return ts.anyConn(t, func(hc *h1conn) bool { return hc.h2 != nil && hc.h2.headTimed })
	}, "the block is not timed")
	require.True(t, pr.Resolve(TextResponse(200, "done")))
	c.expect(1, "200", "done")
	require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(3*time.Second)))
	assert.True(t, c.eof(), "the unfinished block held the connection past HeaderTimeout (3 s > 200 ms)")
}

// A header block begun before Shutdown's final GOAWAY and finished after
// it (its stream refused) takes the connection off HeaderTimeout: the
// stream already open finishes, as Shutdown lets it, however long after.
func TestH2BlockFinishedAfterFinalGoAway(t *testing.T) {
	ts, c, pr := pendingH2(t, 1500*time.Millisecond)
	c.head("/health")
	block := bytes.Clone(c.hb.Bytes())
	half := len(block) / 2
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block[:half], EndStream: true}))
	eventually(t, func() bool {
		return ts.anyConn(t, func(hc *h1conn) bool { return hc.h2 != nil && hc.h2.headTimed })
	}, "the block is not timed")
	done := shutdownInBackground(ts)
	c.goAway(1<<31 - 1)
	c.goAway(1) // after h2GoAwayWait (the PING is not answered: split holds it)
	require.NoError(t, c.fr.WriteContinuation(3, true, block[half:]))
	id, code := c.rst()
	assert.Equal(t, uint32(3), id)
	assert.Equal(t, http2.ErrCodeRefusedStream, code)
	var inHeadQ bool
	ts.onLoop(t, func() {
		for hc := ts.loopStates()[0].conns.head; hc != nil; hc = hc.links[linkAll].next {
			inHeadQ = inHeadQ || hc.links[linkTime].in == &hc.ls.headQ
		}
	})
	assert.False(t, inHeadQ, "the finished block left the connection under HeaderTimeout")
	time.Sleep(1500 * time.Millisecond) // a bounded negative check: past HeaderTimeout from the HEADERS
	require.True(t, pr.Resolve(TextResponse(200, "finished")))
	c.expect(1, "200", "finished") // Shutdown lets stream 1 finish
	require.NoError(t, c.nc.Close())
	require.NoError(t, recvT(t, done))
	assert.Equal(t, uint64(0), ts.Stats().Cancelled)
}

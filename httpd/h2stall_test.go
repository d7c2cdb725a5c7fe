package httpd

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// Window stalls (h2stall.go): a response held by a window the client
// keeps shut is given up after Config.WriteTimeout, while the client
// reads the connection and answers everything.

// stallWT is the write timeout of these tests.
const stallWT = 200 * time.Millisecond

// stallMux is floodMux (/flood: a Stream that writes while it is not
// Full and never ends) with /health and /body, a buffered body of
// stallBig (a pattern, so that a byte out of place shows).
func stallMux() *Mux {
	m := floodMux()
	m.HandleFunc("GET /health", func(r *Request) Reply { return Text(200, "ok") })
	m.HandleFunc("GET /body", func(r *Request) Reply { return Bytes(200, stallBig) })
	return m
}

var stallBig = func() []byte {
	b := make([]byte, 256<<10)
	for i := range b {
		b[i] = byte(i*7 + i>>9)
	}
	return b
}()

// stallClient connects with SETTINGS_INITIAL_WINDOW_SIZE init (the
// connection window stays the default 65535 until the test opens it).
func stallClient(t *testing.T, ts *testServer, init uint32) *h2Raw {
	t.Helper()
	c := openH2(t, ts.addr)
	require.NoError(t, c.nc.SetDeadline(time.Now().Add(5*time.Second)))
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: init}))
	return c
}

// resets reads frames until every stream of ids was reset, and returns
// their codes; the DATA read meanwhile is counted in *data.
func (c *h2Raw) resets(data *int, ids ...uint32) map[uint32]http2.ErrCode {
	c.t.Helper()
	codes := make(map[uint32]http2.ErrCode)
	for len(codes) < len(ids) {
		switch f := c.next().(type) {
		case *http2.RSTStreamFrame:
			codes[f.StreamID] = f.ErrCode
		case *http2.DataFrame:
			*data += len(f.Data())
		case *http2.GoAwayFrame:
			c.t.Fatalf("GOAWAY %v", f.ErrCode)
		}
	}
	return codes
}

// A client that keeps its streams' windows shut (INITIAL_WINDOW_SIZE 0)
// while it reads and answers everything: each stream holding bytes, a
// buffered body or a Stream paused by Full, is reset with CANCEL after
// WriteTimeout, the Stream's handler is cancelled, every arena comes
// back; the connection goes on, serving a stream that is granted a
// window, and is not counted a write timeout.
func TestH2StreamWindowStall(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	fds := fdCount()
	c := stallClient(t, ts, 0)
	start := time.Now()
	c.get(1, "/flood")
	c.get(3, "/body")
	var data int
	codes := c.resets(&data, 1, 3)
	took := time.Since(start)
	assert.Equal(t, map[uint32]http2.ErrCode{1: http2.ErrCodeCancel, 3: http2.ErrCodeCancel}, codes)
	assert.Zero(t, data, "DATA went through a shut window")
	assert.GreaterOrEqual(t, took, stallWT)
	t.Logf("reset after %v (WriteTimeout %v)", took, stallWT)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled, "the Stream's handler")
	assert.Equal(t, uint64(2), st.ResponsesSuppressed)
	assert.Equal(t, uint64(2), st.WindowStalls)
	assert.Zero(t, st.WriteTimeouts)
	assert.Equal(t, int64(1), st.ConnsOpen)

	c.get(5, "/health")
	require.NoError(t, c.fr.WriteWindowUpdate(5, 1024))
	c.expect(5, "200", "ok")
	c.nc.Close()
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
	ts.atRest(t)
	if fds >= 0 {
		eventually(t, func() bool { return fdCount() <= fds }, "fds: %d, was %d", fdCount(), fds)
	}
}

// A client that opens its streams' windows wide but never the
// connection's: once the first 65535 bytes are out, the connection is
// what stalls: GOAWAY(CANCEL) and the connection closes after
// WriteTimeout, its handlers cancelled, counted in Stats.WriteTimeouts.
func TestH2ConnWindowStall(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 1<<30)
	c.get(1, "/body")
	c.get(3, "/flood")
	data := 0
	code := http2.ErrCode(1 << 31)
	for code == 1<<31 {
		switch f := c.next().(type) {
		case *http2.DataFrame:
			data += len(f.Data())
		case *http2.GoAwayFrame:
			code = f.ErrCode
		case *http2.RSTStreamFrame:
			t.Fatalf("RST_STREAM %v on %d", f.ErrCode, f.StreamID)
		}
	}
	assert.Equal(t, http2.ErrCodeCancel, code)
	assert.Equal(t, h2DefaultWindow, data, "the connection window, all of it")
	assert.True(t, c.eof(), "the connection was not closed")
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.WriteTimeouts)
	assert.Zero(t, st.WindowStalls, "the connection stalled, not a stream")
	assert.Equal(t, uint64(1), st.Cancelled, "the Stream's handler")
	assert.Zero(t, st.Abusive)
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
}

// A connection window's stall is timed from when the streams it holds
// began to wait: a stream that waits after the client reset the one
// that had waited most of WriteTimeout gets the whole WriteTimeout.
func TestH2ConnWindowStallRestartsForNewStream(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 1<<30)
	c.get(1, "/body")
	for data := 0; data < h2DefaultWindow; {
		if f, ok := c.next().(*http2.DataFrame); ok {
			data += len(f.Data())
		}
	}
	time.Sleep(stallWT * 3 / 4) // most of stream 1's wait: the scenario, not a synchronisation
	require.NoError(t, c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	start := time.Now()
	c.get(3, "/body")
	for {
		f := c.next()
		if g, ok := f.(*http2.GoAwayFrame); ok {
			assert.Equal(t, http2.ErrCodeCancel, g.ErrCode)
			break
		}
		_, isData := f.(*http2.DataFrame)
		require.False(t, isData, "DATA through a shut connection window")
	}
	assert.GreaterOrEqual(t, time.Since(start), stallWT, "stream 3 was cut before its own WriteTimeout")
	ts.atRest(t)
	assert.Equal(t, uint64(1), ts.Stats().WriteTimeouts)
}

// noReset is pace's code when the stream was not reset.
const noReset = http2.ErrCode(1 << 31)

// pace opens the window of stream 1 and the connection's by step every
// 50 ms (a quarter of WriteTimeout) and reads what each opening lets
// through, until the body has all come or the stream is reset; it
// returns the body and the reset's code (noReset: none).
func (c *h2Raw) pace(step int) ([]byte, http2.ErrCode) {
	c.t.Helper()
	var body []byte
	for {
		time.Sleep(stallWT / 4) // the client's pace, not a synchronisation
		require.NoError(c.t, c.fr.WriteWindowUpdate(1, uint32(step)))
		require.NoError(c.t, c.fr.WriteWindowUpdate(0, uint32(step)))
		for want := len(body) + step; len(body) < want; {
			switch f := c.next().(type) {
			case *http2.DataFrame:
				body = append(body, f.Data()...)
				if f.StreamEnded() {
					return body, noReset
				}
			case *http2.RSTStreamFrame:
				return body, f.ErrCode
			case *http2.GoAwayFrame:
				c.t.Fatalf("GOAWAY %v", f.ErrCode)
			}
		}
	}
}

// A client that opens its windows slowly but steadily, a frame's worth
// every quarter of WriteTimeout, receives the whole body byte-exact: the
// stall's clock restarts at each opening.
func TestH2SlowWindowNotCut(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 0)
	c.get(1, "/body")
	start := time.Now()
	body, code := c.pace(h2StallMin)
	assert.Equal(t, noReset, code, "the stream was reset")
	assert.True(t, bytes.Equal(stallBig, body), "the body differs (%d bytes)", len(body))
	assert.Greater(t, time.Since(start), 3*stallWT, "the test did not pace")
	ts.atRest(t)
	assert.Zero(t, ts.Stats().WriteTimeouts)
	assert.Zero(t, ts.Stats().Cancelled)
}

// A dribble, a few bytes of window at a time, is not progress: the
// stream is reset once the openings do not add up to a frame's worth in
// WriteTimeout, although the client never stopped opening.
func TestH2WindowDribbleCut(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 0)
	c.get(1, "/body")
	body, code := c.pace(100)
	assert.Equal(t, http2.ErrCodeCancel, code)
	assert.Less(t, len(body), h2StallMin)
	assert.True(t, bytes.Equal(stallBig[:len(body)], body), "the body differs")
	ts.atRest(t)
	assert.Zero(t, ts.Stats().WriteTimeouts)
}

// A window opened and shut again before anything could go through it is
// no progress: a client that sends, again and again, one SETTINGS frame
// that raises INITIAL_WINDOW_SIZE and lowers it back is cut as one that
// never opens.
func TestH2WindowSeesawCut(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 0)
	c.get(1, "/body")
	stop, stopped := make(chan struct{}), make(chan error, 1)
	go func() {
		tick := time.NewTicker(stallWT / 4) // the client's pace, not a synchronisation
		defer tick.Stop()
		for {
			select {
			case <-stop:
				stopped <- nil
				return
			case <-tick.C:
			}
			err := c.fr.WriteSettings(
				http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StallMin},
				http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			if err != nil {
				stopped <- err
				return
			}
		}
	}()
	var data int
	codes := c.resets(&data, 1)
	close(stop)
	require.NoError(t, recvT(t, stopped))
	assert.Equal(t, http2.ErrCodeCancel, codes[1])
	assert.Zero(t, data, "DATA went through a window never open between frames")
	ts.atRest(t)
}

// While one stream is stalled on its own window, and after it is reset,
// the other streams of the connection are served.
func TestH2StallBesideServed(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: stallWT})
	c := stallClient(t, ts, 0)
	c.get(1, "/flood")
	reset := false
	served, after := 0, 0
	deadline := time.Now().Add(5 * time.Second)
	for id := uint32(3); !reset || after < 3; id += 2 {
		require.True(t, time.Now().Before(deadline), "stream 1 was not reset")
		c.get(id, "/health")
		require.NoError(t, c.fr.WriteWindowUpdate(id, 1024))
		var body []byte
		for done := false; !done; {
			switch f := c.next().(type) {
			case *http2.RSTStreamFrame:
				require.Equal(t, uint32(1), f.StreamID)
				assert.Equal(t, http2.ErrCodeCancel, f.ErrCode)
				reset = true
			case *http2.DataFrame:
				require.Equal(t, id, f.StreamID)
				body = append(body, f.Data()...)
				done = f.StreamEnded()
			case *http2.SettingsFrame: // the server's
			case *http2.MetaHeadersFrame:
				if f.StreamID != 1 {
					require.Equal(t, id, f.StreamID)
					assert.Equal(t, "200", f.PseudoValue("status"))
				}
			default:
				t.Fatalf("unexpected frame %v", f)
			}
		}
		assert.Equal(t, "ok", string(body))
		if served++; reset {
			after++
		}
		time.Sleep(stallWT / 4) // the client's pace: streams before and after the reset
	}
	assert.Greater(t, served, after, "no stream was served while stream 1 was stalled")
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled)
	assert.Zero(t, st.WriteTimeouts)
}

// stalledHead reads the head of stream 1's response, whose body waits
// for the window.
func (c *h2Raw) stalledHead() {
	c.t.Helper()
	f := c.next()
	if _, ok := f.(*http2.SettingsFrame); ok {
		f = c.next() // the server's SETTINGS came first
	}
	mh, ok := f.(*http2.MetaHeadersFrame)
	require.True(c.t, ok && mh.StreamID == 1 && !mh.StreamEnded(), "no response head: %v", f)
}

// openForBody opens the windows for stallBig and reads it, byte-exact,
// on stream 1.
func (c *h2Raw) openForBody() {
	c.t.Helper()
	require.NoError(c.t, c.fr.WriteWindowUpdate(1, uint32(len(stallBig))))
	require.NoError(c.t, c.fr.WriteWindowUpdate(0, uint32(len(stallBig))))
	var body []byte
	for {
		f, ok := c.next().(*http2.DataFrame)
		require.True(c.t, ok, "not DATA: %v", f)
		body = append(body, f.Data()...)
		if f.StreamEnded() {
			break
		}
	}
	require.True(c.t, bytes.Equal(stallBig, body), "the body differs (%d bytes)", len(body))
}

// A negative WriteTimeout times no stall either: the stream waits for
// its window (IdleTimeout's stall bound, h2limits.go, is what is left).
func TestH2StallNoWriteTimeout(t *testing.T) {
	ts := startServer(t, stallMux(), Config{WriteTimeout: -1})
	c := stallClient(t, ts, 0)
	c.get(1, "/body")
	c.stalledHead()
	time.Sleep(3 * stallWT) // what must not happen: a reset
	c.openForBody()
	ts.atRest(t)
}

// A stall that ended leaves its timer armed (lazily) until its deadline;
// the connection's lingering close does not wait for it: Shutdown
// returns as soon as the client has read its response and closed, not a
// WriteTimeout (the default 30 s, past the test's bound) later.
func TestH2StallTimerLeavesShutdown(t *testing.T) {
	ts := startServer(t, stallMux(), Config{})
	c := stallClient(t, ts, 0)
	c.get(1, "/body")
	c.stalledHead() // the body waits for the window: the timer is armed
	c.openForBody()
	done := shutdownInBackground(ts)
	assert.True(t, c.eof(), "the connection was not ended")
	require.NoError(t, c.nc.Close())
	require.NoError(t, recvT(t, done))
	ts.atRest(t)
}

package httpd

import (
	"bufio"
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// holder keeps what its handlers leave pending, for the test to end on
// the loop (ts.onLoop): the promises of /hold and the Streams of /tick.
type holder struct {
	promises []*aio.Promise[Response] // owned by the loop
	streams  []*Stream                // owned by the loop
}

func (ho *holder) mux() *Mux {
	m := testMux()
	m.HandleFunc("GET /hold", func(r *Request) Reply {
		pr := aio.NewPromise[Response](r.Loop())
		ho.promises = append(ho.promises, pr)
		return Later(pr.Handle())
	})
	// /tick: server-sent events, each written when the test says.
	m.HandleFunc("GET /tick", func(r *Request) Reply {
		s := r.Stream(200, []Field{{"Content-Type", "text/event-stream"}})
		ho.streams = append(ho.streams, s)
		return s.Reply()
	})
	return m
}

// Thousands of requests on one connection, as many streams open at a time
// as SETTINGS_MAX_CONCURRENT_STREAMS allows: a raw client opens a new
// stream each time one ends, handlers answering at once and on timers
// interleaved. (x/net's Transport, holding to the limit with
// StrictMaxConcurrentStreams, stalls at a few hundred concurrent
// requests, against net/http's server too: it cannot drive this.)
func TestH2ThousandsOfStreams(t *testing.T) {
	const n = 2000
	ts := startServer(t, testMux(), Config{})
	c := dialH2(t, ts.addr)
	want := map[uint32]string{}
	open := func(i int) {
		id := uint32(2*i + 1)
		if i%2 == 0 {
			c.get(id, "/users/"+itoa(i))
			want[id] = `{"id":"` + itoa(i) + `"}`
		} else {
			c.get(id, "/slow?ms="+itoa(i%3))
			want[id] = "waited " + itoa(i%3) + " ms"
		}
	}
	sent := 0
	for ; sent < h2MaxStreams; sent++ {
		open(sent)
	}
	got := map[uint32]string{}
	for done := 0; done < n; {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			require.Equal(t, "200", f.PseudoValue("status"), "stream %d", f.StreamID)
			require.False(t, f.StreamEnded())
		case *http2.DataFrame:
			got[f.StreamID] += string(f.Data())
			if !f.StreamEnded() {
				continue
			}
			require.Equal(t, want[f.StreamID], got[f.StreamID], "stream %d", f.StreamID)
			delete(want, f.StreamID)
			done++
			if sent < n {
				open(sent)
				sent++
			}
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, int64(1), st.ConnsOpen, "all on one connection")
	assert.Equal(t, uint64(n), st.Requests)
	assert.Zero(t, st.Refused)
}

// A client past SETTINGS_MAX_CONCURRENT_STREAMS: h2MaxStreams+700
// streams opened at once on one connection, whose handlers all wait. The
// first h2MaxStreams are served, the others refused (REFUSED_STREAM) and
// counted; every header block is decoded, the connection goes on, and
// once the held ones are answered everything is back. (700 refusals stay
// within the reset budget of h2limits.go; a client going on past it is
// told to calm down: TestH2RapidReset.)
func TestH2StreamsPastTheLimit(t *testing.T) {
	const n = h2MaxStreams + 700
	ho := &holder{}
	ts := startServer(t, ho.mux(), Config{})
	c := dialH2(t, ts.addr)
	for i := range n {
		c.get(uint32(2*i+1), "/hold")
	}
	refused := map[uint32]bool{}
	for len(refused) < n-h2MaxStreams {
		id, code := c.rst()
		assert.Equal(t, http2.ErrCodeRefusedStream, code)
		assert.Greater(t, id, uint32(2*h2MaxStreams-1))
		refused[id] = true
	}
	assert.Equal(t, uint64(n-h2MaxStreams), ts.Stats().Refused)
	ts.onLoop(t, func() {
		assert.Len(t, ho.promises, h2MaxStreams)
		for i, pr := range ho.promises {
			pr.Resolve(TextResponse(200, itoa(i)))
		}
	})
	ended := map[uint32]string{}
	for len(ended) < h2MaxStreams {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			assert.Equal(t, "200", f.PseudoValue("status"))
		case *http2.DataFrame:
			ended[f.StreamID] += string(f.Data())
			require.True(t, f.StreamEnded(), "a short body comes in one frame")
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	for i := range h2MaxStreams {
		assert.Equal(t, itoa(i), ended[uint32(2*i+1)])
	}
	c.get(2*n+1, "/health") // the connection goes on
	c.expect(2*n+1, "200", "ok")
	ts.atRest(t)
	assert.Equal(t, int64(1), ts.Stats().ConnsOpen)
}

// A streamed response (server-sent events) over HTTP/2: each event
// reaches the client when it is written, not at the end; the client
// going away mid-stream (RST_STREAM) cancels the stream's handler, and
// its arena comes back.
func TestH2EventsStreamed(t *testing.T) {
	ho := &holder{}
	ts := startServer(t, ho.mux(), Config{})
	c := h2Client(t)
	resp, err := c.Get(ts.url + "/tick")
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	rd := bufio.NewReader(resp.Body)
	for i := range 20 {
		ts.onLoop(t, func() {
			_, err := ho.streams[0].WriteString("data: " + itoa(i) + "\n\n")
			assert.NoError(t, err)
		})
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "data: "+itoa(i)+"\n", line)
		_, err = rd.ReadString('\n')
		require.NoError(t, err)
	}
	require.NoError(t, resp.Body.Close()) // RST_STREAM(CANCEL)
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled)
	assert.Equal(t, int64(1), st.ConnsOpen)
}

// A Stream written the documented way (while not Full, then on from
// OnDrain) runs to its end when what makes it Full is the connection's
// write queue, its own bytes all handed over: a client with windows that
// never bind, reading late, gets the whole body. (The queue's drain
// called back only the streams holding DATA of their own, so this one's
// OnDrain never ran and the download stalled for good.)
func TestH2StreamOnDrainAfterAFullQueue(t *testing.T) {
	const total = 16 << 20  // more than the kernel's buffers hold
	var pauses atomic.Int64 // times the writer found the stream Full; any goroutine
	m := testMux()
	m.HandleFunc("GET /drip", func(r *Request) Reply {
		s := r.Stream(200, nil)
		chunk := make([]byte, 1<<10) // small: each is sent whole at once
		sent := 0
		write := func() {
			for sent < total && !s.Full() {
				_, _ = s.Write(chunk)
				sent += len(chunk)
			}
			if sent == total {
				s.End()
			} else {
				pauses.Add(1)
			}
		}
		s.OnDrain(write)
		write()
		return s.Reply()
	})
	ts := startServer(t, m, Config{})
	c := dialH2(t, ts.addr)
	c.openWindows()
	c.get(1, "/drip")
	eventually(t, func() bool { return pauses.Load() > 0 }, "the stream never got Full")
	assert.Equal(t, total, c.download(1, 0))
	ts.atRest(t)
}

// openWindows opens the client's windows, the connection's and the
// streams', far past any body: only the server's pace holds DATA back.
func (c *h2Raw) openWindows() {
	c.t.Helper()
	require.NoError(c.t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}))
	require.NoError(c.t, c.fr.WriteWindowUpdate(0, 1<<30))
}

// download reads the response of stream id to its END_STREAM, pausing
// pace after each DATA frame (a slow reader), and returns the body's
// length.
func (c *h2Raw) download(id uint32, pace time.Duration) int {
	c.t.Helper()
	got := 0
	for ended := false; !ended; {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
		case *http2.DataFrame:
			require.Equal(c.t, id, f.StreamID)
			got += len(f.Data())
			ended = f.StreamEnded()
			time.Sleep(pace)
		default:
			c.t.Fatalf("unexpected frame %v after %d bytes", f, got)
		}
	}
	return got
}

// DATA frames stay within 16 KiB whatever SETTINGS_MAX_FRAME_SIZE the
// client allows: the write queue's bound is checked between frames, and a
// client that allowed 16 MiB frames and windows, and read nothing, had
// about 10 MiB queued per connection instead of the 256 KiB
// (aio.DefaultHighWater) it may hold.
func TestH2DataFramesOf16KiB(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	m := testMux()
	m.HandleFunc("GET /big", func(r *Request) Reply { return Bytes(200, big) })
	ts := startServer(t, m, Config{})
	c := openH2(t, ts.addr)
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1<<24 - 1},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2MaxWindow}))
	require.NoError(t, c.fr.WriteWindowUpdate(0, h2MaxWindow-h2DefaultWindow))
	c.get(1, "/big")
	var got int
	for got < len(big) {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame, *http2.SettingsFrame:
		case *http2.DataFrame:
			require.LessOrEqual(t, len(f.Data()), h2DefaultFrame)
			got += len(f.Data())
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	ts.atRest(t)
}

package httpd

import (
	"bytes"
	"hash/crc32"
	"io"
	"net/http"
	"runtime"
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

// h2Huge is a 64 MiB response body (a pattern, shared: Bytes sends a view).
var h2Huge = bytes.Repeat([]byte("0123456789abcdef"), 4<<20)

func h2HugeMux() *Mux {
	m := testMux()
	m.HandleFunc("GET /huge", func(r *Request) Reply { return Bytes(200, h2Huge) })
	return m
}

// A large response does not starve a small one on the same connection:
// streams take turns of at most h2TurnMax, and one that had its turn
// waits behind those that have not (sendWaiting), so stream 3's two bytes
// go out long before stream 1's 64 MiB, to a client that reads as fast as
// the server writes or to one the kernel holds back.
func TestH2LargeResponseTakesTurns(t *testing.T) {
	ts := startServer(t, h2HugeMux(), Config{})
	c := dialH2(t, ts.addr)
	c.openWindows()
	c.get(1, "/huge")
	// wait for stream 1's DATA to flow
	for {
		if df, ok := c.next().(*http2.DataFrame); ok && df.StreamID == 1 {
			break
		}
	}
	c.get(3, "/health")
	var big int
	var body3 []byte
	for done3 := false; !done3; {
		switch f := c.next().(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == 3 && f.StreamEnded() {
				done3 = true
			}
		case *http2.DataFrame:
			if f.StreamID == 1 {
				big += len(f.Data())
				require.False(t, f.StreamEnded(), "stream 1 ended (%d bytes) before stream 3's DATA", big)
			} else {
				body3 = append(body3, f.Data()...)
				done3 = f.StreamEnded()
			}
		case *http2.SettingsFrame:
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	assert.Equal(t, "ok", string(body3))
	// What the client reads of stream 1 first includes what the kernel
	// buffers hold on both ends (autotuned to megabytes on loopback), not
	// only the server's turns: a quarter of the body is far above that,
	// and far below the whole body that went first without turns.
	assert.Less(t, big, len(h2Huge)/4, "stream 3 waited for %d bytes of stream 1", big)
	c.nc.Close()
	ts.atRest(t)
}

// A stream's own WINDOW_UPDATE does not give it a turn out of order: two
// 64 MiB responses share the connection about evenly although the client
// opens stream 1's window again after each of its DATA frames (with
// windows far past the bodies, so the updates change nothing but when the
// server looks at stream 1). Sent at once, each update gave stream 1
// another turn ahead of stream 3's, which got a tenth.
func TestH2WindowUpdateKeepsTurns(t *testing.T) {
	ts := startServer(t, h2HugeMux(), Config{})
	c := dialH2(t, ts.addr)
	c.openWindows()
	c.get(1, "/huge")
	c.get(3, "/huge")
	got := map[uint32]int{}
	const total = 32 << 20
	for got[1]+got[3] < total {
		if df, ok := c.next().(*http2.DataFrame); ok {
			got[df.StreamID] += len(df.Data())
			if df.StreamID == 1 {
				require.NoError(t, c.fr.WriteWindowUpdate(1, 1))
			}
		}
	}
	assert.Greater(t, got[3], total/4, "stream 1 %d B, stream 3 %d B", got[1], got[3])
	assert.Greater(t, got[1], total/4, "stream 1 %d B, stream 3 %d B", got[1], got[3])
	c.nc.Close()
	ts.atRest(t)
}

// h2HoldMux: POST /hold never reads its body and never answers (until
// cancelled); GET /body is stallBig.
func h2HoldMux(cancelled *atomic.Int64) *Mux {
	m := h2HugeMux()
	m.HandleFunc("POST /hold", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		h := p.Handle()
		h.OnCancel(func() { cancelled.Add(1) })
		return Later(h)
	})
	m.HandleFunc("GET /hold", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		return Later(p.Handle())
	})
	m.HandleFunc("GET /body", func(r *Request) Reply { return Bytes(200, stallBig) })
	return m
}

// Flow-control errors and limits on a stream: each resets the stream
// alone, and the connection goes on.
func TestH2FlowControlStreamErrors(t *testing.T) {
	var cancelled atomic.Int64
	ts := startServer(t, h2HoldMux(&cancelled), Config{})

	t.Run("window update past 2^31-1", func(t *testing.T) {
		c := dialH2(t, ts.addr)
		c.open(1, "GET", "/hold", true)
		require.NoError(t, c.fr.WriteWindowUpdate(1, h2MaxWindow))
		c.expectReset(1, http2.ErrCodeFlowControl)
		c.stillServes(3)
	})
	t.Run("window update of 0 on an open stream", func(t *testing.T) {
		c := dialH2(t, ts.addr)
		c.open(1, "GET", "/hold", true)
		c.fr.AllowIllegalWrites = true
		require.NoError(t, c.fr.WriteWindowUpdate(1, 0))
		c.expectReset(1, http2.ErrCodeProtocol)
		c.stillServes(3)
	})
	t.Run("DATA past the stream window", func(t *testing.T) {
		c := dialH2(t, ts.addr)
		c.postHead(1, "/hold", 1<<20)
		for sent := 0; sent < h2StreamWindow; {
			n := min(16384, h2StreamWindow-sent)
			require.NoError(t, c.fr.WriteData(1, false, make([]byte, n)))
			sent += n
		}
		c.quiet() // the window is full, not overrun: no reset
		require.NoError(t, c.fr.WriteData(1, false, []byte{1}))
		c.expectReset(1, http2.ErrCodeFlowControl)
		c.stillServes(3)
	})
	t.Run("padding counts and is given back", func(t *testing.T) {
		c := dialH2(t, ts.addr)
		c.postHead(1, "/hold", 1<<20)
		pad := make([]byte, 255)
		for range 4 {
			require.NoError(t, c.fr.WriteDataPadded(1, false, make([]byte, 16000), pad))
		}
		require.NoError(t, c.fr.WriteData(1, false, make([]byte, h2StreamWindow-4*16256)))
		// the window is 0; the padding (4*256) is given back
		credited := 0
		require.NoError(t, c.nc.SetReadDeadline(time.Now().Add(time.Second)))
		for credited < 4*256 {
			f, err := c.fr.ReadFrame()
			require.NoError(t, err, "credited %d", credited)
			if wu, ok := f.(*http2.WindowUpdateFrame); ok && wu.StreamID == 1 {
				credited += int(wu.Increment)
			}
		}
		require.NoError(t, c.nc.SetReadDeadline(time.Time{}))
		assert.Equal(t, 4*256, credited)
		require.NoError(t, c.fr.WriteData(1, false, make([]byte, credited)))
		c.quiet() // the window is full, not overrun: no reset
		require.NoError(t, c.fr.WriteData(1, false, []byte{1}))
		c.expectReset(1, http2.ErrCodeFlowControl)
		c.nc.Close()
	})
	ts.atRest(t)
	assert.Equal(t, int64(2), cancelled.Load())
}

// SETTINGS_INITIAL_WINDOW_SIZE moved down while DATA is in flight makes
// the stream window negative (RFC 9113 §6.9.2): nothing goes until
// WINDOW_UPDATEs bring it above 0, then exactly what is open goes, and
// the body arrives byte-exact.
func TestH2NegativeWindow(t *testing.T) {
	var cancelled atomic.Int64
	ts := startServer(t, h2HoldMux(&cancelled), Config{})
	c := dialH2(t, ts.addr)
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<30))
	c.get(1, "/body")
	var got []byte
	readN := func(n int) {
		t.Helper()
		for len(got) < n {
			switch f := c.next().(type) {
			case *http2.MetaHeadersFrame:
			case *http2.DataFrame:
				got = append(got, f.Data()...)
			case *http2.SettingsFrame:
			default:
				t.Fatalf("unexpected frame %v", f)
			}
		}
		require.Equal(t, n, len(got))
	}
	readN(h2DefaultWindow)
	iw := func(v uint32) http2.Setting { return http2.Setting{ID: http2.SettingInitialWindowSize, Val: v} }
	require.NoError(t, c.fr.WriteSettings(iw(0))) // window: -65535
	c.quiet()
	require.NoError(t, c.fr.WriteWindowUpdate(1, h2DefaultWindow)) // 0
	c.quiet()
	require.NoError(t, c.fr.WriteWindowUpdate(1, 100)) // 100
	readN(h2DefaultWindow + 100)
	c.quiet()
	require.NoError(t, c.fr.WriteSettings(iw(1000))) // +1000
	readN(h2DefaultWindow + 1100)
	c.quiet()
	require.NoError(t, c.fr.WriteSettings(iw(500)))    // -500
	require.NoError(t, c.fr.WriteWindowUpdate(1, 400)) // -100
	c.quiet()
	require.NoError(t, c.fr.WriteSettings(iw(1<<30)))
	readN(len(stallBig))
	assert.True(t, bytes.Equal(stallBig, got), "the body is not byte-exact")
	ts.atRest(t)
}

// fcPattern yields n bytes of a pattern that depends on the offset.
type fcPattern struct{ off, n int64 }

func (p *fcPattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	k := min(int64(len(b)), p.n-p.off)
	for i := range b[:k] {
		o := p.off + int64(i)
		b[i] = byte(o*31 + o>>13)
	}
	p.off += k
	return int(k), nil
}

func patternCRC(n int64) uint32 {
	h := crc32.NewIEEE()
	_, _ = io.Copy(h, &fcPattern{n: n})
	return h.Sum32()
}

// uploadMux: /crc reads and answers the body's length and CRC;
// /slowcrc does so pausing 1 ms after each piece; /none never reads and
// answers after 100 ms; /cut reads 1 MiB and answers.
func uploadMux(cancels *atomic.Int64) *Mux {
	m := testMux()
	crcHandler := func(pause time.Duration) func(r *Request) Reply {
		return func(r *Request) Reply {
			p := aio.NewPromise[Response](r.Loop())
			h := crc32.NewIEEE()
			n := 0
			body := r.Body()
			body.OnData(func(b []byte, end bool) {
				_, _ = h.Write(b)
				n += len(b)
				if end {
					p.Resolve(TextResponse(200, strconv.Itoa(n)+" "+strconv.FormatUint(uint64(h.Sum32()), 10)))
					return
				}
				if pause > 0 {
					body.Pause()
					t := aio.Delay(r.Loop(), pause, func() (struct{}, error) { body.Resume(); return struct{}{}, nil })
					aio.Adopt(r.Scope(), t)
				}
			})
			hd := p.Handle()
			hd.OnCancel(func() { cancels.Add(1) })
			return Later(hd)
		}
	}
	m.HandleFunc("POST /crc", crcHandler(0))
	m.HandleFunc("POST /slowcrc", crcHandler(time.Millisecond))
	m.HandleFunc("POST /none", func(r *Request) Reply {
		return Later(aio.Delay(r.Loop(), 100*time.Millisecond, func() (Response, error) {
			return TextResponse(200, "none"), nil
		}))
	})
	m.HandleFunc("POST /cut", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		n := 0
		r.Body().OnData(func(b []byte, end bool) {
			if n += len(b); n >= 1<<20 || end {
				p.Resolve(TextResponse(200, "cut"))
			}
		})
		return Later(p.Handle())
	})
	return m
}

// Large uploads on concurrent streams of one connection (x/net's
// Transport), to handlers that read fast, slowly, not at all, or part:
// what each stream holds stays within its window, the bodies arrive
// byte-exact, and everything is back at rest afterwards.
func TestH2ConcurrentUploadsWithinWindows(t *testing.T) {
	var cancels atomic.Int64
	ts := startServer(t, uploadMux(&cancels), Config{})
	g0 := runtime.NumGoroutine()
	c := h2Client(t)
	c.Timeout = time.Minute
	type job struct {
		path string
		n    int64
		want string
	}
	jobs := []job{
		{"/crc", 64 << 20, ""}, {"/crc", 8 << 20, ""}, {"/slowcrc", 4 << 20, ""},
		{"/none", 16 << 20, "none"}, {"/none", 16 << 20, "none"}, {"/cut", 16 << 20, "cut"}, {"/cut", 16 << 20, "cut"},
	}
	for i := range jobs {
		if jobs[i].want == "" {
			jobs[i].want = strconv.FormatInt(jobs[i].n, 10) + " " + strconv.FormatUint(uint64(patternCRC(jobs[i].n)), 10)
		}
	}
	stop := make(chan struct{})
	var maxHeld, maxStreams atomic.Int64
	var badWin atomic.Bool
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_ = ts.l.Post(func() {
				for hc := ts.loopStates()[0].conns.head; hc != nil; hc = hc.links[linkAll].next {
					h := hc.h2
					if h == nil {
						continue
					}
					if h.recvWin < 0 || h.recvWin > h2ConnWindow {
						badWin.Store(true)
					}
					var held int64
					for _, st := range h.streams {
						held += int64(len(st.rbuf))
						if int64(len(st.rbuf)) > h2StreamWindow || st.recvWin < 0 || st.recvWin > h2StreamWindow {
							badWin.Store(true)
						}
					}
					if held > maxHeld.Load() {
						maxHeld.Store(held)
					}
					if int64(len(h.streams)) > maxStreams.Load() {
						maxStreams.Store(int64(len(h.streams)))
					}
				}
			})
		}
	}()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Go(func() {
			req, err := http.NewRequest("POST", ts.url+j.path, &fcPattern{n: j.n})
			require.NoError(t, err)
			req.ContentLength = j.n
			resp, err := c.Do(req)
			if !assert.NoError(t, err, j.path) {
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.NoError(t, err)
			assert.Equal(t, j.want, string(b), j.path)
		})
	}
	wg.Wait()
	close(stop)
	t.Logf("max held %d bytes over %d streams", maxHeld.Load(), maxStreams.Load())
	assert.False(t, badWin.Load(), "a window out of bounds")
	assert.LessOrEqual(t, maxHeld.Load(), int64(len(jobs))*h2StreamWindow)
	ts.atRest(t)
	assert.Zero(t, cancels.Load())
	c.CloseIdleConnections()
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "conns %d", ts.Stats().ConnsOpen)
	eventually(t, func() bool { return runtime.NumGoroutine() <= g0+2 }, "goroutines %d, were %d", runtime.NumGoroutine(), g0)
}

// fcSender sends DATA within the windows the server grants, reading its
// WINDOW_UPDATEs.
type fcSender struct {
	c       *h2Raw
	conn    int64
	streams map[uint32]int64
}

func (s *fcSender) read() {
	s.c.t.Helper()
	require.NoError(s.c.t, s.c.nc.SetReadDeadline(time.Now().Add(3*time.Second)))
	f, err := s.c.fr.ReadFrame()
	require.NoError(s.c.t, err, "starved: conn window %d, streams %v", s.conn, s.streams)
	switch f := f.(type) {
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			s.conn += int64(f.Increment)
		} else {
			s.streams[f.StreamID] += int64(f.Increment)
		}
	case *http2.RSTStreamFrame:
		if f.ErrCode != http2.ErrCodeNo {
			s.c.t.Fatalf("RST_STREAM %v %v", f, f.ErrCode)
		}
	case *http2.GoAwayFrame:
		s.c.t.Fatalf("GOAWAY %v", f)
	}
}

// send sends n bytes of stream id within the windows (end: END_STREAM on the last).
func (s *fcSender) send(id uint32, n int, end bool) {
	for n > 0 {
		k := min(int64(n), s.conn, s.streams[id], 16384)
		if k <= 0 {
			s.read()
			continue
		}
		require.NoError(s.c.t, s.c.fr.WriteData(id, end && int(k) == n, make([]byte, k)))
		s.conn -= k
		s.streams[id] -= k
		n -= int(k)
	}
}

// A client that resets its upload mid-body, its DATA crossing the reset,
// loses none of the connection window to those bytes (RFC 9113 §6.9:
// DATA on a closed stream still counts, and the receiver must give it
// back): uploads that follow get through; the handler was cancelled.
func TestH2ResetUploadCreditsConnection(t *testing.T) {
	var cancels atomic.Int64
	ts := startServer(t, uploadMux(&cancels), Config{})
	c := dialH2(t, ts.addr)
	s := &fcSender{c: c, conn: h2DefaultWindow, streams: map[uint32]int64{}}
	for id := uint32(1); id < 40; id += 2 {
		s.streams[id] = h2DefaultWindow
		if id%4 == 1 { // the client resets its upload
			c.postHead(id, "/slowcrc", 8<<20)
			s.send(id, 200<<10, false)
			require.NoError(t, c.fr.WriteRSTStream(id, http2.ErrCodeCancel))
			continue
		}
		// the handler answers after 1 MiB, and the server resets the
		// stream (NO_ERROR) while DATA is still coming: that DATA crosses
		// the reset, sent within the windows the client knows
		c.postHead(id, "/cut", 8<<20)
		s.send(id, 1<<20, false)
		s.send(id, int(min(s.streams[id], s.conn)), false)
	}
	s.streams[41] = h2DefaultWindow
	c.postHead(41, "/crc", 2<<20)
	s.send(41, 2<<20, true)
	for {
		f := c.next()
		if mh, ok := f.(*http2.MetaHeadersFrame); ok && mh.StreamID == 41 {
			assert.Equal(t, "200", mh.PseudoValue("status"))
			break
		}
	}
	ts.atRest(t)
	assert.Equal(t, int64(10), cancels.Load())
}

// genMux: GET /gen?n= streams n bytes of fcPattern, writing while not Full.
func genMux() *Mux {
	m := testMux()
	m.HandleFunc("GET /gen", func(r *Request) Reply {
		n := int64(atoi(r.Query("n")))
		s := r.Stream(200, nil)
		src := &fcPattern{n: n}
		buf := make([]byte, 32<<10)
		var fill func()
		fill = func() {
			for !s.Full() {
				k, err := src.Read(buf)
				if err != nil {
					s.End()
					return
				}
				if _, err := s.Write(buf[:k]); err != nil {
					return
				}
			}
		}
		s.OnDrain(fill)
		fill()
		return s.Reply()
	})
	return m
}

// A streamed response to a client that stops granting window: the server
// holds a bounded amount while stalled (within WriteTimeout), and resumes
// byte-exact when the client opens windows
// again, by WINDOW_UPDATE and by SETTINGS_INITIAL_WINDOW_SIZE up and down.
func TestH2StreamStallResume(t *testing.T) {
	ts := startServer(t, genMux(), Config{WriteTimeout: 3 * time.Second})
	c := dialH2(t, ts.addr)
	require.NoError(t, c.fr.WriteWindowUpdate(0, 1<<30))
	const total = 8 << 20
	c.get(1, "/gen?n="+itoa(total))
	var got []byte
	readN := func(n int) {
		t.Helper()
		for len(got) < n {
			switch f := c.next().(type) {
			case *http2.MetaHeadersFrame, *http2.SettingsFrame:
			case *http2.DataFrame:
				got = append(got, f.Data()...)
			default:
				t.Fatalf("unexpected frame %v", f)
			}
		}
	}
	readN(h2DefaultWindow)
	require.Equal(t, h2DefaultWindow, len(got))
	held := func() (n int) {
		ts.onLoop(t, func() {
			for hc := ts.loopStates()[0].conns.head; hc != nil; hc = hc.links[linkAll].next {
				if hc.h2 != nil {
					for _, st := range hc.h2.streams {
						n += cap(st.out)
					}
				}
			}
		})
		return n
	}
	assert.LessOrEqual(t, held(), 4*streamPendMax)

	// dribble via WINDOW_UPDATE, then SETTINGS up, down (negative), up
	for range 10 {
		require.NoError(t, c.fr.WriteWindowUpdate(1, 1000))
	}
	readN(h2DefaultWindow + 10000)
	iw := func(v uint32) http2.Setting { return http2.Setting{ID: http2.SettingInitialWindowSize, Val: v} }
	require.NoError(t, c.fr.WriteSettings(iw(1<<20)))
	readN(h2DefaultWindow + 10000 + (1<<20 - h2DefaultWindow))
	require.NoError(t, c.fr.WriteSettings(iw(0))) // window -(1<<20-65535)
	require.NoError(t, c.fr.WriteSettings(iw(1<<30)))
	readN(total)
	require.Equal(t, total, len(got))
	want, _ := io.ReadAll(&fcPattern{n: total})
	assert.True(t, bytes.Equal(want, got), "not byte-exact")
	ts.atRest(t)
}

package httpd

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The seeds' cancellation tests over HTTP/2 (the HTTP/1.1 ones are in
// cancel_test.go). IT-01 and IT-03 (a connection closing cancels its
// handlers, their timers and Works) are TestH2CloseCancelsAll, IT-02
// (RST_STREAM) TestH2ResetCancelsHandler and IT-04 (GOAWAY)
// TestH2ClientGoAway, in h2raw_test.go; here are IT-05, IT-06, AS-02 and
// ST-01.

// post opens stream id with a POST of body to path, with its
// content-length, the body in a DATA frame of its own.
func (c *h2Raw) post(id uint32, path, body string) {
	c.t.Helper()
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "x"},
		{":path", path}, {"content-length", itoa(len(body))}} {
		require.NoError(c.t, c.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
		BlockFragment: c.hb.Bytes(), EndHeaders: true}))
	require.NoError(c.t, c.fr.WriteData(id, true, []byte(body)))
}

// responseOf reads the response of stream id, passing over the frames
// of other streams (reset ones whose answer crossed the reset): its
// status and body; "RST" and the code's name when it was reset.
func (c *h2Raw) responseOf(id uint32) (string, string) {
	c.t.Helper()
	var status, body string
	for {
		f := c.next()
		if f.Header().StreamID != id {
			continue
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			status = f.PseudoValue("status")
			if f.StreamEnded() {
				return status, body
			}
		case *http2.DataFrame:
			body += string(f.Data())
			if f.StreamEnded() {
				return status, body
			}
		case *http2.RSTStreamFrame:
			return "RST", f.ErrCode.String()
		default:
			c.t.Fatalf("unexpected frame %v", f)
		}
	}
}

// IT-05: a cancelled handler sends nothing. A stream whose handle the
// server cancels, the connection up, is reset (CANCEL) without HEADERS or
// DATA, and the connection goes on; a handle that ends after its
// connection closed writes not a byte.
func TestH2CancelledHandlerSendsNothing(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})

	c := dialH2(t, ts.addr)
	c.get(1, "/promise")
	pr := recvT(t, p.promises)
	pr.Handle().Cancel()
	id, code := c.rst()
	assert.Equal(t, uint32(1), id)
	assert.Equal(t, http2.ErrCodeCancel, code)
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	ts.atRest(t)

	c.get(5, "/promise")
	pr = recvT(t, p.promises)
	c.nc.Close()
	eventually(t, func() bool { return ts.Stats().Cancelled == 2 }, "not cancelled")
	eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "the connection is still open")
	out := ts.l.Stats().TCPBytesOut
	assert.False(t, pr.Resolve(TextResponse(200, "late")))
	ts.atRest(t)
	assert.Equal(t, out, ts.l.Stats().TCPBytesOut)
	st := ts.Stats()
	assert.Equal(t, uint64(2), st.ResponsesSuppressed)
}

// IT-06: concurrent streams, on one connection and on several, some of
// which their clients reset and one of whose connections closes: the
// others are answered, every cancellation is counted, everything comes
// back.
func TestH2ConcurrentCancellations(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{})
	const conns, per = 4, 10 // per connection: per/2 /wait, then per/2 /slow but on connection 0
	cs := make([]*h2Raw, conns)
	for i := range cs {
		cs[i] = dialH2(t, ts.addr)
		for k := range per / 2 {
			cs[i].get(uint32(2*k+1), "/wait")
		}
	}
	for range conns * per / 2 {
		recvT(t, p.started)
	}
	eventually(t, func() bool { return ts.Stats().HandlersPending == conns*per/2 }, "the handlers are not pending")
	var wg sync.WaitGroup
	wg.Go(func() { cs[0].nc.Close() }) // connection 0 goes with its /wait ones
	for _, c := range cs[1:] {
		wg.Go(func() {
			for k := range per / 2 { // the /slow ones start as the /wait ones are reset
				c.get(uint32(per+2*k+1), "/slow?ms="+itoa(1+k%3))
				require.NoError(t, c.fr.WriteRSTStream(uint32(2*k+1), http2.ErrCodeCancel))
			}
			bodies := map[uint32]string{} // the /slow ones end in any order
			for ended := 0; ended < per/2; {
				switch f := c.next().(type) {
				case *http2.MetaHeadersFrame:
					assert.Equal(t, "200", f.PseudoValue("status"))
				case *http2.DataFrame:
					bodies[f.StreamID] += string(f.Data())
					if f.StreamEnded() {
						ended++
					}
				default:
					t.Errorf("unexpected frame %v", f)
					return
				}
			}
			for k := range per / 2 {
				assert.Equal(t, "waited "+itoa(1+k%3)+" ms", bodies[uint32(per+2*k+1)])
			}
		})
	}
	wg.Wait()
	for range conns * per / 2 {
		recvT(t, p.workEnded)
	}
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(conns*per/2+(conns-1)*per/2), st.Requests)
	assert.Equal(t, uint64(conns*per/2), st.Cancelled)
	assert.Equal(t, uint64(conns*per/2), st.ResponsesSuppressed)
	assert.Equal(t, st.Requests, st.ArenaReleases)
	assert.Equal(t, int64(conns-1), st.ConnsOpen)
}

// AS-02: no use after a stream's close. With one arena, a reset stream's
// arena serves the next stream at once, and the reset stream's handle,
// ending late, touches nothing of it.
func TestH2ArenaReuseAfterReset(t *testing.T) {
	p := newProbe()
	ts := startServer(t, p.mux(), Config{Arenas: 1})
	c := dialH2(t, ts.addr)
	for i := range 20 {
		id := uint32(4*i + 1)
		c.get(id, "/promise")
		pr := recvT(t, p.promises)
		require.NoError(t, c.fr.WriteRSTStream(id, http2.ErrCodeCancel))
		eventually(t, func() bool { return ts.Stats().Cancelled == uint64(i+1) }, "not cancelled")
		c.get(id+2, "/users/"+itoa(i))
		pr.Resolve(TextResponse(200, "stale")) // late, while the arena serves id+2
		c.expect(id+2, "200", `{"id":"`+itoa(i)+`"}`)
	}
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(20), st.Cancelled)
	assert.Equal(t, uint64(40), st.ArenaReleases)
}

// ST-01, bounded, over HTTP/2: requests of every kind on a few
// connections, whose clients reset streams and close connections at
// random moments; then arenas, handlers, connections and fds are back to
// their baseline (goroutines: goleak in TestMain).
//
// Stats.Requests counts the handlers started, exactly; an arena is taken
// at a stream's HEADERS, before that. A POST's body is a DATA frame of
// its own, which the server buffers before the handler runs: when the
// client closes its connection (a reset, with our frames unread in its
// socket) the server may have read the HEADERS and not the DATA, and
// gives the arena back for a request whose handler never ran. So the
// releases exceed the requests by at most the POSTs not answered.
func TestH2StressRandomCancels(t *testing.T) {
	p := newProbe()
	p.drain(t)
	m := p.mux()
	var started atomic.Uint64
	ts := startServer(t, HandlerFunc(func(r *Request) Reply {
		started.Add(1)
		return m.ServeAIO(r)
	}), Config{Arenas: 64})
	fds := fdCount()
	total := 4000
	if testing.Short() {
		total = 400
	}
	const workers = 8
	var done, resets, closes, cutPosts atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			var c *h2Raw
			var id uint32
			for i := w; i < total; i += workers {
				if c == nil {
					c, id = dialH2(t, ts.addr), 1
				}
				kind := rng.IntN(5)
				switch kind {
				case 0:
					c.get(id, "/health")
				case 1:
					c.get(id, "/slow?ms="+itoa(rng.IntN(3)))
				case 2:
					c.post(id, "/echo", "hello")
				case 3:
					c.get(id, "/wait")
				default:
					c.get(id, "/promise")
				}
				if rng.IntN(4) == 0 || kind == 3 { // go away before the answer
					if kind == 2 {
						cutPosts.Add(1)
					}
					if rng.IntN(2) == 0 {
						time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
					}
					if rng.IntN(3) == 0 {
						c.nc.Close()
						c = nil
						closes.Add(1)
					} else {
						require.NoError(t, c.fr.WriteRSTStream(id, http2.ErrCodeCancel))
						id += 2
						resets.Add(1)
					}
					continue
				}
				if s, _ := c.responseOf(id); !assert.Equal(t, "200", s) {
					return
				}
				id += 2
				done.Add(1)
			}
			if c != nil {
				c.nc.Close()
			}
		})
	}
	wg.Wait()
	st := ts.closedAll(t, fds)
	t.Logf("%d answered, %d reset, %d closed (%d POSTs); %+v", done.Load(), resets.Load(), closes.Load(), cutPosts.Load(), st)
	assert.Equal(t, started.Load(), st.Requests)
	assert.GreaterOrEqual(t, st.Requests, uint64(done.Load()))
	assert.GreaterOrEqual(t, st.ArenaReleases, st.Requests)
	assert.LessOrEqual(t, st.ArenaReleases-st.Requests, uint64(cutPosts.Load()))
	assert.Zero(t, st.BadRequests)
}

package httpd

import (
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
)

// A request that has ended keeps nothing its handler made: the slab keeps
// its Request, and the next request in the same slot may come only at the
// next peak of load (free slots are taken last in first out), so a
// response body made on the heap, a body reader's closure or a stream's
// OnDrain callback left there would stay reachable until then. n requests
// held at once take n slots; after them, everything they made is garbage.
func TestEndedRequestKeepsNothing(t *testing.T) {
	const n = 6
	var made, freed atomic.Int32
	track := func() *[]byte { // 1 MiB, reported when collected
		b := make([]byte, 1<<20)
		made.Add(1)
		runtime.AddCleanup(&b, func(c *atomic.Int32) { c.Add(1) }, &freed)
		return &b
	}
	var mu sync.Mutex
	var held []func()
	arrived := make(chan struct{}, 3*n)
	// hold parks a request until all have arrived, so that each holds a
	// slot of its own at the same time.
	hold := func(r *Request, fn func()) {
		mu.Lock()
		held = append(held, fn)
		mu.Unlock()
		arrived <- struct{}{}
	}
	mux := NewMux()
	mux.HandleFunc("GET /body", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		hold(r, func() { p.Resolve(BytesResponse(200, *track())) })
		return Later(p.Handle())
	})
	mux.HandleFunc("POST /reader", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		big := track()
		r.Body().OnData(func(_ []byte, end bool) {
			if end && len(*big) > 0 {
				hold(r, func() { p.Resolve(TextResponse(200, "read")) })
			}
		})
		return Later(p.Handle())
	})
	mux.HandleFunc("GET /stream", func(r *Request) Reply {
		s := r.Stream(200, nil)
		big := track()
		s.OnDrain(func() { _ = len(*big) })
		hold(r, func() { _, _ = s.WriteString("streamed"); s.End() })
		return s.Reply()
	})
	ts := startServer(t, mux, Config{Arenas: 64, MaxBodyBytes: 1 << 20})
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{DisableKeepAlives: true} // a connection each, closed at the end
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: waitTimeout}
			var resp *http.Response
			var err error
			switch i % 3 {
			case 0:
				resp, err = c.Get(ts.url + "/body")
			case 1: // a body larger than the arena keeps: it streams to OnData
				resp, err = c.Post(ts.url+"/reader", "text/plain", strings.NewReader(strings.Repeat("x", 256<<10)))
			default:
				resp, err = c.Get(ts.url + "/stream")
			}
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, 200, resp.StatusCode)
			}
		}()
	}
	for range 3 * n {
		recvT(t, arrived)
	}
	require.NoError(t, ts.l.Post(func() {
		for _, fn := range held {
			fn()
		}
	}))
	wg.Wait()
	ts.atRest(t)
	require.Equal(t, int32(3*n), made.Load())
	eventually(t, func() bool { runtime.GC(); return freed.Load() == 3*n },
		"what ended requests made is still reachable: %d of %d collected", freed.Load(), 3*n)
}

// A request that streamed a large body (on either protocol) leaves its
// slot with a small stream buffer at most: the large one goes to the
// loop's pool, which the garbage collector empties, rather than stay with
// the slot for good.
func TestEndedStreamKeepsASmallBuffer(t *testing.T) {
	const n = 6
	var mu sync.Mutex
	var held []func()
	var reqs []*Request // their slots, looked at once they are free
	arrived := make(chan struct{}, 2*n)
	mux := NewMux()
	mux.HandleFunc("GET /big", func(r *Request) Reply {
		s := r.Stream(200, nil)
		mu.Lock()
		held = append(held, func() { _, _ = s.Write(make([]byte, 48<<10)); s.End() })
		reqs = append(reqs, r)
		mu.Unlock()
		arrived <- struct{}{}
		return s.Reply()
	})
	ts := startServer(t, mux, Config{Arenas: 64})
	var wg sync.WaitGroup
	for i := range 2 * n {
		c := client(t)
		if i%2 == 1 {
			c = h2Client(t)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(ts.url + "/big")
			if assert.NoError(t, err) {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				assert.Len(t, b, 48<<10)
			}
		}()
	}
	for range 2 * n {
		recvT(t, arrived)
	}
	ts.onLoop(t, func() { // all at once: each slot's buffer grows
		for _, fn := range held {
			fn()
		}
	})
	wg.Wait()
	ts.atRest(t)
	ts.onLoop(t, func() {
		for _, r := range reqs {
			assert.True(t, r.released)
			assert.LessOrEqual(t, cap(r.stream.pend), pendKeep, "slot %d", r.idx)
		}
	})
}

// A Stream kept past its request's end (a timer the handler did not adopt
// into the request's Scope) is closed, also once its Request's slot serves
// another request: its bytes must never reach that request's client.
func TestStaleStreamWritesNowhere(t *testing.T) {
	var stale *Stream
	second := make(chan *Stream, 1)
	mux := NewMux()
	mux.HandleFunc("GET /first", func(r *Request) Reply {
		stale = r.Stream(200, nil)
		_, _ = stale.WriteString("first")
		stale.End()
		return stale.Reply()
	})
	mux.HandleFunc("GET /second", func(r *Request) Reply {
		s := r.Stream(200, nil)
		second <- s
		return s.Reply()
	})
	ts := startServer(t, mux, Config{Arenas: 1}) // one slot: the second request takes the first's
	code, body := get(t, client(t), ts.url+"/first")
	require.Equal(t, 200, code)
	require.Equal(t, "first", body)
	ts.atRest(t)
	done := make(chan string, 1)
	go func() {
		_, b := get(t, client(t), ts.url+"/second")
		done <- b
	}()
	s := recvT(t, second)
	ts.onLoop(t, func() {
		n, err := stale.WriteString("stale")
		assert.ErrorIs(t, err, ErrStreamClosed)
		assert.Zero(t, n)
		assert.False(t, stale.Full())
		stale.OnDrain(func() { t.Error("a stale stream's OnDrain ran") })
		assert.ErrorIs(t, stale.SetTrailer(nil), ErrStreamClosed)
		stale.End() // nothing: the second stream goes on
		assert.Equal(t, aio.Completed, stale.Handle().Status(), "its own handle, ended")
		_, err = s.WriteString("second")
		assert.NoError(t, err)
		s.End()
	})
	assert.Equal(t, "second", recvT(t, done))
	ts.atRest(t)
}

// A Body kept past its request's end is empty, also once its Request's
// slot serves another request: it must neither show that request's body
// nor take its delivery away (OnData) or pause it, which left that request
// waiting for a body that went to the stale reader.
func TestStaleBodyReadsNothing(t *testing.T) {
	var stale Body
	mux := NewMux()
	mux.HandleFunc("POST /first", func(r *Request) Reply {
		stale = r.Body()
		return Text(200, "first")
	})
	mux.HandleFunc("POST /small", func(r *Request) Reply {
		b, ok := stale.Bytes()
		assert.False(t, ok, "a stale Body showed another request's body: %q", b)
		assert.Zero(t, stale.Length())
		_, err := stale.CopyTo(io.Discard).Result()
		assert.ErrorIs(t, err, ErrBodyRead)
		own, _ := r.Body().Bytes()
		return Bytes(200, own)
	})
	mux.HandleFunc("POST /big", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		var n int
		r.Body().OnData(func(b []byte, end bool) {
			n += len(b)
			if end {
				p.Resolve(TextResponse(200, itoa(n)))
			}
		})
		stale.OnData(func([]byte, bool) { t.Error("a stale Body's OnData got another request's body") })
		stale.Pause()
		return Later(p.Handle())
	})
	ts := startServer(t, mux, Config{Arenas: 1, ArenaSize: 4096}) // one slot: each request takes the first's
	c := client(t)
	c.Timeout = 10 * time.Second
	resp, body := post(t, c, ts.url+"/first", strings.NewReader("mine"))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "first", string(body))
	resp, body = post(t, c, ts.url+"/small", strings.NewReader("secret"))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "secret", string(body))
	big := strings.Repeat("x", 1<<16) // streams: over the 4 KiB arena
	resp, body = post(t, c, ts.url+"/big", strings.NewReader(big))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, itoa(len(big)), string(body))
	ts.atRest(t)
}

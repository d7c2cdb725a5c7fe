package httpd

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

func readAllMux() *Mux {
	m := NewMux()
	sum := func(r *Request) Reply {
		return Later(aio.Then(r.Body().ReadAll(), func(b []byte) (Response, error) {
			return TextResponse(200, fmt.Sprintf("%d %x", len(b), sha256.Sum256(b))), nil
		}))
	}
	m.HandleFunc("PUT /sum", sum)
	m.Handle("PUT /small", MaxBytesHandler(HandlerFunc(sum), 100<<10))
	m.HandleFunc("/count", func(r *Request) Reply {
		return Later(aio.Then(r.Body().ReadAll(), func(b []byte) (Response, error) {
			return TextResponse(200, fmt.Sprintf("%d %v", len(b), b == nil)), nil
		}))
	})
	m.HandleFunc("PUT /thenondata", func(r *Request) Reply {
		h := r.Body().ReadAll()
		r.Body().OnData(func([]byte, bool) {}) // too late: ReadAll reads it
		return Later(aio.Then(h, func(b []byte) (Response, error) {
			return TextResponse(200, itoa(len(b))), nil
		}))
	})
	m.HandleFunc("POST /append", func(r *Request) Reply {
		return Later(aio.Then(r.Body().ReadAll(), func(b []byte) (Response, error) {
			before := r.Trailer("X-Sum")
			mine := r.Arena().Alloc(4)
			copy(mine, "mine")
			b = append(b, "ZZZZZZZZZZZZZZZZZZZZ"...) // the handler's own slice, it may think
			_ = b
			return TextResponse(200, before+" "+r.Trailer("X-Sum")+" "+string(mine)), nil
		}))
	})
	m.HandleFunc("PUT /twice", func(r *Request) Reply {
		first := r.Body().ReadAll()
		second := r.Body().ReadAll()
		third := r.Body().CopyTo(io.Discard)
		h := aio.Then(aio.AllSettled(first, second), func(o []aio.Outcome[[]byte]) (Response, error) {
			_, err := third.Result()
			return TextResponse(200, fmt.Sprintf("%s %v %v", o[0].Value, errors.Is(o[1].Err, ErrBodyRead), errors.Is(err, ErrBodyRead))), nil
		})
		return Later(h)
	})
	return m
}

// TestBodyReadAll reads bodies that arrive with the request, stream in
// with a Content-Length, and stream in chunked, over HTTP/1.1 and
// HTTP/2: the handle gives every byte, in order.
func TestBodyReadAll(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	for _, proto := range protoClients(t) {
		for _, size := range []int{0, 100, 40 << 10, 4 << 20} {
			for _, chunked := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%d/chunked=%v", proto.name, size, chunked), func(t *testing.T) {
					body := make([]byte, size)
					for i := range body {
						body[i] = byte(i * 7 / 3)
					}
					var rd io.Reader = bytes.NewReader(body)
					if chunked {
						rd = unsized{rd}
					}
					req, err := http.NewRequest("PUT", ts.url+"/sum", rd)
					require.NoError(t, err)
					resp, got := do(t, proto.c, req)
					require.Equal(t, 200, resp.StatusCode, string(got))
					assert.Equal(t, fmt.Sprintf("%d %x", size, sha256.Sum256(body)), string(got))
				})
			}
		}
	}
	ts.atRest(t)
}

// TestBodyReadAllOverLimit: a body past its route's limit is answered
// 413 in the handler's place, whether its length was announced or not,
// and the request gives everything back.
func TestBodyReadAllOverLimit(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	answered := map[string]int{} // 413s seen, per protocol
	for _, proto := range protoClients(t) {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/chunked=%v", proto.name, chunked), func(t *testing.T) {
				var rd io.Reader = bytes.NewReader(make([]byte, 1<<20))
				if chunked {
					rd = unsized{rd}
				}
				req, err := http.NewRequest("PUT", ts.url+"/small", rd)
				require.NoError(t, err)
				resp, err := proto.c.Do(req)
				if err == nil { // a client may see the reset of the body it still sends first
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					assert.Equal(t, 413, resp.StatusCode)
					answered[proto.name]++
				}
			})
		}
	}
	// A client that announces its length and reads before it sends sees
	// the answer whatever its timing.
	c := dialRaw(t, ts.addr)
	c.send("PUT /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n")
	assert.Equal(t, 413, c.read("PUT").status)
	// A chunked body has no length to refuse up front: ReadAll takes it,
	// and the limit stops it as it streams in (the path the clients above
	// reach only if they read before their body is refused).
	c = dialRaw(t, ts.addr)
	c.send("PUT /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n", 200<<10, strings.Repeat("c", 200<<10)))
	assert.Equal(t, 413, c.read("PUT").status)
	assert.Positive(t, answered["h1"]+answered["h2"], "no client saw a 413")
	ts.atRest(t)
}

// TestBodyReadAllTwice: a body has one reader; a second ReadAll, or a
// CopyTo after it, fails at once with ErrBodyRead and leaves the first
// alone, for a body that arrived with its request and one that streams.
func TestBodyReadAllTwice(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	for _, body := range []string{"hello", strings.Repeat("x", 1<<20)} {
		req, err := http.NewRequest("PUT", ts.url+"/twice", strings.NewReader(body))
		require.NoError(t, err)
		resp, got := do(t, client(t), req)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, body+" true true", string(got))
	}
	ts.atRest(t)
}

// TestBodyReadAllClientGone: a client that goes away mid-body cancels
// the ReadAll, and with it the handler, and the request gives
// everything back.
func TestBodyReadAllClientGone(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send("PUT /sum HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("y", 100<<10))
	eventually(t, func() bool { return ts.Stats().HandlersPending == 1 }, "the handler did not start")
	require.NoError(t, c.Close())
	eventually(t, func() bool { return ts.Stats().Cancelled == 1 }, "the handler was not cancelled: %+v", ts.Stats())
	ts.atRest(t)
}

// TestBodyReadAllThenOnData: OnData after ReadAll does nothing, for a body
// that came with its request and one that streams: it used to take the
// streamed body's flow away from ReadAll, whose handle never ended.
func TestBodyReadAllThenOnData(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	for _, n := range []int{5, 1 << 20} {
		req, err := http.NewRequest("PUT", ts.url+"/thenondata", strings.NewReader(strings.Repeat("z", n)))
		require.NoError(t, err)
		resp, got := do(t, client(t), req)
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, itoa(n), string(got), "a body of %d bytes", n)
	}
	ts.atRest(t)
}

// TestBodyReadAllExpectContinue: ReadAll starts a streamed body's flow,
// so a client waiting for 100 Continue gets it, on HTTP/1.1 and HTTP/2.
func TestBodyReadAllExpectContinue(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	const n = 1 << 20
	raw := dialRaw(t, ts.addr)
	raw.send("PUT /count HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: " + itoa(n) + "\r\n\r\n")
	assert.Equal(t, 100, raw.read("PUT").status)
	raw.send(strings.Repeat("x", n))
	resp := raw.read("PUT")
	assert.Equal(t, 200, resp.status)
	assert.Equal(t, itoa(n)+" false", resp.body)

	c := dialH2(t, ts.addr)
	c.openWindows()
	c.putExpecting(1, "/count", n)
	f := c.next()
	mh, ok := f.(*http2.MetaHeadersFrame)
	require.True(t, ok, "%v", f)
	assert.Equal(t, "100", mh.PseudoValue("status"))
	c.sendBody(1, n)
	c.expect(1, "200", itoa(n)+" false")
	ts.atRest(t)
}

// TestBodyInArenaIsClipped: a body that came with its request is a view
// into the arena, whose room after it goes on to the trailer and the
// handler's Alloc; an append to the view makes a copy and overwrites
// neither (chunked on HTTP/1.1, and HTTP/2 with and without a trailer).
func TestBodyInArenaIsClipped(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	c := dialRaw(t, ts.addr)
	c.send("POST /append HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 42\r\n\r\n")
	resp := c.read("POST")
	assert.Equal(t, 200, resp.status)
	assert.Equal(t, "42 42 mine", resp.body)

	h := dialH2(t, ts.addr)
	h.postTrailer(1, "/append", 5, "x-sum", "42")
	h.expect(1, "200", "42 42 mine")
	h.open(3, "POST", "/append", false)
	require.NoError(t, h.fr.WriteData(3, true, []byte("hello")))
	h.expect(3, "200", "  mine")
	ts.atRest(t)
}

// TestBodyReadAllEmpty: no body reads as an empty slice, not nil, whether
// it came with its request or streamed.
func TestBodyReadAllEmpty(t *testing.T) {
	ts := startServer(t, readAllMux(), Config{})
	for _, proto := range protoClients(t) {
		for _, method := range []string{"GET", "PUT"} {
			var body io.Reader
			if method == "PUT" {
				body = unsized{strings.NewReader("")}
			}
			resp, got := h2Do(t, proto.c, method, ts.url+"/count", body)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "0 false", got, "%s %s", proto.name, method)
		}
	}
	ts.atRest(t)
}

// A cancelled ReadAll lets go of what it had collected at once, not when
// the next piece arrives: a handler that gives up on a body (a deadline,
// say) and answers later must not hold up to the body's limit meanwhile,
// from a client that has stopped sending. The client sends 24 MiB of a
// 64 MiB body and stops; the handler's ReadAll is cancelled once they are
// in, and the heap gives them back while the request goes on.
func TestBodyReadAllCancelledLetsGo(t *testing.T) {
	m := NewMux()
	readAll := make(chan *aio.Handle[[]byte], 1)
	answer := make(chan *aio.Promise[Response], 1)
	m.HandleFunc("PUT /hold", func(r *Request) Reply {
		readAll <- r.Body().ReadAll()
		p := aio.NewPromise[Response](r.Loop())
		answer <- p
		return Later(p.Handle())
	})
	ts := startServer(t, m, Config{})
	const sent = 24 << 20
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	c := dialRaw(t, ts.addr)
	c.send("PUT /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 67108864\r\n\r\n")
	h, p := <-readAll, <-answer
	in0 := ts.l.Stats().TCPBytesIn
	_, err := c.Write(make([]byte, sent))
	require.NoError(t, err)
	eventually(t, func() bool { return ts.l.Stats().TCPBytesIn-in0 >= sent }, "the body did not arrive")
	ts.onLoop(t, func() { h.Cancel() })
	ts.onLoop(t, func() {}) // past the cancellation's callbacks
	grown := int64(heap()) - int64(before)
	assert.Less(t, grown, int64(sent/4), "the cancelled ReadAll holds %d B", grown)
	ts.onLoop(t, func() { p.Resolve(TextResponse(200, "done")) })
	require.NoError(t, c.Close())
	ts.atRest(t)
}

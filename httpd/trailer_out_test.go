package httpd

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// respTrailer is the trailer the /t routes send.
var respTrailer = []Field{{"X-Sum", "42"}, {"X-Count", "2"}}

// respTrailerMux serves GET /t: a Stream of "hello" and "world" with
// respTrailer; with declare=1 its header declares the trailer, with cl=1
// it has a Content-Length, with early=1 the trailer is set before the
// first Write (so before the head). GET /bad tries fields a trailer may not carry, and
// sends which were refused; its SetTrailer after End goes to afterEnd.
func respTrailerMux(afterEnd chan<- error) *Mux {
	m := testMux()
	m.HandleFunc("GET /t", func(r *Request) Reply {
		hdr := []Field{{"Content-Type", "text/plain"}}
		if r.Query("declare") == "1" {
			hdr = append(hdr, Field{"Trailer", "X-Sum, X-Count"})
		}
		if r.Query("cl") == "1" {
			hdr = append(hdr, Field{"Content-Length", "10"})
		}
		s := r.Stream(200, hdr)
		if r.Query("early") == "1" {
			if err := s.SetTrailer(respTrailer); err != nil {
				panic(err)
			}
		}
		_, _ = s.WriteString("hello")
		_, _ = s.WriteString("world")
		if err := s.SetTrailer(respTrailer); err != nil {
			panic(err)
		}
		s.End()
		return s.Reply()
	})
	m.HandleFunc("GET /bad", func(r *Request) Reply {
		s := r.Stream(200, nil)
		if err := s.SetTrailer([]Field{{"X-Good", "1"}}); err != nil {
			panic(err)
		}
		var refused []string
		for _, f := range badTrailerFields {
			err := s.SetTrailer([]Field{{"X-Ok", "1"}, f})
			if errors.Is(err, ErrTrailerField) {
				refused = append(refused, f.Name)
			}
		}
		_, _ = s.WriteString(strings.Join(refused, ","))
		s.End()
		afterEnd <- s.SetTrailer(respTrailer)
		return s.Reply()
	})
	return m
}

// badTrailerFields cannot be a response's trailer.
var badTrailerFields = []Field{{"Content-Length", "5"}, {"transfer-encoding", "chunked"}, {"Host", "x"},
	{"Connection", "close"}, {"Keep-Alive", "1"}, {"Proxy-Connection", "x"}, {"Upgrade", "h2c"}, {"TE", "trailers"},
	{"Trailer", "X"}, {"Authorization", "x"}, {"Content-Type", "x"}, {"bad name", "x"}, {":status", "200"},
	{"", "x"}, {"X-Split", "a\r\nb"}}

// A Stream's trailer reaches Go's clients, HTTP/1.1 (in the last chunk,
// the body chunked when a trailer is declared or set before the head)
// and HTTP/2 (trailing HEADERS); a head that went out with a
// Content-Length before any trailer was known cannot carry one on
// HTTP/1.1.
func TestStreamTrailer(t *testing.T) {
	ts := startServer(t, respTrailerMux(nil), Config{})
	for _, proto := range []struct {
		name string
		c    *http.Client
	}{{"h1", client(t)}, {"h2", h2Client(t)}} {
		for _, q := range []string{"", "declare=1", "cl=1", "cl=1&declare=1", "cl=1&early=1"} {
			resp, body := h2Do(t, proto.c, "GET", ts.url+"/t?"+q, nil)
			assert.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, "helloworld", body, "%s %s", proto.name, q)
			want := http.Header{"X-Sum": {"42"}, "X-Count": {"2"}}
			if proto.name == "h1" && q == "cl=1" {
				want = nil // the head went with its Content-Length
				assert.Equal(t, int64(10), resp.ContentLength)
			} else if proto.name == "h1" {
				assert.Equal(t, []string{"chunked"}, resp.TransferEncoding, q)
			}
			assert.Equal(t, len(want), len(resp.Trailer), "%s %s: %v", proto.name, q, resp.Trailer)
			for k, v := range want {
				assert.Equal(t, v, resp.Trailer[k], "%s %s", proto.name, q)
			}
		}
	}
	ts.atRest(t)
}

// On the wire: HTTP/1.1's last chunk carries the fields; HTTP/1.0 (whose
// body the connection's end delimits) gets none; HEAD has none.
func TestStreamTrailerWire(t *testing.T) {
	ts := startServer(t, respTrailerMux(nil), Config{})
	wire := func(req string) string { // the whole answer to req on a connection of its own
		c := dialRaw(t, ts.addr)
		c.send(req)
		b, err := io.ReadAll(c.br)
		require.NoError(t, err)
		return string(b)
	}
	b := wire("GET /t?declare=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	assert.Contains(t, b, "\r\nTrailer: X-Sum, X-Count\r\n")
	assert.True(t, strings.HasSuffix(b, "\r\n5\r\nworld\r\n0\r\nX-Sum: 42\r\nX-Count: 2\r\n\r\n"), "%q", b)

	b = wire("GET /t?declare=1&cl=1 HTTP/1.0\r\nHost: x\r\n\r\n")
	assert.True(t, strings.HasSuffix(b, "\r\n\r\nhelloworld"), "%q", b)
	assert.Contains(t, b, "Content-Length: 10\r\n")

	b = wire("HEAD /t?declare=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	assert.True(t, strings.HasSuffix(b, "\r\n\r\n"), "%q", b)
	assert.NotContains(t, b, "X-Sum: 42")
	ts.atRest(t)
}

// HTTP/2: HEADERS, DATA without END_STREAM, then the trailer's HEADERS
// with END_STREAM and no pseudo-header; then the connection goes on.
func TestH2StreamTrailerFrames(t *testing.T) {
	ts := startServer(t, respTrailerMux(nil), Config{})
	c := dialH2(t, ts.addr)
	c.get(1, "/t?cl=1")
	f := c.next().(*http2.MetaHeadersFrame)
	assert.Equal(t, "200", f.PseudoValue("status"))
	assert.Equal(t, "10", headerValue(f, "content-length"))
	assert.False(t, f.StreamEnded())
	var body []byte
	for {
		fr := c.next()
		if d, ok := fr.(*http2.DataFrame); ok {
			assert.False(t, d.StreamEnded())
			body = append(body, d.Data()...)
			continue
		}
		tf, ok := fr.(*http2.MetaHeadersFrame)
		require.True(t, ok, "frame %v", fr)
		assert.True(t, tf.StreamEnded())
		assert.Empty(t, tf.PseudoFields())
		assert.Equal(t, "42", headerValue(tf, "x-sum"))
		assert.Equal(t, "2", headerValue(tf, "x-count"))
		assert.Len(t, tf.Fields, 2)
		break
	}
	assert.Equal(t, "helloworld", string(body))
	c.get(3, "/health")
	c.expect(3, "200", "ok")
	ts.atRest(t)
}

// headerValue is the value of the field name in f.
func headerValue(f *http2.MetaHeadersFrame, name string) string {
	for _, hf := range f.Fields {
		if hf.Name == name {
			return hf.Value
		}
	}
	return ""
}

// SetTrailer refuses every field a trailer may not carry, each with an
// error, and keeps what was set before; after End it answers
// ErrStreamClosed.
func TestStreamTrailerRefused(t *testing.T) {
	afterEnd := make(chan error, 2)
	ts := startServer(t, respTrailerMux(afterEnd), Config{})
	var names []string
	for _, f := range badTrailerFields {
		names = append(names, f.Name)
	}
	for _, c := range []*http.Client{client(t), h2Client(t)} {
		resp, body := h2Do(t, c, "GET", ts.url+"/bad", nil)
		assert.Equal(t, strings.Join(names, ","), body)
		assert.Equal(t, http.Header{"X-Good": {"1"}}, resp.Trailer)
		assert.ErrorIs(t, recvT(t, afterEnd), ErrStreamClosed)
	}
	ts.atRest(t)
}

// curl shows a stream's trailer after the head, over HTTP/1.1. (Over
// HTTP/2 the curl of the tests, 7.88, does not show a trailer at all:
// curl/curl#5663; TestH2StreamTrailerFrames checks the frames.)
func TestStreamTrailerCurl(t *testing.T) {
	run := curlRunner(t, "-D", "-", "-o", "/dev/null")
	ts := startServer(t, respTrailerMux(nil), Config{})
	out := run("--http1.1", ts.url+"/t?declare=1&cl=1")
	assert.Contains(t, out, "\r\nTransfer-Encoding: chunked\r\n")
	assert.Contains(t, out, "\r\n\r\nX-Sum: 42\r\nX-Count: 2\r\n") // after the head's end
	ts.atRest(t)
}

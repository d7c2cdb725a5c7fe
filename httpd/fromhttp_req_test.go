package httpd

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The *http.Request FromHTTP makes says which HTTP it came by as net/http
// says it: ProtoMajor 2 for HTTP/2 (gRPC's ServeHTTP and ProtoAtLeast
// checks look at it), 1 and the minor for HTTP/1.x.
func TestFromHTTPRequestProto(t *testing.T) {
	m := NewMux()
	m.Handle("GET /proto", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %d.%d %v", r.Proto, r.ProtoMajor, r.ProtoMinor, r.ProtoAtLeast(1, 1))
	})))
	ts := startServer(t, m, Config{})

	_, b := get(t, client(t), ts.url+"/proto")
	assert.Equal(t, "HTTP/1.1 1.1 true", b)
	_, b = get(t, h2Client(t), ts.url+"/proto")
	assert.Equal(t, "HTTP/2.0 2.0 true", b)

	raw := dialRaw(t, ts.addr)
	raw.send("GET /proto HTTP/1.0\r\nHost: x\r\n\r\n")
	assert.Equal(t, "HTTP/1.0 1.0 false", raw.read("GET").body)
	ts.atRest(t)
}

// The *http.Request FromHTTP makes says whether the client asked to close
// the connection after this response (Close) as net/http reads it: an
// HTTP/1.1 request with "Connection: close", an HTTP/1.0 one without
// "Connection: keep-alive". Handlers read it (a proxy passes it on).
func TestFromHTTPRequestClose(t *testing.T) {
	m := NewMux()
	m.Handle("GET /close", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%v", r.Close)
	})))
	ts := startServer(t, m, Config{})

	for _, tc := range []struct{ req, want string }{
		{"GET /close HTTP/1.1\r\nHost: x\r\n\r\n", "false"},
		{"GET /close HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", "true"},
		{"GET /close HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n", "true"},
		{"GET /close HTTP/1.0\r\nHost: x\r\n\r\n", "true"},
		{"GET /close HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\n\r\n", "false"},
	} {
		raw := dialRaw(t, ts.addr)
		raw.send(tc.req)
		assert.Equal(t, tc.want, raw.read("GET").body, "%q", tc.req)
	}
	_, b := get(t, h2Client(t), ts.url+"/close")
	assert.Equal(t, "false", b, "HTTP/2")
	ts.atRest(t)
}

// The *http.Request's URL and Header are as net/http's server makes them:
// a CONNECT's authority form is URL.Host; Host, Transfer-Encoding and a
// chunked body's Trailer are not in Header (they are req.Host,
// req.TransferEncoding and req.Trailer); HTTP/2's cookie fields are one.
func TestFromHTTPRequestAsNetHTTP(t *testing.T) {
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "url=%q host=%q header=%v te=%v trailer=%v cookie=%q",
			r.URL.String(), r.URL.Host, slices.Sorted(maps.Keys(r.Header)), r.TransferEncoding,
			slices.Sorted(maps.Keys(r.Trailer)), r.Header["Cookie"])
	}))
	ts := startServer(t, h, Config{})
	for _, tc := range []struct{ req, want string }{
		{"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
			`url="//example.com:443" host="example.com:443" header=[] te=[] trailer=[] cookie=[]`},
		{"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\nX-A: 1\r\n\r\n1\r\na\r\n0\r\nX-Sum: 7\r\n\r\n",
			`url="/up" host="" header=[X-A] te=[chunked] trailer=[X-Sum] cookie=[]`},
	} {
		raw := dialRaw(t, ts.addr)
		raw.send(tc.req)
		method, _, _ := strings.Cut(tc.req, " ")
		assert.Equal(t, tc.want, raw.read(method).body, "%q", tc.req)
	}
	// On HTTP/2 a CONNECT has no :path, and its :authority is the target.
	h2 := dialH2(t, ts.addr)
	h2.hb.Reset()
	for _, f := range [][2]string{{":method", "CONNECT"}, {":authority", "example.com:443"}} {
		require.NoError(t, h2.he.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	require.NoError(t, h2.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: h2.hb.Bytes(),
		EndStream: true, EndHeaders: true}))
	h2.expect(1, "200", `url="//example.com:443" host="example.com:443" header=[] te=[] trailer=[] cookie=[]`)

	req := mustRequest(t, "GET", ts.url+"/c")
	req.Header.Add("Cookie", "a=1")
	req.Header.Add("Cookie", "b=2")
	_, b := do(t, h2Client(t), req)
	assert.Contains(t, string(b), `cookie=["a=1; b=2"]`)
	ts.atRest(t)
}

// An HTTP/2 body of no declared length is ContentLength -1 with no
// TransferEncoding, as net/http's HTTP/2 server has it (HTTP/2 has no
// chunked coding); over HTTP/1.1 it is chunked.
func TestFromHTTPBodyOfNoLengthOverH2(t *testing.T) {
	m := NewMux()
	m.Handle("POST /te", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %q %s %v", r.ContentLength, r.TransferEncoding, b, err)
	})))
	ts := startServer(t, m, Config{})
	for name, tc := range map[string]struct {
		c    *http.Client
		want string
	}{
		"HTTP/1.1": {client(t), `-1 ["chunked"] abc <nil>`},
		"HTTP/2":   {h2Client(t), `-1 [] abc <nil>`},
	} {
		// A body of unknown length: chunked on HTTP/1.1, DATA with no
		// content-length on HTTP/2.
		req, err := http.NewRequest("POST", ts.url+"/te", io.MultiReader(strings.NewReader("abc")))
		require.NoError(t, err)
		resp, body := do(t, tc.c, req)
		require.Equal(t, 200, resp.StatusCode, name)
		assert.Equal(t, tc.want, string(body), name)
	}
	ts.atRest(t)
}

// A request with no body has http.NoBody as its Body, as net/http's
// server gives it (code tests r.Body == http.NoBody to skip reading);
// one with a body, even an empty chunked one, has a reader.
func TestFromHTTPRequestWithoutBodyHasNoBody(t *testing.T) {
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		fmt.Fprintf(w, "nobody=%v len=%d err=%v", r.Body == http.NoBody, len(b), err)
	}))
	ts := startServer(t, h, Config{})
	for _, tc := range []struct{ req, want string }{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "nobody=true len=0 err=<nil>"},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "nobody=true len=0 err=<nil>"},
		{"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nab", "nobody=false len=2 err=<nil>"},
		{"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "nobody=false len=0 err=<nil>"},
	} {
		raw := dialRaw(t, ts.addr)
		raw.send(tc.req)
		method, _, _ := strings.Cut(tc.req, " ")
		assert.Equal(t, tc.want, raw.read(method).body, "%q", tc.req)
	}
	_, b := get(t, h2Client(t), ts.url+"/")
	assert.Equal(t, "nobody=true len=0 err=<nil>", string(b), "HTTP/2")
	ts.atRest(t)
}

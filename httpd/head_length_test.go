package httpd

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A native answer to HEAD may state the Content-Length GET would get (RFC
// 9110 §9.3.2) with a Content-Length field and no body: the client sees
// that length, on HTTP/1.1 and HTTP/2, and the connection goes on. A
// field that states Body's length is allowed for any method (a handler
// may answer GET and HEAD alike). Any other Content-Length field (not a
// non-negative integer, a second one, one other than a non-empty Body's
// length, or than an empty one's not answering HEAD, one on a status
// without content) is the handler's error: 500.
func TestHeadContentLength(t *testing.T) {
	doc := strings.Repeat("d", 1000)
	m := NewMux()
	m.HandleFunc("GET /doc", func(r *Request) Reply {
		if r.Method() == "HEAD" {
			return Respond(Response{Header: []Field{textHeader[0], {"content-length", "1000"}}})
		}
		return Text(200, doc)
	})
	m.HandleFunc("GET /skip", func(r *Request) Reply { // HEAD: no body made, no length stated
		if r.Method() == "HEAD" {
			return Text(200, "")
		}
		return Text(200, doc)
	})
	m.HandleFunc("GET /same", func(r *Request) Reply { // the GET handler's response, length stated
		return Respond(Response{Header: []Field{{"Content-Length", "1000"}}, Body: []byte(doc)})
	})
	m.HandleFunc("GET /bad/{cl}", func(r *Request) Reply {
		var hdr []Field
		for _, v := range strings.Split(r.PathValue("cl"), ",") {
			hdr = append(hdr, Field{"Content-Length", v})
		}
		status := atoi(r.Query("status"))
		return Respond(Response{Status: status, Header: hdr, Body: []byte(r.Query("body"))})
	})
	ts := startServer(t, m, Config{})

	for name, c := range map[string]*http.Client{"HTTP/1.1": client(t), "HTTP/2": h2Client(t)} {
		head := func(path string) *http.Response {
			req, err := http.NewRequest("HEAD", ts.url+path, nil)
			require.NoError(t, err)
			resp, b := do(t, c, req)
			assert.Empty(t, b, "%s %s", name, path)
			return resp
		}
		for _, path := range []string{"/doc", "/same"} {
			resp := head(path)
			assert.Equal(t, 200, resp.StatusCode, "%s %s", name, path)
			assert.Equal(t, int64(1000), resp.ContentLength, "%s %s", name, path)
		}
		resp := head("/skip")
		assert.Equal(t, 200, resp.StatusCode, name)
		assert.Empty(t, resp.Header.Values("Content-Length"), "%s: a HEAD that states no length gets none, not 0", name)
		_, b := get(t, c, ts.url+"/same")
		assert.Equal(t, doc, b, name)
		status, b := get(t, c, ts.url+"/bad/0")
		assert.Equal(t, 200, status, name)
		assert.Empty(t, b, name)

		for _, path := range []string{"/bad/-1", "/bad/x", "/bad/+5", "/bad/5,5", "/bad/3?body=ab",
			"/bad/0?status=204", "/bad/1?status=304"} {
			assert.Equal(t, 500, head(path).StatusCode, "%s HEAD %s", name, path)
		}
		for _, path := range []string{"/bad/3?body=ab", "/bad/5", "/bad/2,2?body=ab", "/bad/0?status=204"} {
			status, _ := get(t, c, ts.url+path)
			assert.Equal(t, 500, status, "%s GET %s", name, path)
		}
	}

	raw := dialRaw(t, ts.addr)
	raw.send("HEAD /doc HTTP/1.1\r\nHost: x\r\n\r\nGET /doc HTTP/1.1\r\nHost: x\r\n\r\n")
	resp := raw.read("HEAD")
	assert.Equal(t, []string{"1000"}, resp.header["Content-Length"])
	assert.Empty(t, resp.body)
	assert.Equal(t, doc, raw.read("GET").body, "the connection goes on")
	raw.send("HEAD /skip HTTP/1.1\r\nHost: x\r\n\r\nGET /skip HTTP/1.1\r\nHost: x\r\n\r\n")
	resp = raw.read("HEAD")
	assert.Empty(t, resp.header["Content-Length"])
	assert.Empty(t, resp.header["Transfer-Encoding"])
	assert.Equal(t, doc, raw.read("GET").body, "the connection goes on")
	ts.atRest(t)
}

package httpd

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/valkyria/aio"
)

// chunkedPost is a chunked POST of n bytes to path in 10000-byte chunks,
// with trailer (its lines, each ending in CRLF).
func chunkedPost(path string, n int, trailer string) string {
	var b strings.Builder
	b.WriteString("POST " + path + " HTTP/1.1\r\nHost: x\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n")
	for left := n; left > 0; left -= 10000 {
		k := min(left, 10000)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", k, strings.Repeat("a", k))
	}
	b.WriteString("0\r\n" + trailer + "\r\n")
	return b.String()
}

// A chunked body's trailer reaches the handler, native (Request.Trailer,
// once the body has ended) or net/http's (Request.Trailer after EOF),
// whether the body was buffered or streamed; fields a trailer may not
// carry are dropped.
func TestRequestTrailer(t *testing.T) {
	m := NewMux()
	m.HandleFunc("POST /native", func(r *Request) Reply {
		p := aio.NewPromise[Response](r.Loop())
		n := 0
		r.Body().OnData(func(b []byte, end bool) {
			n += len(b)
			if end {
				var all []string
				for name, value := range r.Trailers() {
					all = append(all, name+"="+value)
				}
				p.Resolve(TextResponse(200, fmt.Sprintf("%d %s %v", n, r.Trailer("x-sum"), all)))
			}
		})
		return Later(p.Handle())
	})
	m.Handle("POST /std", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprintf(w, "%d %s %d", n, r.Trailer.Get("X-Sum"), len(r.Trailer))
	})))
	ts := startServer(t, m, Config{})
	const trailer = "X-Sum: 42\r\nContent-Length: 5\r\nx-more: yes\r\n"
	for _, n := range []int{5, 100000} { // buffered, streamed
		c := dialRaw(t, ts.addr)
		c.send(chunkedPost("/native", n, trailer))
		assert.Equal(t, fmt.Sprintf("%d 42 [X-Sum=42 x-more=yes]", n), c.read("POST").body)
		c.send(chunkedPost("/std", n, trailer))
		assert.Equal(t, fmt.Sprintf("%d 42 2", n), c.read("POST").body)
		c.send(chunkedPost("/native", n, ""))
		assert.Equal(t, fmt.Sprintf("%d  []", n), c.read("POST").body, "no trailer: none left from before")
	}
	ts.atRest(t)
}

package httpd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
	ts := startServer(t, trailerMux(), Config{}) // h2trailer_test.go
	const trailer = "X-Sum: 42\r\nContent-Length: 5\r\nUpgrade: websocket\r\nx-more: yes\r\n"
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

package h1

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNoAllocs: the steady paths allocate nothing, a Head and a decoder
// reused, the response written into a buffer with room.
func TestNoAllocs(t *testing.T) {
	var p Parser
	var h Head
	for _, head := range []string{browserGET, healthGET} {
		buf := []byte(head)
		_, _ = p.Parse(buf, &h) // the Head's fields get their storage
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if n, err := p.Parse(buf, &h); n != len(buf) || err != nil {
				t.Fatal(n, err)
			}
		}), "Parse")
	}
	bad := []byte("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := p.Parse(bad, &h); err != ReasonObsFold.Err() {
			t.Fatal(err)
		}
	}), "a refusal")

	var d ChunkedDecoder
	body := []byte("5\r\nhello\r\n0\r\nX: y\r\n\r\n")
	decode := func() {
		d.Reset()
		for in := body; !d.Done(); {
			_, n, err := d.Decode(in)
			if err != nil || n == 0 {
				t.Fatal(n, err)
			}
			in = in[n:]
		}
	}
	decode()
	assert.Zero(t, testing.AllocsPerRun(100, decode), "Decode")

	buf := make([]byte, 0, 512)
	r := Response{Status: 200, Body: BodyChunked, Date: AppendDate(nil, time.Now()),
		Fields: []Field{{Name: []byte("Content-Type"), Value: []byte("text/html")}}}
	date := make([]byte, 0, 64)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		var err1, err2 error
		buf, err1 = AppendResponse(buf[:0], &r)
		buf = AppendChunk(buf, []byte("data"))
		buf, err2 = AppendLastChunk(buf, nil)
		date = AppendDate(date[:0], time.Time{})
		if err1 != nil || err2 != nil || len(date) == 0 {
			t.Fatal(err1, err2, string(date))
		}
	}), "the writers")
}

package h1_test

import (
	"errors"
	"fmt"

	"github.com/valkyria/aio/httpd/internal/h1"
)

// A head that arrives in two reads: the first answer is "need more".
func ExampleParser() {
	var p h1.Parser
	var h h1.Head
	buf := []byte("POST /upload?x=1 HTTP/1.1\r\nHost: example.com\r\n")
	n, err := p.Parse(buf, &h)
	fmt.Println(n, err)

	buf = append(buf, "Content-Length: 5\r\n\r\nhello"...)
	n, err = p.Parse(buf, &h)
	fmt.Println(n, err)
	fmt.Printf("%s %s %s host=%s\n", h.Method, h.Path, h.Query, h.Host)
	fmt.Println(h.Body == h1.BodyLength, h.ContentLength, string(buf[n:]))
	ct, ok := h.Get("content-length")
	fmt.Printf("%s %v\n", ct, ok)
	// Output:
	// 0 <nil>
	// 67 <nil>
	// POST /upload x=1 host=example.com
	// true 5 hello
	// 5 true
}

// A smuggling attempt: the answer is a status, and the connection closes.
func ExampleError() {
	var p h1.Parser
	var h h1.Head
	_, err := p.Parse([]byte("POST / HTTP/1.1\r\nHost: x\r\n"+
		"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"), &h)
	var e *h1.Error
	if errors.As(err, &e) {
		fmt.Println(e.Status, e.Close, e)
	}
	// Output:
	// 400 true h1: Content-Length with Transfer-Encoding
}

// A chunked body cut anywhere: Decode returns the data as slices of its
// input, and what it did not consume comes back with the next read.
func ExampleChunkedDecoder() {
	reads := []string{"5\r\nhel", "lo\r\n6\r\n world\r", "\n0\r\nX-Sum: 11\r\n\r\n"}
	var d h1.ChunkedDecoder
	var pending []byte
	for _, r := range reads {
		pending = append(pending, r...)
		for !d.Done() {
			data, n, err := d.Decode(pending)
			if err != nil {
				fmt.Println(err)
				return
			}
			if len(data) > 0 {
				fmt.Printf("%q\n", data)
			}
			pending = pending[n:]
			if n == 0 {
				break // need more
			}
		}
	}
	fmt.Printf("done=%v trailer %s=%s\n", d.Done(), d.Trailer[0].Name, d.Trailer[0].Value)
	// Output:
	// "hel"
	// "lo"
	// " world"
	// done=true trailer X-Sum=11
}

func ExampleAppendResponse() {
	b, err := h1.AppendResponse(nil, &h1.Response{
		Status: 200,
		Body:   h1.BodyChunked,
		Date:   []byte("Tue, 07 May 2024 08:12:44 GMT"),
		Fields: []h1.Field{{Name: []byte("Content-Type"), Value: []byte("text/plain")}},
	})
	if err != nil {
		panic(err)
	}
	b = h1.AppendChunk(b, []byte("hi"))
	b, _ = h1.AppendLastChunk(b, nil)
	fmt.Printf("%q\n", b)
	// Output:
	// "HTTP/1.1 200 OK\r\nDate: Tue, 07 May 2024 08:12:44 GMT\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n"
}

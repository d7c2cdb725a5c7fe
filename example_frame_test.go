package aio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/valkyria/aio"
)

// A line echo server: OnFrame with bufio.ScanLines hands it one line at a
// time, however the bytes were cut into reads. The client frames the replies
// the same way. It ends its last line with EOF instead of a newline: the
// server still gets that line (ScanLines returns it at EOF), answers, and,
// having no OnEOF, closes once the answer is sent.
func ExampleConn_OnFrame() {
	rt, l := start()
	defer stop(rt)

	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		var reply []byte // the connection's own: a frame is valid only during the call
		_ = c.OnFrame(bufio.ScanLines, 1024, func(c *aio.Conn, line []byte) {
			reply = append(append(append(reply[:0], "echo: "...), line...), '\n')
			_, _ = c.Write(reply)
		})
	})
	if err != nil {
		panic(err)
	}

	var got []string // on the loop
	done := aio.NewPromise[string](l)
	conn := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{})
	aio.Then(conn, func(c *aio.Conn) (struct{}, error) {
		_ = c.OnFrame(bufio.ScanLines, 1024, func(c *aio.Conn, line []byte) {
			got = append(got, string(line))
		})
		_ = c.OnClose(func(*aio.Conn, error) { done.Resolve(strings.Join(got, "\n")) })
		_, _ = c.Write([]byte("hello\nwor"))
		_, _ = c.Write([]byte("ld\nno newline at the end"))
		c.CloseWrite()
		return struct{}{}, nil
	})

	lines, err := done.Handle().Wait(context.Background())
	fmt.Println(lines)
	fmt.Println(err)
	// Output:
	// echo: hello
	// echo: world
	// echo: no newline at the end
	// <nil>
}

// A length-prefixed protocol: each frame is a 2-byte big-endian length and
// that many bytes. ScanLengthPrefixed cuts the payloads out, and refuses a
// length over its bound as soon as the length arrives. The server answers
// each request with its upper-case, framed the same way.
func ExampleScanLengthPrefixed() {
	rt, l := start()
	defer stop(rt)

	const maxPayload = 512
	frame := func(p []byte) []byte { return append(binary.BigEndian.AppendUint16(nil, uint16(len(p))), p...) }
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.OnFrame(aio.ScanLengthPrefixed(2, maxPayload), 2+maxPayload, func(c *aio.Conn, req []byte) {
			_, _ = c.Write(frame(bytes.ToUpper(req)))
		})
	})
	if err != nil {
		panic(err)
	}

	var got []string // on the loop
	done := aio.NewPromise[[]string](l)
	conn := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{})
	aio.Then(conn, func(c *aio.Conn) (struct{}, error) {
		_ = c.OnFrame(aio.ScanLengthPrefixed(2, maxPayload), 2+maxPayload, func(c *aio.Conn, reply []byte) {
			got = append(got, string(reply))
		})
		_ = c.OnClose(func(*aio.Conn, error) { done.Resolve(got) })
		_, _ = c.Write(append(frame([]byte("hello")), frame([]byte("length-prefixed world"))...))
		c.CloseWrite()
		return struct{}{}, nil
	})

	replies, err := done.Handle().Wait(context.Background())
	fmt.Printf("%q %v\n", replies, err)
	// Output:
	// ["HELLO" "LENGTH-PREFIXED WORLD"] <nil>
}

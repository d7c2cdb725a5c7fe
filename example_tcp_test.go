package aio_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/valkyria/aio"
)

// An echo server and a client on one loop: the server's callbacks and the
// client's continuations all run on the loop goroutine, one at a time.
func ExampleListen() {
	rt, l := start()
	defer stop(rt)

	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		// The bytes are the loop's read buffer, valid during the callback:
		// Write copies what the kernel does not take into the connection's
		// write queue.
		_ = c.OnRead(func(c *aio.Conn, b []byte) { _, _ = c.Write(b) })
	})
	if err != nil {
		panic(err)
	}

	reply := aio.NewPromise[string](l)
	conn := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{})
	aio.Then(conn, func(c *aio.Conn) (struct{}, error) {
		var got strings.Builder
		_ = c.OnRead(func(c *aio.Conn, b []byte) {
			got.Write(b)
			if got.Len() == len("hello") {
				reply.Resolve(got.String())
				c.Close()
			}
		})
		_, err := c.Write([]byte("hello"))
		return struct{}{}, err
	})

	fmt.Println(reply.Handle().Wait(context.Background()))
	// Output: hello <nil>
}

// A connection is a scope: what a request starts is adopted by its
// connection, so a client that goes away cancels it (here, a Work call that
// would otherwise run until its context ends). A peer's FIN is only a
// half-close: by default the connection waits for the work its requests
// started to write their replies. This protocol says a client that stops
// sending is gone: OnEOF closes.
func ExampleConn_Scope() {
	rt, l := start()
	defer stop(rt)

	started := make(chan struct{})
	result := make(chan error, 1)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.OnEOF(func(c *aio.Conn) { c.Close() })
		_ = c.OnRead(func(c *aio.Conn, _ []byte) {
			slow := aio.Work(l, func(ctx context.Context) (string, error) {
				close(started)
				<-ctx.Done() // a slow query, say, that honours its context
				return "", ctx.Err()
			})
			aio.Adopt(c.Scope(), slow)
			aio.Finally(slow, func() {
				_, err := slow.Result()
				result <- err
			})
		})
	})
	if err != nil {
		panic(err)
	}

	client, err := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{}).Wait(context.Background())
	if err != nil {
		panic(err)
	}
	_, _ = client.Write([]byte("query"))
	<-started
	client.Close() // the client goes away: the server sees EOF and closes

	fmt.Println(errors.Is(<-result, aio.ErrCancelled))
	// Output: true
}

// OnClose tells a server why each connection ended: here the client closes
// after its first reply (an orderly end: nil), and the server's read timeout
// ends the second, which never sends.
func ExampleConn_OnClose() {
	rt, l := start()
	defer stop(rt)

	ended := make(chan error, 2)
	cfg := aio.ListenConfig{Conn: aio.ConnConfig{ReadTimeout: 500 * time.Millisecond}}
	ln, err := aio.Listen(l, "127.0.0.1:0", cfg, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) { _, _ = c.Write(b) })
		_ = c.OnClose(func(_ *aio.Conn, err error) { ended <- err })
	})
	if err != nil {
		panic(err)
	}

	polite, err := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{}).Wait(context.Background())
	if err != nil {
		panic(err)
	}
	_ = polite.OnRead(func(c *aio.Conn, _ []byte) { c.Close() })
	_, _ = polite.WriteString("hi")
	fmt.Println("first:", <-ended)

	silent, err := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{}).Wait(context.Background())
	if err != nil {
		panic(err)
	}
	defer silent.Close()
	fmt.Println("second:", errors.Is(<-ended, aio.ErrReadTimeout))
	// Output:
	// first: <nil>
	// second: true
}

// A TCP proxy: each client is piped to a connection dialed to the upstream
// (here an echo server) on the same loop. The dial's continuation is
// adopted by the client's scope, so a client that goes away first cancels
// it and the dial under it, and the scope is busy until Pipe, which adopts
// its own handle, holds it; the pipe passes the client's FIN on and ends
// when both sides have.
func ExamplePipe() {
	rt, l := start()
	defer stop(rt)

	upstream, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) { _, _ = c.Write(b) })
	})
	if err != nil {
		panic(err)
	}
	piped := make(chan *aio.Handle[aio.Piped], 1)
	proxy, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(client *aio.Conn) {
		up := aio.Dial(l, upstream.Addr().String(), aio.ConnConfig{})
		joined := aio.Then(up, func(u *aio.Conn) (struct{}, error) {
			piped <- aio.Pipe(client, u)
			return struct{}{}, nil
		})
		aio.Adopt(client.Scope(), joined)
	})
	if err != nil {
		panic(err)
	}

	c, err := net.Dial("tcp", proxy.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("through the proxy"))
	_ = c.(*net.TCPConn).CloseWrite()
	reply, _ := io.ReadAll(c)
	n, err := (<-piped).Wait(context.Background())
	fmt.Printf("%s %+v %v\n", reply, n, err)
	// Output: through the proxy {AToB:17 BToA:17} <nil>
}

// A request/response server whose replies take time: each reply is the
// handle that writes it, adopted into the connection's scope. A client
// that sends its request and half-closes still gets its reply (the
// connection waits for its scope), and Drain lets replies in flight finish
// before the connections close.
func ExampleListener_Drain() {
	rt, l := start()
	defer stop(rt)

	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) {
			question := string(b)
			answer := aio.Work(l, func(context.Context) (string, error) {
				return strings.ToUpper(question), nil // a slow computation, say
			})
			aio.Adopt(c.Scope(), aio.Then(answer, func(s string) (struct{}, error) {
				_, err := c.WriteString(s)
				return struct{}{}, err
			}))
		})
	})
	if err != nil {
		panic(err)
	}

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close()
	_, _ = c.Write([]byte("hello"))
	_ = c.(*net.TCPConn).CloseWrite() // all said; the reply is still to come
	reply, _ := io.ReadAll(c)
	fmt.Println(string(reply))

	_, err = ln.Drain(5 * time.Second).Wait(context.Background())
	fmt.Println("drained:", err)
	// Output:
	// HELLO
	// drained: <nil>
}

// A write timeout frees a server from a client that asks for a large reply
// and never reads it: once the kernel has taken none of the queued bytes
// for the timeout, the connection closes with ErrWriteTimeout (and its
// scope's work is cancelled). A reader that makes progress, however slow,
// is not cut.
func ExampleConn_SetWriteTimeout() {
	rt, l := start()
	defer stop(rt)

	ended := make(chan error, 1)
	reply := make([]byte, 16<<20)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.SetWriteTimeout(200 * time.Millisecond)
		_ = c.OnRead(func(c *aio.Conn, _ []byte) { _, _ = c.Write(reply) })
		_ = c.OnClose(func(_ *aio.Conn, err error) { ended <- err })
	})
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("GET everything\n")) // and never read
	fmt.Println(errors.Is(<-ended, aio.ErrWriteTimeout))
	// Output: true
}

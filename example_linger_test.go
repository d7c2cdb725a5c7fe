package aio_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/valkyria/aio"
)

// A server that ends a connection after its reply, as HTTP/1.1 does after
// "Connection: close": Drain sends FIN after the reply and reads and drops
// what the client still sends (a request that crossed the FIN), so that
// the client reads the whole reply and then EOF, never a reset; the
// connection closes at the client's EOF.
func ExampleConn_Drain() {
	rt, l := start()
	defer stop(rt)

	ended := make(chan *aio.Handle[struct{}], 1)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) {
			_, _ = c.WriteString("the only reply")
			ended <- c.Drain()
		})
	})
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	_, _ = c.Write([]byte("first"))
	closed := <-ended
	_, _ = c.Write([]byte("second, crossing the FIN"))
	reply, err := io.ReadAll(c)
	fmt.Printf("%q %v\n", reply, err)
	_ = c.Close() // the server's side closes at this EOF
	_, err = closed.Wait(context.Background())
	fmt.Println("closed:", err)
	// Output:
	// "the only reply" <nil>
	// closed: <nil>
}

// A peer that never closes holds a lingering close for ConnConfig.Linger
// at most: here the server's side closes 100 ms after its FIN while the
// client is still open.
func ExampleConnConfig_linger() {
	rt, l := start()
	defer stop(rt)

	ended := make(chan *aio.Handle[struct{}], 1)
	cfg := aio.ListenConfig{Conn: aio.ConnConfig{Linger: 100 * time.Millisecond}}
	ln, err := aio.Listen(l, "127.0.0.1:0", cfg, func(c *aio.Conn) {
		_ = c.OnRead(func(c *aio.Conn, b []byte) {
			_, _ = c.WriteString("the only reply")
			ended <- c.Drain()
		})
	})
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer c.Close() // only after the server's side has closed
	_, _ = c.Write([]byte("request"))
	closed := <-ended
	reply, err := io.ReadAll(c)
	fmt.Printf("%q %v\n", reply, err)
	_, err = closed.Wait(context.Background())
	fmt.Println("closed:", err)
	// Output:
	// "the only reply" <nil>
	// closed: <nil>
}

package aio_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/valkyria/aio"
)

// A peer that sends a request and never reads the reply holds a drain for
// ever: the FIN waits for the write queue to flush, and ConnConfig.Linger
// counts only from the FIN. Within bounds the drain; when it times out,
// Close ends the connection (the drain's handle, given up by Within, may
// have closed it already: then Close just completes).
func ExampleConn_Drain_within() {
	rt, l := start()
	defer stop(rt)

	conns := make(chan *aio.Conn, 1)
	reply := make([]byte, 16<<20) // more than the sockets' buffers hold
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		answered := false // the request may come in more than one read
		_ = c.OnRead(func(c *aio.Conn, _ []byte) {
			if !answered {
				answered = true
				_, _ = c.Write(reply)
				conns <- c
			}
		})
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

	c := <-conns
	ctx := context.Background()
	_, err = aio.Within(c.Drain(), 100*time.Millisecond).Wait(ctx)
	fmt.Println("drained in time:", err == nil, "timed out:", errors.Is(err, aio.ErrTimeout))
	if err != nil {
		_, _ = c.Close().Wait(ctx)
	}
	fmt.Println("queued after close:", c.Buffered())
	// Output:
	// drained in time: false timed out: true
	// queued after close: 0
}

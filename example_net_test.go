package aio_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"golang.org/x/sys/unix"
)

// Goroutine code on a loop's connections: each accepted connection is
// served through its net.Conn view by code written for package net, here
// bufio and net/textproto. The loop does the I/O; the goroutine blocks.
func ExampleConn_NetConn() {
	rt, l := start()
	defer stop(rt)

	served := make(chan struct{}) // one client in this example
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
		go func(nc net.Conn) { // never block the loop: serve on a goroutine
			defer close(served)
			defer nc.Close()
			tp := textproto.NewConn(nc)
			for {
				line, err := tp.ReadLine()
				if err != nil {
					return // io.EOF: the client has finished
				}
				_ = tp.PrintfLine("%s", strings.ToUpper(line))
			}
		}(c.NetConn())
	})
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	r := bufio.NewReader(client)
	for _, word := range []string{"hello", "loop"} {
		fmt.Fprintf(client, "%s\r\n", word)
		reply, _ := textproto.NewReader(r).ReadLine()
		fmt.Println(reply)
	}
	client.Close()
	<-served
	// Output:
	// HELLO
	// LOOP
}

// A dial bounded by a context: when the context ends first, the dial is
// aborted and its handle fails with the context's error.
func ExampleDialer_DialContext() {
	rt, l := start()
	defer stop(rt)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) { c.Close() })
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	var d aio.Dialer // LocalAddr, Conn: the options; the zero value dials as Dial does
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, l, ln.Addr().String()).Wait(context.Background())
	fmt.Println("connected:", err == nil)
	c.Close()

	gone, stopIt := context.WithCancel(context.Background())
	stopIt() // the caller gave up
	_, err = d.DialContext(gone, l, ln.Addr().String()).Wait(context.Background())
	fmt.Println("cancelled:", errors.Is(err, context.Canceled))
	// Output:
	// connected: true
	// cancelled: true
}

// net/http's client over a loop: the Transport's DialContext dials on the
// loop and hands over the connection's net.Conn view, on which the
// Transport's goroutines block while the loop does the I/O. The dial is
// waited for with context.Background(): its handle ends with ctx already,
// and a Wait(ctx) could give up on a connection made as ctx ended, which
// would then stay open, nobody's.
func ExampleDialer_DialContext_httpTransport() {
	rt, l := start()
	defer stop(rt)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello over %s", r.Proto)
	}))
	defer srv.Close()

	var d aio.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, l, addr).Wait(context.Background())
		if err != nil {
			return nil, err
		}
		return c.NetConn(), nil
	}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output:
	// 200 hello over HTTP/1.1
}

// A listener made with package net (or inherited from a parent process)
// moves onto a loop: aio accepts on a duplicate of its socket, and the
// caller closes its own.
func ExampleAdoptListenerFrom() {
	rt, l := start()
	defer stop(rt)

	nl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln, err := aio.AdoptListenerFrom(l, nl.(*net.TCPListener), aio.ListenConfig{}, func(c *aio.Conn) {
		_, _ = c.Write([]byte("hello from the loop\n"))
		c.CloseWrite()
	})
	nl.Close() // the caller's copy: aio's keeps listening
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer client.Close()
	line, _ := bufio.NewReader(client).ReadString('\n')
	fmt.Print(line)
	// Output: hello from the loop
}

// A socket option aio does not set itself, through the connection's
// syscall.RawConn: Control runs on the loop, with the fd.
func ExampleConn_SyscallConn() {
	rt, l := start()
	defer stop(rt)
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(*aio.Conn) {})
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	c, err := aio.Dial(l, ln.Addr().String(), aio.ConnConfig{}).Wait(context.Background())
	if err != nil {
		panic(err)
	}
	defer c.Close()

	rc, err := c.SyscallConn()
	if err != nil {
		panic(err)
	}
	var typ int
	var optErr error
	err = rc.Control(func(fd uintptr) {
		typ, optErr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	})
	fmt.Println(typ == unix.SOCK_STREAM, err, optErr)
	// Output: true <nil> <nil>
}

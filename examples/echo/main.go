// Command echo is a TCP echo server on aio loops: one loop per core, each
// with its own listener on the same port (SO_REUSEPORT), so the kernel
// spreads the connections over the loops and the server uses every core with
// no goroutine per connection.
//
//	go run ./examples/echo -addr 127.0.0.1:7000 -loops 2
//
// Once every loop accepts, it prints one line on standard output,
// "listening on ADDR" (with the port the system chose when -addr asks for
// port 0); everything else it says goes to standard error.
//
// SIGINT or SIGTERM stops it gracefully (Runtime.Shutdown): every loop stops
// accepting; each open connection sends back what it has read, then FIN,
// and closes (an echo has no work in flight but its write queue); a
// connection still open after -grace (its client does not read what it is
// sent, so the queue cannot flush) is closed, and the runtime shuts down.
// See examples/proxy for connections that are busy while they last.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/valkyria/aio"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:7000", "address to listen on (host:port; port 0 picks one)")
	loops := flag.Int("loops", runtime.NumCPU(), "loops (one listener each, SO_REUSEPORT)")
	grace := flag.Duration("grace", 5*time.Second, "how long open connections may take to finish after a signal")
	flag.Parse()
	switch {
	case flag.NArg() > 0:
		log.Fatalf("echo: unexpected arguments %q", flag.Args())
	case *loops < 1 || *loops > aio.MaxSystemsLimit:
		log.Fatalf("echo: -loops %d: need 1 to %d loops", *loops, aio.MaxSystemsLimit)
	case *grace < 0:
		log.Fatalf("echo: -grace %v: must not be negative", *grace)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	aio.ReserveProcs(*loops) // a P per loop and one to spare
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: max(*loops, 16)})
	srv, err := start(rt, *addr, *loops)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", srv.addr)
	log.Printf("echo: %d loops", *loops)

	<-ctx.Done()
	stop()
	log.Printf("echo: stopping: no new connections, %v for the open ones", *grace)
	expired, err := shutdown(rt, *grace)
	if expired {
		log.Printf("echo: the grace period ran out: the connections still open are closed")
	}
	if err != nil {
		log.Fatalf("echo: runtime shutdown: %v", err)
	}
	log.Printf("echo: %s", srv.summary())
}

// server is the echo server: one loop per listener.
type server struct {
	addr  string
	loops []*aio.Loop
}

// start starts loops loops on rt, each listening on addr. With port 0 the
// first listener picks the port and the others join it.
func start(rt *aio.Runtime, addr string, loops int) (*server, error) {
	if loops < 1 {
		return nil, errors.New("echo: need at least one loop")
	}
	srv := &server{addr: addr}
	for i := 0; i < loops; i++ {
		l, err := rt.Start(aio.Config{Name: fmt.Sprintf("echo-%d", i)})
		if err != nil {
			return nil, errors.Join(err, shutdownRuntime(rt))
		}
		srv.loops = append(srv.loops, l)
		ln, err := aio.Listen(l, srv.addr, aio.ListenConfig{ReusePort: true}, accept)
		if err != nil {
			return nil, errors.Join(err, shutdownRuntime(rt))
		}
		srv.addr = ln.Addr().String()
	}
	return srv, nil
}

// shutdownRuntime stops every loop of rt, giving up after 10 s.
func shutdownRuntime(rt *aio.Runtime) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Shutdown(ctx)
}

// shutdown stops the server gracefully (Runtime.Shutdown): every listener
// closes, every connection ends once its echo is flushed, and the loops
// stop. It reports whether grace ran out first: the loops are stopping
// then, closing the connections still open, and err is nil. Any goroutine
// but the loops'.
func shutdown(rt *aio.Runtime, grace time.Duration) (expired bool, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := rt.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return false, err
	}
	return true, nil
}

// echo sends back whatever arrives; Write copies what the kernel does not take
// at once, and a client that does not read makes its connection stop reading
// (the write queue's high-water mark) instead of growing without bound.
func echo(c *aio.Conn, b []byte) { _, _ = c.Write(b) }

// accept runs on the loop for every new connection.
func accept(c *aio.Conn) {
	_ = c.OnRead(echo) // at EOF the connection closes once its echo is flushed
}

// summary describes what each loop did.
func (srv *server) summary() string {
	out := ""
	for _, l := range srv.loops {
		st := l.Stats()
		out += fmt.Sprintf("[%s: %d accepted, %d B in, %d B out] ", st.Name, st.TCPAccepted, st.TCPBytesIn, st.TCPBytesOut)
	}
	return out
}

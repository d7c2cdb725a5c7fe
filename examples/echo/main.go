// Command echo is a TCP echo server on aio loops: one loop per core, each
// with its own listener on the same port (SO_REUSEPORT), so the kernel
// spreads the connections over the loops and the server uses every core with
// no goroutine per connection.
//
//	go run ./examples/echo -addr 127.0.0.1:7000 -loops 2
//
// SIGINT or SIGTERM stops it gracefully: every loop stops accepting, the
// open connections get -grace to finish (their clients close them), those
// still open then are closed, and the runtime shuts down.
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

	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: max(*loops, 16)})
	srv, err := start(rt, *addr, *loops)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("echo: listening on %s with %d loops", srv.addr, *loops)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	log.Printf("echo: stopping: no new connections, %v for the open ones", *grace)
	closed := srv.shutdown(*grace)
	log.Printf("echo: closed %d connections still open after the grace period", closed)

	if err := shutdownRuntime(rt); err != nil {
		log.Fatalf("echo: runtime shutdown: %v", err)
	}
	log.Printf("echo: %s", srv.summary())
}

// server is the echo server: one shard per loop.
type server struct {
	addr   string
	shards []*shard
}

// shard is one loop's part of the server.
type shard struct {
	l  *aio.Loop
	ln *aio.Listener
	// Owned by the loop.
	conns   map[*aio.Conn]struct{}
	onEmpty func() // set while draining: called when the last connection has gone
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
		s := &shard{l: l, conns: map[*aio.Conn]struct{}{}}
		s.ln, err = aio.Listen(l, srv.addr, aio.ListenConfig{ReusePort: true}, s.accept)
		if err != nil {
			return nil, errors.Join(err, shutdownRuntime(rt))
		}
		srv.addr = s.ln.Addr().String()
		srv.shards = append(srv.shards, s)
	}
	return srv, nil
}

// shutdownRuntime stops every loop of rt, giving up after 10 s.
func shutdownRuntime(rt *aio.Runtime) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Shutdown(ctx)
}

// echo sends back whatever arrives; Write copies what the kernel does not take
// at once, and a client that does not read makes its connection stop reading
// (the write queue's high-water mark) instead of growing without bound.
func echo(c *aio.Conn, b []byte) { _, _ = c.Write(b) }

// accept runs on the shard's loop for every new connection.
func (s *shard) accept(c *aio.Conn) {
	s.conns[c] = struct{}{}
	_ = c.OnRead(echo) // at EOF the connection closes once its echo is flushed
	c.Closed().OnCleanup(func() {
		delete(s.conns, c)
		if len(s.conns) == 0 && s.onEmpty != nil {
			s.onEmpty()
			s.onEmpty = nil
		}
	})
}

// shutdown stops accepting on every loop, waits up to grace for the open
// connections to finish, closes those that did not, and returns how many it
// closed. Any goroutine but the loops'.
func (srv *server) shutdown(grace time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), grace) // the one bound of both waits
	defer cancel()
	closing := make([]*aio.Handle[struct{}], len(srv.shards))
	for i, s := range srv.shards {
		closing[i] = s.ln.Close()
	}
	for _, h := range closing {
		if _, _ = h.Wait(ctx); ctx.Err() != nil {
			return srv.closeAll()
		}
	}
	drained := make(chan struct{}, len(srv.shards))
	for _, s := range srv.shards {
		err := s.l.Post(func() {
			if len(s.conns) == 0 {
				drained <- struct{}{}
				return
			}
			s.onEmpty = func() { drained <- struct{}{} }
		})
		if err != nil { // the loop is stopped already: nothing left to wait for
			drained <- struct{}{}
		}
	}
	for range srv.shards {
		select {
		case <-drained:
		case <-ctx.Done():
			return srv.closeAll()
		}
	}
	return 0
}

// closeAll closes every connection still open and returns how many it
// closed.
func (srv *server) closeAll() int {
	counts := make(chan int, len(srv.shards))
	for _, s := range srv.shards {
		if err := s.l.Post(func() {
			n := len(s.conns)
			for c := range s.conns {
				c.Close()
			}
			counts <- n
		}); err != nil {
			counts <- 0
		}
	}
	total := 0
	for range srv.shards {
		total += <-counts
	}
	return total
}

// summary describes what each loop did.
func (srv *server) summary() string {
	out := ""
	for _, s := range srv.shards {
		st := s.l.Stats()
		out += fmt.Sprintf("[%s: %d accepted, %d B in, %d B out] ", st.Name, st.TCPAccepted, st.TCPBytesIn, st.TCPBytesOut)
	}
	return out
}

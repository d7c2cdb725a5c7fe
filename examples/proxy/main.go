// Command proxy is a TCP proxy on aio loops: each client connection is
// piped (aio.Pipe) to a connection of its own to the upstream, dialed on
// the client's loop, with flow control per direction and half-closes
// passed on. One loop per core, each with its own listener on the same
// address (SO_REUSEPORT), and no goroutine per connection.
//
//	go run ./examples/proxy -listen 127.0.0.1:7001 -upstream 127.0.0.1:7000 [-loops 2] [-grace 5s] [-dial-timeout 10s]
//
// Once every loop accepts, it prints one line on standard output,
// "listening on ADDR" (with the port the system chose when -listen asks for
// port 0); everything else it says goes to standard error.
//
// What a client sends while its upstream connection is being established
// is kept (up to 64 KiB; past that the proxy stops reading the client, and
// the kernel's buffers and TCP's flow control hold the rest back) and goes
// to the upstream first. The client is read meanwhile so that a client
// that goes away (a reset) cancels the dial; its FIN is only a half-close
// and passes on once the upstream is there, so a client that sends its
// request and half-closes at once still gets the reply. A dial that fails,
// or takes longer than -dial-timeout, closes the client. Once the pipe is
// up, a reset from either side passes on as a reset (aio.Pipe), so an
// upload or a reply cut short never reaches the other side as a whole
// stream ended by a FIN.
//
// SIGINT or SIGTERM stops it gracefully: every loop stops accepting, the
// open pipes get -grace to finish (both sides have closed), those still
// open then are closed, and it exits with status 0. A proxy cannot tell a
// pipe that is between two exchanges from one in the middle of one, so an
// idle pipe is waited for too. A second signal ends the process at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/valkyria/aio"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:7001", "address to listen on (host:port; port 0 picks one)")
	upstream := flag.String("upstream", "", "address to proxy to (host:port)")
	loops := flag.Int("loops", runtime.NumCPU(), "loops (one listener each, SO_REUSEPORT)")
	grace := flag.Duration("grace", 5*time.Second, "how long open pipes may take to finish after a signal")
	dialTimeout := flag.Duration("dial-timeout", 10*time.Second, "how long a connect to the upstream may take")
	flag.Parse()
	log.SetPrefix("proxy: ")
	if err := checkFlags(*upstream, *loops, *grace, *dialTimeout, flag.Args()); err != nil {
		log.Print(err)
		flag.Usage()
		os.Exit(2)
	}

	// The signals are caught before the address is printed: whoever reads
	// it may signal at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	aio.ReserveProcs(*loops) // a P per loop and one to spare
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: max(*loops, 16)})
	p, err := start(rt, *listen, *upstream, *loops, *dialTimeout)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", p.addr)
	log.Printf("%d loops, proxying to %s", len(p.loops), p.upstream)

	<-ctx.Done()
	stop() // a second signal ends the process at once
	log.Printf("stopping: no new connections, %v for the open pipes", *grace)
	if err := shutdown(rt, p, *grace); err != nil {
		log.Fatalf("shutdown: %v", err)
	}
	log.Print(p.summary())
}

// checkFlags says what is wrong with the flags, if anything, before
// anything listens: a proxy that starts and then fails every client (an
// upstream port out of range, a host that does not resolve) is worse than
// one that does not start. The upstream's name is resolved once here, as
// nginx and HAProxy do at start, and again at every dial.
func checkFlags(upstream string, loops int, grace, dialTimeout time.Duration, rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("unexpected arguments %q", rest)
	}
	host, port, err := net.SplitHostPort(upstream)
	if err != nil {
		return fmt.Errorf("-upstream %q: %v", upstream, err)
	}
	// Checked as aio.Dial parses it, digits only: strconv.Atoi takes "+80".
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n < 1 {
		return fmt.Errorf("-upstream %q: the port must be a number from 1 to 65535", upstream)
	}
	if loops < 1 || loops > aio.MaxSystemsLimit {
		return fmt.Errorf("-loops %d: need 1 to %d loops", loops, aio.MaxSystemsLimit)
	}
	if grace < 0 {
		return fmt.Errorf("-grace %v: must not be negative", grace)
	}
	if dialTimeout <= 0 {
		return fmt.Errorf("-dial-timeout %v: must be positive", dialTimeout)
	}
	// aio.Dial takes "" and "localhost" as 127.0.0.1 without resolving,
	// and an IPv6 zone by its number only (fe80::1%2, not %eth0).
	ip, err := netip.ParseAddr(host)
	if err == nil && ip.Zone() != "" {
		if _, err := strconv.ParseUint(ip.Zone(), 10, 32); err != nil {
			return fmt.Errorf("-upstream %q: zone %q: give the interface's number, not its name", upstream, ip.Zone())
		}
	}
	if err != nil && host != "" && host != "localhost" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
			return fmt.Errorf("-upstream %q: %v", upstream, err)
		}
	}
	return nil
}

// earlyMax bounds what the proxy keeps of a client's bytes while the
// upstream connection is being established: once it has that much it
// stops reading the client until Pipe takes over.
const earlyMax = 64 << 10

// proxy is the proxy's configuration and loops.
type proxy struct {
	addr        string        // the address every listener is bound to; immutable once started
	upstream    string        // immutable
	dialTimeout time.Duration // bounds each connect to the upstream; immutable
	loops       []*aio.Loop   // immutable once started
}

// start starts loops (at least one: checkFlags) loops on rt, each listening on addr and proxying to
// upstream, each connect bounded by dialTimeout. With port 0 the first
// listener picks the port and the others join it. When it returns, every
// listener accepts (the kernel queues connections from listen(2) on).
func start(rt *aio.Runtime, addr, upstream string, loops int, dialTimeout time.Duration) (*proxy, error) {
	p := &proxy{addr: addr, upstream: upstream, dialTimeout: dialTimeout}
	for i := 0; i < loops; i++ {
		l, err := rt.Start(aio.Config{Name: fmt.Sprintf("proxy-%d", i)})
		if err != nil {
			return nil, errors.Join(err, stopAll(rt))
		}
		p.loops = append(p.loops, l)
		ln, err := aio.Listen(l, p.addr, aio.ListenConfig{ReusePort: true}, p.accept)
		if err != nil {
			return nil, errors.Join(err, stopAll(rt))
		}
		p.addr = ln.Addr().String()
	}
	return p, nil
}

// accept runs on the client's loop for every new client: it dials the
// upstream from the same loop and pipes the two together.
func (p *proxy) accept(client *aio.Conn) {
	// Read the client while the dial runs: a reset closes the client, and
	// the client's scope cancels the dial. Not reading would leave a client
	// that is gone unseen until the dial ends (a connect to a host that
	// does not answer takes minutes). What it sends is kept, bounded,
	// then written to the upstream before Pipe copies the rest.
	var early []byte // owned by the loop
	_ = client.OnRead(func(c *aio.Conn, b []byte) {
		early = append(early, b...)
		if len(early) >= earlyMax {
			_ = c.PauseRead()
		}
	})
	// A FIN is a half-close: the client waits for its reply. Pipe passes
	// it on to the upstream. So a client that half-closes is not gone, and
	// only -dial-timeout bounds how long its dial may hold it (the
	// kernel's own connect timeout is minutes).
	_ = client.OnEOF(func(*aio.Conn) {})

	dialed := aio.Within(aio.Dial(client.Loop(), p.upstream, aio.ConnConfig{}), p.dialTimeout)
	piped := aio.Then(dialed, func(up *aio.Conn) (struct{}, error) {
		_, _ = up.Write(early) // up is open: Write copies what the kernel does not take
		early = nil
		aio.Pipe(client, up) // its handle is the end of both: nothing to do with it here
		return struct{}{}, nil
	})
	// Adopted into the client's scope: the client closing cancels the
	// continuation, which withdraws from the dial and so cancels it. Pipe
	// adopts its own work into the scope before the continuation leaves
	// it, so a drain (Shutdown) never finds the client idle in between.
	aio.Adopt(client.Scope(), piped)
	aio.Catch(piped, func(err error) (struct{}, error) {
		log.Printf("%v: upstream: %v", client.RemoteAddr(), err)
		client.Close()
		return struct{}{}, nil
	})
}

// shutdown ends the proxy gracefully with Runtime.Shutdown: the listeners
// close, the open pipes get grace to finish, and the loops stop. When grace
// runs out that is no error: the loops are stopping then, closing the
// pipes still open, and the process's exit finishes what they have not.
// Any goroutine but the loops'.
func shutdown(rt *aio.Runtime, p *proxy, grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// With -grace 0 the context has ended before Shutdown looks at the
	// pipes: whether any was open is counted before.
	open := p.open()
	err := rt.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		if grace > 0 || open > 0 {
			log.Printf("the grace period ran out: the pipes still open are closed")
		}
		return nil
	}
	return err
}

// open counts the connections, clients' and upstreams', open on the loops.
func (p *proxy) open() int {
	n := 0
	for _, l := range p.loops {
		n += l.Stats().TCPOpen
	}
	return n
}

// stopAll stops every loop of rt at once, giving up after 10 s.
func stopAll(rt *aio.Runtime) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Shutdown(ctx)
}

// summary describes what each loop did.
func (p *proxy) summary() string {
	out := ""
	for _, l := range p.loops {
		st := l.Stats()
		out += fmt.Sprintf("[%s: %d accepted, %d dialed, %d B in, %d B out] ",
			st.Name, st.TCPAccepted, st.TCPDialed, st.TCPBytesIn, st.TCPBytesOut)
	}
	return out
}

// Command webserver is an example webserver on package httpd: an HTTP/1.1
// and HTTP/2 (h2c, by prior knowledge or Upgrade, on the same port)
// server on aio loops whose handlers answer at once or return a handle (a
// timer, Work, All, Race, a stream), and where a client that goes away
// cancels everything its request started and gives back its arena.
//
//	go run ./examples/webserver [-addr 127.0.0.1:8080] [-loops N] [-grace 5s] ...
//
// Flags:
//
//	-addr ADDR            listen address (default 127.0.0.1:8080; port 0 picks one)
//	-loops N              loops, one listener each with SO_REUSEPORT (default: number of CPUs)
//	-arenas N             request arenas per loop (default 1024)
//	-arena-size BYTES     size of one request arena (default 65536)
//	-grace DURATION       drain deadline on SIGTERM/SIGINT (default 5s)
//	-header-timeout DUR   time a client has to send a complete request head, and the
//	                      longest it may pause in a body (default 5s)
//	-body-timeout DUR     time a small body (one that waits in its arena) has to arrive whole (default 30s)
//	-idle-timeout DUR     idle keep-alive connection timeout (default 60s)
//	-api-timeout DUR      the timeout of /api/slow (default 5s)
//	-cpuprofile FILE      write a CPU profile of the whole run to FILE
//	-tls-cert FILE        serve HTTPS with this certificate (PEM), with -tls-key
//	-tls-key FILE         the certificate's private key (PEM)
//	-tls-self-signed      serve HTTPS with a certificate made at start for localhost
//	                      (its SHA-256 fingerprint is logged): curl -k https://...
//
// With TLS, ALPN offers h2, http/1.1 and http/1.0 (HTTP/2 without TLS stays h2c by
// prior knowledge), on the loops with crypto/tls and no goroutine per
// connection.
//
// Once every loop accepts, it prints one line on standard output,
// "listening on ADDR" (with the port the system chose for port 0); its logs
// go to standard error.
//
// Routes:
//
//	GET /health              200 "ok", answered at once: no handle is made
//	GET /slow?ms=N           200 "waited N ms" after N ms (default 2000), a loop timer
//	GET /users/{id}          200 {"id":"<id>","name":"user <id>"}: Then on a Work call (a query)
//	GET /dashboard           200 {"posts":[…],"stats":{…}}: All of two Work calls
//	GET /api/slow?ms=N       Race of a fetch of N ms (default 100) and the -api-timeout
//	                         timer: 200 "data after N ms", or 504 "timeout"
//	POST /echo               200 with the request body, streamed back with flow control
//	GET /events?n=N&ms=M     text/event-stream: N events "data: I\n\n" (I = 0…N-1), one
//	                         every M ms (defaults 10 and 1000); a client going away stops it
//	GET /stats               the server's counters as JSON, summed over the loops
//	GET /metrics             the same and the loops' counters, Prometheus text format
//	anything else            404 (a known path with another method too)
//
// Query values are bounded: ms is an integer from 0 to 60000 (from 1 for
// /events), n from 0 to 10000. Anything else (not a number, negative, too
// large) is answered 400 with a body that says what is wanted.
//
// SIGINT or SIGTERM stops it gracefully (httpd.Server.Shutdown): the
// listeners close, idle keep-alive connections close, and the requests in
// progress get -grace to finish (their responses say Connection: close);
// those still running then are cancelled and their connections closed. It
// exits 0 either way. A second signal ends the process at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// options are the command line's values.
type options struct {
	addr          string
	loops         int
	arenas        int
	arenaSize     int
	grace         time.Duration
	headerTimeout time.Duration
	bodyTimeout   time.Duration
	idleTimeout   time.Duration
	apiTimeout    time.Duration
	cpuProfile    string
	tlsCert       string
	tlsKey        string
	tlsSelfSigned bool
}

func main() {
	log.SetPrefix("webserver: ")
	opts, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		log.Print(err)
		os.Exit(2)
	}

	// The signals are caught before the address is printed: whoever reads
	// it may signal at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if opts.cpuProfile != "" {
		f, err := os.Create(opts.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			log.Fatalf("-cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile() // after the drain
	}
	aio.ReserveProcs(opts.loops) // a P per loop and one to spare
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: max(opts.loops, 16)})
	app, err := start(rt, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", app.srv.Addr())
	log.Printf("%d loops, %d arenas of %d bytes each", opts.loops, opts.arenas, opts.arenaSize)

	<-ctx.Done()
	stop() // a second signal ends the process at once
	log.Printf("stopping: no new connections, %v for the requests in progress", opts.grace)
	if err := app.shutdown(opts.grace); err != nil {
		log.Fatalf("shutdown: %v", err)
	}
}

// parseFlags reads the command line; usage and errors go to out.
func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("webserver", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address (host:port; port 0 picks one)")
	fs.IntVar(&o.loops, "loops", runtime.NumCPU(), "loops, one listener each with SO_REUSEPORT")
	fs.IntVar(&o.arenas, "arenas", httpd.DefaultArenas, "request arenas per loop")
	fs.IntVar(&o.arenaSize, "arena-size", httpd.DefaultArenaSize, "size of one request arena in bytes")
	fs.DurationVar(&o.grace, "grace", 5*time.Second, "drain deadline on SIGTERM/SIGINT")
	fs.DurationVar(&o.headerTimeout, "header-timeout", httpd.DefaultHeaderTimeout, "time a client has to send a complete request head, and the longest it may pause in a body")
	fs.DurationVar(&o.bodyTimeout, "body-timeout", httpd.DefaultBodyTimeout, "time a small body (one that waits in its arena) has to arrive whole")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", httpd.DefaultIdleTimeout, "idle keep-alive connection timeout")
	fs.DurationVar(&o.apiTimeout, "api-timeout", 5*time.Second, "the timeout of /api/slow")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	fs.StringVar(&o.tlsCert, "tls-cert", "", "serve HTTPS with this certificate file (PEM), with -tls-key")
	fs.StringVar(&o.tlsKey, "tls-key", "", "the certificate's private key file (PEM)")
	fs.BoolVar(&o.tlsSelfSigned, "tls-self-signed", false, "serve HTTPS with a self-signed certificate made at start (fingerprint logged)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case o.loops < 1 || o.loops > aio.MaxSystemsLimit:
		return o, fmt.Errorf("-loops %d: need 1 to %d loops", o.loops, aio.MaxSystemsLimit)
	case o.arenas < 1 || o.arenas > httpd.MaxArenas:
		// httpd would cap a larger count silently, and the log say it.
		return o, fmt.Errorf("-arenas %d: need 1 to %d arenas per loop", o.arenas, httpd.MaxArenas)
	case o.arenaSize < minArenaSize || o.arenaSize > httpd.MaxArenaSize:
		return o, fmt.Errorf("-arena-size %d: need %d to %d bytes", o.arenaSize, minArenaSize, httpd.MaxArenaSize)
	case o.tlsSelfSigned && (o.tlsCert != "" || o.tlsKey != ""), (o.tlsCert == "") != (o.tlsKey == ""):
		return o, errors.New("-tls-cert and -tls-key go together, and exclude -tls-self-signed")
	case o.grace < 0:
		return o, fmt.Errorf("-grace %v: must not be negative", o.grace)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header-timeout", o.headerTimeout}, {"body-timeout", o.bodyTimeout}, {"idle-timeout", o.idleTimeout}, {"api-timeout", o.apiTimeout}} {
		if d.v <= 0 {
			return o, fmt.Errorf("-%s %v: must be positive", d.name, d.v)
		}
	}
	return o, nil
}

// minArenaSize is the smallest -arena-size taken, httpd's own floor (it
// would raise a smaller one silently); a request head may take half.
const minArenaSize = 1 << 10

// app is the running server.
type app struct {
	rt  *aio.Runtime
	srv *httpd.Server
}

// start starts opts.loops loops on rt and serves the routes on them. When
// it returns, every listener accepts.
func start(rt *aio.Runtime, opts options) (*app, error) {
	for i := 0; i < opts.loops; i++ {
		if _, err := rt.Start(aio.Config{Name: fmt.Sprintf("web-%d", i)}); err != nil {
			return nil, errors.Join(err, stopAll(rt))
		}
	}
	tlsCfg, err := tlsConfig(opts)
	if err != nil {
		return nil, errors.Join(err, stopAll(rt))
	}
	a := &app{rt: rt, srv: &httpd.Server{Config: httpd.Config{
		Arenas:        opts.arenas,
		ArenaSize:     opts.arenaSize,
		HeaderTimeout: opts.headerTimeout,
		BodyTimeout:   opts.bodyTimeout,
		IdleTimeout:   opts.idleTimeout,
		Listen:        aio.ListenConfig{TLS: tlsCfg},
		H2CUpgrade:    true, // its interface serves Upgrade: h2c on the port
	}}}
	a.srv.Handler = newRoutes(rt, a.srv, opts.apiTimeout)
	if err := a.srv.Serve(rt, opts.addr); err != nil {
		return nil, errors.Join(err, stopAll(rt))
	}
	return a, nil
}

// shutdown drains the server for at most grace (httpd.Server.Shutdown),
// then stops the loops. A grace that runs out is no error: the requests
// still running have been cancelled and their connections closed. Any
// goroutine but the loops'.
func (a *app) shutdown(grace time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	err := a.srv.Shutdown(ctx)
	cancel()
	st := a.srv.Stats()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		log.Printf("the grace period ran out: the requests still running are cancelled")
	case err != nil:
		return errors.Join(err, stopAll(a.rt))
	}
	log.Printf("%d requests, %d cancelled, %d responses suppressed, %d bad requests, %d panics",
		st.Requests, st.Cancelled, st.ResponsesSuppressed, st.BadRequests, st.Panics)
	return stopAll(a.rt)
}

// stopAll stops every loop of rt, giving up after 10 s.
func stopAll(rt *aio.Runtime) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Shutdown(ctx)
}

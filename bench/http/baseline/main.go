// Command baseline serves the routes that make bench-http measures, on
// net/http (HTTP/1.1 and h2c by prior knowledge) or on fasthttp (HTTP/1.1
// only), so that examples/webserver is compared with both in the same
// run:
//
//	GET /health      200 text/plain "ok"
//	GET /slow?ms=N   200 "waited N ms" after N ms (default 1)
//
// With -tls-cert and -tls-key (net/http only) it serves HTTPS instead,
// HTTP/1.1 and HTTP/2 chosen by ALPN, with a goroutine per connection as
// net/http does. It prints "listening on ADDR" once it accepts. It lives in a module of
// its own so that fasthttp never becomes a dependency of aio.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	server := flag.String("server", "nethttp", "nethttp or fasthttp")
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	cert := flag.String("tls-cert", "", "nethttp: serve HTTPS with this certificate file (PEM), with -tls-key")
	key := flag.String("tls-key", "", "nethttp: the certificate's private key file (PEM)")
	flag.Parse()
	tlsOn := *cert != "" || *key != ""
	if tlsOn && (*cert == "" || *key == "" || *server != "nethttp") {
		fmt.Fprintln(os.Stderr, "baseline: -tls-cert and -tls-key go together, with -server nethttp")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	switch *server {
	case "nethttp":
		srv := &http.Server{Handler: http.HandlerFunc(serveStd), Protocols: new(http.Protocols)}
		srv.Protocols.SetHTTP1(true)
		if tlsOn {
			// HTTPS: HTTP/1.1 and HTTP/2 by ALPN, as the webserver's
			// -tls flags serve them.
			srv.Protocols.SetHTTP2(true)
			log.Fatal(srv.ServeTLS(ln, *cert, *key))
		}
		// HTTP/1.1, and h2c by prior knowledge on the same port, as the
		// webserver serves them.
		srv.Protocols.SetUnencryptedHTTP2(true)
		log.Fatal(srv.Serve(ln))
	case "fasthttp":
		s := &fasthttp.Server{Handler: serveFast, Name: "baseline"}
		log.Fatal(s.Serve(ln))
	default:
		fmt.Fprintf(os.Stderr, "baseline: -server %q: want nethttp or fasthttp\n", *server)
		os.Exit(2)
	}
}

// slowMillis is the wait of /slow: the ms parameter, 1 if absent or bad.
func slowMillis(s string) int {
	if ms, err := strconv.Atoi(s); err == nil && ms >= 0 {
		return ms
	}
	return 1
}

var ok = []byte("ok")

func serveStd(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(ok)
	case "/slow":
		ms := slowMillis(r.URL.Query().Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Fprintf(w, "waited %d ms", ms)
	default:
		http.NotFound(w, r)
	}
}

func serveFast(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/health":
		ctx.SetContentType("text/plain")
		ctx.SetBody(ok)
	case "/slow":
		ms := slowMillis(string(ctx.QueryArgs().Peek("ms")))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		fmt.Fprintf(ctx, "waited %d ms", ms)
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	}
}

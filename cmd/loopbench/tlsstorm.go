package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// ---- tls-storm, tls-storm-quiet ----
//
// Issue 13: a loop that serves TLS keeps serving its plaintext connections
// with bounded extra latency while clients storm it with handshakes (each
// holds the loop for about 0.3 ms of CPU). One loop serves plaintext
// GET /health (httpd) and a TLS echo listener; a child process (tls.go's
// tlsClient, mode health) runs the /health clients as wrk -c8 --latency
// would, keep-alive, one request at a time per connection, first alone
// (tls-storm-quiet), then while another child runs the tls-handshake
// clients against the TLS listener on the same loop (tls-storm). Both
// rows give /health's p99 in their config.

// healthConns is tls-storm's plaintext /health connections, as wrk -c8.
const healthConns = 8

// healthReq is the request of tls-storm's /health clients.
var healthReq = []byte("GET /health HTTP/1.1\r\nHost: loopbench\r\n\r\n")

// healthLoop is one /health connection of the tlsClient child until end,
// one request at least however late it starts (a storm may hold the loop
// past a short end): the latency of each request, and the error that
// ended it early.
func healthLoop(addr string, end time.Time) ([]time.Duration, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(end.Add(time.Minute))
	br := bufio.NewReader(c)
	var lat []time.Duration
	for {
		t0 := time.Now()
		if _, err := c.Write(healthReq); err != nil {
			return lat, err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return lat, err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return lat, err
		}
		if resp.StatusCode != http.StatusOK {
			return lat, fmt.Errorf("GET /health: %s", resp.Status)
		}
		lat = append(lat, time.Since(t0))
		if !time.Now().Before(end) {
			return lat, nil
		}
	}
}

func runTLSStorm(o options) ([]result, error) {
	cfg, err := benchCert()
	if err != nil {
		return nil, err
	}
	rt, ls, err := startLoops(aio.Config{Name: "tls-storm"})
	if err != nil {
		return nil, err
	}
	l := ls[0]
	srv := &httpd.Server{Handler: httpd.HandlerFunc(func(*httpd.Request) httpd.Reply {
		return httpd.Text(http.StatusOK, "ok")
	})}
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		serr := srv.Shutdown(ctx)
		if lerr := stopLoops(rt, l); serr == nil {
			serr = lerr
		}
		return serr
	}
	if err := srv.ServeLoops("127.0.0.1:0", l); err != nil {
		_ = stopLoops(rt, l)
		return nil, err
	}
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{TLS: cfg}, func(c *aio.Conn) {
		_ = c.OnRead(echoBack)
	})
	if err != nil {
		return nil, fmt.Errorf("%w (stop: %v)", err, stop())
	}
	rs, err := tlsStormSections(o, srv.Addr().String(), ln.Addr().String())
	if serr := stop(); err == nil {
		err = serr
	}
	return rs, err
}

// tlsStormSections runs the quiet section, then the stormy one, against
// the plaintext address health and the TLS address tlsAddr.
func tlsStormSections(o options, health, tlsAddr string) ([]result, error) {
	quiet, qp99, _, err := healthSection(o, "tls-storm-quiet", health, nil)
	if err != nil {
		return nil, fmt.Errorf("tls-storm-quiet: %w", err)
	}
	quiet.Config = fmt.Sprintf("one loop: GET /health on %d conns, p99 %v (no TLS clients)",
		healthConns, qp99.Round(time.Microsecond))
	// The storm starts first and outlasts the /health clients, who start
	// after it (a process start later), so that they see it throughout.
	storm, err := startChild(tlsClientEnv, fmt.Sprintf("handshake %s %d %s", tlsAddr, tlsHSConns, o.Duration*3/2+100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	stormy, p99, hs, err := healthSection(o, "tls-storm", health, storm)
	if cerr := storm.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("tls-storm: %w", err)
	}
	stormy.Config = fmt.Sprintf("one loop: GET /health on %d conns, p99 %v (%.1fx quiet), while %d clients storm full TLS handshakes on it: %s",
		healthConns, p99.Round(time.Microsecond), float64(p99)/float64(max(qp99, 1)), tlsHSConns, hs)
	return []result{quiet, stormy}, nil
}

// healthSection runs the tlsClient child's /health clients against addr
// for o.Duration and makes the row, with this process's CPU, and /health's
// p99. With a storm child, it then waits for the storm's report too and
// returns it: "N handshakes in S s".
func healthSection(o options, workload, addr string, storm *child) (result, time.Duration, string, error) {
	r, p99, err := tlsSection(o, workload, "aio", "health", tlsServer{addr: addr}, healthConns)
	if err != nil || storm == nil {
		return r, p99, "", err
	}
	f, err := storm.expect("done", o.Duration+o.sectionLimit(30*time.Second))
	if err == nil && len(f) != 3 {
		err = fmt.Errorf("storm child said %q", f)
	}
	if err != nil {
		return result{}, 0, "", err
	}
	secs, _ := strconv.ParseFloat(f[1], 64)
	return r, p99, fmt.Sprintf("%s handshakes in %.2f s", f[0], secs), nil
}

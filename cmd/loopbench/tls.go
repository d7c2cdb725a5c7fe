package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/internal/selfsigned"
)

// ---- tls-handshake(-percore), tls-echo(-percore), tls-idle ----
//
// The standard crypto/tls served on one aio loop (ListenConfig.TLS) against
// crypto/tls with a goroutine per connection, both driven by the same
// crypto/tls clients in a child process, so that the CPU and memory
// figures are the server's alone. Full handshakes (no resumption) with an
// ECDSA P-256 certificate, TLS 1.3. The -percore rows are the aio server
// on a loop per core, each listening on the port (SO_REUSEPORT), as aio
// is deployed: the wall-clock ratio against Go's server, which uses every
// core, measured like for like (a row of its workload, same gostd
// baseline). A handshake is CPU-bound, so one loop against Go's cores
// measures the core count as much as the TLS path. The three servers of a
// mode take turns in three rounds, and an aio row's ratios are the medians
// of its per-round ratios (see tlsRounds).

const (
	tlsClientEnv   = "LOOPBENCH_TLS_CLIENT"
	tlsHSConns     = 16       // handshaking clients at once
	tlsEchoConns   = 16       // echoing connections
	tlsEchoMsg     = 16 << 10 // echo message size
	tlsEchoBufSize = 32 << 10 // gostd echo's read buffer (io.Copy's)
)

func init() {
	if v := os.Getenv(tlsClientEnv); v != "" {
		os.Exit(tlsClient(v))
	}
}

// tlsClient is the child's main: "mode addr conns duration". handshake,
// echo and health (plaintext GET /health, tls-storm's) run for duration
// and print "done ops seconds p99ns"; idle
// connects conns, does one round trip on each, prints "ready" and holds
// them until stdin closes.
func tlsClient(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 4 {
		fmt.Println("error bad spec", spec)
		return 2
	}
	mode, addr := f[0], f[1]
	conns, _ := strconv.Atoi(f[2])
	d, _ := time.ParseDuration(f[3])
	cfg := &tls.Config{InsecureSkipVerify: true}
	dial := func() (*tls.Conn, error) {
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return nil, err
		}
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		return c, nil
	}
	roundTrip := func(c *tls.Conn, msg, buf []byte) error {
		if _, err := c.Write(msg); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			return err
		}
		if !bytes.Equal(buf[:len(msg)], msg) {
			return errBadEcho
		}
		return nil
	}
	switch mode {
	case "idle":
		var cs []*tls.Conn
		one := []byte{1}
		for range conns {
			c, err := dial()
			if err == nil {
				err = roundTrip(c, one, make([]byte, 1))
			}
			if err != nil {
				fmt.Println("error", err)
				return 1
			}
			cs = append(cs, c)
		}
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin)
		return 0
	case "handshake", "echo", "health":
	default:
		fmt.Println("error bad mode", mode)
		return 2
	}
	var ops atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr atomic.Pointer[error]
	start := time.Now()
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if mode == "health" {
				mine, err := healthLoop(addr, start.Add(d))
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				ops.Add(int64(len(mine)))
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
				return
			}
			var mine []time.Duration
			msg, buf := patterned(tlsEchoMsg), make([]byte, tlsEchoMsg)
			var c *tls.Conn
			for time.Since(start) < d {
				t0 := time.Now()
				var err error
				if mode == "handshake" {
					// A full handshake, and one byte each way: the server
					// has finished its side.
					if c, err = dial(); err == nil {
						err = roundTrip(c, msg[:1], buf)
						c.Close()
					}
				} else {
					if c == nil {
						if c, err = dial(); err == nil {
							defer c.Close()
							t0 = time.Now()
						}
					}
					if err == nil {
						err = roundTrip(c, msg, buf)
					}
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				mine = append(mine, time.Since(t0))
				ops.Add(1)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := firstErr.Load(); p != nil {
		fmt.Println("error", *p)
		return 1
	}
	slices.Sort(lat)
	var p99 time.Duration
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	fmt.Println("done", ops.Load(), elapsed.Seconds(), int64(p99))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// benchCert makes the servers' certificate.
func benchCert() (*tls.Config, error) {
	cert, _, err := selfsigned.Cert("localhost")
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
}

// tlsServer is one implementation's server: its address, how many
// connections it holds, and its end.
type tlsServer struct {
	addr string
	open func() int
	stop func() error
}

// tlsServerAIO starts the aio TLS echo server on lay's server loops
// (oneLoop or perCore).
func tlsServerAIO(o options, cfg *tls.Config, name string, lay layout) (tlsServer, error) {
	t, err := lay.start(o, name)
	if err != nil {
		return tlsServer{}, err
	}
	addr, err := t.listenEcho(aio.ListenConfig{TLS: cfg})
	if err != nil {
		return tlsServer{}, fmt.Errorf("%w (stop: %v)", err, t.stop())
	}
	return tlsServer{
		addr: addr,
		open: func() int {
			n := 0
			for _, l := range t.servers {
				n += l.Stats().TCPOpen
			}
			return n
		},
		stop: t.stop,
	}, nil
}

func tlsServerGo(cfg *tls.Config, bufSize int) (tlsServer, error) {
	echo := netEcho(bufSize)
	addr, open, stop, err := netServer(func(c net.Conn) { echo(tls.Server(c, cfg)) }, true)
	if err != nil {
		return tlsServer{}, err
	}
	return tlsServer{addr: addr, open: open, stop: func() error { stop(); return nil }}, nil
}

// tlsSection runs the child in mode against srv for o.Duration and makes
// the row from what it reports, with this process's CPU.
func tlsSection(o options, workload, impl, mode string, srv tlsServer, conns int) (result, time.Duration, error) {
	m := startMeter()
	ch, err := startChild(tlsClientEnv, fmt.Sprintf("%s %s %d %s", mode, srv.addr, conns, o.Duration))
	if err != nil {
		return result{}, 0, err
	}
	f, err := ch.expect("done", o.Duration+o.sectionLimit(30*time.Second))
	end := time.Now()
	if cerr := ch.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return result{}, 0, err
	}
	if len(f) != 3 {
		return result{}, 0, fmt.Errorf("child said %q", f)
	}
	ops, _ := strconv.ParseInt(f[0], 10, 64)
	secs, _ := strconv.ParseFloat(f[1], 64)
	p99ns, _ := strconv.ParseInt(f[2], 10, 64)
	r := m.finish(workload, impl, ops, m.start, end)
	if secs > 0 && ops > 0 {
		r.Seconds = secs
		r.OpsPerSec = float64(ops) / secs
		r.NsPerOp = secs * 1e9 / float64(ops)
	}
	return r, time.Duration(p99ns), nil
}

func runTLS(o options) ([]result, error) {
	cfg, err := benchCert()
	if err != nil {
		return nil, err
	}
	var rs []result
	for _, m := range []struct {
		workload, mode string
		conns          int
	}{{"tls-handshake", "handshake", tlsHSConns}, {"tls-echo", "echo", tlsEchoConns}} {
		mrs, err := tlsRounds(o, cfg, m.workload, m.mode, m.conns)
		rs = append(rs, mrs...)
		if err != nil {
			return rs, err
		}
	}
	for _, impl := range []string{"aio", "gostd"} {
		if !o.wantRow("tls-idle", impl) {
			continue
		}
		r, per, err := tlsIdle(o, cfg, impl)
		if err != nil {
			return rs, fmt.Errorf("tls-idle/%s: %w", impl, err)
		}
		r.Config = fmt.Sprintf("%d idle TLS conns: %.0f B/conn in use (heap+stack)", o.TLSIdle, per)
		r.Reference = fmt.Sprintf("%s %.0f B/conn in use", impl, per)
		rs = append(rs, r)
	}
	return rs, nil
}

// tlsRounds runs the selected variants of a mode (aio on one loop, aio on a
// loop per core, gostd) in the rounds of williams: each takes each place in
// a round once, since on a shared machine one section's figures swing with
// what the machine does meanwhile (one pair of sections' ratio read 0.89 to
// 1.21 from one run to the next), and a fixed order would put gostd always
// last. An aio row's ratios are the medians of its per-round ratios to
// gostd, its figures (p99, CPU per handshake) from the round nearest that
// median; the gostd row is from the first aio row's round. Without gostd
// there is no ratio, and one round.
func tlsRounds(o options, cfg *tls.Config, workload, mode string, conns int) ([]result, error) {
	variants := []tlsRow{{workload, "aio", oneLoop}, {workload + "-percore", "aio", perCore}, {workload, "gostd", oneLoop}}
	variants = slices.DeleteFunc(variants, func(v tlsRow) bool {
		return !o.wantRow(v.workload, v.impl)
	})
	if len(variants) == 0 {
		return nil, nil
	}
	orders := williams(len(variants))
	g := slices.IndexFunc(variants, func(v tlsRow) bool {
		return v.impl == "gostd"
	})
	if g < 0 {
		orders = orders[:1]
	}
	runs, err := inRounds(orders, func(_, v int) (result, error) {
		r, err := tlsVariant(o, cfg, variants[v], mode, conns)
		if err != nil {
			return r, fmt.Errorf("%s/%s: %w", variants[v].workload, variants[v].impl, err)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	var rs []result
	gRound := -1
	for v := range variants {
		switch {
		case g < 0:
			rs = append(rs, runs[v][0])
		case v != g:
			r, round, ratios := medianRow(runs[v], runs[g])
			r.Config += "; " + ratios
			if gRound < 0 {
				gRound = round
			}
			rs = append(rs, r)
		}
	}
	if g >= 0 {
		r := runs[g][max(gRound, 0)]
		if gRound >= 0 {
			r.Config += fmt.Sprintf("; from the round of %s/aio", rs[0].Workload)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// tlsRow names a row of tls-handshake or tls-echo: aio on one loop or a
// loop per core (lay), or gostd.
type tlsRow struct {
	workload, impl string
	lay            layout
}

// tlsVariant runs one section of mode against row's server and makes its
// row.
func tlsVariant(o options, cfg *tls.Config, row tlsRow, mode string, conns int) (result, error) {
	workload, impl, lay := row.workload, row.impl, row.lay
	var srv tlsServer
	var err error
	if impl == "aio" {
		srv, err = tlsServerAIO(o, cfg, workload, lay)
	} else {
		srv, err = tlsServerGo(cfg, tlsEchoBufSize)
	}
	if err != nil {
		return result{}, err
	}
	r, p99, err := tlsSection(o, workload, impl, mode, srv, conns)
	if serr := srv.stop(); err == nil {
		err = serr
	}
	if err != nil {
		return result{}, err
	}
	if mode == "echo" {
		r.Config = fmt.Sprintf("%d conns, %d B msgs, %.0f MB/s, p99 %v",
			conns, tlsEchoMsg, r.OpsPerSec*tlsEchoMsg/1e6, p99.Round(time.Microsecond))
	} else {
		r.Config = fmt.Sprintf("%d clients, full TLS 1.3 handshakes (P-256), %.0f µs CPU each, p99 %v",
			conns, r.CPUSeconds*1e6/float64(r.Ops), p99.Round(time.Microsecond))
	}
	switch {
	case impl == "aio" && lay == perCore:
		r.Config = fmt.Sprintf("%d loops (one per core), a listener each (SO_REUSEPORT), ", perCore.loops()) + r.Config
	case impl == "aio":
		r.Config = "one loop, " + r.Config
	default:
		r.Config = "crypto/tls: goroutine per conn, " + r.Config
	}
	return r, nil
}

// tlsIdle measures the memory the server spends per idle TLS connection,
// after its handshake and one round trip.
func tlsIdle(o options, cfg *tls.Config, impl string) (result, float64, error) {
	var srv tlsServer
	var err error
	if impl == "aio" {
		srv, err = tlsServerAIO(o, cfg, "tls-idle", oneLoop)
	} else {
		srv, err = tlsServerGo(cfg, 4096)
	}
	if err != nil {
		return result{}, 0, err
	}
	defer srv.stop()
	// A warm-up connection: one-time costs (the loop's buffers) are not
	// counted.
	warm, err := tls.Dial("tcp", srv.addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		return result{}, 0, err
	}
	defer warm.Close()
	if _, err := warm.Write([]byte{1}); err != nil {
		return result{}, 0, err
	}
	if _, err := io.ReadFull(warm, make([]byte, 1)); err != nil {
		return result{}, 0, err
	}
	before := inUse()
	m := startMeter()
	ch, err := startChild(tlsClientEnv, fmt.Sprintf("idle %s %d 0s", srv.addr, o.TLSIdle))
	if err != nil {
		return result{}, 0, err
	}
	defer ch.close()
	if _, err := ch.expect("ready", o.sectionLimit(60*time.Second)); err != nil {
		return result{}, 0, err
	}
	// The client is ready when its side of each handshake is; the server
	// counts a connection once it has read the client's Finished.
	err = waitOpen(o, srv.open, o.TLSIdle+1)
	r := m.finish("tls-idle", impl, int64(o.TLSIdle), m.start, time.Now())
	per := float64(inUse()-before) / float64(o.TLSIdle)
	return r, per, err
}

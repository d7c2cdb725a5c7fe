package main

// The TCP workloads, each beside its Go-standard-library equivalent:
//
//	tcp-pingpong  one connection on 127.0.0.1, a 5-byte message echoed back
//	              and forth for -duration; ops = round trips. aio: server and
//	              client on one loop (libuv's tcp_pingpong); gostd: net with a
//	              goroutine per side. TCP_NODELAY on both (the default of both).
//	tcp-pingpong-2loops
//	              the same with the server on one loop and the client on
//	              another (a row of tcp-pingpong, same gostd baseline).
//	tcp-pound     TCPConns connections (default 20,000) through 100 client
//	              slots, each connecting, writing 2 bytes, reading the echo and
//	              closing; ops = completed connections, cpu_s the process CPU.
//	              aio: server and clients on one loop (libuv's tcp_pound);
//	              gostd: a net listener goroutine, a goroutine per accepted
//	              connection and 100 client goroutines. An unmeasured gostd
//	              round runs first, then 4 rounds of aio, gostd, aio on two
//	              loops (tcp-pound-2loops: the server on one, the clients on
//	              the other) and aio on a loop per core (tcp-pound-percore:
//	              each loop listens on the port with SO_REUSEPORT and runs
//	              its share of the slots and connections), taking turns; an
//	              aio row's ratios are the medians of its per-round ratios,
//	              since the kernel's TIME_WAIT state drifts between sections
//	              (see runTCPPound).
//	tcp-echo      64 connections, each sending a 4 KiB message and waiting for
//	              its echo, for -duration; ops = messages echoed, MB/s in the
//	              config column. aio: server and clients on one loop; gostd:
//	              goroutines for both.
//	tcp-echo-2loops
//	              the same with the server on one loop and the clients on
//	              another (a row of tcp-echo, same gostd baseline): every
//	              message wakes the other loop's thread.
//	tcp-echo-percore
//	              the same on a loop per core, each listening on the port
//	              (SO_REUSEPORT) and running its share of the clients: the
//	              kernel spreads the connections over the listeners, so a
//	              client and its server end may share a loop or not.
//	tcp-idle      TCPIdle connections (default 10,000) held open and idle by a
//	              child process; the row's config reports the server's memory
//	              per connection (HeapAlloc+StackInuse growth after GC). aio: one
//	              loop, every connection reading; gostd: a goroutine per
//	              connection blocked in Read with a 4 KiB buffer.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
	"golang.org/x/sys/unix"
)

const (
	poundSlots = 100     // tcp-pound: concurrent client slots
	echoConns  = 64      // tcp-echo: connections
	echoMsg    = 4 << 10 // tcp-echo: message size
)

var pingMsg = []byte("PING\n")

// poundMsg is what each tcp-pound connection sends and reads back.
var poundMsg = []byte("QS")

// echoBack is the aio echo server's read callback.
func echoBack(c *aio.Conn, b []byte) { _, _ = c.Write(b) }

// listenEcho starts an aio echo server on addr.
func listenEcho(l *aio.Loop, addr string, cfg aio.ListenConfig) (*aio.Listener, error) {
	return aio.Listen(l, addr, cfg, func(c *aio.Conn) { _ = c.OnRead(echoBack) })
}

// netServer is the gostd server: a goroutine accepting on 127.0.0.1 and one
// per connection running serve, then closing the connection. With track,
// open reports the connections being served and stop closes them too;
// without (tcp-pound: a mutex and a map per connection are not part of Go's
// cost, and its clients close every connection), open reports 0 and stop
// waits for the clients to close theirs. stop closes the listener and waits
// for every goroutine.
func netServer(serve func(c net.Conn), track bool) (addr string, open func() int, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{} // guarded by mu
	stopped := false                 // guarded by mu: a connection accepted after stop is closed at once
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if track {
				mu.Lock()
				if stopped {
					mu.Unlock()
					c.Close()
					return
				}
				conns[c] = struct{}{}
				mu.Unlock()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				serve(c)
				c.Close()
				if track {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
				}
			}()
		}
	}()
	open = func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	stop = func() {
		ln.Close()
		mu.Lock()
		stopped = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
	return ln.Addr().String(), open, stop, nil
}

// netEcho returns a gostd connection handler that echoes with a buffer of
// bufSize bytes until EOF.
func netEcho(bufSize int) func(net.Conn) {
	return func(c net.Conn) {
		buf := make([]byte, bufSize)
		for {
			n, err := c.Read(buf)
			if err != nil {
				return
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
	}
}

// netDiscard reads with a 4 KiB buffer until EOF: an idle connection that
// would serve requests if any came.
func netDiscard(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
	}
}

// ---- tcp-pingpong ----

func runTCPPingPong(o options) ([]result, error) {
	var rs []result
	r, err := rallyAIO(o, "tcp-pingpong", 1, pingMsg, oneLoop)
	if err != nil {
		return rs, fmt.Errorf("tcp-pingpong/aio: %w", err)
	}
	r.Config = "one loop: server + client, 5 B, TCP_NODELAY"
	r.Reference = "libuv tcp_pingpong 54642 rt/s; Go net 47718 rt/s"
	rs = append(rs, r)
	r, err = rallyAIO(o, "tcp-pingpong-2loops", 1, pingMsg, splitLoops)
	if err != nil {
		return rs, fmt.Errorf("tcp-pingpong-2loops/aio: %w", err)
	}
	r.Config = "server loop + client loop, 5 B, TCP_NODELAY"
	rs = append(rs, r)
	r, err = rallyAIO(o, "tcp-pingpong-2loops-spin", 1, pingMsg, splitLoopsSpin)
	if err != nil {
		return rs, fmt.Errorf("tcp-pingpong-2loops-spin/aio: %w", err)
	}
	r.Config = fmt.Sprintf("server loop + client loop, both with spin=%v, 5 B, TCP_NODELAY", o.Spin)
	rs = append(rs, r)
	r, err = rallyGo(o, "tcp-pingpong", 1, pingMsg)
	if err != nil {
		return rs, fmt.Errorf("tcp-pingpong/gostd: %w", err)
	}
	r.Config = "net, goroutine per side, 5 B"
	return append(rs, r), nil
}

// ---- tcp-pound ----

func runTCPPound(o options) ([]result, error) {
	if o.TCPConns <= 0 {
		return nil, errors.New("tcp-pound: need TCPConns > 0")
	}
	// Sections should start from the same kernel state: each closed
	// connection leaves a TIME_WAIT entry for 60 s, and with tens of
	// thousands of them connect's search for a free ephemeral port costs
	// more than everything else together (2x between a clean and a loaded
	// table). An unmeasured section of the same size first fills the table
	// as the measured ones will find it.
	if _, err := tcpPoundGo(o); err != nil {
		return nil, fmt.Errorf("tcp-pound warm-up: %w", err)
	}
	// The kernel's state still drifts between sections, and not at random:
	// once net.ipv4.tcp_max_tw_buckets TIME_WAIT entries exist no new ones
	// are made and connect gets ~2x cheaper, so a section that fills the
	// table makes the next one cheap, and each entry expires 60 s after it
	// was made. So the four variants take turns, in the rounds of a
	// Williams square: each variant once in each place of a round, and
	// right after each other one once; a row's ratios are the medians of
	// its per-round ratios to gostd (its figures are from the round whose
	// ratio is nearest that median).
	variants := []struct {
		name string
		lay  layout
		gost bool
	}{{name: "tcp-pound", lay: oneLoop}, {name: "gostd", gost: true},
		{name: "tcp-pound-2loops", lay: splitLoops}, {name: "tcp-pound-percore", lay: perCore}}
	orders := williams(len(variants))
	tws := make([][4]string, len(orders)) // TIME_WAIT entries as each round's sections began
	runs, err := inRounds(orders, func(round, v int) (result, error) {
		tws[round][v] = timeWaitEntries()
		var r result
		var err error
		if variants[v].gost {
			r, err = tcpPoundGo(o)
		} else {
			r, err = tcpPoundAIO(o, variants[v].name, variants[v].lay)
		}
		if err != nil {
			return r, fmt.Errorf("%s: %w", variants[v].name, err)
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	gostd := runs[1]
	row := func(v int) (result, int) {
		r, round, ratios := medianRow(runs[v], gostd)
		r.Config = fmt.Sprintf("%s, %d client slots, %d conns; %s",
			variants[v].lay.describe(), poundSlots, o.TCPConns, ratios)
		return r, round
	}
	r, round := row(0)
	tw := make([]string, len(tws))
	for i := range tws {
		tw[i] = strings.Join(tws[i][:], "/")
	}
	r.Config += fmt.Sprintf("; TIME_WAIT entries at each section's start, aio/gostd/2loops/percore per round (%s)",
		strings.Join(tw, " "))
	r.Reference = "libuv tcp_pound 12746 conns/s, 1.5 cpu_s; Go net 12191 conns/s, 3.1 cpu_s (20000 conns)"
	g := gostd[round] // the round of the aio row
	g.Config = fmt.Sprintf("net: goroutine per conn + %d client goroutines, %d conns; from the aio row's round", poundSlots, o.TCPConns)
	r2, _ := row(2)
	r3, _ := row(3)
	return []result{r, g, r2, r3}, nil
}

// timeWaitEntries returns how many TIME_WAIT sockets the kernel holds, from
// /proc/net/sockstat's "TCP: ... tw N", or "?" where that is not available.
// It tells which state a tcp-pound round met (see runTCPPound).
func timeWaitEntries() string {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(f); i++ {
			if f[i] == "tw" {
				return f[i+1]
			}
		}
	}
	return "?"
}

// pound is the state tcp-pound's aio clients share. Owned by the clients'
// loop.
type pound struct {
	l                          *aio.Loop
	addr                       string
	n                          int // connections to make
	started, completed, failed int
	f                          *finisher
}

// poundClient is one client slot of tcp-pound, as tcp_pound.c's client_t:
// connect, send, read the echo, close, again. Its callbacks are made once
// per slot, so a connection costs what aio allocates and nothing for the
// client's own closures (Go's clients keep theirs on goroutine stacks).
type poundClient struct {
	p        *pound
	dial     *aio.Handle[*aio.Conn] // the connection being made
	echoed   bool                   // the echo arrived on the current connection
	onDialed func()
	onRead   func(*aio.Conn, []byte)
	onClosed func(*aio.Conn, error)
}

func (cl *poundClient) init(p *pound) {
	cl.p = p
	cl.onDialed, cl.onRead, cl.onClosed = cl.dialed, cl.read, cl.closed
}

// connect starts the slot's next connection, or finishes the section once
// every connection was made and ended. On the loop.
func (cl *poundClient) connect() {
	p := cl.p
	if p.started == p.n {
		if p.completed+p.failed == p.n {
			p.f.finish(nil)
		}
		return
	}
	p.started++
	cl.echoed = false
	cl.dial = aio.Dial(p.l, p.addr, aio.ConnConfig{})
	aio.Finally(cl.dial, cl.onDialed)
}

func (cl *poundClient) dialed() {
	c, err := cl.dial.Result()
	if err != nil {
		cl.p.failed++
		cl.connect()
		return
	}
	_ = c.OnRead(cl.onRead)
	_, _ = c.Write(poundMsg)
	_ = c.OnClose(cl.onClosed)
}

func (cl *poundClient) read(c *aio.Conn, b []byte) {
	cl.echoed = bytes.HasPrefix(poundMsg, b) // the echo, or its first bytes: checked
	c.Close()
}

func (cl *poundClient) closed(*aio.Conn, error) {
	if cl.echoed {
		cl.p.completed++
	} else {
		cl.p.failed++
	}
	cl.connect()
}

// tcpPoundAIO runs the pound with the server and the clients placed by
// lay: one loop (as libuv's anchor does), a server loop and a client loop,
// or a loop per core each accepting and running its share of the client
// slots and connections.
func tcpPoundAIO(o options, workload string, lay layout) (result, error) {
	t, err := lay.start(o, workload)
	if err != nil {
		return result{}, err
	}
	r, err := func() (result, error) {
		addr, err := t.listenEcho(aio.ListenConfig{Backlog: 1024})
		if err != nil {
			return result{}, err
		}
		k := len(t.clients)
		ps := make([]*pound, k)
		slots := make([][]poundClient, k)
		for i, l := range t.clients {
			ps[i] = &pound{l: l, addr: addr, n: share(o.TCPConns, k, i), f: newFinisher()}
			slots[i] = make([]poundClient, share(poundSlots, k, i))
			for j := range slots[i] {
				slots[i][j].init(ps[i])
			}
		}
		m := startMeter()
		for i, p := range ps {
			if err := p.l.Post(func() {
				for j := range slots[i] {
					slots[i][j].connect()
				}
			}); err != nil {
				p.f.finish(err)
			}
		}
		var end time.Time
		completed, failed := 0, 0
		for _, p := range ps {
			if err := p.f.wait(o.sectionLimit(10*time.Second), workload+": waiting for the connections", t.all...); err != nil {
				return result{}, err
			}
			end = latest(end, p.f.end)
			completed += p.completed
			failed += p.failed
		}
		r := m.finish(workload, "aio", int64(completed), m.start, end)
		if failed > 0 {
			return r, fmt.Errorf("%d of %d connections failed", failed, o.TCPConns)
		}
		return r, nil
	}()
	if serr := t.stop(); err == nil {
		err = serr
	}
	return r, err
}

// latest returns the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func tcpPoundGo(o options) (result, error) {
	addr, _, stop, err := netServer(netEcho(64), false)
	if err != nil {
		return result{}, err
	}
	defer stop()
	n := int64(o.TCPConns)
	var started, completed, failed atomic.Int64
	var wg sync.WaitGroup
	// No deadline per connection: SetDeadline costs Go ~4% of this
	// workload, which the anchor (and a real client of this shape) does not
	// pay. A watchdog ends a hung exchange instead: it stops the clients and
	// puts every connection in flight past its deadline. (A connect that
	// never completes is not covered: a Dialer deadline or context would
	// cost Go a timer and an interrupter per connection; over loopback a
	// connect completes or is refused.)
	var (
		expired  atomic.Bool
		inFlight [poundSlots]struct {
			c atomic.Pointer[net.TCPConn]
			_ [56]byte // a cache line per client goroutine
		}
	)
	watchdog := time.AfterFunc(o.sectionLimit(10*time.Second), func() {
		expired.Store(true)
		for i := range inFlight {
			if c := inFlight[i].c.Load(); c != nil {
				_ = c.SetDeadline(time.Unix(1, 0))
			}
		}
	})
	m := startMeter()
	for w := range poundSlots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf [64]byte
			for started.Add(1) <= n && !expired.Load() {
				nc, err := net.Dial("tcp", addr)
				if err != nil {
					failed.Add(1)
					continue
				}
				c := nc.(*net.TCPConn)
				inFlight[w].c.Store(c)
				if expired.Load() { // the watchdog may have missed it
					_ = c.SetDeadline(time.Unix(1, 0))
				}
				_, werr := c.Write(poundMsg)
				k, rerr := c.Read(buf[:])
				inFlight[w].c.Store(nil)
				c.Close()
				if werr == nil && rerr == nil && k > 0 && bytes.HasPrefix(poundMsg, buf[:k]) {
					completed.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	watchdog.Stop()
	r := m.finish("tcp-pound", "gostd", completed.Load(), m.start, end)
	if expired.Load() && completed.Load()+failed.Load() < n {
		return r, fmt.Errorf("still running after %v", o.sectionLimit(10*time.Second))
	}
	if failed.Load() > 0 {
		return r, fmt.Errorf("%d of %d connections failed", failed.Load(), n)
	}
	return r, nil
}

// ---- tcp-echo ----

func runTCPEcho(o options) ([]result, error) {
	var rs []result
	for _, v := range []struct {
		workload string
		lay      layout
	}{{"tcp-echo", oneLoop}, {"tcp-echo-2loops", splitLoops}, {"tcp-echo-percore", perCore}} {
		r, err := rallyAIO(o, v.workload, echoConns, patterned(echoMsg), v.lay)
		if err != nil {
			return rs, fmt.Errorf("%s/aio: %w", v.workload, err)
		}
		r.Config = fmt.Sprintf("%s, %d conns, %d B msgs, %.0f MB/s", v.lay.describe(), echoConns, echoMsg, mbps(r))
		rs = append(rs, r)
	}
	g, err := rallyGo(o, "tcp-echo", echoConns, patterned(echoMsg))
	if err != nil {
		return rs, fmt.Errorf("tcp-echo/gostd: %w", err)
	}
	g.Config = fmt.Sprintf("net: goroutine per conn + per client, %d conns, %d B msgs, %.0f MB/s", echoConns, echoMsg, mbps(g))
	return append(rs, g), nil
}

// errBadEcho: an echo was not the bytes sent. Every workload that counts
// echoes checks them, on both sides: a server (or a proxy) that answered
// wrong bytes of the right length must fail its row, not get a ratio.
var errBadEcho = errors.New("an echo differs from what was sent")

// patterned returns a message of n bytes that are not all alike (a
// period of 251, a prime, so that no power-of-two offset repeats it): an
// echo made from a stale or shifted buffer differs from it.
func patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251 + 1)
	}
	return b
}

// mbps is the echo throughput: message bytes that came back per second.
func mbps(r result) float64 { return r.OpsPerSec * echoMsg / 1e6 }

// rallyAIO bounces msg off an aio echo server on conns connections at once,
// each sending it again as soon as its echo is complete, for o.Duration; ops
// are echoes. lay places the server and the clients; clients are dealt
// out over the client loops in turn, each loop counting its own echoes.
func rallyAIO(o options, workload string, conns int, msg []byte, lay layout) (result, error) {
	t, err := lay.start(o, workload)
	if err != nil {
		return result{}, err
	}
	r, err := func() (result, error) {
		addr, err := t.listenEcho(aio.ListenConfig{})
		if err != nil {
			return result{}, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
		defer cancel()
		// One side per client loop with connections; its fields are owned
		// by that loop once the section starts, read after its finisher.
		type side struct {
			l      *aio.Loop
			cs     []*aio.Conn
			echoes int64
			done   bool
			f      *finisher
		}
		var sides []*side
		for i := range conns {
			if i < len(t.clients) {
				sides = append(sides, &side{l: t.clients[i], f: newFinisher()})
			}
			s := sides[i%len(sides)]
			c, err := aio.Dial(s.l, addr, aio.ConnConfig{}).Wait(ctx)
			if err != nil {
				return result{}, err
			}
			s.cs = append(s.cs, c)
		}
		var start time.Time // written before the first Post
		for _, s := range sides {
			for _, c := range s.cs {
				got := 0 // this connection's bytes of the current echo, on its loop
				err := c.OnRead(func(c *aio.Conn, b []byte) {
					if s.done {
						return
					}
					// One message is in flight: what comes is the rest of
					// its echo, checked byte for byte.
					if got+len(b) > len(msg) || !bytes.Equal(b, msg[got:got+len(b)]) {
						s.done = true
						s.f.finish(errBadEcho)
						return
					}
					if got += len(b); got < len(msg) {
						return
					}
					got = 0
					s.echoes++
					if s.echoes&15 == 0 && time.Since(start) >= o.Duration {
						s.done = true
						s.f.finish(nil)
						return
					}
					if _, err := c.Write(msg); err != nil {
						s.f.finish(err)
					}
				})
				if err != nil {
					return result{}, err
				}
			}
		}
		m := startMeter()
		start = m.start
		for _, s := range sides {
			if err := s.l.Post(func() {
				for _, c := range s.cs {
					if _, err := c.Write(msg); err != nil {
						s.f.finish(err)
					}
				}
			}); err != nil {
				s.f.finish(err)
			}
		}
		var end time.Time
		var echoes int64
		for _, s := range sides {
			if err := s.f.wait(o.sectionLimit(o.Duration), workload+": waiting for the clients", t.all...); err != nil {
				return result{}, err
			}
			end = latest(end, s.f.end)
			echoes += s.echoes
		}
		return m.finish(workload, "aio", echoes, m.start, end), nil
	}()
	if serr := t.stop(); err == nil {
		err = serr
	}
	return r, err
}

// rallyGo is rallyAIO with Go's net package: an echo server goroutine per
// connection and a client goroutine per connection.
func rallyGo(o options, workload string, conns int, msg []byte) (result, error) {
	addr, _, stop, err := netServer(netEcho(64<<10), true)
	if err != nil {
		return result{}, err
	}
	defer stop()
	cs := make([]net.Conn, conns)
	for i := range cs {
		if cs[i], err = net.Dial("tcp", addr); err != nil {
			return result{}, err
		}
		defer cs[i].Close()
		_ = cs[i].SetDeadline(time.Now().Add(o.sectionLimit(o.Duration)))
	}
	m := startMeter()
	echoes, end, err := netRally(cs, msg, m.start, o.Duration)
	return m.finish(workload, "gostd", echoes, m.start, end), err
}

// netRally runs a client goroutine per connection, each writing msg and
// reading its echo in full, again and again, until d has passed since
// start; it returns the echoes, when the last client stopped, and the
// first error. The connections' deadlines bound it.
func netRally(cs []net.Conn, msg []byte, start time.Time, d time.Duration) (int64, time.Time, error) {
	var echoes atomic.Int64
	var stopFlag atomic.Bool
	errs := make(chan error, len(cs))
	for _, c := range cs {
		go func() {
			buf := make([]byte, len(msg))
			for !stopFlag.Load() {
				if _, err := c.Write(msg); err != nil {
					errs <- err
					return
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(buf, msg) {
					errs <- errBadEcho
					return
				}
				if echoes.Add(1)&15 == 0 && time.Since(start) >= d {
					stopFlag.Store(true)
				}
			}
			errs <- nil
		}()
	}
	var firstErr error
	for range cs {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return echoes.Load(), time.Now(), firstErr
}

// ---- tcp-idle ----

// idleClientEnv makes the loopbench binary an idle-connection client: it
// connects "addr n" times, prints "ready", and waits for its stdin to close.
// The clients live in another process because one process cannot hold both
// ends of 10,000 connections under a 20,000-fd limit, and so that their
// memory is not counted.
const idleClientEnv = "LOOPBENCH_TCP_IDLE_CLIENT"

func init() {
	if v := os.Getenv(idleClientEnv); v != "" {
		os.Exit(idleClient(v))
	}
}

// idleClient is the child's main.
func idleClient(spec string) int {
	addr, count, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		fmt.Fprintln(os.Stderr, "idle client:", err)
		return 2
	}
	ap, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "idle client:", err)
		return 2
	}
	sa := &unix.SockaddrInet4{Port: ap.Port}
	copy(sa.Addr[:], ap.IP.To4())
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := 0; i < n; i++ {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err == nil {
			err = unix.Connect(fd, sa)
			fds = append(fds, fd)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "idle client: connection %d: %v\n", i, err)
			return 1
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// idleClients starts the child with n connections to addr and waits until it
// made them all. Closing the child makes it close them and exit.
func idleClients(addr string, n int, limit time.Duration) (*child, error) {
	ch, err := startChild(idleClientEnv, fmt.Sprintf("%s %d", addr, n))
	if err != nil {
		return nil, err
	}
	if _, err := ch.expect("ready", limit); err != nil {
		_ = ch.cmd.Process.Kill()
		_ = ch.close()
		return nil, fmt.Errorf("idle client: %w", err)
	}
	return ch, nil
}

func runTCPIdle(o options) ([]result, error) {
	if o.TCPIdle <= 0 {
		return nil, errors.New("tcp-idle: need TCPIdle > 0")
	}
	var rs []result
	r, per, err := tcpIdleAIO(o)
	if err != nil {
		return rs, fmt.Errorf("tcp-idle/aio: %w", err)
	}
	r.Config = fmt.Sprintf("%d idle conns reading on one loop: %.0f B/conn in use (heap+stack)", o.TCPIdle, per)
	r.Reference = fmt.Sprintf("aio %.0f B/conn in use (target < 4096)", per)
	rs = append(rs, r)
	r, per, err = tcpIdleGo(o)
	if err != nil {
		return rs, fmt.Errorf("tcp-idle/gostd: %w", err)
	}
	r.Config = fmt.Sprintf("%d idle conns, goroutine each in Read(4 KiB): %.0f B/conn in use (heap+stack)", o.TCPIdle, per)
	r.Reference = fmt.Sprintf("gostd %.0f B/conn in use", per)
	return append(rs, r), nil
}

// inUse returns the live heap bytes and the stack bytes in use after a
// collection. Live bytes (HeapAlloc), not the spans that hold them
// (HeapInuse): spans are counted whole, and how full they are depends on
// what ran before in the process. After the earlier workloads of a full
// run, tls-idle's HeapInuse growth read 29 MB for the same 14 MB of live
// objects it reads alone, doubling its bytes per connection from one run to
// the next.
func inUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// waitOpen waits until open reports k connections held by the server, up
// to o.Timeout.
func waitOpen(o options, open func() int, k int) error {
	deadline := time.Now().Add(o.Timeout)
	for open() != k {
		if time.Now().After(deadline) {
			return fmt.Errorf("the server holds %d connections, not %d", open(), k)
		}
		time.Sleep(time.Millisecond) // the server's counters have no event to wait on
	}
	return nil
}

// idleSection connects one warm-up client (so that one-time costs, such as
// a loop's read buffer, are not counted), then n idle clients from a child
// process, waits until the server holds them all (open reports how many it
// holds), and measures the memory they cost the server.
func idleSection(o options, impl, addr string, open func() int) (result, float64, error) {
	n := o.TCPIdle
	warm, err := net.Dial("tcp", addr)
	if err != nil {
		return result{}, 0, err
	}
	defer warm.Close()
	if err := waitOpen(o, open, 1); err != nil {
		return result{}, 0, err
	}
	before := inUse()
	m := startMeter()
	ch, err := idleClients(addr, n, o.sectionLimit(10*time.Second))
	if err != nil {
		return result{}, 0, err
	}
	err = waitOpen(o, open, n+1)
	r := m.finish("tcp-idle", impl, int64(n), m.start, time.Now())
	per := float64(inUse()-before) / float64(n)
	if werr := ch.close(); err == nil {
		err = werr
	}
	return r, per, err
}

func tcpIdleAIO(o options) (result, float64, error) {
	rt, ls, err := startLoops(aio.Config{Name: "tcp-idle"})
	if err != nil {
		return result{}, 0, err
	}
	l := ls[0]
	var r result
	var per float64
	err = func() error {
		ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) {
			_ = c.OnRead(func(*aio.Conn, []byte) {})
		})
		if err != nil {
			return err
		}
		r, per, err = idleSection(o, "aio", ln.Addr().String(), func() int { return l.Stats().TCPOpen })
		return err
	}()
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, per, err
}

func tcpIdleGo(o options) (result, float64, error) {
	addr, open, stop, err := netServer(netDiscard, true)
	if err != nil {
		return result{}, 0, err
	}
	defer stop()
	return idleSection(o, "gostd", addr, open)
}

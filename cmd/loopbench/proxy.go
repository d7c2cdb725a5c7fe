package main

// tcp-proxy: clients ↔ proxy ↔ echo upstream, proxyConns connections, each
// client writing a proxyMsg message and reading its echo back in full
// through the proxy, again and again, for -duration; ops = echoes, MB/s =
// message bytes back per second (each byte crosses the proxy twice, once
// each way).
//
// Only the proxy differs between the rows. The clients and the upstream
// are shared: Go net goroutines (netRally's clients, netEcho's upstream
// with a proxyMsg buffer) in a child process (proxyPeer), so that this
// process runs the proxy alone and its cpu_s, allocs/op and ops per
// CPU-second are the proxy's own; the config column gives the child's CPU.
//
//	tcp-proxy        aio: one loop, a Listener whose accept callback dials
//	                 the upstream on the same loop and joins the two with
//	                 aio.Pipe.
//	tcp-proxy-percore
//	                 the same proxy on a loop per core (GOMAXPROCS), each
//	                 with a listener of its own (the clients take them in
//	                 turn), as a proxy runs deployed.
//	gostd            net: a goroutine per accepted connection dials the
//	                 upstream and runs io.Copy one way while a second
//	                 goroutine copies the other way, each passing EOF on
//	                 with CloseWrite. (Between two *net.TCPConn, io.Copy
//	                 splices on Linux: the bytes do not cross user space.)

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/valkyria/aio"
)

const (
	proxyConns = 16       // tcp-proxy: client connections
	proxyMsg   = 64 << 10 // tcp-proxy: message size
)

// proxyPeerEnv makes the loopbench binary tcp-proxy's peer: the upstream
// and the clients (see proxyPeer).
const proxyPeerEnv = "LOOPBENCH_TCP_PROXY_PEER"

func init() {
	if os.Getenv(proxyPeerEnv) != "" {
		os.Exit(proxyPeer(os.Stdin, os.Stdout))
	}
}

// proxyPeer is the peer process's main. It talks in lines:
//
//	peer:   upstream ADDR
//	parent: run CONNS MSG DURATION_NS LIMIT_NS PROXY_ADDR...
//	peer:   ready            (every client connected and echoed once)
//	parent: go
//	peer:   done ECHOES ELAPSED_NS CPU_NS
//
// then it waits for its stdin to close and exits. A failure is a line
// "error TEXT" and a non-zero exit status.
func proxyPeer(in io.Reader, out io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(out, "error", err)
		return 1
	}
	addr, _, stop, err := netServer(netEcho(proxyMsg), true)
	if err != nil {
		return fail(err)
	}
	defer stop()
	fmt.Fprintln(out, "upstream", addr)
	sc := bufio.NewScanner(in)
	if !sc.Scan() {
		return 1 // the parent gave up
	}
	f := strings.Fields(sc.Text())
	if len(f) < 6 || f[0] != "run" {
		return fail(fmt.Errorf("bad command %q", sc.Text()))
	}
	var nums [4]int64
	for i := range nums {
		if nums[i], err = strconv.ParseInt(f[1+i], 10, 64); err != nil {
			return fail(err)
		}
	}
	conns, size, d, limit := int(nums[0]), int(nums[1]), time.Duration(nums[2]), time.Duration(nums[3])
	proxies := f[5:]
	msg := patterned(size)
	buf := make([]byte, size)
	cs := make([]net.Conn, conns)
	defer func() {
		for _, c := range cs {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range cs {
		c, err := net.Dial("tcp", proxies[i%len(proxies)])
		if err != nil {
			return fail(err)
		}
		cs[i] = c
		_ = c.SetDeadline(time.Now().Add(limit))
		// One echo first: the proxy has its upstream connection and every
		// path is warm when the section starts.
		if _, err := c.Write(msg); err != nil {
			return fail(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return fail(err)
		}
		if !bytes.Equal(buf, msg) {
			return fail(errBadEcho)
		}
	}
	fmt.Fprintln(out, "ready")
	if !sc.Scan() || sc.Text() != "go" {
		return 1
	}
	cpu := cpuTime()
	start := time.Now()
	echoes, end, err := netRally(cs, msg, start, d)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(out, "done", echoes, int64(end.Sub(start)), int64(cpuTime()-cpu))
	for sc.Scan() { // until the parent closes stdin
	}
	return 0
}

// proxyStart starts a proxy to upstream and returns the addresses it
// listens on and how to stop it.
type proxyStart func(upstream string) (addrs []string, stop func() error, err error)

func runTCPProxy(o options) ([]result, error) {
	var rs []result
	for _, v := range []struct {
		workload, impl, config string
		start                  proxyStart
	}{
		{"tcp-proxy", "aio", "one loop: Listen + Dial + Pipe", proxyAIO(1)},
		{"tcp-proxy-percore", "aio", fmt.Sprintf("%d loops (one per core), a listener each: Listen + Dial + Pipe", perCore.loops()),
			proxyAIO(perCore.loops())},
		{"tcp-proxy", "gostd", "net: goroutine per conn + one per direction, io.Copy", proxyGo},
	} {
		r, err := proxySection(o, v.workload, v.impl, v.start)
		if err != nil {
			return rs, fmt.Errorf("%s/%s: %w", v.workload, v.impl, err)
		}
		r.Config = fmt.Sprintf("%s, %d conns, %d B msgs, %.0f MB/s; %s",
			v.config, proxyConns, proxyMsg, r.OpsPerSec*proxyMsg/1e6, r.Config)
		rs = append(rs, r)
	}
	return rs, nil
}

// proxySection measures one proxy between the peer's clients and upstream.
// The row's cpu_s is this process's, the proxy's alone; its seconds are the
// clients' own measure of the section.
func proxySection(o options, workload, impl string, start proxyStart) (r result, err error) {
	ch, err := startChild(proxyPeerEnv, "1")
	if err != nil {
		return result{}, err
	}
	var stop func() error // the proxy's, once started
	defer func() {
		// The peer first: the proxy sees its clients leave, then stops.
		if cerr := ch.close(); err == nil && cerr != nil {
			err = fmt.Errorf("peer: %w", cerr)
		}
		if stop != nil {
			if serr := stop(); err == nil {
				err = serr
			}
		}
	}()
	limit := o.sectionLimit(10 * time.Second)
	f, err := ch.expect("upstream", limit)
	if err != nil {
		return result{}, err
	}
	if len(f) != 1 {
		return result{}, fmt.Errorf("peer said upstream %q", f)
	}
	addrs, stopProxy, err := start(f[0])
	if err != nil {
		return result{}, err
	}
	stop = stopProxy
	if err := ch.send("run %d %d %d %d %s", proxyConns, proxyMsg, int64(o.Duration),
		int64(o.sectionLimit(o.Duration)), strings.Join(addrs, " ")); err != nil {
		return result{}, err
	}
	if _, err := ch.expect("ready", limit); err != nil {
		return result{}, err
	}
	m := startMeter()
	if err := ch.send("go"); err != nil {
		return result{}, err
	}
	f, err = ch.expect("done", o.sectionLimit(o.Duration))
	if err != nil {
		return result{}, err
	}
	var nums [3]int64
	for i := range nums {
		if i >= len(f) {
			return result{}, fmt.Errorf("peer said done %q", f)
		}
		if nums[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return result{}, err
		}
	}
	r = m.finish(workload, impl, nums[0], m.start, m.start.Add(time.Duration(nums[1])))
	r.Config = fmt.Sprintf("cpu_s = the proxy's; clients + upstream %.2f cpu_s", time.Duration(nums[2]).Seconds())
	return r, nil
}

// proxyAIO is aio's proxy on loops loops.
func proxyAIO(loops int) proxyStart {
	return func(upstream string) ([]string, func() error, error) {
		cfgs := make([]aio.Config, loops)
		for i := range cfgs {
			cfgs[i].Name = fmt.Sprintf("proxy-%d", i)
		}
		rt, ls, err := startLoops(cfgs...)
		if err != nil {
			return nil, nil, err
		}
		stop := func() error { return stopLoops(rt, ls...) }
		var addrs []string
		for _, l := range ls {
			ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(client *aio.Conn) {
				// The dial is the client's work: a client that leaves first
				// cancels it.
				up := aio.Adopt(client.Scope(), aio.Dial(l, upstream, aio.ConnConfig{}))
				aio.Finally(up, func() {
					u, err := up.Result()
					if err != nil {
						client.Close() // the peer sees its connection end
						return
					}
					aio.Pipe(client, u)
				})
			})
			if err != nil {
				return nil, nil, errors.Join(err, stop())
			}
			addrs = append(addrs, ln.Addr().String())
		}
		return addrs, stop, nil
	}
}

// proxyGo is the Go standard library's proxy: io.Copy each way.
func proxyGo(upstream string) ([]string, func() error, error) {
	addr, _, stop, err := netServer(func(c net.Conn) {
		u, err := net.Dial("tcp", upstream)
		if err != nil {
			return // netServer closes c: the peer sees its connection end
		}
		defer u.Close()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = io.Copy(u, c)
			_ = u.(*net.TCPConn).CloseWrite()
		}()
		_, _ = io.Copy(c, u)
		_ = c.(*net.TCPConn).CloseWrite()
		<-done
	}, true)
	if err != nil {
		return nil, nil, err
	}
	return []string{addr}, func() error { stop(); return nil }, nil
}

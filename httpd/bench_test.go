package httpd

import (
	"bytes"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// BenchmarkHealth measures GET /health over one keep-alive loopback
// connection, request after request, with allocations: the server's fast
// path allocates nothing per request (the client here reuses its buffers,
// so every allocation counted would be the server's or the loop's).
func BenchmarkHealth(b *testing.B) {
	nc, req, size := healthConn(b)
	buf := make([]byte, size)
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() { // the timer runs from its first call to its last
		if _, err := nc.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, buf[:size]); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.HasSuffix(buf[:size], []byte("ok")) {
		b.Fatalf("bad response %q", buf[:size])
	}
}

// reportCPU reports, when the function it returns is called, the CPU
// time the process spent per op since, in user space and in the kernel:
// the server's and the client's, less noisy than the wall clock on a busy
// machine.
func reportCPU(b *testing.B) func() {
	u0, s0 := cpuTimes(b)
	return func() {
		u1, s1 := cpuTimes(b)
		b.ReportMetric(float64(u1-u0)/float64(b.N), "user-ns/op")
		b.ReportMetric(float64(s1-s0)/float64(b.N), "sys-ns/op")
	}
}

func cpuTimes(b *testing.B) (user, sys int64) {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano(), ru.Stime.Nano()
}

// healthConn starts a server and returns a connection to it, the
// request GET /health, and the length of its response, which is fixed
// (Date has a fixed length). The connection closes at the end.
func healthConn(b *testing.B) (net.Conn, []byte, int) {
	ts := startServer(b, testMux(), Config{})
	nc, err := net.DialTimeout("tcp", ts.addr, waitTimeout)
	require.NoError(b, err)
	b.Cleanup(func() { _ = nc.Close() })
	req := []byte("GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
	_, err = nc.Write(req)
	require.NoError(b, err)
	buf := make([]byte, 4096)
	n := 0
	for !bytes.HasSuffix(buf[:n], []byte("\r\n\r\nok")) {
		require.NoError(b, nc.SetReadDeadline(time.Now().Add(waitTimeout)))
		k, err := nc.Read(buf[n:])
		require.NoError(b, err)
		n += k
	}
	require.NoError(b, nc.SetReadDeadline(time.Time{}))
	return nc, req, n
}

// BenchmarkHealthPipelined is BenchmarkHealth with 16 requests sent in
// one write, as wrk's pipeline.lua sends them (ns/op is per request):
// the system calls are shared by 16 requests, so the server's own work
// per request shows.
func BenchmarkHealthPipelined(b *testing.B) {
	const depth = 16
	nc, req, size := healthConn(b)
	reqs := bytes.Repeat(req, depth)
	buf := make([]byte, depth*size)
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; b.Loop(); i++ {
		if i%depth != 0 {
			continue // a request of the batch sent below
		}
		if _, err := nc.Write(reqs); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, buf); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.HasSuffix(buf, []byte("ok")) {
		b.Fatalf("bad response %q", buf[len(buf)-size:])
	}
}

// BenchmarkAppendHead makes the head of /health's response (Text), as
// the engine writes it, on the loop.
func BenchmarkAppendHead(b *testing.B) {
	ts := startServer(b, testMux(), Config{})
	hc := &h1conn{ls: ts.loopStates()[0]}
	hdr := Text(200, "ok").resp.Header
	b.ReportAllocs()
	defer reportCPU(b)()
	ts.onLoop(b, func() {
		for b.Loop() {
			buf, err := hc.appendHead(200, hdr, h1.BodyLength, 2, false, false)
			if err != nil {
				b.Error(err)
				return
			}
			hc.ls.wbuf = buf[:0] // as write keeps it
		}
	})
}

// BenchmarkRequestCycle is the loop's own work for a request of /health
// between its parse (h1's benchmarks) and its response's head
// (BenchmarkAppendHead), as onHead and its end do it: an arena taken, the
// head copied in, the handler routed and called, the arena given back and
// the counters moved. No system call is made, so its time is steadier on
// a busy machine than the socket benchmarks'.
func BenchmarkRequestCycle(b *testing.B) {
	ts := startServer(b, testMux(), Config{})
	ls := ts.loopStates()[0]
	hc := &h1conn{ls: ls}
	raw := []byte("GET /health HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n")
	b.ReportAllocs()
	defer reportCPU(b)()
	ts.onLoop(b, func() {
		var p h1.Parser
		if n, err := p.Parse(raw, &ls.head); n != len(raw) || err != nil {
			b.Errorf("parse: %d, %v", n, err)
			return
		}
		for b.Loop() {
			r := ls.acquire()
			ls.openRequest(r, hc)
			r.setHead(&ls.head, raw)
			if reply := ls.serve(r); reply.h != nil || string(reply.resp.Body) != "ok" {
				b.Errorf("reply %+v", reply)
				return
			}
			r.written, r.hdone = true, true
			ls.closeRequest(r)
		}
	})
}

// The steady /health path allocates nothing per request: the cycle of
// BenchmarkRequestCycle (a request taken, routed, answered and released),
// counted as a test so that an allocation added on the way fails make test
// (one did: a slice's address taken in keepPend moved it to the heap on
// every release).
func TestRequestCycleAllocatesNothing(t *testing.T) {
	ts := startServer(t, testMux(), Config{})
	ls := ts.loopStates()[0]
	hc := &h1conn{ls: ls}
	for _, c := range []struct{ raw, body string }{
		{"GET /health HTTP/1.1\r\nHost: bench\r\nUser-Agent: wrk\r\n\r\n", "ok"},
		// A handler that reads its body (Request.Body, Body.Bytes).
		{"POST /echo HTTP/1.1\r\nHost: bench\r\nContent-Length: 0\r\n\r\n", ""},
	} {
		raw := []byte(c.raw)
		var allocs float64
		ts.onLoop(t, func() { // no require here: a failure would stop the loop
			var p h1.Parser
			if n, err := p.Parse(raw, &ls.head); n != len(raw) || err != nil {
				t.Errorf("parse: %d, %v", n, err)
				return
			}
			allocs = testing.AllocsPerRun(1000, func() {
				r := ls.acquire()
				ls.openRequest(r, hc)
				r.setHead(&ls.head, raw)
				r.body.buffered = true // as the engine leaves a body that arrived whole
				if reply := ls.serve(r); reply.h != nil || string(reply.resp.Body) != c.body {
					t.Errorf("reply %+v", reply)
				}
				r.written, r.hdone = true, true
				ls.closeRequest(r)
			})
		})
		require.Zero(t, allocs, "%q", c.raw)
	}
}

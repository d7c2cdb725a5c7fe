package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valkyria/aio/examples/internal/blackbox"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The proxy is tested as a black box: the binary is built, run with flags,
// read on its standard output and signalled, as its users do.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// timeout bounds every wait of the tests.
const timeout = blackbox.Timeout

// proxyTest is one of TestProxy's subtests: it gets the binary's path.
type proxyTest struct {
	name string
	fn   func(t *testing.T, bin string)
}

// proxyTests are TestProxy's subtests; main_linux_test.go adds those that
// watch the kernel's socket table.
var proxyTests = []proxyTest{
	{"StreamsBothWays", testStreamsBothWays},
	{"HalfClose", testHalfClose},
	{"DialFailureClosesClient", testDialFailureClosesClient},
	{"ShutdownIdle", testShutdownIdle},
	{"ShutdownNoGraceIdle", testShutdownNoGraceIdle},
	{"ShutdownLetsStreamFinish", testShutdownLetsStreamFinish},
	{"ShutdownGraceRunsOut", testShutdownGraceRunsOut},
	{"BadFlags", testBadFlags},
}

// TestProxy builds the proxy once and runs every subtest on it in
// parallel, each with proxies and upstreams of its own.
func TestProxy(t *testing.T) {
	bin := blackbox.Build(t)
	for _, tc := range proxyTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, bin)
		})
	}
}

// echoUpstream is the upstream of most tests: a Go echo server that sends
// back what it reads and half-closes at EOF.
func echoUpstream(t *testing.T) string {
	t.Helper()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveEcho(t, nl)
	return nl.Addr().String()
}

// serveEcho serves echo on nl until the test ends.
func serveEcho(t *testing.T, nl net.Listener) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn // guarded by mu
	stopped := false     // guarded by mu: a connection accepted after the cleanup is closed at once
	t.Cleanup(func() {
		nl.Close()
		mu.Lock()
		stopped = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := nl.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			if stopped {
				mu.Unlock()
				c.Close()
				return
			}
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = c.SetDeadline(time.Now().Add(timeout))
				buf := make([]byte, 64<<10)
				if _, err := io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, buf); err == nil {
					_ = c.(*net.TCPConn).CloseWrite()
				}
			}()
		}
	}()
}

// dial connects to the proxy, with a deadline on every read and write.
func dial(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, timeout)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(timeout)))
	t.Cleanup(func() { nc.Close() })
	return nc.(*net.TCPConn)
}

// stream is the random byte stream number seed.
func stream(seed int) io.Reader { return rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8)}) }

// send writes n bytes of stream seed to nc.
func send(nc net.Conn, seed, n int) error {
	_, err := io.Copy(nc, io.LimitReader(stream(seed), int64(n)))
	return err
}

// expect reads n bytes from nc and checks that they are stream seed's.
func expect(nc net.Conn, seed, n int) error {
	want, got := make([]byte, 64<<10), make([]byte, 64<<10)
	src := stream(seed)
	for off := 0; off < n; {
		k := min(len(got), n-off)
		if _, err := io.ReadFull(nc, got[:k]); err != nil {
			return fmt.Errorf("read at %d of %d: %w", off, n, err)
		}
		_, _ = io.ReadFull(src, want[:k])
		if !bytes.Equal(want[:k], got[:k]) {
			return fmt.Errorf("bytes differ in [%d, %d)", off, off+k)
		}
		off += k
	}
	return nil
}

// expectEOF checks that nc has nothing more to read.
func expectEOF(nc net.Conn) error {
	if n, err := nc.Read(make([]byte, 1)); err != io.EOF {
		return fmt.Errorf("after the last byte: %d bytes, %v (want EOF)", n, err)
	}
	return nil
}

// echoed sends n bytes of stream seed through nc and half-closes, while
// it reads them back, then EOF.
func echoed(nc *net.TCPConn, seed, n int) error {
	werr := make(chan error, 1)
	go func() {
		err := send(nc, seed, n)
		if err == nil {
			err = nc.CloseWrite()
		}
		werr <- err
	}()
	err := expect(nc, seed, n)
	if err == nil {
		err = expectEOF(nc)
	}
	return errors.Join(err, <-werr)
}

// Several clients at once on two loops, 8 MiB each way each, byte-exact,
// each client's FIN passed on to the upstream and the upstream's back.
func testStreamsBothWays(t *testing.T, bin string) {
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", echoUpstream(t), "-loops", "2")
	const clients, total = 4, 8 << 20
	errs := make(chan error, clients)
	for i := range clients {
		nc := dial(t, p.Addr)
		go func() { errs <- echoed(nc, i, total) }()
	}
	for range clients {
		require.NoError(t, <-errs)
	}
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
}

// A client's half-close reaches the upstream as EOF; the upstream's reply,
// sent only then, reaches the client, and then the upstream's EOF.
func testHalfClose(t *testing.T, bin string) {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	upDone := make(chan error, 1)
	go func() { upDone <- replyAtEOF(nl) }()
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", nl.Addr().String(), "-loops", "1")

	nc := dial(t, p.Addr)
	_, err = nc.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	reply, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "7 bytes: request", string(reply))
	require.NoError(t, <-upDone)
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
}

// replyAtEOF accepts one connection on nl, reads it to EOF and replies
// with what it read, then half-closes and waits for the peer's close.
func replyAtEOF(nl net.Listener) error {
	c, err := nl.Accept()
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	req, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(c, "%d bytes: %s", len(req), req); err != nil {
		return err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return err
	}
	return expectEOF(c)
}

// A dial that fails (nobody listens on the upstream's port) closes the
// client, and the proxy goes on serving.
func testDialFailureClosesClient(t *testing.T, bin string) {
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := nl.Addr().String()
	require.NoError(t, nl.Close()) // nobody listens there now
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", closed, "-loops", "1")
	for range 2 {
		nc := dial(t, p.Addr)
		_, _ = nc.Write([]byte("anyone?"))
		n, err := nc.Read(make([]byte, 16))
		require.Zero(t, n)
		require.Error(t, err)
		require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the client was not closed")
	}
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
}

// With no pipe open (the clients have come and gone), a signal stops the
// proxy at once: it does not wait for -grace. (Default -loops.)
func testShutdownIdle(t *testing.T, bin string) {
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", echoUpstream(t), "-grace", "1h")
	nc := dial(t, p.Addr)
	require.NoError(t, echoed(nc, 1, 1000))
	require.NoError(t, nc.Close())
	code, _ := p.Signal(t, syscall.SIGINT) // returning before timeout: the hour was not waited for
	require.Zero(t, code)
	assert.NotContains(t, p.Stderr(), "ran out")
}

// With -grace 0 and no pipe open, the proxy exits at once, and it does
// not say that a grace period ran out with pipes open.
func testShutdownNoGraceIdle(t *testing.T, bin string) {
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", echoUpstream(t), "-grace", "0")
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
	assert.NotContains(t, p.Stderr(), "ran out")
}

// A pipe that is streaming when the signal comes goes on until it ends by
// itself (within -grace): the proxy stops accepting at once, the stream
// finishes byte-exact with its half-closes, then the proxy exits with 0
// (long before the grace ends).
func testShutdownLetsStreamFinish(t *testing.T, bin string) {
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", echoUpstream(t), "-loops", "2", "-grace", "1h")
	nc := dial(t, p.Addr)
	// The first MiB comes back before the signal: the proxy has accepted
	// the client and dialed the upstream. (Sent alone, it could still be in
	// the kernel's backlog, whose connections the closing listener resets.)
	const first, rest = 1 << 20, 7 << 20
	go func() { _ = send(nc, 2, first) }()
	require.NoError(t, expect(nc, 2, first))
	src := io.LimitReader(stream(3), rest)
	got := make(chan error, 1)
	go func() {
		err := expect(nc, 3, rest)
		if err == nil {
			err = expectEOF(nc)
		}
		got <- err
	}()

	start := time.Now()
	p.Send(t, syscall.SIGTERM)
	require.Eventually(t, func() bool { // the listeners are closed: the shutdown is under way
		c, err := net.DialTimeout("tcp", p.Addr, timeout)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, timeout, time.Millisecond, "the proxy still accepts")
	_, err := io.Copy(nc, src) // the rest, after the shutdown began
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	require.NoError(t, <-got)
	code, _ := p.Wait(t, start)
	require.Zero(t, code)
}

// A pipe that does not end by itself is closed when -grace has passed,
// and the proxy exits with 0 then.
func testShutdownGraceRunsOut(t *testing.T, bin string) {
	const grace = 300 * time.Millisecond
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", echoUpstream(t), "-loops", "1", "-grace", grace.String())
	nc := dial(t, p.Addr)
	_, err := nc.Write([]byte("still here"))
	require.NoError(t, err)
	require.NoError(t, expectN(nc, "still here"))
	code, took := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
	require.GreaterOrEqual(t, took, grace, "the open pipe was not waited for")
	assert.Contains(t, p.Stderr(), "the grace period ran out")
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err, "the client's side was closed")
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the client's side was not closed")
}

// expectN reads len(want) bytes from nc and compares them with want.
func expectN(nc net.Conn, want string) error {
	got := make([]byte, len(want))
	if _, err := io.ReadFull(nc, got); err != nil {
		return err
	}
	if string(got) != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// An upstream with no host, or localhost, is the loopback, which aio.Dial
// takes without resolving: the start-up lookup must not refuse it.
func TestCheckFlagsLoopbackHosts(t *testing.T) {
	require.NoError(t, checkFlags(":7000", 1, time.Second, time.Second, nil))
	require.NoError(t, checkFlags("localhost:7000", 1, time.Second, time.Second, nil))
}

// Bad flags are a clear error and a nonzero status, before anything
// listens.
func testBadFlags(t *testing.T, bin string) {
	for _, args := range [][]string{
		{"-listen", "127.0.0.1:0"}, // no upstream
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "0"},
		{"-listen", "nowhere", "-upstream", "127.0.0.1:1"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:99999"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:0"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:+1"},   // which aio.Dial refuses
		{"-listen", "127.0.0.1:0", "-upstream", "[fe80::1%lo]:1"}, // a zone by name, which aio.Dial refuses
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-grace", "-1s"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-dial-timeout", "0s"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "stray"},
		// More loops than a Runtime runs (the Go runtime would stop the
		// process on threads or Ps long before they all start).
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "4097"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "2147483647"},
		{"-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "9223372036854775807"},
	} {
		code, stderr := blackbox.Refused(t, bin, 0, args...)
		require.NotZero(t, code, "%v", args)
		require.NotEmpty(t, stderr, "%v", args)
	}
	// Fewer fds than the loops need: the start fails with EMFILE, said.
	code, stderr := blackbox.Refused(t, bin, 64, "-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "20")
	require.NotZero(t, code)
	require.Contains(t, stderr, "too many open files")
	// A second proxy on a port the first has: refused, not a silent share
	// of its connections (SO_REUSEPORT).
	first := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", "127.0.0.1:1", "-loops", "2")
	code, stderr = blackbox.Refused(t, bin, 0, "-listen", first.Addr, "-upstream", "127.0.0.1:1", "-loops", "2")
	require.NotZero(t, code)
	require.Contains(t, stderr, "address already in use")
}

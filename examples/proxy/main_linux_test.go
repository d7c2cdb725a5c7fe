package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/valkyria/aio/examples/internal/blackbox"

	"github.com/stretchr/testify/require"
)

// These tests hold the proxy's dial to the upstream back: the upstream's
// accept queue is full, so Linux drops the dial's SYN (and sends it again
// after 1 s, 3 s, 7 s, ..., until net.ipv4.tcp_syn_retries gives up), and
// the dial stays in SYN_SENT, which /proc/net/tcp shows.

func init() {
	proxyTests = append(proxyTests,
		proxyTest{"EarlyBytesAndHalfClose", testEarlyBytesAndHalfClose},
		proxyTest{"ClientGoneCancelsDial", testClientGoneCancelsDial},
		proxyTest{"DialTimeoutClosesClient", testDialTimeoutClosesClient})
}

// fullUpstream returns a listener with a backlog of 0 and one connection
// waiting in its accept queue, which makes the queue full: connects to it
// get no answer until that connection is accepted.
func fullUpstream(t *testing.T) (nl net.Listener, port int) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	f := os.NewFile(uintptr(fd), "upstream")
	defer f.Close() // FileListener keeps a duplicate
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	nl, err = net.FileListener(f)
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	filler, err := net.DialTimeout("tcp", nl.Addr().String(), timeout)
	require.NoError(t, err)
	t.Cleanup(func() { filler.Close() })
	return nl, nl.Addr().(*net.TCPAddr).Port
}

// dialing reports whether a connect to 127.0.0.1:port is in SYN_SENT.
func dialing(t *testing.T, port int) bool {
	t.Helper()
	table, err := os.ReadFile("/proc/net/tcp")
	require.NoError(t, err)
	remote := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(table), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == remote && f[3] == "02" { // TCP_SYN_SENT
			return true
		}
	}
	return false
}

// waitDialing waits until the proxy's dial to port is under way.
func waitDialing(t *testing.T, port int) {
	t.Helper()
	require.Eventually(t, func() bool { return dialing(t, port) }, timeout, time.Millisecond,
		"no connect to port %d in SYN_SENT", port)
}

// What a client sends while its upstream is not there yet, more than the
// proxy keeps before it stops reading the client, and the half-close that
// follows, reach the upstream once it answers; its reply comes back.
func testEarlyBytesAndHalfClose(t *testing.T, bin string) {
	nl, port := fullUpstream(t)
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", nl.Addr().String(), "-loops", "1")
	nc := dial(t, p.Addr)
	waitDialing(t, port)
	const total = 1 << 20 // > earlyMax
	sent := make(chan error, 1)
	go func() {
		err := send(nc, 3, total)
		if err == nil {
			err = nc.CloseWrite()
		}
		sent <- err
	}()

	// Make room in the queue: the dial's next SYN gets in.
	filler, err := nl.Accept()
	require.NoError(t, err)
	require.NoError(t, filler.Close())
	serveEcho(t, nl)
	require.NoError(t, expect(nc, 3, total))
	require.NoError(t, expectEOF(nc))
	require.NoError(t, <-sent)
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
}

// A client that goes away (a reset) while its upstream is being dialed
// cancels the dial: the connecting socket is closed at once, where the
// kernel would otherwise go on sending SYNs for minutes.
func testClientGoneCancelsDial(t *testing.T, bin string) {
	retries, err := os.ReadFile("/proc/sys/net/ipv4/tcp_syn_retries")
	require.NoError(t, err)
	if n, err := strconv.Atoi(strings.TrimSpace(string(retries))); err != nil || n < 5 {
		t.Skipf("tcp_syn_retries %q: a connect gives up too soon to tell a cancelled dial", retries)
	}
	nl, port := fullUpstream(t)
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", nl.Addr().String(), "-loops", "1")
	nc := dial(t, p.Addr)
	waitDialing(t, port)
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // a reset
	require.Eventually(t, func() bool { return !dialing(t, port) }, timeout, time.Millisecond,
		"the dial goes on without its client")
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
}

// A client that half-closes while its upstream is being dialed is not
// gone (it may be waiting for its reply), so only -dial-timeout bounds the
// dial: when it passes, the connecting socket and the client are closed,
// where the kernel would otherwise go on sending SYNs for minutes.
func testDialTimeoutClosesClient(t *testing.T, bin string) {
	nl, port := fullUpstream(t)
	p := blackbox.Start(t, bin, "-listen", "127.0.0.1:0", "-upstream", nl.Addr().String(),
		"-loops", "1", "-dial-timeout", "300ms")
	nc := dial(t, p.Addr)
	// Not waitDialing: the dial lasts only 300 ms, which a scan of a large
	// /proc/net/tcp (other tests' TIME_WAIT sockets) can miss. The log line
	// below says the dial was pending until its timeout.
	_, err := nc.Write([]byte("request"))
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err, "the client is closed when the dial times out")
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the proxy held the client until the test's deadline")
	require.Eventually(t, func() bool { return !dialing(t, port) }, timeout, time.Millisecond,
		"the dial goes on past -dial-timeout")
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code)
	require.Contains(t, p.Stderr(), "upstream: aio: timeout after 300ms")
}

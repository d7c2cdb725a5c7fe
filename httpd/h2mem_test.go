package httpd

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/sys/unix"
)

// h2IdleBudget is what an idle HTTP/2 connection may cost the server's
// heap (issue #12: under 16 KiB).
const h2IdleBudget = 16 << 10

// h2Idle counts the server's HTTP/2 connections past the SETTINGS
// exchange (the client's SETTINGS read), looked at on the loop.
func (ts *testServer) h2Idle(t testing.TB) int {
	n := 0
	ts.onLoop(t, func() {
		for _, ls := range ts.loopStates() {
			for hc := ls.conns.head; hc != nil; hc = hc.links[linkAll].next {
				if hc.h2 != nil && hc.h2.settings && len(hc.h2.streams) == 0 {
					n++
				}
			}
		}
	})
	return n
}

// dialH2Idle opens an HTTP/2 connection from a raw socket, which costs the
// Go heap nothing: the preface, an empty SETTINGS and the ack of the
// server's, in one write; what the server sends stays unread in the
// kernel.
func dialH2Idle(t testing.TB, sa unix.Sockaddr) int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	unix.CloseOnExec(fd) // SOCK_CLOEXEC is not on every kqueue system
	t.Cleanup(func() { unix.Close(fd) })
	require.NoError(t, unix.Connect(fd, sa))
	hello := http2.ClientPreface +
		"\x00\x00\x00\x04\x00\x00\x00\x00\x00" + // SETTINGS
		"\x00\x00\x00\x04\x01\x00\x00\x00\x00" // SETTINGS ack
	n, err := unix.Write(fd, []byte(hello))
	require.NoError(t, err)
	require.Equal(t, len(hello), n)
	return fd
}

// Memory per idle HTTP/2 connection on the server side, after the
// SETTINGS exchange: HeapInuse grows by less than h2IdleBudget per
// connection (as TestTCPIdleConnMemory measures a bare TCP connection).
func TestH2IdleConnMemory(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	ts := startServer(t, testMux(), Config{})
	sa := &unix.SockaddrInet4{Port: int(ts.Addr().Port()), Addr: [4]byte{127, 0, 0, 1}}
	// One warm-up connection, so the loop's one-time allocations are not
	// counted.
	dialH2Idle(t, sa)
	eventually(t, func() bool { return ts.h2Idle(t) == 1 }, "warm-up not idle")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		dialH2Idle(t, sa)
	}
	eventually(t, func() bool { return ts.h2Idle(t) == n+1 }, "not all idle: %+v", ts.Stats())
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n)
	t.Logf("idle HTTP/2 connections: %d, HeapInuse delta %.0f B per connection", n, per)
	require.Less(t, per, float64(h2IdleBudget))
}

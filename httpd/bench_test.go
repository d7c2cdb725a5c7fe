package httpd

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHealth measures GET /health over one keep-alive loopback
// connection, request after request, with allocations: the server's fast
// path allocates nothing per request (the client here reuses its buffers,
// so every allocation counted would be the server's or the loop's).
func BenchmarkHealth(b *testing.B) {
	ts := startServer(b, testMux(), Config{})
	nc, err := net.DialTimeout("tcp", ts.addr, waitTimeout)
	require.NoError(b, err)
	defer nc.Close()
	req := []byte("GET /health HTTP/1.1\r\nHost: bench\r\n\r\n")
	// The response's length is fixed (Date has a fixed length): learn it.
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
	size := n
	b.ReportAllocs()
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

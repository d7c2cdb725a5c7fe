package aio

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tlsRecordServer listens with a TLS echo server that reports how each
// connection closed, and connects a crypto/tls client to it, returning
// the client's TCP connection too, to write raw records on.
func tlsRecordServer(t *testing.T, l *Loop) (*tls.Conn, net.Conn, <-chan error) {
	t.Helper()
	scfg, ccfg := tlsConfigs(t)
	closed := make(chan error, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		_ = c.OnClose(func(_ *Conn, err error) { closed <- err })
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	tc := tls.Client(nc, ccfg)
	require.NoError(t, tc.Handshake())
	return tc, nc, closed
}

// TestTLSOversizedRecord: a header that claims more than a record may
// hold is rejected at once, not waited for.
func TestTLSOversizedRecord(t *testing.T) {
	l := startLoop(t)
	_, nc, closed := tlsRecordServer(t, l)
	_, err := nc.Write([]byte{23, 3, 3, 0xff, 0xff})
	require.NoError(t, err)
	// Bounded below waitTimeout: a record waited for would never end.
	require.ErrorContains(t, recvWithin(t, 10*time.Second, closed), "oversized record")
}

// TestTLSTruncatedRecord: a FIN inside a record is an error, not the end
// of the plaintext; a FIN between records is the end.
func TestTLSTruncatedRecord(t *testing.T) {
	l := startLoop(t)
	for _, cut := range []int{3, 5 + 10} { // in the header, in the body
		tc, nc, closed := tlsRecordServer(t, l)
		// A whole record first, then the start of one.
		_, err := tc.Write([]byte("whole"))
		require.NoError(t, err)
		got := make([]byte, 5)
		_, err = io.ReadFull(tc, got)
		require.NoError(t, err)
		require.Equal(t, "whole", string(got))
		_, err = nc.Write([]byte{23, 3, 3, 0, 40, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}[:cut])
		require.NoError(t, err)
		require.NoError(t, nc.(*net.TCPConn).CloseWrite())
		require.ErrorIs(t, recv(t, closed), io.ErrUnexpectedEOF, "cut at %d", cut)
	}
	tc, nc, closed := tlsRecordServer(t, l)
	_, err := tc.Write([]byte("whole"))
	require.NoError(t, err)
	require.NoError(t, nc.(*net.TCPConn).CloseWrite())
	require.NoError(t, recv(t, closed))
}

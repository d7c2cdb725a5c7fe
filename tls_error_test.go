package aio

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// httpServer answers whatever it is sent with a plaintext HTTP 400, as an
// HTTP server does to a TLS ClientHello. Closed when the test ends.
func httpServer(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	acceptEach(t, ln, func(c net.Conn) {
		t.Cleanup(func() { c.Close() })
		_, _ = io.WriteString(c, "HTTP/1.0 400 Bad Request\r\n\r\n")
	})
	return ln
}

// A TLS dial to a plaintext server fails with crypto/tls's
// RecordHeaderError, whose Conn (the library's view of the connection,
// for the loop alone) is not handed out: a program writing to it, as
// net/http does to send its 400, would race the loop.
func TestTLSDialRecordHeaderErrorHidesConn(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	ln := httpServer(t)
	h := (&Dialer{TLS: ccfg}).Dial(l, ln.Addr().String())
	_, err := wait(t, h)
	var rh tls.RecordHeaderError
	require.ErrorAs(t, err, &rh)
	require.Nil(t, rh.Conn, "the library's connection view leaked")
	require.Contains(t, rh.Msg, "does not look like a TLS handshake")
	require.Equal(t, "HTTP/", string(rh.RecordHeader[:]))
	require.ErrorContains(t, err, ln.Addr().String())
	closedLoopTCP(t, l)
	require.EqualValues(t, 1, l.Stats().TLSHandshakeErrors)
	require.False(t, errors.Is(err, ErrCancelled))
}

// A Dialer's and an adoption's handshake timeouts fail as a listener's
// does: with ErrHandshakeTimeout (an ErrTimeout), naming the address.
func TestTLSHandshakeTimeoutError(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	ln, conns := silentServer(t)
	addr := ln.Addr().String()
	_, err := wait(t, (&Dialer{TLS: ccfg, HandshakeTimeout: 50 * time.Millisecond}).Dial(l, addr))
	require.ErrorIs(t, err, ErrHandshakeTimeout)
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "tls handshake "+addr)
	recv(t, conns)

	mine, theirs := acceptNet(t)
	h, err := AdoptTLSConnFrom(l, mine, AdoptTLSConfig{TLS: ccfg, HandshakeTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, mine.Close())
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrHandshakeTimeout)
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorContains(t, err, "tls handshake "+theirs.LocalAddr().String())
	_, err = io.Copy(io.Discard, theirs)
	require.NoError(t, err, "the adopted socket was closed")
	closedLoopTCP(t, l)
}

// Cancelling an adoption's handle mid-handshake (the ClientHello sent,
// the server's answer awaited) ends the handshake and closes the socket.
func TestTLSAdoptCancelMidHandshake(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	mine, theirs := acceptNet(t)
	h, err := AdoptTLSConnFrom(l, mine, AdoptTLSConfig{TLS: ccfg})
	require.NoError(t, err)
	require.NoError(t, mine.Close())
	cancelMidHandshake(t, h, theirs)
	closedLoopTCP(t, l)
	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 1 }, "not counted")
}

package aio

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// handshakeFailure is what ListenConfig.OnHandshakeError was given.
type handshakeFailure struct {
	peer netip.AddrPort
	err  error
}

// failuresListen listens with a TLS echo server on cfg, whose
// OnHandshakeError sends on the channel returned.
func failuresListen(t *testing.T, l *Loop, cfg ListenConfig) (*Listener, <-chan handshakeFailure) {
	t.Helper()
	ch := make(chan handshakeFailure, 4)
	cfg.OnHandshakeError = func(peer netip.AddrPort, err error) {
		l.checkOnLoop()
		ch <- handshakeFailure{peer, err}
	}
	return tlsEchoListen(t, l, cfg), ch
}

// A first record that is not TLS: the listener learns the peer and
// crypto/tls's RecordHeaderError, without the library's connection view.
func TestTLSOnHandshakeErrorGarbage(t *testing.T) {
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	ln, failures := failuresListen(t, l, ListenConfig{TLS: scfg})
	nc := netDial(t, ln)
	_, err := io.WriteString(nc, "GET / HTTP/1.0\r\n\r\n")
	require.NoError(t, err)
	f := recv(t, failures)
	require.Equal(t, nc.LocalAddr().String(), f.peer.String())
	var rh tls.RecordHeaderError
	require.ErrorAs(t, f.err, &rh)
	require.Nil(t, rh.Conn)
	require.NotContains(t, f.err.Error(), "aio: tls handshake", "the address is apart, not in the error")
	_, err = io.Copy(io.Discard, nc)
	require.NoError(t, err, "closed")
	require.EqualValues(t, 1, l.Stats().TLSHandshakeErrors)
	require.Empty(t, failures)
}

// Mutual TLS: a client without a certificate is rejected by the server,
// which learns why. Under TLS 1.3 the client's Dial succeeds (its
// handshake ends before the server checked its certificate) and the
// rejection, the server's alert, is its first read's error.
func TestTLSOnHandshakeErrorClientCert(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	scfg = scfg.Clone()
	scfg.ClientAuth = tls.RequireAndVerifyClientCert
	scfg.ClientCAs = x509.NewCertPool()
	ln, failures := failuresListen(t, l, ListenConfig{TLS: scfg})
	c, err := wait(t, (&Dialer{TLS: ccfg}).Dial(l, ln.Addr().String()))
	require.NoError(t, err, "TLS 1.3: the client's handshake ended")
	st, _ := c.TLS()
	require.EqualValues(t, tls.VersionTLS13, st.Version)
	f := recv(t, failures)
	require.Equal(t, c.LocalAddr(), f.peer)
	require.ErrorContains(t, f.err, "client didn't provide a certificate")

	require.NoError(t, c.OnRead(func(*Conn, []byte) { t.Error("plaintext read") }))
	_, err = wait(t, c.Closed())
	var remote *net.OpError // crypto/tls's wrapping of the peer's alert
	require.ErrorAs(t, err, &remote)
	require.Equal(t, "remote error", remote.Op)
	require.EqualError(t, remote.Err, "tls: certificate required")

	// A certificate the server does not trust: the same, another alert.
	untrusted := ccfg.Clone()
	untrusted.Certificates = []tls.Certificate{testCert(t, "client")}
	c, err = wait(t, (&Dialer{TLS: untrusted}).Dial(l, ln.Addr().String()))
	require.NoError(t, err)
	require.ErrorContains(t, recv(t, failures).err, "certificate")
	require.NoError(t, c.OnRead(func(*Conn, []byte) { t.Error("plaintext read") }))
	_, err = wait(t, c.Closed())
	require.ErrorAs(t, err, &remote)
	require.EqualError(t, remote.Err, "tls: unknown certificate authority")

	// Under TLS 1.2 the client's handshake waits for the verdict: the
	// Dial fails with it.
	tls12 := ccfg.Clone()
	tls12.MaxVersion = tls.VersionTLS12
	_, err = wait(t, (&Dialer{TLS: tls12}).Dial(l, ln.Addr().String()))
	require.ErrorAs(t, err, &remote)
	require.Equal(t, "remote error", remote.Op)
	recv(t, failures)
	_, err = wait(t, ln.Close())
	require.NoError(t, err)
	closedLoopTCP(t, l)
	require.Empty(t, failures)
}

// Closing a TLS listener closes the connections it accepted that are
// still in their handshake: never delivered, they would otherwise live
// on unseen until they finished (and were delivered by a closed
// listener) or timed out. One delivered already stays open.
func TestTLSListenerCloseEndsHandshakes(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	var delivered atomic.Int32
	failed := make(chan error, 1)
	// No handshake timeout: only the close can end the silent handshake.
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg, HandshakeTimeout: -1,
		OnHandshakeError: func(_ netip.AddrPort, err error) { failed <- err }}, func(c *Conn) {
		delivered.Add(1)
		_ = c.OnRead(tcpEcho)
	})
	require.NoError(t, err)
	done := tlsDial(t, ln, ccfg)
	silent := netDial(t, ln) // connects, sends no ClientHello
	eventually(t, func() bool { return l.Stats().TCPOpen == 2 }, "not accepted")
	_, err = ln.Close().Wait(t.Context())
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, silent)
	require.NoError(t, err, "the handshake's connection closes")
	require.ErrorIs(t, recv(t, failed), ErrConnClosed)
	eventually(t, func() bool { return l.Stats().TCPOpen == 1 }, "open: %+v", l.Stats())
	_, err = done.Write([]byte("still"))
	require.NoError(t, err)
	b := make([]byte, 5)
	_, err = io.ReadFull(done, b)
	require.NoError(t, err)
	require.Equal(t, "still", string(b), "the delivered connection goes on")
	require.EqualValues(t, 1, delivered.Load())
}

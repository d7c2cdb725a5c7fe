package aio

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestTLSEcho(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	tc := tlsDial(t, ln, ccfg)
	for _, msg := range []string{"hello", "", "world, once more", string(bytes.Repeat([]byte("x"), 40000))} {
		if msg == "" {
			continue
		}
		_, err := tc.Write([]byte(msg))
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_, err = io.ReadFull(tc, got)
		require.NoError(t, err)
		require.Equal(t, msg, string(got))
	}
	require.NoError(t, tc.Close())
	s := l.Stats()
	require.Equal(t, uint64(1), s.TLSHandshakes)
	require.Zero(t, s.TLSHandshakeErrors)
}

// TestTLSLarge sends 8 MiB each way at once: the echo's write queue fills
// (ciphertext) and holds reading back until it drains.
func TestTLSLarge(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	drained := make(chan struct{}, 1)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg, Conn: ConnConfig{HighWater: 64 << 10}},
		func(c *Conn) {
			conns <- c
			_ = c.OnRead(tcpEcho)
			_ = c.OnDrain(func(*Conn) {
				select {
				case drained <- struct{}{}:
				default:
				}
			})
		})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	const size = 8 << 20
	out := make([]byte, size)
	pattern(out, 0)
	werr := make(chan error, 1)
	go func() {
		_, err := tc.Write(out)
		werr <- err
	}()
	// The client reads nothing yet: the echo's queue fills and holds
	// reading back (and so the client's writes).
	c := recv(t, conns)
	eventually(t, c.Full, "the write queue never filled")
	got := make([]byte, size)
	_, err = io.ReadFull(tc, got)
	require.NoError(t, err)
	require.NoError(t, recv(t, werr))
	require.True(t, bytes.Equal(out, got), "echo differs")
	recv(t, drained)
	require.NoError(t, tc.Close())
}

// TestTLSByteByByte makes the server read its ciphertext a byte at a time:
// the handshake suspends on every byte, records arrive in pieces.
func TestTLSByteByByte(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	tc := tls.Client(byteConn{netDial(t, ln)}, ccfg)
	require.NoError(t, tc.Handshake())
	msg := []byte("fragmented to one byte per read")
	_, err := tc.Write(msg)
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(tc, got)
	require.NoError(t, err)
	require.Equal(t, msg, got)
	require.NoError(t, tc.Close())
}

func TestTLSALPN(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	scfg.NextProtos = []string{"h2", "http/1.1"}
	ccfg.NextProtos = []string{"h2"}
	proto := make(chan string, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		st, ok := c.TLS()
		if !ok {
			proto <- "not TLS"
			return
		}
		proto <- st.NegotiatedProtocol
		_ = c.OnRead(tcpEcho)
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	require.Equal(t, "h2", tc.ConnectionState().NegotiatedProtocol)
	require.Equal(t, "h2", recv(t, proto))
	require.NoError(t, tc.Close())
}

func TestTLSSNI(t *testing.T) {
	l := startLoop(t)
	a, b := testCert(t, "a.test"), testCert(t, "b.test")
	scfg := &tls.Config{GetCertificate: func(hi *tls.ClientHelloInfo) (*tls.Certificate, error) {
		switch hi.ServerName {
		case "a.test":
			return &a, nil
		case "b.test":
			return &b, nil
		}
		return nil, errors.New("no such name")
	}}
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	for _, name := range []string{"a.test", "b.test"} {
		tc := tlsDial(t, ln, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		require.Equal(t, name, tc.ConnectionState().PeerCertificates[0].Subject.CommonName)
		require.NoError(t, tc.Close())
	}
	// An unknown name fails the handshake: the server counts it and closes.
	nc := netDial(t, ln)
	tc := tls.Client(nc, &tls.Config{ServerName: "c.test", InsecureSkipVerify: true})
	require.Error(t, tc.Handshake())
	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 1 }, "failure not counted")
}

func TestTLSResumption(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	for i, resumed := range []bool{false, true} {
		tc := tlsDial(t, ln, ccfg)
		// The ticket comes after the handshake (TLS 1.3): a round trip reads it.
		_, err := tc.Write([]byte("x"))
		require.NoError(t, err)
		_, err = io.ReadFull(tc, make([]byte, 1))
		require.NoError(t, err)
		require.Equal(t, resumed, tc.ConnectionState().DidResume, "connection %d", i)
		require.NoError(t, tc.Close())
	}
}

// TestTLSHandshakeTimeout stalls a client mid-handshake: it is closed at the
// timeout, counted, and the loop serves another client meanwhile.
func TestTLSHandshakeTimeout(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	closed := make(chan error, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg, HandshakeTimeout: 200 * time.Millisecond},
		func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	stalled := netDial(t, ln)
	_, err = stalled.Write([]byte{22, 3, 1}) // the start of a record header, and no more
	require.NoError(t, err)
	// Another client is served while the first one stalls.
	tc := tlsDial(t, ln, ccfg)
	_, err = tc.Write([]byte("ping"))
	require.NoError(t, err)
	_, err = io.ReadFull(tc, make([]byte, 4))
	require.NoError(t, err)
	go func() {
		_, err := stalled.Read(make([]byte, 1))
		closed <- err
	}()
	err = recv(t, closed)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server did not close the stalled client: %v", err)
	require.Equal(t, uint64(1), l.Stats().TLSHandshakeErrors)
	require.NoError(t, tc.Close())
}

// TestTLSCloseNotifyFromServer: the server's Close sends close_notify before
// its FIN (TLS 1.2: the alert's record type is in clear).
func TestTLSCloseNotifyFromServer(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	scfg.MaxVersion = tls.VersionTLS12
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			_, _ = c.Write(b)
			c.Close()
		})
	})
	require.NoError(t, err)
	rc := &recordConn{Conn: netDial(t, ln)}
	tc := tls.Client(rc, ccfg)
	require.NoError(t, tc.Handshake())
	_, err = tc.Write([]byte("bye"))
	require.NoError(t, err)
	got, err := io.ReadAll(tc)
	require.NoError(t, err, "a clean end")
	require.Equal(t, "bye", string(got))
	types := rc.recordTypes()
	require.NotEmpty(t, types)
	require.Equal(t, byte(21), types[len(types)-1], "the last record is an alert: %v", types)
}

// TestTLSCloseNotifyFromClient: the client's close_notify is the plaintext
// EOF (OnEOF), before any FIN.
func TestTLSCloseNotifyFromClient(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		_ = c.OnEOF(func(c *Conn) {
			_, _ = c.Write([]byte("eof seen"))
			c.CloseWrite()
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	require.NoError(t, tc.CloseWrite()) // close_notify, no FIN
	got, err := io.ReadAll(tc)
	require.NoError(t, err)
	require.Equal(t, "eof seen", string(got))
}

// TestTLSStopMidHandshake stops the loop while a handshake waits for its
// client: no goroutine, fd or handle is left.
func TestTLSStopMidHandshake(t *testing.T) {
	fds := fdCount(t)
	l := startLoopOn(t, newRuntime(t, RuntimeConfig{}))
	_, nc := stalledClient(t, l)
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	require.NoError(t, nc.Close())
	requireNoLeak(t, "after Stop mid-handshake")
	require.Equal(t, fds, fdCount(t), "fds left open")
	require.Equal(t, uint64(1), l.Stats().TLSHandshakeErrors)
}

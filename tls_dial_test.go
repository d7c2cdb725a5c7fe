package aio

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goTLSServer serves TLS with crypto/tls, a goroutine per connection: it
// writes greeting, then echoes. Closed when the test ends.
func goTLSServer(t *testing.T, cfg *tls.Config, greeting string) net.Listener {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	acceptEach(t, ln, func(c net.Conn) {
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(waitTimeout))
			if _, err := io.WriteString(c, greeting); err != nil {
				return
			}
			_, _ = io.Copy(c, c)
		}()
	})
	return ln
}

// acceptEach hands each connection ln accepts to fn, on the accepting
// goroutine, until the test ends: then ln is closed and the goroutine
// waited for.
func acceptEach(t testing.TB, ln net.Listener, fn func(net.Conn)) {
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fn(c)
		}
	}()
}

// readN collects n bytes of c's plaintext, delivered by OnRead.
func readN(t *testing.T, c *Conn, n int) []byte {
	t.Helper()
	return reader(t, c, n)()
}

// reader sets c's OnRead to collect the next n bytes of plaintext, and
// returns the function that waits for them.
func reader(t *testing.T, c *Conn, n int) func() []byte {
	t.Helper()
	ch := make(chan []byte, 1)
	var got []byte
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) {
		if len(got) < n {
			if got = append(got, b...); len(got) >= n {
				ch <- got
			}
		}
	}))
	return func() []byte { return recv(t, ch) }
}

func TestTLSDialGoServer(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	scfg.NextProtos = []string{"h2", "http/1.1"}
	ccfg.NextProtos = []string{"http/1.1"}
	ln := goTLSServer(t, scfg, "hello\n")
	c, err := wait(t, (&Dialer{TLS: ccfg}).Dial(l, ln.Addr().String()))
	require.NoError(t, err)
	st, ok := c.TLS()
	require.True(t, ok)
	require.Equal(t, "http/1.1", st.NegotiatedProtocol)
	// The greeting arrived before OnRead was set: it waited.
	require.Equal(t, "hello\n", string(readN(t, c, 6)))
	echoClose(t, c, []byte("ping"))
	require.Equal(t, uint64(1), l.Stats().TLSHandshakes)
}

// echoClose writes msg on c, requires it back, and closes c.
func echoClose(t *testing.T, c *Conn, msg []byte) {
	t.Helper()
	echo := reader(t, c, len(msg)) // before the write: the echo may come at once
	_, err := c.Write(msg)
	require.NoError(t, err)
	require.Equal(t, msg, echo())
	_, err = wait(t, c.Close())
	require.NoError(t, err)
}

// TestTLSDialLoopServer is the loop client against the loop server, on
// one loop, with the server name taken from the address.
func TestTLSDialLoopServer(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ccfg.ServerName = ""
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	c, err := wait(t, (&Dialer{TLS: ccfg}).Dial(l, ln.Addr().String())) // 127.0.0.1: in the certificate
	require.NoError(t, err)
	msg := make([]byte, 1<<20)
	pattern(msg, 3)
	echoClose(t, c, msg)
	require.Equal(t, uint64(2), l.Stats().TLSHandshakes)
}

func TestTLSDialVerifyFails(t *testing.T) {
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	_, err := wait(t, (&Dialer{TLS: &tls.Config{ServerName: "localhost", RootCAs: x509.NewCertPool()}}).Dial(l, ln.Addr().String()))
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	eventually(t, func() bool { s := l.Stats(); return s.TCPOpen == 0 && s.TLSHandshakeErrors == 2 }, "not closed and counted")
}

// silentServer accepts and reads, never answering: a handshake against it
// waits for ever. It reports each accepted connection.
func silentServer(t *testing.T) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	conns := make(chan net.Conn, 4)
	acceptEach(t, ln, func(c net.Conn) {
		t.Cleanup(func() { c.Close() })
		conns <- c
	})
	return ln, conns
}

// TestTLSDialCancelMidHandshake cancels a dial waiting for the server's
// hello: the socket is closed (the server reads EOF), nothing is left.
func TestTLSDialCancelMidHandshake(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	ln, conns := silentServer(t)
	h := (&Dialer{TLS: ccfg}).Dial(l, ln.Addr().String())
	cancelMidHandshake(t, h, recv(t, conns))
	closedLoopTCP(t, l)
}

// cancelMidHandshake waits for the ClientHello of h's handshake on peer,
// cancels h, and requires the client's socket closed (the peer reads EOF
// within a deadline): the cancellation reached the handshake.
func cancelMidHandshake(t *testing.T, h *Handle[*Conn], peer net.Conn) {
	t.Helper()
	_ = peer.SetReadDeadline(time.Now().Add(waitTimeout))
	_, err := peer.Read(make([]byte, 512)) // the ClientHello: the handshake waits now
	require.NoError(t, err)
	require.True(t, h.Cancel())
	_, err = wait(t, h)
	require.ErrorIs(t, err, ErrCancelled)
	_, err = io.Copy(io.Discard, peer)
	require.NoError(t, err, "the client closed its socket")
}

func TestTLSDialTimeoutAndContext(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	ln, conns := silentServer(t)
	_, err := wait(t, (&Dialer{TLS: ccfg, HandshakeTimeout: 100 * time.Millisecond}).Dial(l, ln.Addr().String()))
	require.ErrorIs(t, err, ErrTimeout)
	recv(t, conns)

	ctx, cancel := context.WithCancel(context.Background())
	h := (&Dialer{TLS: ccfg}).DialContext(ctx, l, ln.Addr().String())
	sc := recv(t, conns)
	_, err = sc.Read(make([]byte, 512))
	require.NoError(t, err)
	cancel()
	_, err = wait(t, h)
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, ErrCancelled))
	// The connection was made: the error names the handshake, not the dial.
	require.ErrorContains(t, err, "aio: tls handshake "+ln.Addr().String()+": context canceled")
	require.NotContains(t, err.Error(), "dial tcp")
	closedLoopTCP(t, l)
}

// A TLS dial with no ServerName sends the address's host as SNI, as
// tls.Dial does, with InsecureSkipVerify too: a server that picks its
// certificate by name (virtual hosts) needs it either way.
func TestTLSDialSendsSNI(t *testing.T) {
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	names := make(chan string, 2)
	scfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		names <- h.ServerName
		return nil, nil
	}
	ln := goTLSServer(t, scfg, "hi")
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	c, err := wait(t, (&Dialer{TLS: &tls.Config{InsecureSkipVerify: true}}).Dial(l, net.JoinHostPort("localhost", port)))
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "localhost", recv(t, names))
}

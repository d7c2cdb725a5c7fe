package aio

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// helloConn tells when its first write (a client's ClientHello) is done.
type helloConn struct {
	net.Conn
	wrote chan struct{}
}

func (h *helloConn) Write(p []byte) (int, error) {
	n, err := h.Conn.Write(p)
	select {
	case h.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// TestTLSHandshakeStepsPerTurn holds the loop while 8 clients send their
// ClientHello and a plaintext client its request: the poll after it
// finds them all, answers the plaintext request and runs no more than
// tlsStepsPerTurn handshake steps in that turn (unbounded, it would run
// all 8); the others wait for later turns, and all the handshakes end
// well.
func TestTLSHandshakeStepsPerTurn(t *testing.T) {
	const clients = 8
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg})
	answered := make(chan struct{}, 1)
	plain, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			answered <- struct{}{}
			tcpEcho(c, b)
		})
	})
	require.NoError(t, err)
	pc := netDial(t, plain)
	ncs := make([]net.Conn, clients)
	for i := range ncs {
		ncs[i] = netDial(t, ln)
	}
	eventually(t, func() bool { return l.Stats().TCPOpen == clients+1 }, "not all accepted")

	release := holdLoop(t, l)
	errs := make(chan error, clients)
	for _, nc := range ncs {
		h := &helloConn{Conn: nc, wrote: make(chan struct{}, 1)}
		go func() {
			tc := tls.Client(h, ccfg)
			err := tc.Handshake()
			if err == nil {
				_, err = tc.Write([]byte("x"))
			}
			errs <- err
		}()
		recv(t, h.wrote)
	}
	_, err = pc.Write([]byte("ping"))
	require.NoError(t, err)
	// Posted while the loop is held: it runs at the start of the turn
	// after the one that finds the ClientHellos.
	after := make(chan int, 1)
	require.NoError(t, l.Post(func() { after <- queuedSteps(l) }))
	release()

	recv(t, answered)
	require.Equal(t, clients-tlsStepsPerTurn, recv(t, after), "steps run in one turn")
	for range clients {
		require.NoError(t, recv(t, errs))
	}
	eventually(t, func() bool { return l.Stats().TLSHandshakes == clients }, "handshakes not all done")
	require.Zero(t, onLoopValue(t, l, func() int { return queuedSteps(l) }))
}

// queuedSteps is how many handshakes wait for their turn. On the loop.
func queuedSteps(l *Loop) int {
	s := l.tcp.tls
	if s == nil {
		return 0
	}
	return len(s.steps) - s.stepHead
}

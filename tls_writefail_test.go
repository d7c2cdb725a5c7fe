package aio

import (
	"crypto/tls"
	"testing"

	"github.com/stretchr/testify/require"
)

// crypto/tls writes while it reads (an alert for a bad record, the answer
// to a KeyUpdate). When that write fails, the peer having reset, the
// connection closes inside the read, and the plaintext read before it is
// nobody's: it used to be handed to the read callback the close had just
// cleared, a nil function called on the loop (a recovered panic, and
// OnPanic for a program that exits on one).
func TestTLSWriteFailingInsideARead(t *testing.T) {
	panics := make(chan any, 4)
	l := startLoop(t, Config{OnPanic: func(v any) { panics <- v }})
	scfg, ccfg := tlsConfigs(t)
	closed := make(chan error, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {})
		_ = c.OnClose(func(_ *Conn, err error) { closed <- err })
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	hw := &heldConn{TCPConn: nc}
	tc := tls.Client(hw, ccfg)
	require.NoError(t, tc.Handshake())
	eventually(t, func() bool { return l.Stats().TLSHandshakes == 1 }, "the server's side of the handshake")
	hw.hold = true
	_, err = tc.Write([]byte("a"))
	require.NoError(t, err)
	_, err = tc.Write([]byte("b"))
	require.NoError(t, err)
	hw.buf[len(hw.buf)-1] ^= 1 // the second record's tag: the server answers it with an alert

	release := holdLoop(t, l) // so that the reset is in before the records are read
	_, err = nc.Write(hw.buf)
	require.NoError(t, err)
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close())
	release()
	require.Error(t, recv(t, closed))
	select {
	case p := <-panics:
		t.Fatalf("a panic on the loop: %v", p)
	default:
	}
	require.Zero(t, l.Stats().Panics)
}

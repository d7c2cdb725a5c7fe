package aio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTLSDialHandshakeCloseCause: a connection closed under its handshake
// by one of its own timeouts fails the dial with that cause, not with a
// bare "connection closed" that hides it.
func TestTLSDialHandshakeCloseCause(t *testing.T) {
	l := startLoop(t)
	_, ccfg := tlsConfigs(t)
	ln, conns := silentServer(t)
	d := Dialer{TLS: ccfg, Conn: ConnConfig{ReadTimeout: 20 * time.Millisecond}}
	h := d.Dial(l, ln.Addr().String())
	recv(t, conns)
	_, err := wait(t, h)
	require.ErrorIs(t, err, ErrReadTimeout)
	require.ErrorContains(t, err, "aio: tls handshake")
	closedLoopTCP(t, l)
	require.EqualValues(t, 1, l.Stats().TLSHandshakeErrors)
}

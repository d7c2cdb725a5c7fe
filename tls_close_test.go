package aio

import (
	"crypto/tls"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// Close on a TLS connection drops what is queued, as on a plain one, and
// so sends no close_notify (it cannot follow dropped records): the peer
// sees the stream cut, not a clean end. CloseWrite is the polite end:
// everything written, then close_notify, then FIN. (TLS 1.2: the alert's
// record type is in clear.)
func TestTLSCloseDropsQueueWithoutCloseNotify(t *testing.T) {
	const size = 4 << 20
	for _, polite := range []bool{false, true} {
		name := map[bool]string{false: "Close", true: "CloseWrite"}[polite]
		t.Run(name, func(t *testing.T) {
			l := startLoop(t)
			fds := fdCount(t)
			scfg, ccfg := tlsConfigs(t)
			scfg.MaxVersion = tls.VersionTLS12
			queued := make(chan int, 1)
			ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg, Conn: smallBuffers}, func(c *Conn) {
				_ = c.OnRead(func(c *Conn, b []byte) {
					_, _ = c.Write(make([]byte, size))
					queued <- c.Buffered()
					if polite {
						c.CloseWrite()
					} else {
						c.Close()
					}
				})
			})
			require.NoError(t, err)
			nc := netDial(t, ln)
			rc := &recordConn{Conn: nc}
			tc := tls.Client(rc, ccfg)
			require.NoError(t, tc.Handshake())
			_, err = tc.Write([]byte("go"))
			require.NoError(t, err)
			require.Positive(t, recv(t, queued), "the peer had not read: the write was queued")

			got, err := io.ReadAll(tc)
			types := rc.recordTypes()
			if polite {
				require.NoError(t, err, "a clean end")
				require.Len(t, got, size)
				require.Equal(t, byte(21), types[len(types)-1], "the last record is an alert: %v", types)
				require.NoError(t, nc.Close()) // the server closes at our EOF
			} else {
				require.Less(t, len(got), size, "the queue was dropped")
				require.NotContains(t, types, byte(21), "no close_notify after dropped records")
				if err == nil {
					// Cut on a record's boundary, crypto/tls reads a bare FIN as EOF.
					t.Log("the cut fell between records")
				}
				require.NoError(t, nc.Close())
			}
			closedLoopTCP(t, l.closeListener(t, ln))
			require.Equal(t, fds, fdCount(t))
		})
	}
}

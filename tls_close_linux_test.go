package aio

import (
	"crypto/tls"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A closed TLS connection lets go of the ciphertext it kept when reading
// paused (up to a read buffer's worth, 64 KiB): the program keeps its
// *Conn long after the close (a set of clients, a request that came on
// it), and Conn.TLS still answers then.
func TestClosedTLSConnLetsGoOfItsCiphertext(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) { _ = c.PauseRead() }) // the first bytes pause it
		_ = c.PauseRead()                                           // not before the client wrote all
		conns <- c
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	c := recv(t, conns)
	// Many small records: one read takes them all, and the pump hands a
	// turn's worth (tlsRecordsPerTurn) to the callback, which pauses.
	for range 1000 {
		_, err := tc.Write(make([]byte, 16))
		require.NoError(t, err)
	}
	eventually(t, func() bool { // the records wait in the server's socket, for one read
		return onLoopValue(t, l, func() bool {
			n, err := unix.IoctlGetInt(c.fd, unix.SIOCINQ)
			return err == nil && n >= 30000 // 1000 records of 38 bytes
		})
	}, "the records did not arrive")
	require.NoError(t, c.ResumeRead())
	freed := make(chan struct{})
	eventually(t, func() bool {
		return onLoopValue(t, l, func() bool {
			in := c.tls.in
			if len(in) == 0 {
				return false
			}
			runtime.AddCleanup(unsafe.SliceData(in), func(ch chan struct{}) { close(ch) }, freed)
			return true
		})
	}, "no ciphertext kept while paused")
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	onLoop(t, l, func() {})
	collected(t, freed, "the closed connection keeps the ciphertext it had not read")
	state, ok := c.TLS()
	require.True(t, ok)
	require.Equal(t, uint16(tls.VersionTLS13), state.Version, "Conn.TLS after the close")
	runtime.KeepAlive(c)
	_ = tc.Close()
}

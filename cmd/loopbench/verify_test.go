package main

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// corruptEcho answers every read with as many bytes, all 0xAA: the right
// length, the wrong content.
func corruptEcho(c net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return
		}
		for i := range buf[:n] {
			buf[i] = 0xAA
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return
		}
	}
}

// netRally (tcp-echo/gostd, tcp-pingpong/gostd and the tcp-proxy peer's
// clients) must notice an echo that is not what it sent.
func TestNetRallyChecksEchoedBytes(t *testing.T) {
	addr, _, stop, err := netServer(corruptEcho, true)
	require.NoError(t, err)
	defer stop()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	echoes, _, err := netRally([]net.Conn{c}, pingMsg, time.Now(), 20*time.Millisecond)
	t.Logf("echoes counted from a server that sent back 0xAA bytes: %d", echoes)
	require.ErrorIs(t, err, errBadEcho, "netRally counted %d corrupted echoes as good", echoes)
}

// proxySection (both tcp-proxy rows) must fail against a "proxy" that never
// reaches the upstream and answers garbage of the right length.
func TestProxySectionChecksEchoedBytes(t *testing.T) {
	o := tiny()
	bogus := func(string) ([]string, func() error, error) {
		addr, _, stop, err := netServer(corruptEcho, true)
		return []string{addr}, func() error { stop(); return nil }, err
	}
	r, err := proxySection(o, "tcp-proxy", "gostd", bogus)
	t.Logf("bogus proxy row: ops=%d ops/s=%.0f err=%v", r.Ops, r.OpsPerSec, err)
	require.ErrorContains(t, err, errBadEcho.Error(), "a proxy that never reached the upstream measured %d echoes", r.Ops)
}

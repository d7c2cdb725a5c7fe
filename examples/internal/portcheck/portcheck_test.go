package portcheck

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A port an aio listener holds with SO_REUSEPORT is not free: a plain
// listen there fails, where a second SO_REUSEPORT listener would share it.
func TestFree(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "portcheck"})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	ln, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{ReusePort: true}, func(c *aio.Conn) { c.Close() })
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.ErrorContains(t, Free(addr), "address already in use")
	require.NoError(t, Free("127.0.0.1:0"), "port 0: nothing to check")
	require.NoError(t, Free("nowhere"), "malformed: the server's listen says so")
	_, err = ln.Close().Wait(t.Context())
	require.NoError(t, err)
	require.NoError(t, Free(addr), "free again once closed")
}

// Free checks what aio.Listen binds: 0.0.0.0 for an empty host, not the
// dual-stack socket package net would make, so a port an IPv6 listener
// alone holds is free for it; and no lookup for a host name aio refuses.
func TestFreeChecksWhatAioBinds(t *testing.T) {
	v6, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err) // the IPv4 cases still run below
	}
	defer v6.Close()
	port := strconv.Itoa(v6.Addr().(*net.TCPAddr).Port)
	require.NoError(t, Free(":"+port), "only [::1] holds it")
	require.NoError(t, Free("0.0.0.0:"+port), "only [::1] holds it")
	require.ErrorContains(t, Free("[::1]:"+port), "address already in use")
	require.NoError(t, Free("nowhere.invalid:"+port), "aio.Listen refuses the name: no lookup here")
	require.NoError(t, Free("127.0.0.1:http"), "aio.Listen refuses the service name")
}

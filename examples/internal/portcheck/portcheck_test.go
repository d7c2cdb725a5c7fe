package portcheck

import (
	"context"
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

package main

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const timeout = 20 * time.Second

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, timeout)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(timeout)))
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	_, err := c.Write([]byte(msg))
	require.NoError(t, err)
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

// The graceful stop: no new connections, the open ones keep working during
// the grace period, one that finishes leaves, one that does not is closed at
// the deadline, then the runtime shuts down with nothing left.
func TestEchoGracefulShutdown(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	t.Cleanup(func() { _ = shutdownRuntime(rt) }) // also after a failure
	srv, err := start(rt, "127.0.0.1:0", 2)
	require.NoError(t, err)
	require.Len(t, srv.shards, 2)

	var clients []net.Conn
	for i := 0; i < 8; i++ {
		c := dial(t, srv.addr)
		roundTrip(t, c, "hello")
		clients = append(clients, c)
	}
	polite, stubborn := clients[:7], clients[7]

	const grace = 300 * time.Millisecond
	closed := make(chan int, 1)
	start := time.Now()
	go func() { closed <- srv.shutdown(grace) }()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", srv.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, timeout, time.Millisecond, "the listeners still accept")

	for _, c := range polite {
		roundTrip(t, c, "still here") // open connections keep working
		require.NoError(t, c.Close())
	}
	roundTrip(t, stubborn, "not leaving")
	select {
	case n := <-closed:
		require.Equal(t, 1, n, "only the stubborn connection was closed")
	case <-time.After(timeout):
		t.Fatal("shutdown did not return")
	}
	require.GreaterOrEqual(t, time.Since(start), grace)
	_, err = stubborn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
	require.Zero(t, rt.Running())
	var accepted uint64
	for _, s := range srv.shards {
		accepted += s.l.Stats().TCPAccepted
		require.Zero(t, s.l.Stats().TCPOpen)
	}
	require.GreaterOrEqual(t, accepted, uint64(8)) // and the probes that got in before the listeners closed
	require.Contains(t, srv.summary(), "echo-0")
}

// With every client gone, shutdown returns at once instead of waiting for
// the grace period.
func TestEchoShutdownWhenIdle(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	t.Cleanup(func() { _ = shutdownRuntime(rt) }) // also after a failure
	srv, err := start(rt, "127.0.0.1:0", 1)
	require.NoError(t, err)
	c := dial(t, srv.addr)
	roundTrip(t, c, "x")
	require.NoError(t, c.Close())
	begin := time.Now()
	require.Zero(t, srv.shutdown(time.Minute))
	require.Less(t, time.Since(begin), 30*time.Second)
	require.NoError(t, shutdownRuntime(rt))
}

func TestEchoBadAddress(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	_, err := start(rt, "nope", 1)
	require.Error(t, err)
	require.Zero(t, rt.Running())
	_, err = start(rt, "127.0.0.1:0", 0)
	require.Error(t, err)
}

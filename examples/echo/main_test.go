package main

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"github.com/valkyria/aio/examples/internal/blackbox"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const timeout = 20 * time.Second

// startServer starts the server on rt with n loops on a free port, and
// makes sure that its loops have stopped when the test ends.
func startServer(t *testing.T, rt *aio.Runtime, n int) *server {
	t.Helper()
	srv, err := start(rt, "127.0.0.1:0", n)
	require.NoError(t, err)
	require.Len(t, srv.loops, n)
	t.Cleanup(func() { stopped(t, rt, srv) }) // also after a failure
	return srv
}

// stopped stops srv's loops, if they are not stopped yet, and waits until
// they have.
func stopped(t *testing.T, rt *aio.Runtime, srv *server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, l := range srv.loops {
		_, err := l.Stop().Wait(ctx)
		require.NoError(t, err)
	}
	require.Zero(t, rt.Running())
}

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

// The graceful stop: no new connections; the open ones, whose echo is
// flushed, end with a FIN at once; one whose client does not read what it
// is sent cannot flush and is closed at the deadline; then the runtime has
// shut down with nothing left.
func TestEchoGracefulShutdown(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	srv := startServer(t, rt, 2)
	var polite []net.Conn
	for i := 0; i < 7; i++ {
		c := dial(t, srv.addr)
		roundTrip(t, c, "hello")
		polite = append(polite, c)
	}
	stubborn := dial(t, srv.addr)
	roundTrip(t, stubborn, "hello")
	written := make(chan error, 1)
	go func() { // sends and never reads: its echo piles up in the server
		chunk := make([]byte, 64<<10)
		for {
			if _, err := stubborn.Write(chunk); err != nil {
				written <- err
				return
			}
		}
	}()
	require.Eventually(t, func() bool {
		queued := 0
		for _, l := range srv.loops {
			queued += l.Stats().TCPWriteQueued
		}
		return queued > 0
	}, timeout, time.Millisecond, "the stubborn client's echo never queued")

	const grace = 300 * time.Millisecond
	type result struct {
		expired bool
		err     error
	}
	done := make(chan result, 1)
	begin := time.Now()
	go func() {
		expired, err := shutdown(rt, grace)
		done <- result{expired, err}
	}()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", srv.addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}, timeout, time.Millisecond, "the listeners still accept")

	for _, c := range polite {
		rest, err := io.ReadAll(c)
		require.NoError(t, err, "a FIN, not a reset")
		require.Empty(t, rest)
	}
	select {
	case r := <-done:
		require.NoError(t, r.err)
		require.True(t, r.expired, "the stubborn connection held the shutdown to the deadline")
	case <-time.After(timeout):
		t.Fatal("shutdown did not return")
	}
	require.GreaterOrEqual(t, time.Since(begin), grace)
	select {
	case err := <-written:
		require.Error(t, err, "the stubborn connection was closed")
	case <-time.After(timeout):
		t.Fatal("the stubborn connection is still open")
	}

	stopped(t, rt, srv)
	var accepted uint64
	for _, l := range srv.loops {
		accepted += l.Stats().TCPAccepted
		require.Zero(t, l.Stats().TCPOpen)
	}
	require.GreaterOrEqual(t, accepted, uint64(8)) // and the probes that got in before the listeners closed
	require.Contains(t, srv.summary(), "echo-0")
}

// Connections that are open but idle do not hold the shutdown: each gets a
// FIN at once, and shutdown returns without waiting for the grace period.
func TestEchoShutdownWhenIdle(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	srv := startServer(t, rt, 1)
	c := dial(t, srv.addr)
	roundTrip(t, c, "x")
	gone := dial(t, srv.addr)
	roundTrip(t, gone, "y")
	require.NoError(t, gone.Close())

	done := make(chan error, 1)
	go func() {
		expired, err := shutdown(rt, time.Hour)
		if err == nil && expired {
			err = errors.New("the grace period ran out")
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(timeout):
		t.Fatal("shutdown waits for idle connections")
	}
	rest, err := io.ReadAll(c)
	require.NoError(t, err)
	require.Empty(t, rest)
	require.Zero(t, rt.Running())
}

func TestEchoBadAddress(t *testing.T) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	_, err := start(rt, "nope", 1)
	require.Error(t, err)
	require.Zero(t, rt.Running())
	_, err = start(rt, "127.0.0.1:0", 0)
	require.Error(t, err)
}

// Bad flags, and a port another server has (SO_REUSEPORT would share it
// in silence), are a clear error and a nonzero status before anything
// listens.
func TestRefusesToStart(t *testing.T) {
	bin := blackbox.Build(t)
	for _, args := range [][]string{
		{"-addr", "127.0.0.1:0", "-loops", "0"},
		{"-addr", "127.0.0.1:0", "-loops", "4097"},
		{"-addr", "127.0.0.1:0", "-grace", "-1s"},
		{"-addr", "127.0.0.1:0", "stray"},
	} {
		code, stderr := blackbox.Refused(t, bin, 0, args...)
		require.NotZero(t, code, "%v", args)
		require.NotEmpty(t, stderr, "%v", args)
	}
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	srv := startServer(t, rt, 1)
	code, stderr := blackbox.Refused(t, bin, 0, "-addr", srv.addr, "-loops", "2")
	require.NotZero(t, code)
	require.Contains(t, stderr, "address already in use")
}

// The program says where it listens on standard output, echoes, and
// exits 0 on SIGTERM.
func TestEchoProgram(t *testing.T) {
	bin := blackbox.Build(t)
	p := blackbox.Start(t, bin, "-addr", "127.0.0.1:0", "-loops", "2")
	roundTrip(t, dial(t, p.Addr), "hello")
	code, _ := p.Signal(t, syscall.SIGTERM)
	require.Zero(t, code, "stderr: %s", p.Stderr())
}

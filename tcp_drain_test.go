package aio

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// replyLater is a request/response server whose replies are computed
// later: each read starts a reply that the test releases through the
// channel's promises, adopted into the connection's scope as a server
// should (the handle that writes the reply).
func replyLater(t *testing.T, l *Loop, cfg ListenConfig) (*Listener, <-chan *Promise[string]) {
	t.Helper()
	pending := make(chan *Promise[string], 8)
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			p := NewPromise[string](l)
			Adopt(c.Scope(), Then(p.Handle(), func(s string) (struct{}, error) {
				_, err := c.WriteString(s)
				return struct{}{}, err
			}))
			pending <- p
		})
	})
	require.NoError(t, err)
	return ln, pending
}

// A peer's FIN while its reply is still being computed is a half-close:
// the connection waits for the work in its scope, writes the reply, then
// closes. (It used to close at once and cancel the reply.)
func TestTCPEOFWaitsForScope(t *testing.T) {
	l := startLoop(t)
	ln, pending := replyLater(t, l, ListenConfig{})
	nc := netDial(t, ln)
	_, err := nc.Write([]byte("question"))
	require.NoError(t, err)
	p := recv(t, pending)
	require.NoError(t, nc.CloseWrite())
	eventually(t, func() bool { return l.Stats().TCPBytesIn == uint64(len("question")) }, "request read")
	// The server has the FIN by now or soon; the reply is still to come.
	p.Resolve("answer")
	reply, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "answer", string(reply), "the reply came, then EOF")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Scope.Hold keeps a connection busy for a drain as an adopted handle
// does, for work the program tracks itself: the drain waits until the
// hold is released (twice: the second does nothing), and a connection
// that closes releases it by itself.
func TestScopeHoldKeepsConnectionBusy(t *testing.T) {
	l := startLoop(t)
	releases := make(chan func(), 2)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {}) // reading: a reset is seen
		releases <- c.Scope().Hold()
	})
	require.NoError(t, err)
	held := netDial(t, ln)
	release := recv(t, releases)
	gone := netDial(t, ln)
	recv(t, releases) // never called: its connection's close releases it
	require.NoError(t, gone.SetLinger(0))
	require.NoError(t, gone.Close())
	eventually(t, func() bool { return l.Stats().TCPOpen == 1 }, "the reset connection closed")

	drained := ln.Drain(time.Hour)
	_, err = wait(t, ln.Closed())
	require.NoError(t, err)
	require.NoError(t, held.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
	_, err = held.Read(make([]byte, 1))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "held: no FIN yet")
	require.Equal(t, Running, drained.Status(), "the hold holds the drain")
	release()
	release()
	require.NoError(t, held.SetReadDeadline(time.Time{}))
	n, err := io.ReadAll(held)
	require.NoError(t, err)
	require.Empty(t, n, "released: the connection ends with a FIN")
	require.NoError(t, held.Close())
	_, err = wait(t, drained)
	require.NoError(t, err)
	closedLoopTCP(t, l)
	(*Scope)(nil).Hold()() // nothing to hold, nothing to release
}

// Drain closes the listener at once; an idle connection ends at once; a
// busy one ends once its reply is written; the handle completes when both
// have closed.
func TestListenerDrainWaitsForBusyConnections(t *testing.T) {
	l := startLoop(t)
	ln, pending := replyLater(t, l, ListenConfig{})
	idle := netDial(t, ln)
	busy := netDial(t, ln)
	_, err := busy.Write([]byte("q"))
	require.NoError(t, err)
	p := recv(t, pending)
	eventually(t, func() bool { return l.Stats().TCPOpen == 2 }, "both accepted")

	drained := ln.Drain(time.Hour)
	_, err = wait(t, ln.Closed())
	require.NoError(t, err, "the listener closes at once")
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "no new connections")
	n, err := io.ReadAll(idle)
	require.NoError(t, err)
	require.Empty(t, n, "the idle connection ends with a FIN")
	require.NoError(t, idle.Close()) // its EOF ends the server's lingering close

	require.Equal(t, Running, drained.Status(), "the busy connection holds the drain")
	p.Resolve("late reply")
	reply, err := io.ReadAll(busy)
	require.NoError(t, err)
	require.Equal(t, "late reply", string(reply))
	require.NoError(t, busy.Close())
	_, err = wait(t, drained)
	require.NoError(t, err)
	closedLoopTCP(t, l)
	_, err = wait(t, ln.Drain(time.Hour))
	require.NoError(t, err, "a second Drain completes with the first")
}

// A connection still busy when the grace period ends is closed, its work
// cancelled.
func TestListenerDrainDeadline(t *testing.T) {
	l := startLoop(t)
	ln, pending := replyLater(t, l, ListenConfig{})
	nc := netDial(t, ln)
	_, err := nc.Write([]byte("q"))
	require.NoError(t, err)
	p := recv(t, pending)
	_, err = wait(t, ln.Drain(50*time.Millisecond))
	require.ErrorIs(t, err, ErrGraceExpired, "the grace closed a connection: not a clean drain")
	_, err = wait(t, ln.Drain(time.Hour))
	require.ErrorIs(t, err, ErrGraceExpired, "a second call ends as the first did")
	_, err = wait(t, p.Handle())
	require.ErrorIs(t, err, ErrCancelled, "the work was cancelled with the connection")
	_, err = io.ReadAll(nc)
	require.NoError(t, err)
	closedLoopTCP(t, l)
}

// A connection closed by a drain's deadline says so: OnClose, and Read on
// a NetConn view (which holds its connection busy through the drain), get
// an error that names the deadline and matches ErrCancelled, ErrConnClosed
// and net.ErrClosed.
func TestListenerDrainDeadlineSaysSo(t *testing.T) {
	l := startLoop(t)
	accepted := make(chan *Conn, 2)
	closedWith := make(chan error, 2)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		Adopt(c.Scope(), NewPromise[struct{}](l).Handle()) // busy until the deadline
		_ = c.OnClose(func(_ *Conn, err error) { closedWith <- err })
		accepted <- c
	})
	require.NoError(t, err)
	plain := netDial(t, ln)
	recv(t, accepted)
	viewed := netDial(t, ln)
	view := recv(t, accepted).NetConn() // takes OnClose over: the view reports
	_, err = wait(t, ln.Drain(50*time.Millisecond))
	require.ErrorIs(t, err, ErrGraceExpired)
	require.NoError(t, view.SetReadDeadline(time.Now().Add(waitTimeout)))
	_, viewErr := view.Read(make([]byte, 1))
	for _, err := range []error{recv(t, closedWith), viewErr} {
		require.ErrorIs(t, err, errDrainDeadline)
		require.ErrorIs(t, err, ErrCancelled)
		require.ErrorIs(t, err, ErrConnClosed)
		require.ErrorIs(t, err, net.ErrClosed)
	}
	require.Empty(t, closedWith, "the view's OnClose replaced the accept callback's")
	for _, nc := range []net.Conn{plain, viewed} {
		_, err = io.ReadAll(nc)
		require.NoError(t, err)
	}
}

// Runtime.Shutdown drains every loop before it stops them: a reply still
// being computed is written, then the loops stop and nil is returned.
func TestRuntimeShutdownDrains(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l1, l2 := startLoopOn(t, rt), startLoopOn(t, rt)
	ln1, pending1 := replyLater(t, l1, ListenConfig{})
	ln2, _ := replyLater(t, l2, ListenConfig{})
	busy := netDial(t, ln1)
	idle := netDial(t, ln2)
	_, err := busy.Write([]byte("q"))
	require.NoError(t, err)
	p := recv(t, pending1)
	eventually(t, func() bool { return l2.Stats().TCPOpen == 1 }, "accepted")

	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(context.Background()) }()
	n, err := io.ReadAll(idle)
	require.NoError(t, err)
	require.Empty(t, n, "the idle connection ends first")
	require.NoError(t, idle.Close())
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned before the busy connection ended: %v", err)
	default:
	}
	p.Resolve("reply")
	reply, err := io.ReadAll(busy)
	require.NoError(t, err)
	require.Equal(t, "reply", string(reply))
	require.NoError(t, busy.Close())
	require.NoError(t, recv(t, done))
	require.Zero(t, rt.Running())
}

// Runtime.Shutdown's deadline ends the drain: the loops stop, cancelling
// what was left, and the context's error is returned.
func TestRuntimeShutdownDeadline(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	ln, pending := replyLater(t, l, ListenConfig{})
	nc := netDial(t, ln)
	_, err := nc.Write([]byte("q"))
	require.NoError(t, err)
	p := recv(t, pending)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, rt.Shutdown(ctx), context.DeadlineExceeded)
	// A second Shutdown waits for the stopping loops' end.
	ctx2, cancel2 := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel2()
	require.NoError(t, rt.Shutdown(ctx2))
	require.Zero(t, rt.Running())
	require.Equal(t, Cancelled, p.Handle().Status(), "the work was cancelled by the stop")
	_, err = wait(t, l.Stop())
	require.NoError(t, err)
}

// A loop that starts stopping between Shutdown's request to drain it and
// the drain's start is no error: the loop stops, as Shutdown wanted, and
// Shutdown returns nil. (Its drain was refused with ErrStopped, which
// Shutdown returned.)
func TestRuntimeShutdownLoopStoppingMeanwhile(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	held, gate := make(chan struct{}), make(chan struct{})
	require.NoError(t, l.Post(func() {
		close(held)
		select { // hold the loop while Shutdown asks it to drain
		case <-gate:
		case <-time.After(waitTimeout):
		}
		l.Stop()
	}))
	recv(t, held)
	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(testCtx(t)) }()
	eventually(t, func() bool { return l.qlen.Load() > 0 }, "Shutdown asked the loop to drain")
	close(gate)
	require.NoError(t, recv(t, done))
	require.Zero(t, rt.Running())
}

// A server whose work for one request ends when the next one comes (a
// reply batched with the next, say) is never idle while its peer keeps
// sending, unless it starts no new work once the connection is Draining:
// then the work in progress ends, its reply is written, the connection
// goes idle and ends in order, long before the drain's grace.
func TestDrainingStartsNoNewWork(t *testing.T) {
	l := startLoop(t)
	closed := make(chan error, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		var pending *Promise[string] // the work in progress; owned by the loop
		_ = c.OnClose(func(_ *Conn, err error) { closed <- err })
		_ = c.OnRead(func(c *Conn, b []byte) {
			for range b { // a request a byte
				if pending != nil {
					pending.Resolve("ok\n")
					pending = nil
				}
				if c.Draining() {
					continue // going away: no new work
				}
				pending = NewPromise[string](l)
				Adopt(c.Scope(), Then(pending.Handle(), func(s string) (struct{}, error) {
					_, err := c.WriteString(s)
					return struct{}{}, err
				}))
			}
		})
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	replies := make(chan int, 2)
	go func() { // the client: one request ahead of the replies
		n := 0
		_, err := nc.Write([]byte("q"))
		for err == nil {
			if _, err = nc.Write([]byte("q")); err == nil {
				if _, err = io.ReadFull(nc, make([]byte, 3)); err == nil {
					if n++; n == 3 {
						replies <- n
					}
				}
			}
		}
		nc.Close() // after the server's FIN
		replies <- n
	}()
	recv(t, replies) // the conversation is under way
	_, err = wait(t, ln.Drain(time.Hour))
	require.NoError(t, err)
	require.NoError(t, recv(t, closed), "closed in order, not by the drain's deadline")
	require.Greater(t, recv(t, replies), 3)
	closedLoopTCP(t, l)
}

// A connection dialed by work that finishes a request during
// Runtime.Shutdown's drain is not drained or waited for: the request's own
// connection holds the drain while the work runs, and Stop closes the
// dialed one after. Shutdown waited for it until its deadline.
func TestShutdownDoesNotWaitForAConnDialedDuringIt(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt)
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// Its connections are closed before the test ends: a socket closed
	// late by a goroutine of this test frees an fd under the next one
	// (TestTCPAcceptEMFILE counts on a full fd table).
	var served sync.WaitGroup
	defer served.Wait()
	defer backend.Close()
	served.Go(func() { // keeps its connections open until their client closes
		for {
			c, err := backend.Accept()
			if err != nil {
				return
			}
			served.Go(func() { _, _ = io.Copy(io.Discard, c); c.Close() })
		}
	})
	ln, pending := replyLater(t, l, ListenConfig{})
	nc := netDial(t, ln)
	netWrite(t, nc, []byte("q"))
	p := recv(t, pending)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		done <- rt.Shutdown(ctx)
	}()
	eventually(t, func() bool { return onLoopValue(t, l, func() bool { return l.tcp.drain != nil }) }, "drain began")
	dialed := make(chan *Conn, 1)
	onLoop(t, l, func() {
		Then(Dial(l, backend.Addr().String(), ConnConfig{}), func(c *Conn) (struct{}, error) {
			require.False(t, c.Draining(), "not among the connections drained")
			dialed <- c
			return struct{}{}, nil
		})
	})
	late := recv(t, dialed)
	p.Resolve("reply")
	_, err = io.ReadAll(nc)
	require.NoError(t, err)
	require.NoError(t, nc.Close())
	require.NoError(t, recv(t, done), "Shutdown waited for the late connection")
	_, err = wait(t, late.Closed())
	require.ErrorIs(t, err, ErrCancelled, "Stop closed it (Closed is cancelled by Stop)")
}

package aio

import (
	"bytes"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The client half-closes; the server sees EOF, still writes its answer,
// half-closes in turn, and the connection closes by itself once both
// directions are finished.
func TestTCPHalfClose(t *testing.T) {
	l := startLoop(t)
	closed := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		var question []byte // on the loop
		_ = c.OnRead(func(c *Conn, b []byte) { question = append(question, b...) })
		_ = c.OnEOF(func(c *Conn) {
			assert.NoError(t, send(c, append([]byte("answer to "), question...)))
			assert.Equal(t, Running, c.Closed().Status())
			c.CloseWrite() // both directions are finished: the connection closes
			assert.Equal(t, Completed, c.Closed().Status())
			assert.ErrorIs(t, send(c, []byte("late")), ErrConnClosed)
		})
		closed <- c
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	_, err = nc.Write([]byte("everything"))
	require.NoError(t, err)
	require.NoError(t, nc.CloseWrite())
	got, err := io.ReadAll(nc)
	require.NoError(t, err)
	require.Equal(t, "answer to everything", string(got))
	c := recv(t, closed)
	_, err = wait(t, c.Closed())
	require.NoError(t, err, "an orderly end completes Closed")
	closedLoopTCP(t, l.closeListener(t, ln))
}

// CloseWrite with writes still queued sends FIN only after them, and its
// handle completes then.
func TestTCPCloseWriteAfterFlush(t *testing.T) {
	l := startLoop(t)
	const size = 8 << 20
	shut := make(chan *Handle[struct{}], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {}) // to see the client's EOF
		big := make([]byte, size)
		pattern(big, 0)
		w := writeFlush(c, big)
		h := c.CloseWrite()
		assert.Equal(t, Running, w.Status(), "8 MiB do not fit in the kernel at once")
		assert.Equal(t, Running, h.Status())
		assert.ErrorIs(t, send(c, []byte("late")), ErrWriteClosed)
		_, err := writeFlush(c, []byte("late")).Result()
		assert.ErrorIs(t, err, ErrWriteClosed)
		shut <- h
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	got, err := io.ReadAll(nc)
	require.NoError(t, err)
	want := make([]byte, size)
	pattern(want, 0)
	require.True(t, bytes.Equal(want, got))
	_, err = wait(t, recv(t, shut))
	require.NoError(t, err)
	nc.Close()
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Close on the loop returns a handle already completed: Closed's own when
// this call closed the connection, a fresh one when an error had closed it
// before (Close still succeeds: it is idempotent).
func TestTCPCloseOnLoopReturnsCompletedHandle(t *testing.T) {
	l := startLoop(t)
	accepted := make(chan *Conn, 2)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(*Conn, []byte) {})
		accepted <- c
	})
	require.NoError(t, err)

	nc, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	defer nc.Close()
	c := recv(t, accepted)
	type closes struct {
		st     [3]Status
		closed bool // the first Close returned Closed's handle
	}
	got := onLoopValue(t, l, func() closes {
		h1, h2 := c.Close(), c.Close()
		return closes{[3]Status{h1.Status(), h2.Status(), c.Closed().Status()}, h1 == c.Closed()}
	})
	require.Equal(t, closes{[3]Status{Completed, Completed, Completed}, true}, got)

	// A reset closes the second connection with an error first.
	nc2, err := net.DialTimeout("tcp", ln.Addr().String(), waitTimeout)
	require.NoError(t, err)
	c2 := recv(t, accepted)
	require.NoError(t, nc2.(*net.TCPConn).SetLinger(0))
	require.NoError(t, nc2.Close())
	_, err = wait(t, c2.Closed())
	require.ErrorIs(t, err, unix.ECONNRESET)
	st2 := onLoopValue(t, l, func() [2]Status { return [2]Status{c2.Close().Status(), c2.Closed().Status()} })
	require.Equal(t, [2]Status{Completed, Failed}, st2)
}

// 10,000 connect/close cycles (aio Dial against an aio listener, 50 at a
// time) leave the process with exactly the fds it had.
func TestTCPConnectCloseNoFDLeak(t *testing.T) {
	const cycles, parallel = 10_000, 50
	l := startLoop(t)
	fds := fdCount(t)
	ln := echoListen(t, l, ListenConfig{})
	addr := ln.Addr().String()
	var done, failed atomic.Int64
	finished := make(chan struct{})
	// A slot: dial, send, wait for the echo, close, again.
	var slot func()
	started := 0 // on the loop
	slot = func() {
		if started == cycles {
			return
		}
		started++
		h := Dial(l, addr, ConnConfig{Nagle: true})
		Then(h, func(c *Conn) (struct{}, error) {
			_ = c.OnRead(func(c *Conn, b []byte) { c.Close() })
			Finally(c.Closed(), func() {
				if done.Add(1)+failed.Load() == cycles {
					close(finished)
				}
				slot()
			})
			return struct{}{}, send(c, []byte("hi"))
		})
		Catch(h, func(err error) (*Conn, error) {
			failed.Add(1)
			if done.Load()+failed.Add(0) == cycles {
				close(finished)
			}
			slot()
			return nil, err
		})
	}
	onLoop(t, l, func() {
		for i := 0; i < parallel; i++ {
			slot()
		}
	})
	select {
	case <-finished:
	case <-time.After(2 * waitTimeout):
		t.Fatalf("cycles not finished: done %d failed %d stats %+v", done.Load(), failed.Load(), l.Stats())
	}
	require.Zero(t, failed.Load())
	eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "server side still open")
	_, err := wait(t, ln.Close())
	require.NoError(t, err)
	require.Equal(t, fds, fdCount(t))
	onLoop(t, l, func() {}) // after the last terminal transitions ran
	s := l.Stats()
	require.EqualValues(t, cycles, s.TCPDialed)
	require.EqualValues(t, cycles, s.TCPAccepted)
	require.EqualValues(t, 2*cycles, s.TCPClosed)
	require.Zero(t, s.Handles)
}

// closeReport is what an OnClose callback saw.
type closeReport struct {
	err    error
	onLoop bool
	order  []string // what had run on the loop when it ran
}

// onCloseReports sets an OnClose on c that reports on the returned channel,
// after which calls are counted (a second report fails the test).
func onCloseReports(t *testing.T, c *Conn, order *[]string) <-chan closeReport {
	t.Helper()
	reports := make(chan closeReport, 2)
	require.NoError(t, c.OnClose(func(cc *Conn, err error) {
		assert.Same(t, c, cc) // on the loop: no FailNow
		var seen []string
		if order != nil {
			seen = append(seen, *order...)
		}
		reports <- closeReport{err: err, onLoop: c.l.OnLoop(), order: seen}
	}))
	return reports
}

// OnClose runs once, on the loop, after Closed's continuations, with
// Closed's outcome: nil after Close.
func TestTCPOnCloseAfterClose(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	var order []string // on the loop
	Finally(c.Closed(), func() { order = append(order, "Closed's Finally") })
	reports := onCloseReports(t, c, &order)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	r := recv(t, reports)
	require.NoError(t, r.err)
	require.True(t, r.onLoop)
	require.Equal(t, []string{"Closed's Finally"}, r.order)
	onLoop(t, l, func() {}) // a later iteration: a second call would have run
	require.Empty(t, reports, "OnClose ran twice")
}

// A connection that a reset closed hands OnClose the same error as Closed.
func TestTCPOnCloseAfterReset(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		conns <- c
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	c := recv(t, conns)
	reports := onCloseReports(t, c, nil)
	require.NoError(t, nc.SetLinger(0))
	require.NoError(t, nc.Close()) // RST
	r := recv(t, reports)
	_, cerr := wait(t, c.Closed())
	require.Error(t, cerr)
	require.Equal(t, cerr, r.err)
	require.ErrorIs(t, r.err, unix.ECONNRESET)
}

// On a connection already closed, OnClose still runs, but not inside the
// call that sets it; set twice before the close, only the second runs.
func TestTCPOnCloseLateAndReplaced(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	first := onCloseReports(t, c, nil)
	second := onCloseReports(t, c, nil)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.NoError(t, recv(t, second).err)
	onLoop(t, l, func() {})
	require.Empty(t, first, "the replaced callback ran")

	ran := false // on the loop
	during := onLoopValue(t, l, func() bool {
		assert.NoError(t, c.OnClose(func(*Conn, error) { ran = true }))
		return ran
	})
	require.False(t, during, "OnClose ran inside the call that set it")
	require.True(t, onLoopValue(t, l, func() bool { return ran }))
	require.ErrorIs(t, c.OnClose(nil), ErrNilFunc)
}

// Regression test: OnClose set again after the close ran both callbacks.
//
// Set again between the close and the queued call, OnClose still runs once,
// the last callback set; and setting it on the loop allocates nothing.
func TestTCPOnCloseReplacedAfterClose(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	var ran []string // on the loop
	first := func(*Conn, error) { ran = append(ran, "first") }
	allocs := onLoopValue(t, l, func() float64 {
		return testing.AllocsPerRun(10, func() { _ = c.OnClose(first) })
	})
	require.Zero(t, allocs, "OnClose on the loop allocated")
	onLoop(t, l, func() {
		c.Close()
		assert.NoError(t, c.OnClose(func(*Conn, error) { ran = append(ran, "second") }))
	})
	onLoop(t, l, func() {}) // a later callback: both calls, if queued, have run
	require.Equal(t, []string{"second"}, onLoopValue(t, l, func() []string { return ran }))
}

// Loop.Stop closes an open connection: OnClose gets an error that says so,
// is ErrStopped and, as everything Stop ends, ErrCancelled, and, as for a
// Close, ErrConnClosed and net.ErrClosed.
func TestTCPOnCloseAtStop(t *testing.T) {
	l := startLoop(t, Config{Name: "onclose-stop"})
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	reports := onCloseReports(t, c, nil)
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	err = recv(t, reports).err
	require.ErrorIs(t, err, ErrStopped)
	require.ErrorIs(t, err, ErrCancelled)
	require.ErrorIs(t, err, ErrConnClosed)
	require.ErrorIs(t, err, net.ErrClosed)
	require.Equal(t, "aio: tcp connection closed: loop stopped", err.Error())
}

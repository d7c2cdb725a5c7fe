//go:build soak

// The stress plan of the seeds (ST-02, ST-03, ST-04), run by make soak and
// not by make test: each test runs for its seed's duration (scaled by
// -soak.scale), under the race detector, and ends with the loops' handles,
// the process's fds and its goroutines back where they started.

package aio

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

var soakScale = flag.Float64("soak.scale", 1, "multiplies the duration of every soak test")

// soakFor scales a seed's duration.
func soakFor(d time.Duration) time.Duration {
	return time.Duration(float64(d) * *soakScale)
}

// soakBaseline is what a soak test must give back: fds and goroutines.
type soakBaseline struct {
	fds  int
	opts []goleak.Option
}

func takeBaseline(t testing.TB) soakBaseline {
	fdCount(t) // once for whatever the first directory read sets up
	return soakBaseline{fds: fdCount(t), opts: []goleak.Option{goleak.IgnoreCurrent()}}
}

// requireIdle checks that a loop still running has no handle left, no open
// connection and no listener.
func requireIdle(t testing.TB, l *Loop) {
	t.Helper()
	onLoop(t, l, func() {}) // let queued work settle
	s := l.Stats()
	require.Zero(t, s.Handles, "loop %s: handles left", s.Name)
	require.Zero(t, s.TCPOpen, "loop %s: connections left", s.Name)
	require.Zero(t, s.TCPListeners, "loop %s: listeners left", s.Name)
	require.Zero(t, s.TCPWriteQueued, "loop %s: queued bytes left", s.Name)
}

// stopAndCheck stops the loops and checks fds and goroutines against b.
func (b soakBaseline) stopAndCheck(t testing.TB, loops ...*Loop) {
	t.Helper()
	for _, l := range loops {
		_, err := l.Stop().Wait(testCtx(t))
		require.NoError(t, err)
	}
	require.Equal(t, b.fds, fdCount(t), "fds open after the loops stopped")
	goleak.VerifyNone(t, b.opts...)
}

// soakCounters are the outcomes a soak test tallies, on its loops.
type soakCounters struct {
	started, completed, failed, cancelled, cleanups atomic.Int64
}

func (c *soakCounters) String() string {
	return fmt.Sprintf("started %d: completed %d, failed %d, cancelled %d; cleanups %d",
		c.started.Load(), c.completed.Load(), c.failed.Load(), c.cancelled.Load(),
		c.cleanups.Load())
}

// tally counts how h ended once it has: exactly one outcome per handle.
func tally[T any](c *soakCounters, h *Handle[T]) {
	c.started.Add(1)
	h.OnCleanup(func() {
		c.cleanups.Add(1)
		switch _, err := h.Result(); {
		case err == nil:
			c.completed.Add(1)
		case errors.Is(err, ErrCancelled):
			c.cancelled.Add(1)
		default:
			c.failed.Add(1)
		}
	})
}

// requireTallied checks that every tallied handle ended exactly once.
func (c *soakCounters) requireTallied(t testing.TB) {
	t.Helper()
	t.Log(c)
	require.Equal(t, c.started.Load(), c.cleanups.Load(), "a cleanup ran other than exactly once")
}

// soakFailures records what a soak test's callbacks found wrong, from any
// loop, and keeps the first message for the report.
type soakFailures struct {
	n     atomic.Int64
	first atomic.Pointer[string]
}

func (f *soakFailures) add(format string, args ...any) {
	f.n.Add(1)
	msg := fmt.Sprintf(format, args...)
	f.first.CompareAndSwap(nil, &msg)
}

// requireNone fails the test if anything was recorded.
func (f *soakFailures) requireNone(t testing.TB) {
	t.Helper()
	if p := f.first.Load(); p != nil {
		require.Zero(t, f.n.Load(), "first: %s", *p)
	}
}

// drive runs step on l every tick until d has passed, then, once inFlight
// falls to zero, stops and returns; it fails the test if that takes more
// than waitTimeout beyond d.
func drive(t testing.TB, l *Loop, d, tick time.Duration, inFlight *atomic.Int64, step func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+waitTimeout)
	defer cancel()
	end := time.Now().Add(d)
	finished := NewPromise[struct{}](l)
	var ticker *Handle[struct{}]
	onLoop(t, l, func() {
		ticker = Every(l, tick, func() {
			if time.Now().Before(end) {
				step()
				return
			}
			if inFlight.Load() == 0 {
				ticker.Cancel()
				finished.Resolve(struct{}{})
			}
		})
	})
	_, err := finished.Handle().Wait(ctx)
	require.NoError(t, err, "the soak did not wind down in time")
}

// ST-02: rapid connection open and close. A client loop opens connections
// to a server loop at up to 1,000 a second, 64 at a time, in four ways taken
// in turn: an echo closed by the client, a close by the server after a
// request, a Dial cancelled at once, and a connection closed without a byte.
// Every exchange must end as its kind says.
func TestSoakRapidConnectClose(t *testing.T) {
	b := takeBaseline(t)
	srv, cli := startLoop(t), startLoop(t)
	var served atomic.Int64
	ln, err := Listen(srv, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		served.Add(1)
		_ = c.OnEOF(func(c *Conn) { c.Close() })
		_ = c.OnRead(func(c *Conn, p []byte) {
			if string(p) == "bye" {
				c.Close()
				return
			}
			_ = send(c, p)
		})
	})
	require.NoError(t, err)
	addr := ln.Addr().String()

	var inFlight atomic.Int64
	var kinds [4]atomic.Int64
	var failures soakFailures
	fail := failures.add
	var n int
	open := func() {
		if inFlight.Load() >= 64 {
			return
		}
		kind := n % 4
		n++
		inFlight.Add(1)
		dial := Dial(cli, addr, ConnConfig{})
		dial.OnCleanup(func() { // the Dial handle ends: the exchange may go on
			c, err := dial.Result()
			if err != nil {
				if kind != 2 {
					fail("kind %d: dial: %v", kind, err)
				}
				kinds[kind].Add(1)
				inFlight.Add(-1)
				return
			}
			_ = c.OnClose(func(*Conn, error) { kinds[kind].Add(1); inFlight.Add(-1) })
			switch kind {
			case 0:
				var got []byte
				_ = c.OnRead(func(c *Conn, p []byte) {
					if got = append(got, p...); len(got) == 4 {
						if string(got) != "ping" {
							fail("echo: got %q", got)
						}
						c.Close()
					}
				})
				_ = c.OnEOF(func(c *Conn) { fail("echo: EOF after %q", got); c.Close() })
				_ = send(c, []byte("ping"))
			case 1:
				_ = c.OnRead(func(c *Conn, p []byte) { fail("bye: got %q", p) })
				_ = c.OnEOF(func(c *Conn) { c.Close() })
				_ = send(c, []byte("bye"))
			default: // a Dial that won against its Cancel, or kind 3
				c.Close()
			}
		})
		if kind == 2 {
			dial.Cancel()
		}
	}
	drive(t, cli, soakFor(60*time.Second), time.Millisecond, &inFlight, open)
	failures.requireNone(t)
	t.Logf("connections: echo %d, server close %d, cancelled dial %d, empty %d; served %d",
		kinds[0].Load(), kinds[1].Load(), kinds[2].Load(), kinds[3].Load(), served.Load())
	require.Positive(t, kinds[0].Load())
	require.Positive(t, kinds[1].Load())

	_, err = ln.Close().Wait(testCtx(t))
	require.NoError(t, err)
	// The server closes its side at the client's EOF: wait for the last.
	require.Eventually(t, func() bool { return srv.Stats().TCPOpen == 0 }, waitTimeout, time.Millisecond)
	requireIdle(t, srv)
	requireIdle(t, cli)
	s := srv.Stats()
	require.Equal(t, s.TCPAccepted, s.TCPClosed, "every accepted connection closed")
	b.stopAndCheck(t, srv, cli)
}

// ST-03: deep chains with cancellation. Chains of 100 links (Then,
// ThenAsync, Catch, Finally, Within, each with a cleanup) over a promise, a
// timer or a Work job, some on the other loop, 100 at a time; each is left to
// complete, or cancelled at its far end, its middle or its producer, at once
// or later, from the loop or another goroutine. Every link's cleanup must run
// exactly once and a completed chain must carry its producer's value through.
func TestSoakDeepChainsCancelled(t *testing.T) {
	b := takeBaseline(t)
	a, other := startLoop(t), startLoop(t)
	var links, chains soakCounters
	var inFlight atomic.Int64
	var wrong atomic.Int64
	cancels := make(chan func() bool, 256)
	quit := make(chan struct{})
	canceller := make(chan struct{})
	go func() { // cancels from a goroutine of its own
		defer close(canceller)
		for {
			select {
			case c := <-cancels:
				c()
			case <-quit:
				return
			}
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	build := func() {
		if inFlight.Load() >= 100 {
			return
		}
		inFlight.Add(1)
		want := rng.IntN(1000)
		var p *Promise[int]
		var head *Handle[int]
		switch rng.IntN(3) {
		case 0:
			p = NewPromise[int](a)
			head = p.Handle()
		case 1:
			head = Delay(a, time.Duration(rng.IntN(500))*time.Microsecond, func() (int, error) { return want, nil })
		default:
			head = Work(other, func(context.Context) (int, error) { return want, nil })
		}
		h, mid := head, head
		for i := 0; i < 100; i++ {
			switch i % 5 {
			case 0:
				h = Then(h, func(v int) (int, error) { return v, nil })
			case 1:
				h = ThenAsync(h, func(v int) *Handle[int] { return Pure(a, v) })
			case 2:
				h = Catch(h, func(err error) (int, error) { return 0, err })
			case 3:
				h = Finally(h, func() {})
			default:
				h = Within(h, time.Minute)
			}
			tally(&links, h)
			if i == 50 {
				mid = h
			}
		}
		tail := h
		tally(&chains, tail)
		tail.OnCleanup(func() {
			if v, err := tail.Result(); err == nil && v != want {
				wrong.Add(1)
			}
			inFlight.Add(-1)
		})
		victim := []*Handle[int]{tail, mid, head}[rng.IntN(3)]
		switch rng.IntN(4) {
		case 0: // left to complete
		case 1:
			victim.Cancel()
		case 2:
			Sleep(a, time.Duration(rng.IntN(300))*time.Microsecond).OnCleanup(func() { victim.Cancel() })
		default:
			cancels <- victim.Cancel
		}
		if p != nil {
			Sleep(a, time.Duration(rng.IntN(300))*time.Microsecond).OnCleanup(func() { p.Resolve(want) })
		}
	}
	drive(t, a, soakFor(30*time.Second), 100*time.Microsecond, &inFlight, build)
	close(quit)
	recv(t, canceller)
	// A chain on the other loop may still be telling its links when its tail
	// ends: settle both loops before counting.
	requireIdle(t, a)
	requireIdle(t, other)
	links.requireTallied(t)
	chains.requireTallied(t)
	require.Zero(t, wrong.Load(), "completed chains with another value than their producer's")
	require.Positive(t, chains.completed.Load())
	require.Positive(t, chains.cancelled.Load())
	b.stopAndCheck(t, a, other)
}

// ST-04: mixed outcomes. Graphs of All, Race, Any, Retry, Bracket, WithScope
// and Do over inputs that complete, fail, panic or are cancelled, on two
// loops, with a cancel of the result from another goroutine now and then.
// Each sink must end as its inputs say (checked where the outcome is
// determined), every Bracket must release exactly what it acquired, and
// every cleanup must run exactly once.
func TestSoakMixedOutcomes(t *testing.T) {
	b := takeBaseline(t)
	a, other := startLoop(t), startLoop(t)
	var sinks soakCounters
	var inFlight, acquired, released atomic.Int64 // acquired: Brackets whose acquire completed
	var wrong soakFailures
	bad := wrong.add
	rng := rand.New(rand.NewPCG(3, 4))
	// input makes a handle that completes with v, fails, panics or is
	// cancelled, on a or other, now or a little later.
	input := func(v int, outcome int) *Handle[int] {
		l := a
		if rng.IntN(4) == 0 {
			l = other
		}
		d := time.Duration(rng.IntN(200)) * time.Microsecond
		switch outcome {
		case 0:
			return Delay(l, d, func() (int, error) { return v, nil })
		case 1:
			return Delay(l, d, func() (int, error) { return 0, errBoom })
		case 2:
			return Delay(l, d, func() (int, error) { panic("soak") })
		default:
			h := Delay(l, time.Hour, func() (int, error) { return v, nil })
			Sleep(l, d).OnCleanup(func() { h.Cancel() })
			return h
		}
	}
	step := func() {
		if inFlight.Load() >= 200 {
			return
		}
		n := 1 + rng.IntN(4)
		outcomes := make([]int, n)
		ins := make([]*Handle[int], n)
		allOK := true
		for i := range ins {
			outcomes[i] = rng.IntN(4)
			if rng.IntN(2) == 0 {
				outcomes[i] = 0 // success half of the time
			}
			allOK = allOK && outcomes[i] == 0
			ins[i] = input(i+1, outcomes[i])
		}
		var sink *Handle[int]
		var check func(v int, err error)
		switch rng.IntN(7) {
		case 0:
			all := All(ins...)
			sink = Then(all, func(vs []int) (int, error) {
				for i, v := range vs {
					if v != i+1 {
						bad("All: value %d at %d", v, i)
					}
				}
				return len(vs), nil
			})
			check = func(v int, err error) {
				if allOK != (err == nil) && !errors.Is(err, ErrCancelled) {
					bad("All of %v: %v", outcomes, err)
				}
			}
		case 1:
			sink = Race(ins...)
			check = func(v int, err error) {
				if err == nil && (v < 1 || v > n || outcomes[v-1] != 0) {
					bad("Race of %v: won by %d", outcomes, v)
				}
			}
		case 2:
			sink = Any(ins...)
			check = func(v int, err error) {
				if err == nil && (v < 1 || v > n || outcomes[v-1] != 0) {
					bad("Any of %v: %d", outcomes, v)
				}
				if err != nil && !errors.Is(err, ErrCancelled) && outcomes[0] == 0 && n == 1 {
					bad("Any of a success failed: %v", err)
				}
			}
		case 3:
			tries := 0
			sink = Retry(a, 3, 10*time.Microsecond, func() *Handle[int] {
				tries++
				if tries < 3 {
					return Fail[int](a, errBoom)
				}
				return Pure(a, 7)
			})
			check = func(v int, err error) {
				if err == nil && v != 7 {
					bad("Retry: %d", v)
				}
			}
		case 4:
			acquire, use := ins[0], time.Duration(rng.IntN(100))*time.Microsecond
			acquire.OnCleanup(func() {
				if _, err := acquire.Result(); err == nil {
					acquired.Add(1)
				}
			})
			sink = Bracket(acquire, func(int) { released.Add(1) }, func(r int) *Handle[int] {
				return Then(Sleep(a, use), func(struct{}) (int, error) { return r, nil })
			})
			check = func(v int, err error) {
				if err == nil && v != 1 {
					bad("Bracket: %d", v)
				}
			}
		case 5:
			sink = WithScope(a, func(s *Scope) *Handle[int] {
				for _, in := range ins[1:] {
					Adopt(s, in)
				}
				return ins[0]
			})
			check = func(v int, err error) {
				if err == nil && v != 1 {
					bad("WithScope: %d", v)
				}
			}
		default:
			sink = Do(a, func(co *Co) (int, error) {
				sum := 0
				for _, in := range ins {
					v, err := Await(co, in)
					if err != nil {
						return 0, err
					}
					sum += v
				}
				return sum, nil
			})
			check = func(v int, err error) {
				if err == nil && v != n*(n+1)/2 {
					bad("Do: sum %d of %d inputs", v, n)
				}
				if allOK != (err == nil) && !errors.Is(err, ErrCancelled) {
					bad("Do of %v: %v", outcomes, err)
				}
			}
		}
		inFlight.Add(1)
		tally(&sinks, sink)
		sink.OnCleanup(func() {
			check(sink.Result())
			inFlight.Add(-1)
		})
		if rng.IntN(8) == 0 {
			go sink.Cancel()
		}
	}
	drive(t, a, soakFor(60*time.Second), 100*time.Microsecond, &inFlight, step)
	wrong.requireNone(t)
	requireIdle(t, a)
	requireIdle(t, other)
	sinks.requireTallied(t)
	require.Equal(t, acquired.Load(), released.Load(), "every Bracket released what it acquired")
	require.Positive(t, sinks.completed.Load())
	require.Positive(t, sinks.failed.Load())
	require.Positive(t, sinks.cancelled.Load())
	b.stopAndCheck(t, a, other)
}

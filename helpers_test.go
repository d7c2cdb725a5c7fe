package aio

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"
)

// waitTimeout bounds every blocking wait in the tests: a hang fails the test
// instead of the whole run.
const waitTimeout = 60 * time.Second

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// leakChecked records the tests that already check for leaked goroutines at
// their end (see startLoop).
var leakChecked sync.Map

// startLoop starts a loop on its own runtime and stops it when the test ends.
// The first loop of a test also registers a goroutine-leak check that runs
// after every loop of the test has stopped (cleanups run last-in first-out).
func startLoop(t testing.TB, cfg ...Config) *Loop {
	t.Helper()
	if _, seen := leakChecked.LoadOrStore(t, true); !seen {
		t.Cleanup(func() {
			leakChecked.Delete(t)
			if !t.Failed() {
				goleak.VerifyNone(t)
			}
		})
	}
	rt := NewRuntime(RuntimeConfig{})
	var c Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	if c.Name == "" {
		c.Name = t.Name()
	}
	l, err := rt.Start(c)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := l.Stop().Wait(context.Background())
		require.NoError(t, err)
		require.Equal(t, 0, rt.Running())
	})
	return l
}

// stopAtEnd stops l when the test ends, bounded by waitTimeout, for tests
// that start and stop a loop themselves (Stop is idempotent).
func stopAtEnd(t testing.TB, l *Loop) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_, _ = l.Stop().Wait(ctx)
	})
}

// startOwnLoop starts a loop on a runtime of its own, for tests that stop it
// themselves and check the runtime; it is stopped at the test's end as well
// (bounded), should the test fail before its own Stop.
func startOwnLoop(t testing.TB, cfg Config) (*Loop, *Runtime) {
	t.Helper()
	rt := NewRuntime(RuntimeConfig{})
	l, err := rt.Start(cfg)
	require.NoError(t, err)
	stopAtEnd(t, l)
	return l, rt
}

// holdLoop blocks l in a posted callback until release is called (at the
// latest when the test ends), and returns once that callback runs: what
// happens meanwhile lands in l's next poll batch.
func holdLoop(t testing.TB, l *Loop) (release func()) {
	t.Helper()
	held, hold := make(chan struct{}), make(chan struct{})
	require.NoError(t, l.Post(func() { close(held); <-hold }))
	var once sync.Once
	release = func() { once.Do(func() { close(hold) }) }
	t.Cleanup(release)
	recv(t, held)
	return release
}

// onLoop runs fn on l and waits for it.
func onLoop(t testing.TB, l *Loop, fn func()) {
	t.Helper()
	done := make(chan struct{})
	require.NoError(t, l.Post(func() { defer close(done); fn() }))
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("posted callback did not run")
	}
}

// recv receives from ch, failing the test after waitTimeout.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatal("nothing received in time")
		panic("unreachable")
	}
}

// wait waits for h and returns its outcome.
func wait[T any](t testing.TB, h *Handle[T]) (T, error) {
	t.Helper()
	v, err := h.Wait(testCtx(t))
	require.NotErrorIs(t, err, context.DeadlineExceeded, "handle did not finish in time")
	return v, err
}

// buildChain builds, in one callback on l, a promise followed by depth links
// made by extend, and returns the promise and the far end of the chain.
func buildChain(t testing.TB, l *Loop, depth int, extend func(*Handle[int]) *Handle[int]) (*Promise[int], *Handle[int]) {
	t.Helper()
	var p *Promise[int]
	var last *Handle[int]
	onLoop(t, l, func() {
		p = NewPromise[int](l)
		last = p.Handle()
		for i := 0; i < depth; i++ {
			last = extend(last)
		}
	})
	return p, last
}

package aio

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// bodyG runs a Do body on l that returns the ID of the goroutine it ran on
// (IDs, unlike g structures, are never reused).
func bodyG(t *testing.T, l *Loop) int64 {
	t.Helper()
	id, err := wait(t, Do(l, func(*Co) (int64, error) {
		var id int64
		buf := make([]byte, 64)
		_, err := fmt.Sscanf(string(buf[:runtime.Stack(buf, false)]), "goroutine %d ", &id)
		return id, err
	}))
	require.NoError(t, err)
	return id
}

// A Do body runs on the coroutine the previous body returned from: no
// goroutine is created per Do once one is idle.
func TestDoReusesIdleWorker(t *testing.T) {
	l := startLoop(t)
	first := bodyG(t, l)
	require.Equal(t, first, bodyG(t, l), "the second body ran on the first one's worker")
	require.Equal(t, 1, onLoopValue(t, l, func() int { return len(l.idleWorkers) }))
}

// A body that calls runtime.Goexit ends its worker: it is not reused, and
// the next body runs on a new one.
func TestDoWorkerEndedByGoexit(t *testing.T) {
	l := startLoop(t)
	gone := bodyG(t, l)
	_, err := wait(t, Do(l, func(*Co) (int, error) {
		runtime.Goexit()
		return 0, nil
	}))
	require.ErrorIs(t, err, ErrGoexit)
	require.Zero(t, onLoopValue(t, l, func() int { return len(l.idleWorkers) }), "a Goexit's worker is not kept")
	next := bodyG(t, l)
	require.NotEqual(t, gone, next, "a new worker")
	require.Equal(t, next, bodyG(t, l), "workers are reused after it")
	require.Equal(t, 1, onLoopValue(t, l, func() int { return len(l.idleWorkers) }))
}

// A burst of suspended bodies leaves at most maxIdleWorkers idle, and
// stopping the loop ends them all.
func TestDoIdleWorkersBoundedAndStopped(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{}) // shut down here, and at the end if a check fails first
	l := startLoopOn(t, rt)
	const n = 3 * maxIdleWorkers
	ps := make([]*Promise[int], n)
	hs := make([]*Handle[int], n)
	onLoop(t, l, func() {
		for i := range ps {
			ps[i] = NewPromise[int](l)
			hs[i] = Do(l, func(co *Co) (int, error) { return Await(co, ps[i].Handle()) })
		}
	})
	require.Zero(t, onLoopValue(t, l, func() int { return len(l.idleWorkers) }), "every worker is busy")
	for i, p := range ps {
		require.True(t, p.Resolve(i))
	}
	for i, h := range hs {
		v, err := wait(t, h)
		require.NoError(t, err)
		require.Equal(t, i, v)
	}
	require.Equal(t, maxIdleWorkers, onLoopValue(t, l, func() int { return len(l.idleWorkers) }))

	// A body suspended as the loop stops is cancelled and returns; its
	// worker ends with the idle ones.
	p := NewPromise[int](l)
	h := Do(l, func(co *Co) (int, error) { return Await(co, p.Handle()) })
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
	_, err := h.Result()
	require.ErrorIs(t, err, ErrCancelled)
	requireNoLeak(t, "the loop's workers ended with it")
}

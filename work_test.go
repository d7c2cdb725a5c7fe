package aio

import (
	"context"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// Stats counts the Work jobs waiting for a goroutine and the functions
// running, so that an operator sees a pool that is too small.
func TestWorkStatsCountQueuedAndRunning(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 1})
	started, release := make(chan struct{}), make(chan struct{})
	first := Work(l, func(context.Context) (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	recv(t, started)
	rest := []*Handle[int]{
		Work(l, func(context.Context) (int, error) { return 2, nil }),
		Work(l, func(context.Context) (int, error) { return 3, nil }),
	}
	s := l.Stats()
	require.Equal(t, 2, s.WorkQueued, "the one goroutine is busy: two jobs wait")
	require.Equal(t, 1, s.WorkRunning)

	rest[1].Cancel() // a cancelled job still waits until a goroutine reaches it
	require.Equal(t, 2, l.Stats().WorkQueued)

	close(release)
	v, err := wait(t, first)
	require.NoError(t, err)
	require.Equal(t, 1, v)
	v, err = wait(t, rest[0])
	require.NoError(t, err)
	require.Equal(t, 2, v)
	_, err = wait(t, rest[1])
	require.ErrorIs(t, err, ErrCancelled)
	// The cancelled job leaves the queue when the goroutine reaches it,
	// which its handle does not wait for; a job queued after it does.
	v, err = wait(t, Work(l, func(context.Context) (int, error) { return 4, nil }))
	require.NoError(t, err)
	require.Equal(t, 4, v)
	s = l.Stats()
	require.Zero(t, s.WorkQueued)
	require.Zero(t, s.WorkRunning, "a function's end is counted before its result is seen")
	require.Equal(t, uint64(1), s.WorkCancelled, "the job cancelled in the queue; those that ran are not")
}

// Stats.WorkCancelled counts a job cancelled while its function runs
// (its result is dropped) as well as one cancelled before it ran, and
// neither a job that completed nor one that failed.
func TestWorkStatsCountCancelled(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 1})
	started := make(chan struct{})
	running := Work(l, func(ctx context.Context) (int, error) {
		close(started)
		<-ctx.Done()
		return 0, ctx.Err()
	})
	queued := Work(l, func(context.Context) (int, error) { return 1, nil })
	recv(t, started)
	queued.Cancel()
	running.Cancel()
	for _, h := range []*Handle[int]{running, queued} {
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
	}
	_, err := wait(t, Work(l, func(context.Context) (int, error) { return 0, ErrTimeout }))
	require.ErrorIs(t, err, ErrTimeout)
	_, err = wait(t, Work(l, func(context.Context) (int, error) { return 2, nil }))
	require.NoError(t, err)
	require.Equal(t, uint64(2), l.Stats().WorkCancelled)
}

// A Work fn that calls runtime.Goexit (testing's FailNow) ends its job
// with ErrGoexit, counted out of WorkRunning; its worker goroutine is
// gone, and another takes its place for the jobs queued behind it.
func TestWorkGoexit(t *testing.T) {
	l := startLoop(t, Config{WorkPool: 1})
	started, release := make(chan struct{}), make(chan struct{})
	dying := Work(l, func(context.Context) (int, error) {
		close(started)
		<-release
		runtime.Goexit()
		return 0, nil
	})
	recv(t, started)
	next := Work(l, func(context.Context) (int, error) { return 7, nil }) // queued behind it
	close(release)
	_, err := wait(t, dying)
	require.ErrorIs(t, err, ErrGoexit)
	v, err := wait(t, next)
	require.NoError(t, err)
	require.Equal(t, 7, v)
	v, err = wait(t, Work(l, func(context.Context) (int, error) { return 8, nil })) // none queued then
	require.NoError(t, err)
	require.Equal(t, 8, v)
	require.Zero(t, l.Stats().WorkRunning)
}

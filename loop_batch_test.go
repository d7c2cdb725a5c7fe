package aio

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A batch of posted callbacks runs under one guard (runBatch), and a panic
// unwinds the whole batch runner: the batch must go on after it as if each
// callback had a guard of its own. Several panics in one batch are each
// reported once (OnPanic, Stats.Panics), a panicking OnPanic stops nothing,
// the other callbacks all run, in order and in the same iteration, the jobs
// a panicking callback queued run before the next callback, what it posted
// runs after the batch, and Stats.Posted counts the batch once.
func TestPanicsInOneBatchEachReportedOnce(t *testing.T) {
	var reports []any // OnPanic runs on the loop
	l := startLoop(t, Config{OnPanic: func(v any) {
		reports = append(reports, v)
		if v == 4 {
			panic("in OnPanic")
		}
	}})
	const n = 10
	panics := []int{0, 4, 5, 9}
	last := make(chan struct{}) // the last callback has run
	var (
		ran           []int    // on the loop
		iters         []uint64 // the iteration each of the batch ran in
		laterIters    []uint64 // those of the callbacks the batch posted
		panics0       uint64
		posted0, post uint64
	)
	onLoop(t, l, func() {
		panics0 = l.Stats().Panics
		// The queue is empty: these join the loop's own batch, and all
		// run in the next one.
		for i := range n {
			assert.NoError(t, l.Post(func() {
				if i == 0 {
					posted0 = l.m.posted // not yet counting this batch
				}
				ran = append(ran, i)
				iters = append(iters, l.m.iterations)
				if i == 5 || i == 9 { // the last one's post starts ready over
					l.runLater(func() { ran = append(ran, 100+i) })
					assert.NoError(t, l.Post(func() {
						if i == 5 {
							post = l.m.posted // the first of the next batch
						}
						ran = append(ran, 200+i)
						laterIters = append(laterIters, l.m.iterations)
						if i == 9 {
							close(last)
						}
					}))
				}
				if slices.Contains(panics, i) {
					panic(i)
				}
			}))
		}
	})
	// Posted on the loop, the callbacks the batch posts may follow a Post
	// made meanwhile by this goroutine: wait for the last.
	recv(t, last)
	var (
		gotRan           []int
		gotIters, gotLtr []uint64
		gotReports       []any
		gotPanics        uint64
	)
	onLoop(t, l, func() {
		gotRan, gotIters, gotLtr = slices.Clone(ran), slices.Clone(iters), slices.Clone(laterIters)
		gotReports = slices.Clone(reports)
		gotPanics = l.Stats().Panics - panics0
	})
	require.Equal(t, []int{0, 1, 2, 3, 4, 5, 105, 6, 7, 8, 9, 109, 205, 209}, gotRan)
	require.Len(t, gotIters, n)
	for _, it := range gotIters {
		require.Equal(t, gotIters[0], it, "the batch was split across iterations")
	}
	require.Len(t, gotLtr, 2)
	require.Greater(t, gotLtr[0], gotIters[0], "a callback posted by the batch ran in it")
	require.Equal(t, []any{0, 4, 5, 9}, gotReports)
	require.Equal(t, uint64(len(panics)), gotPanics)
	require.Equal(t, uint64(n), post-posted0, "Stats.Posted counts the batch once")
}

// An OnPanic that calls runtime.Goexit, reporting a panic in the middle of
// a batch, cuts the batch runner short with its guard's resume pending: the
// teardown that the loop goroutine's guard (goexited) runs still runs the
// rest of the batch, once each, in order.
func TestGoexitInOnPanicMidBatchRunsTheRest(t *testing.T) {
	reports := make(chan any, 4)
	first := true // on the loop
	l := startLoop(t, Config{OnPanic: func(v any) {
		reports <- v
		if first {
			first = false
			runtime.Goexit()
		}
	}})
	ran := make(chan int, 8)
	onLoop(t, l, func() {
		for i := range 4 {
			assert.NoError(t, l.Post(func() {
				ran <- i
				if i == 1 {
					panic("boom")
				}
			}))
		}
	})
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	require.Equal(t, "boom", recv(t, reports))
	err, _ = recv(t, reports).(error)
	require.ErrorIs(t, err, errGoexit)
	close(ran) // the loop is dead: nothing sends any more
	var got []int
	for i := range ran {
		got = append(got, i)
	}
	require.Equal(t, []int{0, 1, 2, 3}, got)
}

// Timers due in the same pass all fire, in order, when some of them
// panic: each fails its own handle with a *PanicError and the others
// complete.
func TestPanicInTimerOthersDueStillFire(t *testing.T) {
	l := startLoop(t, Config{OnPanic: func(any) {}})
	const n = 5
	var (
		ran   []int    // on the loop
		iters []uint64 // the iteration each ran in
		hs    [n]*Handle[int]
	)
	onLoop(t, l, func() {
		// Created on the loop in one callback: the same Now, so one
		// deadline, all due in one pass, in creation order.
		for i := range n {
			hs[i] = Delay(l, time.Millisecond, func() (int, error) {
				ran = append(ran, i)
				iters = append(iters, l.m.iterations)
				if i%2 == 1 {
					panic(i)
				}
				return i, nil
			})
		}
	})
	for i, h := range hs {
		v, err := wait(t, h)
		if i%2 == 1 {
			var pe *PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, i, pe.Value)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, i, v)
	}
	var gotRan []int
	var gotIters []uint64
	var timers int
	onLoop(t, l, func() {
		gotRan, gotIters, timers = slices.Clone(ran), slices.Clone(iters), l.Stats().Timers
	})
	require.Equal(t, []int{0, 1, 2, 3, 4}, gotRan)
	for _, it := range gotIters {
		require.Equal(t, gotIters[0], it, "the due timers fired in different passes")
	}
	require.Zero(t, timers)
}

// A panic in the last callback of a batch, which also stopped the loop,
// leaves the batch to be finished by teardown: Stats.Posted still counts
// it.
func TestPanicInLastCallbackStoppingCountsBatch(t *testing.T) {
	l := startLoop(t, Config{OnPanic: func(any) {}})
	var posted0 uint64
	onLoop(t, l, func() {
		posted0 = l.m.posted
		assert.NoError(t, l.Post(func() {}))
		assert.NoError(t, l.Post(func() {
			l.Stop()
			panic("boom")
		}))
	})
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	require.Equal(t, posted0+2, l.Stats().Posted) // onLoop's callback counted itself in posted0; then ours
}

package aio

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chain of deepN() ThenAsync links completes and cancels without
// recursion (UT-10, UT-12): boundStack fails a recursive walk.
func TestDeepThenAsyncChain(t *testing.T) {
	l, _ := deepChain(t, func(l *Loop, h *Handle[int]) *Handle[int] {
		return ThenAsync(h, func(v int) *Handle[int] { return Pure(l, v+1) })
	})
	onLoopWithin(t, l, deepTimeout, func() {})
	require.Equal(t, 0, l.Stats().Handles)
}

// A fan-out of deepN() leaves under All completes, and cancelling the root
// cancels every leaf, within boundStack's stack.
func TestDeepLeafAll(t *testing.T) {
	leaves := deepN(t)
	boundStack(t)
	l := startLoop(t)
	var ps []*Promise[int]
	var all *Handle[[]int]
	build := func() {
		onLoopWithin(t, l, deepTimeout, func() {
			ps = make([]*Promise[int], leaves)
			hs := make([]*Handle[int], leaves)
			for i := range ps {
				ps[i] = NewPromise[int](l)
				hs[i] = ps[i].Handle()
			}
			all = All(hs...)
		})
	}
	build()
	onLoopWithin(t, l, deepTimeout, func() {
		for i, p := range ps {
			p.Resolve(i)
		}
	})
	v, err := waitWithin(t, deepTimeout, all)
	require.NoError(t, err)
	require.Len(t, v, leaves)
	require.Equal(t, leaves-1, v[leaves-1])

	build()
	var cancelled atomic.Int64
	onLoopWithin(t, l, deepTimeout, func() {
		for _, p := range ps {
			p.Handle().OnCancel(func() { cancelled.Add(1) })
		}
	})
	require.True(t, all.Cancel())
	_, err = waitWithin(t, deepTimeout, all)
	require.ErrorIs(t, err, ErrCancelled)
	_, err = waitWithin(t, deepTimeout, ps[leaves-1].Handle())
	require.ErrorIs(t, err, ErrCancelled)
	onLoopWithin(t, l, deepTimeout, func() {})
	require.Equal(t, int64(leaves), cancelled.Load())
	require.Equal(t, 0, l.Stats().Handles)
}

// A chain of deepN() All nodes, each gathering the previous link and a
// leaf, completes and cancels with the job queue, not the stack: the
// deepN-leaf fan-out above has no depth for a recursive walk to overflow
// along, this one has (UT-12, NFR-3).
func TestDeepAllChain(t *testing.T) {
	sum := func(v []int) (int, error) { return v[0] + v[1], nil }
	l, _ := deepChain(t, func(l *Loop, h *Handle[int]) *Handle[int] { return Then(All(h, Pure(l, 1)), sum) })
	onLoopWithin(t, l, deepTimeout, func() {})
	require.Equal(t, 0, l.Stats().Handles)
}

// Bug R3: cancelling a chain of Within recursed once per link.
//
// Cancelling a chain of Within recurses once per link: cancel ->
// schedFinish (on-loop cancel) -> stopProducer -> withinNode.stop -> link.withdraw
// -> unregister -> withdraw -> cancel of the next Within ... A 1,000,000-deep
// chain grew the loop goroutine's stack to 256 MiB; under boundStack a
// recursion overflows long before deepN() links.
func TestDeepWithinChainCancel(t *testing.T) {
	depth := deepN(t)
	boundStack(t)
	l := startLoop(t)
	var root, last *Handle[struct{}]
	onLoopWithin(t, l, deepTimeout, func() {
		root = NewPromise[struct{}](l).Handle()
		last = root
		for i := 0; i < depth; i++ {
			last = Within(last, time.Hour)
		}
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	onLoopWithin(t, l, deepTimeout, func() { last.Cancel() })
	runtime.ReadMemStats(&after)
	_, err := waitWithin(t, deepTimeout, root)
	require.ErrorIs(t, err, ErrCancelled)
	grown := int64(after.StackInuse) - int64(before.StackInuse)
	require.Less(t, grown, int64(32<<20), "stack grew by %d MiB cancelling a %d-deep Within chain", grown>>20, depth)
}

// Chains that hop among 4 loops complete with every callback on its own
// handle's loop, and a cancellation from an outside goroutine reaches the
// producer at the far end.
func TestCrossLoopChains(t *testing.T) {
	loops := []*Loop{startLoop(t), startLoop(t), startLoop(t), startLoop(t)}
	const hops = 200
	var wrongLoop atomic.Int32
	build := func(root *Handle[int]) *Handle[int] {
		h := root
		for i := 0; i < hops; i++ {
			next := loops[(i+1)%len(loops)]
			h = ThenAsync(h, func(v int) *Handle[int] {
				return Then(Pure(next, v), func(v int) (int, error) {
					if !next.OnLoop() {
						wrongLoop.Add(1)
					}
					return v + 1, nil
				})
			})
		}
		return h
	}
	v, err := wait(t, build(Pure(loops[0], 0)))
	require.NoError(t, err)
	require.Equal(t, hops, v)
	require.Zero(t, wrongLoop.Load())

	// Many concurrent chains, with cancellation from goroutines that own no loop.
	var wg sync.WaitGroup
	for c := 0; c < 20; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			root := NewPromise[int](loops[c%len(loops)])
			var onCancel atomic.Bool
			root.Handle().OnCancel(func() { onCancel.Store(true) })
			tail := build(root.Handle())
			if c%2 == 0 {
				root.Resolve(0)
				v, err := tail.Wait(testCtx(t))
				assert.NoError(t, err)
				assert.Equal(t, hops, v)
				return
			}
			tail.Cancel()
			_, err := tail.Wait(testCtx(t))
			assert.ErrorIs(t, err, ErrCancelled)
			_, err = root.Handle().Wait(testCtx(t))
			assert.ErrorIs(t, err, ErrCancelled, "withdrawal crossed every loop back to the root")
			assert.True(t, onCancel.Load())
		}()
	}
	wg.Wait()
	require.Zero(t, wrongLoop.Load())
}

// The seeds' patterns: timeout via race, retry with backoff, graceful
// shutdown of a set of handles.
func TestSeedPatterns(t *testing.T) {
	withTimeout := func(l *Loop, d time.Duration, h *Handle[string]) *Handle[string] {
		return Race(h, Delay(l, d, func() (string, error) { return "", ErrTimeout }))
	}
	t.Run("timeout via Race: the timer beats a slow input", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, withTimeout(l, 2*time.Millisecond, Delay(l, time.Hour, func() (string, error) { return "late", nil })))
		require.ErrorIs(t, err, ErrTimeout)
	})
	t.Run("timeout via Race: the input wins and the timer is disarmed", func(t *testing.T) {
		l := startLoop(t)
		v, err := wait(t, withTimeout(l, time.Hour, Delay(l, time.Millisecond, func() (string, error) { return "ok", nil })))
		require.NoError(t, err)
		require.Equal(t, "ok", v)
		onLoop(t, l, func() {})
		require.Equal(t, 0, l.Stats().Timers, "the timeout timer of a finished race is gone")
	})
	t.Run("graceful shutdown: a deadline cancels what has not finished", func(t *testing.T) {
		l := startLoop(t)
		var hs []*Handle[int]
		for i := 0; i < 10; i++ {
			d := time.Millisecond
			if i%2 == 1 {
				d = time.Hour
			}
			hs = append(hs, Delay(l, d, func() (int, error) { return i, nil }))
		}
		shutdown := Race(
			Then(All(hs...), func([]int) (string, error) { return "drained", nil }),
			Then(Sleep(l, 20*time.Millisecond), func(struct{}) (string, error) {
				for _, h := range hs {
					h.Cancel()
				}
				return "forced", nil
			}),
		)
		v, err := wait(t, shutdown)
		require.NoError(t, err)
		require.Equal(t, "forced", v)
		for i, h := range hs {
			if i%2 == 0 {
				require.Equal(t, Completed, h.Status())
			} else {
				require.Equal(t, Cancelled, h.Status())
			}
		}
	})
}

// Cancellation arriving from another goroutine while the loop runs the
// combinators' callbacks: every handle ends exactly once, cleanups run once,
// whatever the interleaving.
func TestCancelWhileCallbacksRun(t *testing.T) {
	l := startLoop(t)
	for round := 0; round < 100; round++ {
		var cleanups atomic.Int32
		var results []*Handle[int]
		var hs []*Handle[int]
		onLoop(t, l, func() {
			for i := 0; i < 8; i++ {
				h := Delay(l, 0, func() (int, error) { return i, nil })
				h.OnCleanup(func() { cleanups.Add(1) })
				hs = append(hs, h)
			}
			results = append(results,
				Then(All(hs[:4]...), func(v []int) (int, error) { return len(v), nil }),
				Race(hs[4:]...),
				Catch(Then(hs[0], func(v int) (int, error) { return v, errBoom }), func(error) (int, error) { return -1, nil }))
		})
		go func() {
			for _, h := range results {
				h.Cancel()
			}
		}()
		for _, h := range results {
			_, err := wait(t, h)
			if err != nil {
				require.ErrorIs(t, err, ErrCancelled)
			}
			require.True(t, h.Status().Terminal())
		}
		for _, h := range hs {
			recv(t, h.Done())
		}
		require.Equal(t, int32(8), cleanups.Load())
	}
}

// Cancelling a wide tree (sinks of many inputs under one root) cancels every
// leaf and runs every cleanup, while the loop's job ring stays near the
// number of sinks times withdrawBatch: withdrawing from every input of
// every sink at once would queue a finish per leaf, breadth first.
func TestWideCancelBoundsJobRing(t *testing.T) {
	const sinks, width = 64, 1024 // 65536 leaves; a ring of them is 131072 slots
	kinds := map[string]func(hs []*Handle[int]) *Handle[int]{
		"All": func(hs []*Handle[int]) *Handle[int] {
			return Then(All(hs...), func(v []int) (int, error) { return len(v), nil })
		},
		"AllSettled": func(hs []*Handle[int]) *Handle[int] {
			return Then(AllSettled(hs...), func(v []Outcome[int]) (int, error) { return len(v), nil })
		},
		"Race": func(hs []*Handle[int]) *Handle[int] { return Race(hs...) },
		"Any":  func(hs []*Handle[int]) *Handle[int] { return Any(hs...) },
	}
	for name, mk := range kinds {
		t.Run(name, func(t *testing.T) {
			l := startLoop(t)
			var root *Handle[[]int]
			var cleanups atomic.Int64
			var before, after int
			onLoop(t, l, func() {
				mids := make([]*Handle[int], sinks)
				for i := range mids {
					leaves := make([]*Handle[int], width)
					for j := range leaves {
						leaves[j] = NewPromise[int](l).Handle()
						leaves[j].OnCancel(func() { cleanups.Add(1) })
					}
					mids[i] = mk(leaves)
				}
				root = All(mids...)
				before = len(l.jobs.buf)
			})
			require.True(t, root.Cancel())
			_, err := wait(t, root)
			require.ErrorIs(t, err, ErrCancelled)
			onLoop(t, l, func() { after = len(l.jobs.buf) })
			assert.LessOrEqual(t, after, max(before, 4*sinks*withdrawBatch), "job ring grew to %d slots", after)
			require.Equal(t, int64(sinks*width), cleanups.Load())
			require.Equal(t, 0, l.Stats().Handles)
		})
	}
}

// A chain of Brackets, each using the previous link's value, cancelled at
// its far end: each Bracket holds its end until its acquire has ended,
// and that release must be a job, not a call inside the acquire's end,
// or the unwinding recurses a million deep.
func TestDeepBracketChainCancel(t *testing.T) {
	deepChain(t, func(l *Loop, h *Handle[int]) *Handle[int] {
		return Bracket(h, func(int) {}, func(v int) *Handle[int] { return Pure(l, v+1) })
	})
}

// A chain of scopes, each adopting the previous link, cancelled at its far
// end: each scope's end waits for its last child to leave, which must not
// finish the scope inside the child's end.
func TestDeepScopeAdoptChainCancel(t *testing.T) {
	deepChain(t, func(l *Loop, h *Handle[int]) *Handle[int] {
		return WithScope(l, func(s *Scope) *Handle[int] {
			return Then(Adopt(s, h), func(v int) (int, error) { return v + 1, nil })
		})
	})
}

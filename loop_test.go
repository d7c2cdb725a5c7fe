package aio

import (
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Post keeps FIFO order per producer under a flood from many goroutines, and
// every callback runs exactly once.
func TestPostFIFOPerProducerUnderFlood(t *testing.T) {
	l := startLoop(t, Config{PostBatch: 64})
	const producers, each = 8, 20_000
	last := make([]int, producers) // touched only on the loop
	for i := range last {
		last[i] = -1
	}
	var outOfOrder, ran atomic.Int64
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				assert.NoError(t, l.Post(func() {
					if last[p] != i-1 {
						outOfOrder.Add(1)
					}
					last[p] = i
					ran.Add(1)
				}))
			}
		}()
	}
	wg.Wait()
	onLoop(t, l, func() {})
	require.Equal(t, int64(producers*each), ran.Load())
	require.Zero(t, outOfOrder.Load())
}

// Causal FIFO across goroutines: a Post that happens before another (here
// through a channel handoff between two goroutines) runs first.
func TestPostCausalOrderAcrossGoroutines(t *testing.T) {
	l := startLoop(t)
	var seq []int // on the loop
	handoff := make(chan struct{})
	done := make(chan struct{})
	go func() {
		for i := 0; i < 1000; i += 2 {
			assert.NoError(t, l.Post(func() { seq = append(seq, i) }))
			handoff <- struct{}{}
			<-handoff
		}
		close(done)
	}()
	go func() {
		for i := 1; i < 1000; i += 2 {
			<-handoff
			assert.NoError(t, l.Post(func() { seq = append(seq, i) }))
			handoff <- struct{}{}
		}
	}()
	recv(t, done)
	var got []int
	onLoop(t, l, func() { got = append(got, seq...) })
	require.Len(t, got, 1000)
	for i, v := range got {
		require.Equal(t, i, v)
	}
}

// A Post from the loop runs in a later callback, never inside the call.
func TestPostFromLoopRunsLater(t *testing.T) {
	l := startLoop(t)
	var order []string
	onLoop(t, l, func() {
		assert.NoError(t, l.Post(func() { order = append(order, "posted") }))
		order = append(order, "caller")
	})
	onLoop(t, l, func() {})
	var got []string
	onLoop(t, l, func() { got = append(got, order...) })
	require.Equal(t, []string{"caller", "posted"}, got)
}

// Posts made on the loop take a path of their own while the queue is empty
// (they join the loop's batch without the lock): causal FIFO still holds
// across the two paths, both ways, and a callback posted by the last one
// of a batch still runs in a later iteration.
func TestPostOnLoopKeepsCausalOrderWithOtherGoroutines(t *testing.T) {
	l := startLoop(t)
	var seq []string // on the loop
	note := func(s string) func() { return func() { seq = append(seq, s) } }
	postFrom := func(s string) { // another goroutine's Post, returned before this
		done := make(chan error)
		go func() { done <- l.Post(note(s)) }()
		assert.NoError(t, <-done)
	}
	var iterPosted, iterRan uint64
	onLoop(t, l, func() {
		// The queue is empty: on the loop's own path, then the queue's.
		assert.NoError(t, l.Post(note("loop-1")))
		postFrom("other-1")
		// The queue is not empty: this one follows other-1 there.
		assert.NoError(t, l.Post(note("loop-2")))
		postFrom("other-2")
	})
	onLoop(t, l, func() {
		// The last callback of its batch posts: not run in that batch.
		iterPosted = l.m.iterations
		assert.NoError(t, l.Post(func() { iterRan = l.m.iterations; seq = append(seq, "later") }))
	})
	var got []string
	onLoop(t, l, func() { got = append(got, seq...) })
	require.Equal(t, []string{"loop-1", "other-1", "loop-2", "other-2", "later"}, got)
	require.Greater(t, iterRan, iterPosted)
}

// A flood of posts is run in bounded batches: timers due meanwhile still fire
// between batches instead of after the whole flood.
func TestPostFloodDoesNotStarveTimers(t *testing.T) {
	l := startLoop(t, Config{PostBatch: 16})
	fired := make(chan int64, 1)
	var ran atomic.Int64
	const flood = 5000
	onLoop(t, l, func() {
		Delay(l, 0, func() (int, error) { fired <- ran.Load(); return 0, nil })
		for i := 0; i < flood; i++ {
			_ = l.Post(func() { ran.Add(1) })
		}
	})
	select {
	case n := <-fired:
		require.Less(t, n, int64(flood), "the timer fired only after the whole flood")
	case <-time.After(waitTimeout):
		t.Fatal("timer never fired")
	}
}

// OnLoop is true on the loop goroutine only.
func TestOnLoop(t *testing.T) {
	l := startLoop(t)
	other := startLoop(t)
	require.False(t, l.OnLoop())
	var on, onOther bool
	onLoop(t, l, func() { on = l.OnLoop(); onOther = other.OnLoop() })
	require.True(t, on)
	require.False(t, onOther)
}

// Wakeups coalesce: producers that post while the loop is awake write no
// wakeup at all, and a sleeping loop gets at most one write per sleep.
func TestWakeupsCoalesce(t *testing.T) {
	l := startLoop(t)
	release := holdLoop(t, l)
	before := l.wakeups.Load()
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_ = l.Post(func() {})
			}
		}()
	}
	wg.Wait()
	require.Equal(t, before, l.wakeups.Load(), "posts to a busy loop must not write wakeups")
	release()
	onLoop(t, l, func() {})

	// Now against a sleeping loop: many posts, at most one write per sleep.
	for round := 0; round < 20; round++ {
		w0, it0 := l.wakeups.Load(), l.Stats().Iterations
		var wg sync.WaitGroup
		for p := 0; p < 4; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 100; i++ {
					_ = l.Post(func() {})
				}
			}()
		}
		wg.Wait()
		onLoop(t, l, func() {})
		w1, it1 := l.wakeups.Load(), l.Stats().Iterations
		require.LessOrEqual(t, w1-w0, it1-it0+1, "more wakeup writes than loop iterations")
	}
}

func TestNowAdvancesAndIsCachedPerIteration(t *testing.T) {
	l := startLoop(t)
	var a, b time.Duration
	onLoop(t, l, func() {
		a = l.Now()
		time.Sleep(2 * time.Millisecond) // burn time inside one callback
		b = l.Now()
	})
	require.Equal(t, a, b, "Now is cached for the iteration")
	var c time.Duration
	onLoop(t, l, func() { c = l.Now() })
	require.GreaterOrEqual(t, c, a+2*time.Millisecond)
}

func TestStatsCounts(t *testing.T) {
	l := startLoop(t, Config{Name: "stats", PostBatch: 64})
	require.Equal(t, "stats", l.Name())
	// A controlled workload, read on the loop at three points: a callback
	// holding the loop (alone in its batch), n callbacks and a reader posted
	// meanwhile (the next iteration's batch), and a reader the latter posts
	// (the batch after). Posted counts each callback as it starts.
	const n = 10
	var at [3]Stats // on the loop
	held, hold, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	require.NoError(t, l.Post(func() { at[0] = l.Stats(); close(held); <-hold }))
	recv(t, held)
	for i := 0; i < n; i++ {
		require.NoError(t, l.Post(func() {}))
	}
	require.NoError(t, l.Post(func() {
		at[1] = l.Stats()
		assert.NoError(t, l.Post(func() { at[2] = l.Stats(); close(done) }))
	}))
	close(hold)
	recv(t, done)
	require.Equal(t, "stats", at[0].Name)
	require.Equal(t, uint64(1), at[0].Posted, "on the loop, the first callback counts itself")
	require.Equal(t, at[0].Posted+n+1, at[1].Posted, "the batch of n callbacks and the reader, in progress")
	require.Equal(t, at[0].Iterations+1, at[1].Iterations, "the posts made meanwhile ran in the next iteration")
	require.Equal(t, at[1].Posted+1, at[2].Posted, "the reader of the next batch")
	require.Equal(t, at[1].Iterations+1, at[2].Iterations, "a post from the loop runs in the next iteration")
}

// Spin mode picks posts up without a wakeup write when they arrive within the
// spin window.
func TestSpinAvoidsWakeups(t *testing.T) {
	l := startLoop(t, Config{Spin: 50 * time.Millisecond})
	a := startLoop(t)
	var rounds atomic.Int64
	done := make(chan struct{})
	var ping func()
	ping = func() {
		if rounds.Add(1) == 200 {
			close(done)
			return
		}
		_ = a.Post(func() { _ = l.Post(ping) })
	}
	require.NoError(t, l.Post(ping))
	recv(t, done)
	// With a 50 ms spin window every hop lands while l spins: l needs
	// almost no wakeup writes (the first hop may find it asleep).
	require.LessOrEqual(t, l.wakeups.Load(), uint64(2))
}

// A runtime.Goexit in a callback cannot be recovered like a panic: it ended
// the loop goroutine and left the loop half alive, its handles pending and
// Stop's handle never completing. Now the loop reports it as a panic and
// stops as Stop would: pending handles are cancelled (their cleanups run, a
// suspended Do body resumes), fds close, the slot comes back, and Stop's
// handle completes.
func TestGoexitInCallbackStopsTheLoop(t *testing.T) {
	reported := make(chan any, 1)
	l := startLoop(t, Config{OnPanic: func(v any) { reported <- v }})
	p := NewPromise[int](l)
	var cleaned atomic.Bool
	p.Handle().OnCleanup(func() { cleaned.Store(true) })
	body := Do(l, func(co *Co) (int, error) { return Await(co, p.Handle()) })
	timer := Delay(l, time.Hour, func() (int, error) { return 0, nil })
	onLoop(t, l, func() {}) // the body has started and awaits p

	require.NoError(t, l.Post(func() { runtime.Goexit() }))
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	err, _ = recv(t, reported).(error)
	require.ErrorIs(t, err, errGoexit)
	require.Equal(t, Cancelled, p.Handle().Status())
	require.True(t, cleaned.Load())
	_, err = wait(t, body)
	require.ErrorIs(t, err, ErrCancelled, "the suspended body was resumed and ended")
	require.Equal(t, Cancelled, timer.Status())
	require.ErrorIs(t, l.Post(func() {}), ErrStopped)
}

// Spin mode also watches the fds after I/O work: a conversation whose
// replies come back within the spin window is served without the loop
// blocking in the poller, so without a wakeup per message.
func TestSpinPicksUpIOWithoutSleeping(t *testing.T) {
	l := startLoop(t, Config{Spin: 50 * time.Millisecond})
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, p []byte) { _, _ = c.Write(p) })
	})
	require.NoError(t, err)
	client := netDial(t, ln)
	msg := []byte("ping")
	roundTrip := func() {
		_, err := client.Write(msg)
		require.NoError(t, err)
		_, err = io.ReadFull(client, msg)
		require.NoError(t, err)
	}
	roundTrip() // accepted and served once: the loop may have slept for it
	var before, after uint64
	onLoop(t, l, func() { before = l.m.sleeps })
	const rounds = 200
	for range rounds {
		roundTrip()
	}
	onLoop(t, l, func() { after = l.m.sleeps })
	// Every message arrives within the window of the spin that its echo
	// started (a client round trip takes tens of microseconds): l sleeps
	// only when the goroutine running the test is slow to be scheduled.
	require.Less(t, after-before, uint64(rounds/4), "the loop slept for most messages")
}

// Now is refreshed when a spin finds I/O, as after a poll that waited: a
// spin can last up to Config.Spin, and the I/O callbacks it runs saw the
// reading from before it, a Now as old as the spin.
func TestSpinRefreshesNowForIO(t *testing.T) {
	l := startLoop(t, Config{Spin: time.Hour})
	stale := make(chan time.Duration, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, p []byte) {
			select {
			case stale <- l.clock() - l.Now():
			default:
			}
		})
	})
	require.NoError(t, err)
	client := netDial(t, ln)
	// The accept was work: the loop spins after it, with its Now cached
	// before the spin, until the client's byte arrives.
	require.Eventually(t, func() bool { return l.spinning.Load() }, 5*time.Second, time.Millisecond)
	const age = 30 * time.Millisecond
	require.Eventually(t, func() bool { return l.clock()-l.Now() > age }, 5*time.Second, time.Millisecond)
	_, err = client.Write([]byte("x"))
	require.NoError(t, err)
	require.Less(t, recv(t, stale), age, "the I/O callback saw the Now from before the spin")
}

// A spin takes its time out of the poll that follows it: a timer due
// within the spin window fired after the spin and then a whole poll
// timeout more, twice its delay.
func TestSpinDoesNotDelayTimers(t *testing.T) {
	l := startLoop(t, Config{Spin: time.Second})
	const d = 200 * time.Millisecond
	fired := make(chan time.Duration, 1)
	require.NoError(t, l.Post(func() { // work: the loop spins after it
		start := l.clock()
		Delay(l, d, func() (struct{}, error) {
			fired <- l.clock() - start
			return struct{}{}, nil
		})
	}))
	require.Less(t, recv(t, fired), d+d/2, "the timer waited for the spin and then its whole delay")
}

// Now is refreshed however a spin ends: one that ends because a post
// arrived polls the fds at once, and the I/O it finds ran with the Now
// from before the spin.
func TestSpinEndedByPostRefreshesNow(t *testing.T) {
	l := startLoop(t, Config{Spin: time.Hour})
	stale := make(chan time.Duration, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, p []byte) { stale <- l.clock() - l.Now() })
	})
	require.NoError(t, err)
	client := netDial(t, ln)
	// Whether the post or the byte ends the spin is a race; the post does
	// in about one round in five (a reviewer's count): 30 rounds.
	const age = 20 * time.Millisecond
	for range 30 {
		require.Eventually(t, func() bool { return l.spinning.Load() && l.clock()-l.Now() > age },
			5*time.Second, 100*time.Microsecond)
		require.NoError(t, l.Post(func() {}))
		_, err = client.Write([]byte("x"))
		require.NoError(t, err)
		require.Less(t, recv(t, stale), age, "an I/O callback saw the Now from before the spin")
	}
}

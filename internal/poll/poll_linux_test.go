package poll

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// BenchmarkEpollWaitScheduled is the same poll as BenchmarkWaitZero's, made
// through unix.EpollWait, which brackets the system call with the
// scheduler's entersyscall/exitsyscall. The difference between the two is
// what Wait's raw zero-timeout path saves per loop iteration.
func BenchmarkEpollWaitScheduled(b *testing.B) {
	p, err := New()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	evs := make([]unix.EpollEvent, 64)
	for b.Loop() {
		if _, err := unix.EpollWait(p.epfd, evs, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCeilMillis(t *testing.T) {
	for _, tc := range []struct {
		in   int64 // nanoseconds
		want int
	}{
		{1, 1},
		{999_999, 1},
		{1_000_000, 1},
		{1_000_001, 2},
		{1_500_000, 2},
		{5_000_000, 5},
		{1 << 62, 1<<31 - 1},
	} {
		if got := ceilMillis(time.Duration(tc.in)); got != tc.want {
			t.Errorf("ceilMillis(%dns) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestPwait2Probe logs which timed-wait path this kernel gets, and checks
// that the fallback path, forced, is as never-early as the precise one.
func TestPwait2Probe(t *testing.T) {
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("epoll_pwait2 available: %v", p.pwait2)

	for _, pwait2 := range []bool{false, p.pwait2} {
		p.pwait2 = pwait2
		for _, d := range []time.Duration{100 * time.Microsecond, 1500 * time.Microsecond} {
			start := time.Now()
			n, woken, err := p.Wait(d, make([]Event, 4))
			elapsed := time.Since(start)
			if err != nil || n != 0 || woken {
				t.Fatalf("pwait2=%v Wait(%v) = %d, %v, %v", pwait2, d, n, woken, err)
			}
			if elapsed < d {
				t.Errorf("pwait2=%v Wait(%v) returned after %v", pwait2, d, elapsed)
			}
			t.Logf("pwait2=%v Wait(%v) took %v", pwait2, d, elapsed)
		}
	}
}

// signalThread sends SIGURG (which the Go runtime ignores apart from
// preemption) to the calling goroutine's thread until the returned stop is
// called, so that a system call blocked on that thread keeps ending with
// EINTR. It locks the goroutine to its thread until stop; stop returns how
// many signals were sent.
func signalThread(t *testing.T) (stop func() int) {
	t.Helper()
	runtime.LockOSThread()
	pid, tid := unix.Getpid(), unix.Gettid()
	var done atomic.Bool
	var sent int
	var wg sync.WaitGroup
	wg.Go(func() {
		for !done.Load() {
			if unix.Tgkill(pid, tid, unix.SIGURG) == nil {
				sent++
			}
			time.Sleep(50 * time.Microsecond)
		}
	})
	return func() int {
		done.Store(true)
		wg.Wait()
		runtime.UnlockOSThread()
		return sent
	}
}

// TestSignalDoesNotEndWaitEarly is the CI failure of 2026-11-21: a timed
// Wait(1.5ms) returned after 43µs because a signal interrupted epoll_pwait2.
// Under a storm of signals to the waiting thread, a timed Wait still lasts
// its whole timeout and a blocking Wait still ends only for its Wake.
func TestSignalDoesNotEndWaitEarly(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	evs := make([]Event, 4)

	for _, pwait2 := range []bool{false, p.pwait2} {
		p.pwait2 = pwait2
		for _, d := range []time.Duration{1500 * time.Microsecond, 20 * time.Millisecond} {
			// On a loaded machine the signalling goroutine may not run
			// within a short Wait: try again until signals landed in one.
			sent := 0
			for try := 0; try < 50 && sent == 0; try++ {
				stop := signalThread(t)
				start := time.Now()
				n, woken, err := p.Wait(d, evs)
				elapsed := time.Since(start)
				sent = stop()
				require.NoError(t, err)
				require.Zero(t, n)
				require.False(t, woken)
				require.GreaterOrEqual(t, elapsed, d, "pwait2=%v Wait(%v) returned early with %d signals sent", pwait2, d, sent)
			}
			require.Positive(t, sent, "no signal reached the waiting thread in 50 tries")
		}

		stop := signalThread(t)
		woke := make(chan struct{})
		go func() {
			time.Sleep(20 * time.Millisecond) // let signals land on the blocked Wait
			assert.NoError(t, p.Wake())
			close(woke)
		}()
		n, woken, err := p.Wait(-1, evs)
		sent := stop()
		<-woke
		require.NoError(t, err)
		require.Zero(t, n)
		require.True(t, woken, "pwait2=%v blocking Wait ended without its Wake (%d signals sent)", pwait2, sent)
	}
}

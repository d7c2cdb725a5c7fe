//go:build linux || darwin || freebsd || netbsd || openbsd

package poll_test

import (
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/valkyria/aio/internal/poll"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newPoller returns a Poller that is closed when the test ends.
func newPoller(t testing.TB) *poll.Poller {
	t.Helper()
	p, err := poll.New()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

// socketpair returns the two ends of a non-blocking AF_UNIX stream pair,
// closed when the test ends unless the test closed them first.
func socketpair(t testing.TB) (a, b int) {
	t.Helper()
	// Flags set afterwards rather than SOCK_NONBLOCK|SOCK_CLOEXEC, which
	// darwin lacks; tests fork nothing, so the CLOEXEC window is harmless.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	require.NoError(t, err)
	for _, fd := range fds {
		t.Cleanup(func() { _ = unix.Close(fd) })
		require.NoError(t, unix.SetNonblock(fd, true))
		unix.CloseOnExec(fd)
	}
	return fds[0], fds[1]
}

// wait calls Wait and returns the events per fd, merged: on kqueue an fd
// that is both readable and writable is reported twice.
func wait(t testing.TB, p *poll.Poller, timeout time.Duration) (got map[int32]poll.Events, woken bool) {
	t.Helper()
	evs := make([]poll.Event, 16)
	n, woken, err := p.Wait(timeout, evs)
	require.NoError(t, err)
	got = make(map[int32]poll.Events)
	for _, ev := range evs[:n] {
		got[ev.FD] |= ev.Events
	}
	return got, woken
}

func write(t testing.TB, fd int, s string) {
	t.Helper()
	n, err := unix.Write(fd, []byte(s))
	require.NoError(t, err)
	require.Equal(t, len(s), n)
}

func TestWaitZeroWithNothingReady(t *testing.T) {
	p := newPoller(t)
	evs := make([]poll.Event, 8)
	start := time.Now()
	n, woken, err := p.Wait(0, evs)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, woken)
	require.Less(t, time.Since(start), 100*time.Millisecond, "Wait(0) must not block")
}

func TestWakeUnblocksBlockingWait(t *testing.T) {
	p := newPoller(t)
	tid, unlock := lockThread() // the thread that will block in Wait
	defer unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		// Wake only once Wait is asleep in the kernel: a Wake that landed
		// before Wait would pass without unblocking anything.
		blocked, err := blockedInWait(tid, 10*time.Second)
		assert.NoError(t, err)
		assert.True(t, blocked, "Wait(-1) never blocked")
		assert.NoError(t, p.Wake())
	})

	got, woken := wait(t, p, -1)
	require.True(t, woken)
	require.Empty(t, got, "the wakeup fd must not be reported as an event")

	got, woken = wait(t, p, 0)
	require.False(t, woken, "a Wake is reported once")
	require.Empty(t, got)
}

func TestWakeBeforeWaitIsNotLost(t *testing.T) {
	p := newPoller(t)
	require.NoError(t, p.Wake())
	_, woken := wait(t, p, 0)
	require.True(t, woken)
	_, woken = wait(t, p, 0)
	require.False(t, woken)
}

func TestConcurrentWakesCoalesce(t *testing.T) {
	p := newPoller(t)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 100 {
				assert.NoError(t, p.Wake())
			}
		})
	}
	wg.Wait()

	_, woken := wait(t, p, -1)
	require.True(t, woken)
	_, woken = wait(t, p, 0)
	require.False(t, woken, "one Wait drains every Wake that came before it")
}

// TestNoLostWakeups checks the handshake between Wake's pending flag and
// Wait's drain under contention: the consumer only ever blocks in Wait(-1),
// so a single lost Wake hangs the test.
func TestNoLostWakeups(t *testing.T) {
	p := newPoller(t)
	const total = 20000
	var sent atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range total / 4 {
				sent.Add(1)
				assert.NoError(t, p.Wake())
			}
		})
	}
	for sent.Load() < total {
		_, _ = wait(t, p, -1)
	}
	wg.Wait()
}

func TestReadable(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable))

	got, _ := wait(t, p, 0)
	require.Empty(t, got, "nothing written yet")

	write(t, b, "ping")
	got, _ = wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable}, got)

	got, _ = wait(t, p, 0)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable}, got, "level-triggered: still readable")

	buf := make([]byte, 16)
	n, err := unix.Read(a, buf)
	require.NoError(t, err)
	require.Equal(t, "ping", string(buf[:n]))
	got, _ = wait(t, p, 0)
	require.Empty(t, got, "drained")
}

func TestWritable(t *testing.T) {
	p := newPoller(t)
	a, _ := socketpair(t)
	require.NoError(t, p.Add(a, poll.Writable))
	got, _ := wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Writable}, got)
}

func TestReadableAndWritable(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable|poll.Writable))
	write(t, b, "x")
	got, _ := wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable | poll.Writable}, got)
}

func TestModify(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	write(t, b, "x")

	require.NoError(t, p.Add(a, 0))
	got, _ := wait(t, p, 0)
	require.Empty(t, got, "no interest yet")

	require.NoError(t, p.Modify(a, poll.Readable))
	got, _ = wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable}, got)

	require.NoError(t, p.Modify(a, poll.Writable))
	got, _ = wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Writable}, got)

	require.NoError(t, p.Modify(a, poll.Readable|poll.Writable))
	got, _ = wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable | poll.Writable}, got)

	require.NoError(t, p.Modify(a, 0))
	got, _ = wait(t, p, 0)
	require.Empty(t, got, "Modify to 0 stops reporting")
}

func TestDelete(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable|poll.Writable))
	write(t, b, "x")
	got, _ := wait(t, p, time.Second)
	require.Contains(t, got, int32(a))

	require.NoError(t, p.Delete(a))
	got, _ = wait(t, p, 0)
	require.Empty(t, got, "Delete stops reporting")

	// Deleted means forgotten: the fd can be added again.
	require.NoError(t, p.Add(a, poll.Readable))
	got, _ = wait(t, p, time.Second)
	require.Equal(t, map[int32]poll.Events{int32(a): poll.Readable}, got)
}

func TestRegistrationErrors(t *testing.T) {
	p := newPoller(t)
	a, _ := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable))
	require.ErrorIs(t, p.Add(a, poll.Readable), unix.EEXIST)

	_, c := socketpair(t)
	require.ErrorIs(t, p.Modify(c, poll.Readable), unix.ENOENT)
	require.ErrorIs(t, p.Delete(c), unix.ENOENT)

	err := p.Add(-1, poll.Readable)
	require.ErrorIs(t, err, unix.EBADF)
	require.Contains(t, err.Error(), "fd -1", "errors name the fd")
	// A failed Add leaves nothing behind to trip over (on kqueue, a stale
	// record of the fd would make this EEXIST).
	require.ErrorIs(t, p.Add(-1, poll.Readable), unix.EBADF)
}

// Registered counts what Add registered and Delete forgot; failed calls
// change nothing, and Modify never does.
func TestRegistered(t *testing.T) {
	p := newPoller(t)
	require.Zero(t, p.Registered(), "the wakeup channel does not count")
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable))
	require.NoError(t, p.Add(b, 0))
	require.Equal(t, 2, p.Registered())

	require.Error(t, p.Add(a, poll.Readable))
	require.Error(t, p.Add(-1, poll.Readable))
	require.NoError(t, p.Modify(a, poll.Writable))
	require.Equal(t, 2, p.Registered())

	require.NoError(t, p.Delete(a))
	require.Error(t, p.Delete(a))
	require.Equal(t, 1, p.Registered())
	require.NoError(t, p.Delete(b))
	require.Zero(t, p.Registered())
}

func TestPeerCloseReportsHangup(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable))
	require.NoError(t, unix.Close(b))

	got, _ := wait(t, p, time.Second)
	require.Contains(t, got, int32(a))
	require.Equal(t, poll.Readable|poll.Hangup, got[int32(a)]&(poll.Readable|poll.Hangup),
		"got %v", got[int32(a)])
}

func TestPeerShutdownWriteReportsHangup(t *testing.T) {
	p := newPoller(t)
	a, b := socketpair(t)
	require.NoError(t, p.Add(a, poll.Readable))
	require.NoError(t, unix.Shutdown(b, unix.SHUT_WR))

	got, _ := wait(t, p, time.Second)
	require.Equal(t, poll.Readable|poll.Hangup, got[int32(a)]&(poll.Readable|poll.Hangup),
		"half-close must be visible, got %v", got[int32(a)])
}

func TestMoreReadyThanRoom(t *testing.T) {
	p := newPoller(t)
	const fds = 5
	want := make(map[int32]bool)
	for range fds {
		a, _ := socketpair(t)
		require.NoError(t, p.Add(a, poll.Writable))
		want[int32(a)] = true
	}

	evs := make([]poll.Event, 2)
	n, _, err := p.Wait(time.Second, evs)
	require.NoError(t, err)
	require.Equal(t, len(evs), n, "Wait fills evs")

	// Level-triggered: whatever did not fit is reported again, so draining
	// with a small buffer eventually sees every fd.
	seen := make(map[int32]bool)
	for range 10 * fds {
		n, _, err := p.Wait(0, evs)
		require.NoError(t, err)
		for _, ev := range evs[:n] {
			seen[ev.FD] = true
			require.NoError(t, p.Delete(int(ev.FD)))
		}
	}
	require.Equal(t, want, seen)
}

func TestWaitWithEmptyEvs(t *testing.T) {
	p := newPoller(t)
	a, _ := socketpair(t)
	require.NoError(t, p.Add(a, poll.Writable))

	n, woken, err := p.Wait(0, nil)
	require.NoError(t, err)
	require.Zero(t, n)
	require.False(t, woken)

	require.NoError(t, p.Wake())
	var sawWake bool
	for range 10 { // the ready fd may take the one slot the kernel is lent
		n, woken, err = p.Wait(0, nil)
		require.NoError(t, err)
		require.Zero(t, n)
		sawWake = sawWake || woken
	}
	require.True(t, sawWake)
}

func TestTimedWaitIsNeverEarly(t *testing.T) {
	p := newPoller(t)
	// 1.5ms exercises rounding up where only millisecond epoll_wait exists.
	for _, d := range []time.Duration{5 * time.Millisecond, 1500 * time.Microsecond, 100 * time.Microsecond} {
		for range 5 {
			start := time.Now()
			got, woken := wait(t, p, d)
			elapsed := time.Since(start)
			require.Empty(t, got)
			require.False(t, woken)
			require.GreaterOrEqual(t, elapsed, d, "Wait(%v) returned early", d)
		}
	}
}

func TestCloseThenWake(t *testing.T) {
	p, err := poll.New()
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Wake(), "Wake after Close is a no-op")
}

func TestCloseIsIdempotent(t *testing.T) {
	p, err := poll.New()
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.NoError(t, p.Close())

	_, _, err = p.Wait(0, make([]poll.Event, 1))
	require.ErrorIs(t, err, os.ErrClosed)
	require.ErrorIs(t, p.Add(0, poll.Readable), os.ErrClosed)
	require.ErrorIs(t, p.Modify(0, poll.Readable), os.ErrClosed)
	require.ErrorIs(t, p.Delete(0), os.ErrClosed)
}

// TestWakeRacingClose is for the race detector: Wake and Close from
// different goroutines at once must be ordered by the Poller itself.
func TestWakeRacingClose(t *testing.T) {
	for range 20 {
		p, err := poll.New()
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 50 {
					assert.NoError(t, p.Wake())
				}
			})
		}
		wg.Go(func() { assert.NoError(t, p.Close()) })
		wg.Wait()
	}
}

func TestCloseReleasesFDs(t *testing.T) {
	count := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("cannot list open fds: %v", err)
		}
		return len(entries)
	}
	before := count()
	p, err := poll.New()
	require.NoError(t, err)
	require.Greater(t, count(), before, "New opens fds")
	require.NoError(t, p.Wake())
	require.NoError(t, p.Close())
	require.Equal(t, before, count(), "Close closes every fd New opened")
}

func TestEventsString(t *testing.T) {
	require.Equal(t, "0", poll.Events(0).String())
	require.Equal(t, "Readable", poll.Readable.String())
	require.Equal(t, "Readable|Hangup", (poll.Readable | poll.Hangup).String())
	require.Equal(t, "Readable|Writable|Hangup|Error", (poll.Readable | poll.Writable | poll.Hangup | poll.Error).String())
	require.Equal(t, "Writable|0x30", (poll.Writable | 0x30).String())
}

// BenchmarkWaitZero is the cost of one idle loop iteration's poll: Wait(0)
// with registered but idle fds.
func BenchmarkWaitZero(b *testing.B) {
	p := newPoller(b)
	a, _ := socketpair(b)
	require.NoError(b, p.Add(a, poll.Readable))
	evs := make([]poll.Event, 64)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Wait(0, evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWakeWait is one cross-goroutine wakeup's kernel round trip,
// measured from one goroutine: a Wake followed by the Wait(0) consuming it.
func BenchmarkWakeWait(b *testing.B) {
	p := newPoller(b)
	evs := make([]poll.Event, 64)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Wake(); err != nil {
			b.Fatal(err)
		}
		if _, woken, err := p.Wait(0, evs); err != nil || !woken {
			b.Fatal(woken, err)
		}
	}
}

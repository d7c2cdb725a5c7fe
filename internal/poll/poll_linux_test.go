package poll

import (
	"testing"
	"time"

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

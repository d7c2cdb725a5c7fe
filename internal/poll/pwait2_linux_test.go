package poll

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// kernelHasPwait2 asks the kernel directly whether epoll_pwait2 works, with
// a zero timeout laid out as the kernel's struct __kernel_timespec (16 bytes
// on every architecture): the oracle for the Poller's own probe.
func kernelHasPwait2(t *testing.T, p *Poller) bool {
	t.Helper()
	var ts [2]int64
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
		uintptr(unsafe.Pointer(&p.events[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0)
	return errno == 0
}

// TestPwait2ProbeMatchesKernel: New's probe finds epoll_pwait2 exactly when
// the kernel has it. On 386 it passed the kernel an 8-byte unix.Timespec, so
// the kernel took what followed it as tv_nsec: the probe blocked until a
// preemption signal ended it with EINTR and said "no" on a kernel that has
// the call, or, unlucky, said "yes" after sleeping (see the next test).
func TestPwait2ProbeMatchesKernel(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	require.Equal(t, kernelHasPwait2(t, p), p.pwait2, "New's probe for epoll_pwait2")
}

// TestPwait2TimedWaitEndsByItself is the hang of TestWithin, ExampleAny and
// the webserver's /slow?ms=5 on GOARCH=386: with epoll_pwait2 a timed Wait
// passed an 8-byte unix.Timespec where the kernel reads 16 bytes, so the
// nanoseconds became the high half of tv_sec and a 5 ms wait lasted until a
// Wake. Each Wait here must end by its own timeout: a watchdog Wakes it after
// a bound no timed Wait needs, and woken then says it did not.
func TestPwait2TimedWaitEndsByItself(t *testing.T) {
	p, err := New()
	require.NoError(t, err)
	defer p.Close()
	if !kernelHasPwait2(t, p) {
		t.Skip("this kernel has no epoll_pwait2")
	}
	p.pwait2 = true // whatever the probe said: this tests the wait itself
	evs := make([]Event, 4)
	for _, d := range []time.Duration{time.Millisecond, 5 * time.Millisecond} {
		stop := make(chan struct{})
		watchdog := make(chan struct{})
		go func() {
			defer close(watchdog)
			select {
			case <-stop:
			case <-time.After(10 * time.Second):
				assert.NoError(t, p.Wake())
			}
		}()
		n, woken, err := p.Wait(d, evs)
		close(stop)
		<-watchdog
		require.NoError(t, err)
		require.Zero(t, n)
		require.False(t, woken, "Wait(%v) with epoll_pwait2 did not end by its timeout", d)
	}
}

func TestNsecToKernelTimespec(t *testing.T) {
	for _, tc := range []struct {
		ns        int64
		sec, nsec int64
	}{
		{0, 0, 0},
		{1, 0, 1},
		{5_000_000, 0, 5_000_000},
		{999_999_999, 0, 999_999_999},
		{1_000_000_000, 1, 0},
		{1_500_000_001, 1, 500_000_001},
		{int64(maxWait), int64(maxWait / time.Second), int64(maxWait % time.Second)},
	} {
		assert.Equal(t, kernelTimespec{sec: tc.sec, nsec: tc.nsec}, nsecToKernelTimespec(tc.ns), "%dns", tc.ns)
	}
	require.Equal(t, uintptr(16), unsafe.Sizeof(kernelTimespec{}), "struct __kernel_timespec is 16 bytes")
}

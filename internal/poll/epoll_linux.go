package poll

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Poller is one epoll instance plus an eventfd used by Wake. See the package
// documentation for which goroutine may call what.
type Poller struct {
	// epfd is the epoll instance. Owned by the loop goroutine; -1 once
	// Close has run. Wake never reads it.
	epfd int

	// pwait2 records whether the kernel has epoll_pwait2 (Linux 5.11+).
	// Probed once in New, read-only afterwards.
	pwait2 bool

	// events is the buffer the kernel fills in Wait, reused across calls so
	// that a steady-state Wait does not allocate. Owned by the loop goroutine.
	events []unix.EpollEvent

	// registered counts the fds added and not deleted since (see
	// Registered). Owned by the loop goroutine.
	registered int

	// wakePending is set by the Wake that writes the eventfd and cleared by
	// Wait after draining it, so that a burst of Wakes costs one write(2)
	// rather than one each (the runtime's netpollWakeSig does the same). As
	// an atomic it also gives the race detector a happens-before edge from
	// Wake to the Wait that reports it.
	wakePending atomic.Bool

	// mu orders Wake (RLock) against Close (Lock): Wake writes to the eventfd
	// only while holding the read lock and after checking closed, so it can
	// never write to a closed fd number that another part of the process may
	// already have been handed by open(2).
	mu sync.RWMutex
	// closed is set by the first Close. Any goroutine, under mu.
	closed bool
	// wake is the eventfd. Its fd is written by Wake (any goroutine, under
	// mu.RLock), drained by Wait (loop goroutine) and closed by Close (under
	// mu.Lock).
	wake eventfdWaker
}

// New returns a Poller backed by a new close-on-exec epoll instance with an
// eventfd registered for Wake. The caller must Close it.
func New() (*Poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("poll: epoll_create1: %w", err)
	}
	p := &Poller{epfd: epfd, events: make([]unix.EpollEvent, 128)}
	if err := p.wake.open(); err != nil {
		unix.Close(epfd)
		return nil, err
	}
	// Level-triggered EPOLLIN: the eventfd stays readable until Wait drains
	// it, so a Wake that lands between two Waits is not lost.
	wfd := p.wake.fd
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wfd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		p.wake.close()
		unix.Close(epfd)
		return nil, fmt.Errorf("poll: epoll_ctl add eventfd %d: %w", wfd, err)
	}
	p.pwait2 = probePwait2(epfd, p.events[:1])
	return p, nil
}

// probePwait2 reports whether epoll_pwait2 works on this kernel, by calling it
// once with a zero timeout (which cannot block, hence the raw syscall). Any
// error, not only ENOSYS, means "no": seccomp profiles (Docker's among them)
// commonly answer syscalls they do not know with EPERM, and falling back to
// millisecond epoll_wait is always correct, only coarser.
func probePwait2(epfd int, buf []unix.EpollEvent) bool {
	var ts kernelTimespec
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
		uintptr(unsafe.Pointer(&ts)), 0, 0)
	return errno == 0
}

// kernelTimespec is the kernel's struct __kernel_timespec, the timeout that
// epoll_pwait2 reads on every architecture, 32-bit ones included (the
// syscall is younger than the y2038 work): two 64-bit fields. It is not
// unix.Timespec, whose fields are 32 bits on 386 and arm: given that, the
// kernel read the nanoseconds as the high half of tv_sec and whatever
// followed in memory as tv_nsec, so a 5 ms Wait slept for centuries (or
// until a Wake), and the probe in New slept for a garbage tv_nsec of up to
// a second, usually cut short by a preemption signal (EINTR: "no
// epoll_pwait2"), sometimes not (then every timed Wait of that Poller
// hung).
type kernelTimespec struct {
	sec  int64
	nsec int64
}

// nsecToKernelTimespec splits a non-negative nanosecond count for
// epoll_pwait2.
func nsecToKernelTimespec(ns int64) kernelTimespec {
	return kernelTimespec{sec: ns / 1e9, nsec: ns % 1e9}
}

// interest translates Readable/Writable into epoll interest bits. EPOLLRDHUP
// comes with Readable so that a peer's half-close (shutdown(SHUT_WR)) is
// reported as Hangup; it is deliberately not requested for write-only
// interest, where a level-triggered RDHUP would make a writer that is not
// reading spin. ev == 0 yields 0: the fd stays registered, and the kernel
// still reports EPOLLHUP and EPOLLERR, which it delivers unconditionally.
func interest(ev Events) uint32 {
	var e uint32
	if ev&Readable != 0 {
		e |= unix.EPOLLIN | unix.EPOLLRDHUP
	}
	if ev&Writable != 0 {
		e |= unix.EPOLLOUT
	}
	return e
}

// conditions translates the bits epoll reported into Events.
func conditions(e uint32) Events {
	var ev Events
	if e&unix.EPOLLIN != 0 {
		ev |= Readable
	}
	if e&unix.EPOLLOUT != 0 {
		ev |= Writable
	}
	if e&(unix.EPOLLHUP|unix.EPOLLRDHUP) != 0 {
		ev |= Hangup
	}
	if e&unix.EPOLLERR != 0 {
		ev |= Error
	}
	return ev
}

// Add registers fd with level-triggered interest in ev's Readable and/or
// Writable bits. ev may be 0: the fd is then registered with no interest, and
// epoll still reports Hangup and Error for it (the kernel always delivers
// EPOLLHUP and EPOLLERR), which is not the case on kqueue. Because those are
// level-triggered too, a loop that sees Hangup or Error must act on it (read,
// close, Delete) or it will see it again on every Wait. Adding an fd twice
// fails with EEXIST. The Poller does not take ownership of fd.
func (p *Poller) Add(fd int, ev Events) error {
	return p.ctl(unix.EPOLL_CTL_ADD, "add", fd, ev)
}

// Modify replaces fd's interest with ev (same meaning as in Add). fd must
// have been added; otherwise it fails with ENOENT.
func (p *Poller) Modify(fd int, ev Events) error {
	return p.ctl(unix.EPOLL_CTL_MOD, "modify", fd, ev)
}

// Delete forgets fd. Call it before closing fd: epoll tracks the open file
// description, not the number, so a closed fd whose description is still
// open elsewhere (dup, fork) would otherwise keep being reported under a
// number that may by then mean something else.
func (p *Poller) Delete(fd int) error {
	return p.ctl(unix.EPOLL_CTL_DEL, "delete", fd, 0)
}

func (p *Poller) ctl(op int, name string, fd int, ev Events) error {
	if p.epfd < 0 {
		return fmt.Errorf("poll: epoll_ctl %s fd %d: %w", name, fd, os.ErrClosed)
	}
	// DEL ignores the event, but kernels before 2.6.9 required a non-nil
	// pointer, so always pass one. The call is raw (no entersyscall), as the
	// runtime's own netpoll makes it: epoll_ctl never sleeps for long (it
	// takes the epoll instance's mutex, which Wait does not hold while it
	// blocks, and polls the fd once), and at up to four calls per
	// connection the scheduler's ~70 ns a call is ~1% of tcp-pound.
	e := unix.EpollEvent{Events: interest(ev), Fd: int32(fd)}
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(p.epfd), uintptr(op), uintptr(fd),
		uintptr(unsafe.Pointer(&e)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("poll: epoll_ctl %s fd %d: %w", name, fd, errno)
	}
	switch op {
	case unix.EPOLL_CTL_ADD:
		p.registered++
	case unix.EPOLL_CTL_DEL:
		p.registered--
	}
	return nil
}

// Registered returns how many fds are registered: added, and not deleted
// since. An fd closed without Delete still counts (epoll forgets it only
// when its last descriptor closes, which the Poller cannot see), so the count
// errs only upwards. The wakeup eventfd does not count.
func (p *Poller) Registered() int { return p.registered }

// Wait waits for registered fds to become ready and stores up to len(evs) of
// them in evs, returning how many it stored. timeout < 0 blocks until an fd
// is ready or Wake is called; timeout == 0 polls and returns at once; timeout
// > 0 waits up to timeout, and never returns early because of rounding: with
// epoll_pwait2 (Linux 5.11+) the timeout has nanosecond resolution, without
// it it is rounded up to whole milliseconds. A timeout over maxWait (about 24.8
// days) is clamped, so Wait returns (0, false, nil) before it elapses; the
// loop recomputes and waits again.
//
// woken reports that at least one Wake happened since the previous Wait
// returned (Wakes coalesce: any number of them is reported once). The wakeup
// eventfd is drained here and never appears in evs, so n may be 0 with woken
// true. The eventfd is just one more ready fd to the kernel: if evs fills up
// before it is reached, the next Wait reports it (and does not block).
//
// Wait with an empty evs is allowed but only reports woken: ready fds still
// end a blocking Wait and, being level-triggered, are reported by the next
// Wait that has room. A signal interrupting the wait is not a return: Wait
// waits again for the rest of the timeout.
//
// Wait(0) costs one raw epoll_pwait, without telling the scheduler
// (unix.RawSyscall6): a zero timeout cannot block, so there is no P to hand
// off, and skipping entersyscall/exitsyscall takes about a fifth off the call
// (~100 ns instead of ~130 ns on Linux/amd64; see BenchmarkWaitZero and
// BenchmarkEpollWaitScheduled). The blocking forms go through unix.Syscall6
// so that the scheduler can give this thread's P to other goroutines while
// the loop sleeps.
func (p *Poller) Wait(timeout time.Duration, evs []Event) (n int, woken bool, err error) {
	if p.epfd < 0 {
		return 0, false, fmt.Errorf("poll: wait: %w", os.ErrClosed)
	}
	buf := p.buffer(len(evs))
	timeout = min(timeout, maxWait)

	deadline := waitDeadline(timeout) // for a wait a signal interrupts
	var r uintptr
	for {
		var errno unix.Errno
		var what string
		r, errno, what = p.epollWait(buf, timeout)
		if errno == 0 {
			break
		}
		if errno != unix.EINTR {
			return 0, false, fmt.Errorf("poll: %s epfd %d: %w", what, p.epfd, errno)
		}
		var again bool
		if timeout, again = afterSignal(timeout, deadline); !again {
			return 0, false, nil
		}
	}

	wakeFD := int32(p.wake.fd)
	for i := range buf[:int(r)] {
		e := &buf[i]
		if e.Fd == wakeFD {
			if err := p.wake.drain(); err != nil {
				// Nothing is lost by bailing out: the eventfd was not
				// drained, and every fd is level-triggered, so the next
				// Wait reports all of this again.
				return 0, false, err
			}
			// Clear only after draining. The other order would let a Wake
			// slip in between, see the flag clear, write, and have its
			// write eaten by our drain, leaving the flag set forever and
			// every later Wake skipped.
			p.wakePending.Store(false)
			woken = true
			continue
		}
		if n == len(evs) {
			// Only when evs is empty and buffer lent the kernel one slot
			// anyway. The fd stays ready and is reported by a later Wait.
			continue
		}
		evs[n] = Event{FD: e.Fd, Events: conditions(e.Events)}
		n++
	}
	return n, woken, nil
}

// buffer returns the kernel-facing event buffer with room for max(want, 1)
// events. At least one slot is needed because epoll rejects maxevents == 0,
// and with it an empty evs can still observe a Wake.
func (p *Poller) buffer(want int) []unix.EpollEvent {
	want = max(want, 1)
	if cap(p.events) < want {
		p.events = make([]unix.EpollEvent, want)
	}
	return p.events[:want]
}

// maxWait caps a Wait timeout at the longest epoll_wait accepts, MaxInt32
// milliseconds (about 24.8 days). epoll_pwait2 gets the same cap, so that
// both paths behave alike.
const maxWait = math.MaxInt32 * time.Millisecond

// ceilMillis converts a positive timeout to epoll_wait milliseconds, rounding
// up so that a timer is never fired early, and clamping to maxWait.
func ceilMillis(d time.Duration) int {
	if d >= maxWait {
		return int(maxWait / time.Millisecond)
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// Wake makes the Wait in progress, or the next one if none is, return with
// woken == true. It is safe to call from any goroutine at any time, and
// concurrently with Close; after Close it does nothing and returns nil. Wakes
// that arrive before the Wait reporting them coalesce into one.
func (p *Poller) Wake() error {
	// Fast path without the lock: if a Wake is already pending, the Wait
	// that clears the flag has not drained yet and will report this Wake
	// too. This also keeps a storm of Wakes from contending on mu.
	if p.wakePending.Load() {
		return nil
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil
	}
	if !p.wakePending.CompareAndSwap(false, true) {
		return nil
	}
	if err := p.wake.signal(); err != nil {
		// Nothing was signalled, so no Wait will clear the flag; leaving
		// it set would turn every later Wake into a silent no-op.
		p.wakePending.Store(false)
		return err
	}
	return nil
}

// Close releases the epoll instance and the eventfd. It does not close the
// fds registered with Add. Close is idempotent: later calls return nil. It
// must not run concurrently with the loop's other calls (a Wait blocked in
// the kernel is not interrupted by closing the epoll fd: Wake it and Close
// after it returns), but may race with Wake.
func (p *Poller) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	errWake := p.wake.close()
	var errEp error
	if err := unix.Close(p.epfd); err != nil {
		errEp = fmt.Errorf("poll: close epfd %d: %w", p.epfd, err)
	}
	p.epfd = -1
	p.events = nil
	return errors.Join(errWake, errEp)
}

// epollWait is one epoll_pwait(2) or epoll_pwait2(2) for timeout (see Wait),
// returning the kernel's result, its errno, and the call's name for errors.
func (p *Poller) epollWait(buf []unix.EpollEvent, timeout time.Duration) (uintptr, unix.Errno, string) {
	switch {
	case timeout == 0:
		// syscall's RawSyscall6, not unix's: unix's is an assembly jump
		// to it through an ABI wrapper, 8 ns of a 210 ns poll here, and
		// this is the poll of every busy iteration.
		r, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		return r, errno, "epoll_pwait"
	case timeout > 0 && p.pwait2:
		ts := nsecToKernelTimespec(int64(timeout))
		r, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)),
			uintptr(unsafe.Pointer(&ts)), 0, 0)
		return r, errno, "epoll_pwait2"
	default:
		// epoll_pwait with a nil sigmask is epoll_wait, and unlike
		// SYS_EPOLL_WAIT it exists on every architecture (arm64 has no
		// epoll_wait).
		msec := -1
		if timeout > 0 {
			msec = ceilMillis(timeout)
		}
		r, _, errno := unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd),
			uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), uintptr(msec), 0, 0)
		return r, errno, "epoll_pwait"
	}
}

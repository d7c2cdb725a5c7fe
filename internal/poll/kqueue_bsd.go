//go:build darwin || freebsd || netbsd || openbsd

package poll

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// maxKeventTimeout caps a Wait timeout. Darwin fails kevent with EINVAL for
// very long timeouts; the runtime's netpoll clamps tv_sec to 1e6 seconds
// (about 11.5 days) for the same reason, and so do we, on every BSD alike.
const maxKeventTimeout = 1e6 * time.Second

// Poller is one kqueue instance plus a wakeup channel (EVFILT_USER on darwin
// and freebsd, a pipe on netbsd and openbsd). See the package documentation
// for which goroutine may call what.
type Poller struct {
	// kq is the kqueue. Owned by the loop goroutine; -1 once Close has run.
	// On darwin and freebsd the waker holds its own copy, read by Wake.
	kq int

	// interest is the Readable|Writable interest of every added fd, which
	// kqueue cannot report back: reads and writes are separate filters, and
	// Modify has to know which of them to add or delete. Owned by the loop
	// goroutine.
	interest map[int]Events

	// events is the buffer the kernel fills in Wait, reused across calls so
	// that a steady-state Wait does not allocate. Owned by the loop goroutine.
	events []unix.Kevent_t

	// changes is scratch space for the at most two filter changes of one
	// Add, Modify or Delete. Owned by the loop goroutine.
	changes [2]unix.Kevent_t

	// wakePending is set by the Wake that signals the waker and cleared by
	// Wait after it has consumed the signal, so that a burst of Wakes costs
	// one system call rather than one each. As an atomic it also gives the
	// race detector a happens-before edge from Wake to the Wait reporting it.
	wakePending atomic.Bool

	// mu orders Wake (RLock) against Close (Lock): Wake touches the waker's
	// fds only while holding the read lock and after checking closed, so it
	// never writes to a closed fd number that open(2) may already have
	// handed to someone else.
	mu sync.RWMutex
	// closed is set by the first Close. Any goroutine, under mu.
	closed bool
	// wake is the wakeup channel. Signalled by Wake (any goroutine, under
	// mu.RLock), consumed by Wait (loop goroutine), closed by Close (under
	// mu.Lock).
	wake waker
}

// New returns a Poller backed by a new close-on-exec kqueue with its wakeup
// channel registered. The caller must Close it.
func New() (*Poller, error) {
	kq, err := kqueue()
	if err != nil {
		return nil, err
	}
	p := &Poller{
		kq:       kq,
		interest: make(map[int]Events),
		events:   make([]unix.Kevent_t, 128),
	}
	if err := p.wake.open(kq); err != nil {
		unix.Close(kq)
		return nil, err
	}
	return p, nil
}

// kqueue creates a close-on-exec kqueue. kqueue(2) has no flags argument on
// every BSD we support, so CLOEXEC is set afterwards, under syscall.ForkLock
// like the syscall package does for sockets on such systems, so that an
// os/exec fork in between cannot leak the fd into a child.
func kqueue() (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	kq, err := unix.Kqueue()
	if err != nil {
		return -1, fmt.Errorf("poll: kqueue: %w", err)
	}
	unix.CloseOnExec(kq)
	return kq, nil
}

// Add registers fd with level-triggered interest in ev's Readable and/or
// Writable bits, each of which is its own kqueue filter (EVFILT_READ,
// EVFILT_WRITE). ev may be 0: the fd is then known to the Poller, so that
// Modify can give it interest later, but nothing is registered with the
// kernel and, unlike on Linux, no Hangup or Error is reported for it. Adding
// an fd twice fails with EEXIST. The Poller does not take ownership of fd.
func (p *Poller) Add(fd int, ev Events) error {
	if p.kq < 0 {
		return fmt.Errorf("poll: kevent add fd %d: %w", fd, os.ErrClosed)
	}
	if _, ok := p.interest[fd]; ok {
		return fmt.Errorf("poll: kevent add fd %d: %w", fd, unix.EEXIST)
	}
	if err := p.apply("add", fd, 0, ev); err != nil {
		// Leave nothing half-registered: a failed Add registers nothing on
		// Linux either, and the caller will not Delete an fd it failed to
		// add.
		_ = p.apply("add rollback", fd, p.interest[fd], 0)
		delete(p.interest, fd)
		return err
	}
	return nil
}

// Modify replaces fd's interest with ev (same meaning as in Add), adding and
// deleting the read and write filters to match. fd must have been added;
// otherwise it fails with ENOENT.
func (p *Poller) Modify(fd int, ev Events) error {
	if p.kq < 0 {
		return fmt.Errorf("poll: kevent modify fd %d: %w", fd, os.ErrClosed)
	}
	old, ok := p.interest[fd]
	if !ok {
		return fmt.Errorf("poll: kevent modify fd %d: %w", fd, unix.ENOENT)
	}
	return p.apply("modify", fd, old, ev)
}

// Delete forgets fd. Call it before closing fd, as on Linux. The kernel would
// drop the filters of a closed fd by itself, but the Poller's record of the
// fd would remain, and a later Add of the same fd number would fail with
// EEXIST.
func (p *Poller) Delete(fd int) error {
	if p.kq < 0 {
		return fmt.Errorf("poll: kevent delete fd %d: %w", fd, os.ErrClosed)
	}
	old, ok := p.interest[fd]
	if !ok {
		return fmt.Errorf("poll: kevent delete fd %d: %w", fd, unix.ENOENT)
	}
	err := p.apply("delete", fd, old, 0)
	// Forget fd even on error: the caller is about to close it, which
	// removes whatever filters are left.
	delete(p.interest, fd)
	return err
}

// Registered returns how many fds are registered: added, and not deleted
// since, whether or not they have interest. The wakeup channel does not
// count.
func (p *Poller) Registered() int { return len(p.interest) }

// filters pairs each interest bit with its kqueue filter.
var filters = [...]struct {
	ev     Events
	filter int
}{
	{Readable, unix.EVFILT_READ},
	{Writable, unix.EVFILT_WRITE},
}

// apply moves fd's kernel registration from interest from to interest to and
// records in p.interest what the kernel ends up with.
//
// All changes go in one kevent call. If that fails, the kernel has applied
// some unknown prefix of them (kevent stops at the first change it cannot
// apply when given no event list to report into), so the changes are replayed
// one at a time to find out where things stand; this is safe because EV_ADD
// of an existing filter just updates it, and ENOENT from EV_DELETE means the
// filter is gone, which is what was asked for.
func (p *Poller) apply(op string, fd int, from, to Events) error {
	changes := p.changes[:0]
	var bits [len(filters)]Events
	for _, f := range filters {
		var flags int
		switch {
		case to&f.ev != 0 && from&f.ev == 0:
			flags = unix.EV_ADD
		case to&f.ev == 0 && from&f.ev != 0:
			flags = unix.EV_DELETE
		default:
			continue
		}
		bits[len(changes)] = f.ev
		changes = append(changes, unix.Kevent_t{})
		unix.SetKevent(&changes[len(changes)-1], fd, f.filter, flags)
	}
	want := to & (Readable | Writable)
	if len(changes) == 0 {
		p.interest[fd] = want
		return nil
	}
	if _, err := unix.Kevent(p.kq, changes, nil, nil); err == nil {
		p.interest[fd] = want
		return nil
	}

	cur := from & (Readable | Writable)
	var first error
	for i := range changes {
		deleting := changes[i].Flags&unix.EV_DELETE != 0
		_, err := unix.Kevent(p.kq, changes[i:i+1], nil, nil)
		switch {
		case err == nil && !deleting:
			cur |= bits[i]
		case err == nil || (deleting && err == unix.ENOENT):
			cur &^= bits[i]
		case first == nil:
			first = err
		}
	}
	p.interest[fd] = cur
	if first != nil {
		return fmt.Errorf("poll: kevent %s fd %d: %w", op, fd, first)
	}
	return nil
}

// Wait waits for registered fds to become ready and stores up to len(evs) of
// them in evs, returning how many it stored. timeout < 0 blocks until an fd
// is ready or Wake is called; timeout == 0 polls and returns at once; timeout
// > 0 waits up to timeout (kevent takes a timespec, so there is no rounding).
// A timeout over maxKeventTimeout (about 11.5 days) is clamped, so Wait
// returns (0, false, nil) before it elapses; the loop recomputes and waits
// again.
//
// Reads and writes are separate kqueue filters, so an fd that is both
// readable and writable may appear twice in evs, once with Readable and once
// with Writable. EV_EOF is reported as Hangup (with Error too if the kernel
// attached a socket error to it), EV_ERROR as Error.
//
// woken reports that at least one Wake happened since the previous Wait
// returned (Wakes coalesce: any number of them is reported once). The wakeup
// event is consumed here and never appears in evs, so n may be 0 with woken
// true. The wakeup is just one more kernel event: if evs fills up before it
// is reached, the next Wait reports it (and does not block).
//
// Wait with an empty evs is allowed but only reports woken: ready fds still
// end a blocking Wait and, being level-triggered, are reported by the next
// Wait that has room. A signal interrupting the wait is not a return: Wait
// waits again for the rest of the timeout.
//
// Wait(0) avoids the scheduler's entersyscall/exitsyscall where the OS allows
// raw system calls (freebsd, netbsd); see keventPoll.
func (p *Poller) Wait(timeout time.Duration, evs []Event) (n int, woken bool, err error) {
	if p.kq < 0 {
		return 0, false, fmt.Errorf("poll: wait: %w", os.ErrClosed)
	}
	buf := p.buffer(len(evs))

	deadline := waitDeadline(timeout) // for a wait a signal interrupts
	var r int
	for {
		switch {
		case timeout == 0:
			r, err = keventPoll(p.kq, buf)
		case timeout < 0:
			r, err = unix.Kevent(p.kq, nil, buf, nil)
		default:
			ts := unix.NsecToTimespec(int64(min(timeout, maxKeventTimeout)))
			r, err = unix.Kevent(p.kq, nil, buf, &ts)
		}
		if err == nil {
			break
		}
		// Darwin has been seen to fail a timed kevent with ETIMEDOUT
		// (go.dev/issue/59679); it only means "nothing yet".
		if errors.Is(err, unix.ETIMEDOUT) {
			return 0, false, nil
		}
		if !errors.Is(err, unix.EINTR) {
			return 0, false, fmt.Errorf("poll: kevent wait kq %d: %w", p.kq, err)
		}
		var again bool
		if timeout, again = afterSignal(timeout, deadline); !again {
			return 0, false, nil
		}
	}

	for i := range buf[:r] {
		e := &buf[i]
		if p.wake.is(e) {
			if err := p.wake.drain(); err != nil {
				// Nothing is lost by bailing out: an undrained pipe stays
				// readable, and every fd is level-triggered, so the next
				// Wait reports all of this again.
				return 0, false, err
			}
			// Clear only after consuming the signal. The other order would
			// let a Wake slip in between, see the flag clear, signal, and
			// have its signal eaten here, leaving the flag set forever and
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
		var c Events
		switch e.Filter {
		case unix.EVFILT_READ:
			c = Readable
		case unix.EVFILT_WRITE:
			c = Writable
		}
		if e.Flags&unix.EV_EOF != 0 {
			c |= Hangup
			// On EOF the BSDs put the socket's pending error, if any, in
			// fflags.
			if e.Fflags != 0 {
				c |= Error
			}
		}
		if e.Flags&unix.EV_ERROR != 0 {
			c |= Error
		}
		evs[n] = Event{FD: int32(e.Ident), Events: c}
		n++
	}
	return n, woken, nil
}

// buffer returns the kernel-facing event buffer with room for max(want, 1)
// events, so that an empty evs can still observe a Wake.
func (p *Poller) buffer(want int) []unix.Kevent_t {
	want = max(want, 1)
	if cap(p.events) < want {
		p.events = make([]unix.Kevent_t, want)
	}
	return p.events[:want]
}

// Wake makes the Wait in progress, or the next one if none is, return with
// woken == true. It is safe to call from any goroutine at any time, and
// concurrently with Close; after Close it does nothing and returns nil. Wakes
// that arrive before the Wait reporting them coalesce into one.
func (p *Poller) Wake() error {
	// Fast path without the lock: if a Wake is already pending, the Wait
	// that clears the flag has not consumed it yet and will report this
	// Wake too. This also keeps a storm of Wakes from contending on mu.
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

// Close releases the kqueue and the wakeup channel. It does not close the fds
// registered with Add. Close is idempotent: later calls return nil. It must
// not run concurrently with the loop's other calls (Wake a blocked Wait and
// Close after it returns), but may race with Wake.
func (p *Poller) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	errWake := p.wake.close()
	var errKq error
	if err := unix.Close(p.kq); err != nil {
		errKq = fmt.Errorf("poll: close kq %d: %w", p.kq, err)
	}
	p.kq = -1
	p.events = nil
	p.interest = nil
	return errors.Join(errWake, errKq)
}

// Package poll is the I/O readiness poller underneath an event loop: one
// epoll (Linux) or kqueue (darwin, freebsd, netbsd, openbsd) instance plus a
// wakeup channel that other goroutines use to interrupt a blocked Wait.
//
// It plays the role of the runtime's netpoll_epoll.go/netpoll_kqueue.go, or of
// libuv's epoll and kqueue backends, for a loop that owns its own thread of
// control instead of the Go scheduler's:
//
//	p, err := poll.New()
//	...
//	p.Add(fd, poll.Readable)
//	for {
//		n, woken, err := p.Wait(untilNextTimer, evs)
//		// handle evs[:n]; if woken, drain the loop's inbox
//	}
//
// Interest is level-triggered: an fd keeps being reported for as long as it is
// ready and the interest stays registered, so a loop may handle only part of
// the ready set in one iteration without losing anything.
//
// Ownership: a Poller belongs to one loop goroutine. Every method except Wake
// must be called from that goroutine (or otherwise be ordered with it, for
// example Close after the loop has returned). Wake is safe from any goroutine
// at any time, including concurrently with and after Close.
package poll

import (
	"strconv"
	"strings"
	"time"
)

// Events is a bit set of readiness conditions. In Add and Modify only
// Readable and Writable mean anything: Hangup and Error are conditions, not
// interests, and are ignored there.
type Events uint32

const (
	// Readable: there is data to read, a connection to accept, or EOF.
	Readable Events = 1 << iota
	// Writable: there is room in the send buffer, or a non-blocking connect
	// has finished (read SO_ERROR to learn whether it succeeded).
	Writable
	// Hangup: the peer closed its end or shut down its writing side
	// (EPOLLHUP/EPOLLRDHUP on Linux, EV_EOF on kqueue). Reading drains what
	// is left and then reports EOF. It is level-triggered like the rest: a
	// loop that keeps the fd registered keeps seeing it.
	Hangup
	// Error: the fd has a pending error (EPOLLERR, EV_ERROR, or EV_EOF with a
	// socket error attached); read it with getsockopt(SO_ERROR) or by
	// attempting the I/O.
	Error
)

// String returns the set bits joined by "|", e.g. "Readable|Hangup", so
// that test failures and logs are readable. The empty set is "0".
func (e Events) String() string {
	if e == 0 {
		return "0"
	}
	names := [...]string{"Readable", "Writable", "Hangup", "Error"}
	var b strings.Builder
	for i, name := range names {
		if e&(1<<i) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString(name)
	}
	if rest := e &^ (Readable | Writable | Hangup | Error); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x")
		b.WriteString(strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}

// Event is one ready fd as reported by Wait.
type Event struct {
	// FD is the descriptor passed to Add.
	FD int32
	// Events is the set of conditions that hold for FD. Readable and Writable
	// appear only if they were asked for; Hangup and Error may appear on
	// Linux even with no interest at all (see Add).
	Events Events
}

// A signal (the Go scheduler's preemption SIGURG among them) ends a blocked
// epoll_pwait or kevent with EINTR whatever SA_RESTART says. Like libuv's
// uv__io_poll, Wait then waits again for what is left of its timeout, so that
// a timed Wait never returns early and a blocking one only for a reason.

// waitDeadline is when a Wait with timeout > 0 ends (the zero Time for the
// others, which need none).
func waitDeadline(timeout time.Duration) time.Time {
	if timeout > 0 {
		return time.Now().Add(timeout)
	}
	return time.Time{}
}

// afterSignal returns what a Wait interrupted by a signal waits for next: a
// blocking one blocks again, a timed one waits for the rest of its timeout
// until deadline (again false once it has passed), a poll is not retried.
func afterSignal(timeout time.Duration, deadline time.Time) (next time.Duration, again bool) {
	switch {
	case timeout < 0:
		return timeout, true
	case timeout == 0:
		return 0, false
	}
	left := time.Until(deadline)
	return left, left > 0
}

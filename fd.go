package aio

import "github.com/valkyria/aio/internal/poll"

// ioHandler owns one fd registered in the loop's fd table (a Conn, a
// Listener): it receives the fd's readiness, and closes it when Stop finds it
// still open after cancelling every pending handle (closeFDs).
type ioHandler interface {
	onIO(ev poll.Events)
	closeFD()
}

// setFD routes fd's readiness to h. On the loop.
func setFD(l *Loop, fd int, h ioHandler) {
	l.checkOnLoop()
	for fd >= len(l.fds) {
		more := len(l.fds) + 64
		l.fds = append(l.fds, make([]ioHandler, more)...)
		l.fdClosedIn = append(l.fdClosedIn, make([]uint64, more)...)
	}
	l.fds[fd] = h
}

// clearFD forgets fd's handler if it is h, and unregisters fd from the poller
// if inPoll. On the loop, before closing fd.
//
// It also marks fd closed in the poll batch being dispatched, whose
// remaining events for fd pollIO then drops. (Outside dispatch it marks the
// batch already dispatched, which no event will be compared with again.) A
// callback that closes one socket and opens another may be handed the same
// fd number; without this, the old socket's readiness, still ahead in the
// batch, would be delivered to the new one (a connect seen as finished
// before it is, say). libuv's uv__platform_invalidate_fd scans the rest of
// the batch for the fd instead: a cost per close that grows with the batch,
// where this is one store.
func clearFD(l *Loop, fd int, h ioHandler, inPoll bool) {
	l.checkOnLoop()
	if inPoll {
		_ = l.poller.Delete(fd)
	}
	if fd < len(l.fds) {
		l.fdClosedIn[fd] = l.batch
		if l.fds[fd] == h {
			l.fds[fd] = nil
		}
	}
}

// eachIO calls fn with every fd handler of the loop (fn may close them).
// On the loop.
func (l *Loop) eachIO(fn func(h ioHandler)) {
	l.checkOnLoop()
	for _, h := range l.fds {
		if h != nil {
			fn(h)
		}
	}
}

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
	for fd >= len(l.fds) {
		l.fds = append(l.fds, make([]ioHandler, len(l.fds)+64)...)
	}
	l.fds[fd] = h
}

// clearFD forgets fd's handler if it is h, and unregisters fd from the poller
// if inPoll. On the loop, before closing fd.
func clearFD(l *Loop, fd int, h ioHandler, inPoll bool) {
	l.forgetEvents(fd)
	if inPoll {
		_ = l.poller.Delete(fd)
	}
	if fd < len(l.fds) && l.fds[fd] == h {
		l.fds[fd] = nil
	}
}

// forgetEvents drops the events for fd still ahead in the batch being
// dispatched. A callback that closes one socket and opens another may be
// handed the same fd number; without this, the old socket's readiness would
// be delivered to the new one (a connect seen as finished before it is, say),
// as libuv guards against in uv__platform_invalidate_fd. On the loop.
func (l *Loop) forgetEvents(fd int) {
	for i := l.evPos + 1; i < l.evN; i++ {
		if int(l.evs[i].FD) == fd {
			l.evs[i].FD = -1
		}
	}
}

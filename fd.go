package aio

import "github.com/valkyria/aio/internal/poll"

// addFD registers fd with the poller and routes its readiness to h. On the
// loop only.
func (l *Loop) addFD(fd int, h ioHandler, ev poll.Events) error {
	l.checkOnLoop()
	if err := l.poller.Add(fd, ev); err != nil {
		return err
	}
	for fd >= len(l.fds) {
		l.fds = append(l.fds, make([]ioHandler, len(l.fds)+64)...)
	}
	l.fds[fd] = h
	return nil
}

// modFD changes the interest of a registered fd. On the loop only.
func (l *Loop) modFD(fd int, ev poll.Events) error { return l.poller.Modify(fd, ev) }

// delFD forgets fd; call it before closing the fd. On the loop only.
func (l *Loop) delFD(fd int) error {
	if fd < len(l.fds) {
		l.fds[fd] = nil
	}
	l.forgetEvents(fd)
	return l.poller.Delete(fd)
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

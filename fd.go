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
	return l.poller.Delete(fd)
}

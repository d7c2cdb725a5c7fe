//go:build darwin || freebsd

package poll

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// wakeIdent identifies the EVFILT_USER event. User events have their own
// ident namespace, so any value works; this one is merely recognisable in a
// kevent dump.
const wakeIdent = 0xa10

// waker is the darwin/freebsd wakeup channel: an EVFILT_USER event on the
// Poller's own kqueue, so waking costs no extra fd. Its methods follow the
// locking described on Poller.wake.
type waker struct {
	// kq is a copy of Poller.kq for signal, which runs on any goroutine and
	// so must not read the loop-owned original. -1 after close.
	kq int
}

// open registers the user event. EV_CLEAR makes the kernel reset the trigger
// when it delivers the event, so there is nothing to drain and any number of
// triggers before a Wait is delivered once.
func (w *waker) open(kq int) error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], wakeIdent, unix.EVFILT_USER, unix.EV_ADD|unix.EV_CLEAR)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		w.kq = -1
		return fmt.Errorf("poll: kevent add EVFILT_USER: %w", err)
	}
	w.kq = kq
	return nil
}

// signal triggers the user event.
func (w *waker) signal() error {
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], wakeIdent, unix.EVFILT_USER, 0)
	ev[0].Fflags = unix.NOTE_TRIGGER
	for {
		_, err := unix.Kevent(w.kq, ev[:], nil, nil)
		switch err {
		case nil:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("poll: kevent trigger EVFILT_USER on kq %d: %w", w.kq, err)
		}
	}
}

// is reports whether e is the wakeup event.
func (w *waker) is(e *unix.Kevent_t) bool {
	return e.Filter == unix.EVFILT_USER && e.Ident == wakeIdent
}

// drain does nothing: EV_CLEAR already reset the event on delivery.
func (w *waker) drain() error { return nil }

// close forgets the kqueue; the event goes away with it when Poller.Close
// closes the kqueue.
func (w *waker) close() error {
	w.kq = -1
	return nil
}

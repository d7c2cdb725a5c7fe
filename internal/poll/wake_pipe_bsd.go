//go:build netbsd || openbsd

package poll

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// waker is the netbsd/openbsd wakeup channel, where EVFILT_USER is missing
// (openbsd) or not exposed by x/sys (netbsd): a non-blocking pipe whose read
// end is registered for EVFILT_READ. Its methods follow the locking
// described on Poller.wake.
type waker struct {
	// r and w are the pipe's read and write ends, -1 after close.
	r, w int
	// buf receives drained bytes. Owned by the loop goroutine; kept here so
	// that draining does not allocate.
	buf [64]byte
}

// open creates the pipe, non-blocking so that signal on a full pipe and
// drain on an empty one fail with EAGAIN instead of blocking, and registers
// its read end on kq (level-triggered: it stays readable until drained).
func (w *waker) open(kq int) error {
	w.r, w.w = -1, -1
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("poll: pipe2: %w", err)
	}
	w.r, w.w = fds[0], fds[1]
	var ev [1]unix.Kevent_t
	unix.SetKevent(&ev[0], w.r, unix.EVFILT_READ, unix.EV_ADD)
	if _, err := unix.Kevent(kq, ev[:], nil, nil); err != nil {
		w.close()
		return fmt.Errorf("poll: kevent add wakeup pipe fd %d: %w", fds[0], err)
	}
	return nil
}

// signal writes one byte. EAGAIN means the pipe is full, hence readable
// already: that is success.
func (w *waker) signal() error {
	b := [1]byte{1}
	for {
		_, err := unix.Write(w.w, b[:])
		switch err {
		case nil, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("poll: write wakeup pipe fd %d: %w", w.w, err)
		}
	}
}

// is reports whether e is the wakeup pipe becoming readable.
func (w *waker) is(e *unix.Kevent_t) bool {
	return e.Filter == unix.EVFILT_READ && int(e.Ident) == w.r
}

// drain reads the pipe until it is empty, so that it stops being readable.
func (w *waker) drain() error {
	for {
		n, err := unix.Read(w.r, w.buf[:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN || (err == nil && n < len(w.buf)):
			return nil
		case err != nil:
			return fmt.Errorf("poll: read wakeup pipe fd %d: %w", w.r, err)
		}
	}
}

// close closes both ends of the pipe.
func (w *waker) close() error {
	var first error
	for _, fd := range [...]*int{&w.r, &w.w} {
		if *fd < 0 {
			continue
		}
		if err := unix.Close(*fd); err != nil && first == nil {
			first = fmt.Errorf("poll: close wakeup pipe fd %d: %w", *fd, err)
		}
		*fd = -1
	}
	return first
}

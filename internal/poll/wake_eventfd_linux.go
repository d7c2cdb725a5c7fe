package poll

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// eventfdIncrement is the 8-byte, host-byte-order 1 that signal writes to the
// eventfd (eventfd(2) reads and writes a native uint64). Read-only.
var eventfdIncrement = func() (b [8]byte) {
	binary.NativeEndian.PutUint64(b[:], 1)
	return b
}()

// eventfdWaker is the Linux wakeup channel: an eventfd whose counter Wake
// increments and Wait resets. Its methods follow the locking described on
// Poller.wake.
type eventfdWaker struct {
	// fd is the eventfd, -1 after close.
	fd int
	// buf receives the counter in drain. Owned by the loop goroutine; kept
	// here so that draining does not allocate.
	buf [8]byte
}

// open creates the eventfd: non-blocking, so that signal on a saturated
// counter and drain on an empty one fail with EAGAIN instead of blocking, and
// close-on-exec.
func (w *eventfdWaker) open() error {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		w.fd = -1
		return fmt.Errorf("poll: eventfd: %w", err)
	}
	w.fd = fd
	return nil
}

// signal makes the eventfd readable. EAGAIN means the counter is already at
// its maximum, so the eventfd is readable already: that is success.
func (w *eventfdWaker) signal() error {
	for {
		_, err := unix.Write(w.fd, eventfdIncrement[:])
		switch err {
		case nil, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("poll: write eventfd %d: %w", w.fd, err)
		}
	}
}

// drain resets the counter to zero with one read (without EFD_SEMAPHORE a
// read returns and clears the whole count, which is what makes Wakes
// coalesce). EAGAIN means there was nothing to drain.
func (w *eventfdWaker) drain() error {
	for {
		_, err := unix.Read(w.fd, w.buf[:])
		switch err {
		case nil, unix.EAGAIN:
			return nil
		case unix.EINTR:
			continue
		default:
			return fmt.Errorf("poll: read eventfd %d: %w", w.fd, err)
		}
	}
}

// close closes the eventfd.
func (w *eventfdWaker) close() error {
	if w.fd < 0 {
		return nil
	}
	fd := w.fd
	w.fd = -1
	if err := unix.Close(fd); err != nil {
		return fmt.Errorf("poll: close eventfd %d: %w", fd, err)
	}
	return nil
}

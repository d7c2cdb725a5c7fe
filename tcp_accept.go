package aio

import "golang.org/x/sys/unix"

// acceptFn is the accept system call the listener makes. A variable only so
// that tests can inject accept errors the kernel gives on demand only under
// real fd or memory exhaustion or firewall rules; tests replace it while no
// loop runs and put it back before the next one starts.
var acceptFn = sysAccept

// acceptAction is what the listener does after a failed accept. The errno
// says whose failure it is: one pending connection's, the process's or
// system's resources', or the listening socket's.
type acceptAction uint8

const (
	// acceptDrained (EAGAIN): nothing is pending; wait for readiness.
	acceptDrained acceptAction = iota
	// acceptRetry (EINTR): a signal came first; accept again now.
	acceptRetry
	// acceptDrop: the kernel took one pending connection off the queue and
	// gave up on it. ECONNABORTED (the peer left), EPERM (a firewall rule
	// refused it) and the network errors Linux's accept(2) passes on and
	// asks callers to treat like EAGAIN. Nothing is wrong with the listener:
	// count the connection as dropped and accept the next, as libuv does.
	acceptDrop
	// acceptShed (EMFILE, ENFILE): out of fds. The spare fd can take the
	// pending connection off the queue; if not, pause.
	acceptShed
	// acceptWait (ENOBUFS, ENOMEM): out of kernel memory. Freeing an fd does
	// not help and the connection stays queued, so the level-triggered
	// socket stays readable: pause rather than spin.
	acceptWait
	// acceptFail: the listening socket itself is broken (EBADF, EINVAL,
	// ENOTSOCK, EFAULT, or an errno not listed here, which cannot be assumed
	// to go away): retrying would fail the same way forever, so close the
	// listener with the error.
	acceptFail
)

// acceptActionOf classifies an error from acceptFn.
func acceptActionOf(err error) acceptAction {
	en, ok := err.(unix.Errno)
	if !ok {
		return acceptFail
	}
	switch en {
	case unix.EAGAIN:
		return acceptDrained
	case unix.EINTR:
		return acceptRetry
	case unix.ECONNABORTED, unix.EPERM,
		unix.ENETDOWN, unix.EPROTO, unix.ENOPROTOOPT, unix.EHOSTDOWN,
		unix.EHOSTUNREACH, unix.EOPNOTSUPP, unix.ENETUNREACH:
		return acceptDrop
	case unix.EMFILE, unix.ENFILE:
		return acceptShed
	case unix.ENOBUFS, unix.ENOMEM:
		return acceptWait
	}
	if connErrno(en) {
		return acceptDrop
	}
	return acceptFail
}

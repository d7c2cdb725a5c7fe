package aio

import (
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// acceptFn is the accept system call the listener makes. A variable only so
// that tests can inject accept errors the kernel gives on demand only under
// real fd or memory exhaustion or firewall rules; tests replace it while no
// loop runs and put it back before the next one starts.
var acceptFn = sock.Accept

// acceptAction is what the listener does after a failed accept. The errno
// says whose failure it is: one pending connection's, the process's or
// system's resources', or the listening socket's. Which errno is which is
// written once, for users, in Listen's doc, and once in code, in
// acceptActionOf; below is why each action is the right one.
type acceptAction uint8

const (
	// acceptDrained: nothing is pending; wait for readiness.
	acceptDrained acceptAction = iota
	// acceptRetry: a signal came first; accept again now.
	acceptRetry
	// acceptDrop: one pending connection failed (the peer left, or the
	// protocol errors Linux's accept(2) asks callers to treat like EAGAIN).
	// Nothing is wrong with the listener: count the connection as dropped
	// and accept the next, as libuv does. Whether the kernel took the
	// connection off the queue is not certain, so a batch of these that
	// serves nothing pauses (see onIO) rather than spinning.
	acceptDrop
	// acceptShed: out of fds. The spare fd can take the pending connection
	// off the queue; if not, pause.
	acceptShed
	// acceptWait: out of kernel memory, or a security policy refused accept
	// itself, which it checks before the connection leaves the queue.
	// Freeing an fd does not help and the connection stays queued, so the
	// level-triggered socket stays readable: pause rather than spin, and try
	// again after the pause (a policy may change; the listener is not
	// broken).
	acceptWait
	// acceptFail: the listening socket itself is broken, or the errno is
	// one not listed, which cannot be assumed to go away: retrying would
	// fail the same way forever, so close the listener with the error.
	acceptFail
)

// acceptActionOf classifies an error from acceptFn: the table of Listen's
// doc.
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
	case unix.ECONNABORTED, unix.ECONNRESET, unix.ETIMEDOUT,
		unix.ENETDOWN, unix.EPROTO, unix.ENOPROTOOPT, unix.EHOSTDOWN,
		unix.EHOSTUNREACH, unix.EOPNOTSUPP, unix.ENETUNREACH,
		unix.ESOCKTNOSUPPORT, unix.EPROTONOSUPPORT:
		return acceptDrop
	case unix.EMFILE, unix.ENFILE:
		return acceptShed
	case unix.ENOBUFS, unix.ENOMEM, unix.EPERM, unix.EACCES:
		return acceptWait
	}
	if sock.AcceptConnErrno(en) {
		return acceptDrop
	}
	return acceptFail
}

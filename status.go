package aio

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// Status is where a handle is in its life. Pending and Running may change; the
// three terminal states never change again.
type Status uint8

const (
	Pending   Status = iota // created, producer not started
	Running                 // producer started
	Completed               // finished with a value
	Failed                  // finished with an error
	Cancelled               // cancelled before it finished
)

// Transient states of the status word, never returned by Status. The winner of
// the compare-and-swap that ends a handle moves it to one of these, writes the
// value or error, and then publishes Completed or Failed with a store, so that
// readers that see the terminal state also see the value (a handle is never
// "completed without its value"). Status reports them as the state they become.
const (
	stCompleting uint32 = 5
	stFailing    uint32 = 6
)

// String returns "pending", "running", "completed", "failed" or "cancelled".
func (s Status) String() string {
	switch s {
	case Pending:
		return "pending"
	case Running:
		return "running"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case Cancelled:
		return "cancelled"
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// Terminal reports whether s is Completed, Failed or Cancelled.
func (s Status) Terminal() bool { return s >= Completed && s <= Cancelled }

var (
	// ErrCancelled is the error of a cancelled handle: Wait, Result and Await
	// return an error for which errors.Is(err, ErrCancelled) holds.
	ErrCancelled = errors.New("aio: cancelled")
	// ErrTimeout is the error of Within when its deadline passes first, and
	// the outcome AllSettledWithin gives an input still running at its
	// deadline.
	ErrTimeout = errors.New("aio: timeout")
	// ErrTooManySystems is returned by Runtime.Start when every slab slot is taken.
	ErrTooManySystems = errors.New("aio: too many systems")
	// ErrStopped is returned by Post, and is the error of any new work, on a loop
	// that is stopping or stopped.
	ErrStopped = errors.New("aio: loop stopped")
	// ErrAwaitOnLoop is returned by Wait called on the handle's own loop goroutine
	// for a handle that is not terminal yet: blocking there would deadlock.
	ErrAwaitOnLoop = errors.New("aio: wait on the handle's own loop would deadlock")
	// ErrPending is returned by Result for a handle that is not terminal yet.
	ErrPending = errors.New("aio: handle not finished")
	// ErrNoInputs is the error of Race or Any called with no handles.
	ErrNoInputs = errors.New("aio: no inputs")
	// ErrNilFunc is returned (or is the error of the returned handle) when a
	// required function argument is nil.
	ErrNilFunc = errors.New("aio: nil function")
	// ErrNilLoop is the error of a producer called with a nil *Loop.
	ErrNilLoop = errors.New("aio: nil loop")
	// ErrNilHandle is the error of a combinator given a nil *Handle.
	ErrNilHandle = errors.New("aio: nil handle")
	// ErrInvalidArgument is wrapped by the error of a call given an argument
	// out of its range (Retry with fewer than one attempt, Every with a period
	// that is not positive, OnFrame with a negative bound, Pipe of a nil
	// connection or of connections on two loops, an adoption without a TLS
	// config, of a negative fd or of a nil socket, a ConnConfig or
	// ListenConfig with a negative field, an address that is not host:port
	// with a numeric port, a nil context); the text says which.
	ErrInvalidArgument = errors.New("aio: invalid argument")
)

// invalid is the error of an argument out of range inside an error that
// says "aio:" already (a listen's, an adoption's): errors.Is(err,
// ErrInvalidArgument) holds, and so does it for cause, if any, without
// either text repeated.
func invalid(text string, cause ...error) error {
	return &kindError{text, append([]error{ErrInvalidArgument}, cause...)}
}

// errCancelledByStop is the cause a context of aio's (a Work function's, a
// Do body's) is cancelled with when its loop stops: it matches ErrCancelled,
// as every cancellation, and ErrStopped, so goroutine code can tell a
// shutdown from a cancel of the handle.
var errCancelledByStop error = &kindError{"aio: cancelled: loop stopped", []error{ErrCancelled, ErrStopped}}

// cancelCause is the context cause of a cancellation on l: errCancelledByStop
// once l is stopping, ErrCancelled otherwise.
func cancelCause(l *Loop) error {
	if l.Stopping() {
		return errCancelledByStop
	}
	return ErrCancelled
}

// PanicError is the error of a handle whose user callback panicked. The loop
// recovers the panic, so one bad callback fails its handle instead of killing
// the loop and every other handle on it.
type PanicError struct {
	Value any    // what was passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error says that a callback panicked, and with what.
func (e *PanicError) Error() string { return fmt.Sprintf("aio: callback panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and errors.As
// see through the panic.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func newPanicError(v any) *PanicError { return &PanicError{Value: v, Stack: debug.Stack()} }

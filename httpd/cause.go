package httpd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/valkyria/aio"
)

// The causes a request's context reports (context.Cause) once its request
// was cancelled; see Request.Context.
var (
	// ErrClientGone: the client went away while the request was in
	// progress: it closed or reset the connection, ended its side of it
	// (an EOF with the request pending), reset the HTTP/2 stream, broke
	// the protocol, or stopped reading until WriteTimeout. The
	// connection's own error follows it in the text, and errors.Is finds
	// it (aio.ErrWriteTimeout, a reset's syscall.ECONNRESET).
	ErrClientGone = errors.New("httpd: client went away")
	// ErrBadBody: the request's body broke its framing as it streamed (a
	// malformed chunk): the answer was 400.
	ErrBadBody = errors.New("httpd: malformed request body")
	// errAfterLast: the request came after a response that ended its
	// connection (Response.Close, a body its close delimits), and gets
	// nothing.
	errAfterLast = errors.New("httpd: request after the connection's last response")
)

// cancelCause says why a request was cancelled, to the goroutines its
// contexts are used from: made (on the loop) by the first context that
// reports a cause, and set by the engine before it cancels the request for
// a reason of its own. It outlives the Request, which goes back to its
// slab. Any goroutine.
type cancelCause struct {
	conn *aio.Conn // immutable
	err  atomic.Pointer[error]
}

// set records err as the cause, unless one is recorded already.
func (c *cancelCause) set(err error) { c.err.CompareAndSwap(nil, &err) }

// get returns the cause of a cancellation that has happened: the one set,
// else the connection's end (the engine cancels a request for its
// connection's close through the connection's scope, after the close is
// recorded), else other (the program cancelled it, or the request ended).
func (c *cancelCause) get(other error) error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	closed := c.conn.Closed()
	switch closed.Status() {
	case aio.Completed:
		return ErrClientGone
	case aio.Failed:
		_, err := closed.Result()
		return fmt.Errorf("%w: %w", ErrClientGone, err)
	case aio.Cancelled:
		return aio.ErrStopped // Loop.Stop closed it
	}
	if c.conn.Loop().Stopping() {
		return aio.ErrStopped // the stop cancels what is pending before it closes the fds
	}
	return other
}

// cause returns r's cancelCause, made on first use. On the loop.
func (r *Request) cause() *cancelCause {
	if r.why == nil {
		r.why = &cancelCause{conn: r.eng.conn()}
	}
	return r.why
}

// cancelFor records err as why r is being cancelled, for contexts that
// report it. On the loop, before the cancellation.
func (r *Request) cancelFor(err error) {
	if r.why != nil {
		r.why.set(err)
	}
}

// causeContext returns a context, and end, which cancels it with why's
// cause, or other if none is known. end is called on the loop, where the
// request is cancelled (an OnCancel of the handle whose cancellation the
// context stands for) or ends (context.Canceled): at once, so that the
// context is done when what the cancellation closed (a stream's Write)
// is seen to fail.
func causeContext(why *cancelCause) (ctx context.Context, end func(other error)) {
	ctx, cancel := context.WithCancelCause(context.Background())
	return ctx, func(other error) { cancel(asCanceled(why.get(other))) }
}

// canceledCause is a request context's cause that errors.Is also takes
// for context.Canceled, the context's Err, as under net/http's server,
// whose request contexts have no other cause: code written for it tests
// errors.Is(err, context.Canceled) on what a call made with the context
// returns, and that is the cause where the callee reports
// context.Cause (net/http's client does; so httputil.ReverseProxy's copy
// of a body to a client that went away would log an error). Its text and
// what else errors.Is and errors.As find in it are the cause's.
type canceledCause struct{ error }

func (c canceledCause) Unwrap() error { return c.error }

func (canceledCause) Is(target error) bool { return target == context.Canceled }

// asCanceled returns err as a canceledCause, unless errors.Is finds
// context.Canceled in it already.
func asCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	return canceledCause{err}
}

// maxBytesCause is the cause of a request refused for a body over limit,
// what net/http's MaxBytesReader reports.
func maxBytesCause(limit int64) error { return &http.MaxBytesError{Limit: limit} }

package httpd

import (
	"errors"
	"time"

	"github.com/valkyria/aio"
)

// Request bodies' pauses on HTTP/2, as on HTTP/1.1: a body small enough
// to wait in the arena for its handler, which has not started, may pause
// for HeaderTimeout at most and take BodyTimeout in all; a body that
// streams to its handler may pause for HeaderTimeout at most while the
// handler reads it (not while the handler has paused it, nor while our
// window holds the client back) and its response has not begun: from its
// head on, a client streaming both ways may wait for what the response
// says before it sends more (Duplex, gRPC's bidirectional streams). Past either the request is answered 408
// in place of its handler (which is cancelled), and the rest of the body
// is dropped (RST_STREAM(NO_ERROR) once the 408 is out); a handler whose
// Stream has begun has its stream reset (CANCEL) instead. Without it, a
// client that opened streams and sent no DATA held their arenas, and a
// FromHTTP handler's Work goroutine, for as long as the connection lived.
//
// HTTP/1.1 times a pause with the connection's timeout list; a stream has
// none of its own, so one timer per connection watches them, armed for
// the earliest deadline: each stream notes its own (h2stream.bodyDue,
// moved on by each piece, with no timer call), and the timer, when it
// fires, answers those past theirs and arms itself for the next. It is
// not in the connection's scope, so that it never holds a drain or a
// lingering close; one that fires on a connection gone does nothing.

// errBodyTimeout is why a buffered body's request is answered 408.
var errBodyTimeout = errors.New("httpd: request body too slow (HeaderTimeout or BodyTimeout)")

// h2bodyTimer is a connection's watch over its buffered bodies. Owned by
// the loop.
type h2bodyTimer struct {
	timer *aio.Handle[struct{}] // armed for at (or nil)
	at    time.Duration         // the loop time it fires at
	n     int                   // streams with a deadline noted (bodyDue != 0)
}

// timeBody starts timing st's body, whose buffering begins: BodyTimeout
// from now, and the first pause.
func (h *h2conn) timeBody(st *h2stream) {
	now := h.ls.l.Now()
	st.bodyBy = 0
	if d := h.ls.cfg.BodyTimeout; d > 0 {
		st.bodyBy = now + d
	}
	h.bt.n++
	h.bodyPiece(st, now)
}

// bodyPiece: a piece of st's buffered body arrived, or it began at now:
// the next pause is bounded from now, within BodyTimeout.
func (h *h2conn) bodyPiece(st *h2stream, now time.Duration) {
	due := now + h.ls.cfg.HeaderTimeout
	if st.bodyBy != 0 {
		due = min(due, st.bodyBy)
	}
	st.bodyDue = due
	h.armBody(due)
}

// timeStream starts timing, or times again from now, the pause of st's
// body, which streams to its handler, as the handler asks for it
// (bodyDemand): HeaderTimeout, and no BodyTimeout.
func (h *h2conn) timeStream(st *h2stream) {
	if st.r == nil || st.buffering || st.remoteDone || st.reset || st.refused || st.headersSent {
		return
	}
	if st.bodyDue == 0 {
		h.bt.n++
	}
	st.bodyBy = 0
	h.bodyPiece(st, h.ls.l.Now())
}

// untimeBody: st's body is no longer timed (its handler started, or has
// paused the body, or the body or its request ended). The timer goes
// when no body is left to time.
func (h *h2conn) untimeBody(st *h2stream) {
	if st.bodyDue == 0 {
		return
	}
	st.bodyDue = 0
	if h.bt.n--; h.bt.n == 0 && h.bt.timer != nil {
		h.bt.timer.Cancel()
		h.bt.timer = nil
	}
}

// armBody arms the timer for due, unless it fires by then.
func (h *h2conn) armBody(due time.Duration) {
	if h.bt.timer != nil {
		if h.bt.at <= due {
			return
		}
		h.bt.timer.Cancel()
	}
	h.bt.at = due
	h.bt.timer = aio.Delay(h.ls.l, due-h.ls.l.Now(), func() (struct{}, error) {
		h.bt.timer = nil
		h.bodyTimedOut()
		return struct{}{}, nil
	})
}

// bodyTimedOut answers 408 to each stream whose body is past its
// deadline, and arms the timer for the next. On the loop, from the timer.
//
// A streamed body's pause is only looked at here: its handler may have
// paused it since (it is then timed again when the handler resumes), or
// our windows may hold its client back (timed again from now).
func (h *h2conn) bodyTimedOut() {
	if h.dead || h.closed {
		return
	}
	now := h.ls.l.Now()
	var next time.Duration
	for _, st := range h.streams { // a refusal may forget st: deleting while ranging is allowed
		switch d := st.bodyDue; {
		case d == 0:
		case d > now:
			if next == 0 || d < next {
				next = d
			}
		case st.r == nil || st.refused || st.reset || st.remoteDone:
			h.untimeBody(st)
		case !st.buffering && (!st.r.body.ready() || len(st.rbuf) > 0):
			h.untimeBody(st) // its handler has paused it: bodyDemand times it again
		case !st.buffering && st.headersSent:
			h.untimeBody(st) // a conversation: its client may wait for what the response says
		case !st.buffering && (st.recvWin <= 0 || h.recvWin <= 0):
			h.bodyPiece(st, now) // our windows hold the client back: not its pause (the timer is armed for it)
		default:
			h.untimeBody(st)
			h.refuseBodyWith(st, 408, errBodyTimeout)
		}
	}
	h.flush()
	if next != 0 && !h.dead {
		h.armBody(next)
	}
}

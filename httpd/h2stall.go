package httpd

import (
	"time"

	"github.com/valkyria/aio"
	"golang.org/x/net/http2"
)

// Window stalls: Config.WriteTimeout for the bytes that wait inside the
// engine rather than in the socket's queue.
//
// aio.Conn's write timeout sees the kernel's progress only. An HTTP/2
// client can read every byte the kernel sends, answer PINGs (so it is
// never idle), and keep our flow-control window at zero, for one stream
// or for the connection: the response then waits here, in st.out, and
// holds its handler, its arena and its stream for ever (the "zero
// window" and "data dribble" attacks, CVE-2019-9517 and CVE-2019-9511).
// So a window that holds bytes is timed as the write queue is, by the
// same knob with the same meaning: when the client has not opened it for
// WriteTimeout, what it holds is given up.
//
//   - A stream's own window: RST_STREAM(CANCEL), counted in
//     Stats.WindowStalls, and its handler is cancelled as a client's reset
//     cancels it. CANCEL, not
//     FLOW_CONTROL_ERROR: a client that grants no window breaks no rule
//     of RFC 9113 (a shut window is how it says "not now"); it is we who
//     no longer want the stream (§7: "the stream is no longer needed"),
//     as when a handler is cancelled, and a reset for a reason of ours
//     spends none of the client's reset budget (spendRST).
//   - The connection's window: the whole connection is stalled, as an
//     HTTP/1.1 connection whose client stops reading is: GOAWAY(CANCEL)
//     for the same reason, then it closes, which cancels every stream,
//     counted in Stats.WriteTimeouts.
//
// Progress, however slow, restarts the clock, as for the write queue;
// but progress is DATA sent, in earnest: h2StallMin bytes in all (or all
// that waits) within WriteTimeout. So a client that opens its window by a
// byte every few seconds, a few bytes of DATA each time, is cut as if it
// had opened nothing; and so is one that opens it and shuts it again
// before anything could go (SETTINGS_INITIAL_WINDOW_SIZE up, then down,
// in one frame): a window that opens is no progress by itself. What a stalled stream holds
// is bounded meanwhile: a buffered body waits as its own view (the
// arena's or the handler's bytes, no copy), a Stream's at most
// streamPendMax before Full pauses it, the streams of a connection
// h2MaxStreams, the arenas of a loop Config.Arenas.
//
// One timer per connection, armed lazily: each stall's deadline is noted
// (h2stream.stallDue, h2stall.due) and the timer, armed for the earliest
// when none is, looks at them all when it fires and arms itself for the
// next, at least WriteTimeout/8 on: a deadline may pass up to that late,
// and a connection's timer fires at most eight times per WriteTimeout.
// It lives in the connection's scope, so the connection's close cancels
// it; its lingering close (end) cancels it first.

// h2StallMin is how much DATA a stalled window must let through in all
// within WriteTimeout to count as progress: a frame's worth (a minimum rate of
// 546 B/s with the default 30 s), far below any reader's pace.
const h2StallMin = h2DefaultFrame

// h2stall is a connection's watch over its windows. Owned by the loop.
type h2stall struct {
	due     time.Duration         // when the connection window's stall ends the connection; 0: not stalled
	sent    int64                 // DATA bytes sent since its stall began
	timer   *aio.Handle[struct{}] // armed for the earliest deadline (or a little after), or nil
	counted bool                  // the connection was ended for a stall: counted in Stats.WriteTimeouts
}

// windowStall: st has bytes to send that wait for a window, its own or
// the connection's (or both): their stalls begin, unless they have.
func (h *h2conn) windowStall(st *h2stream) {
	wt := h.ls.cfg.WriteTimeout
	if wt <= 0 {
		return
	}
	now := h.ls.l.Now()
	switch {
	case st.sendWin > 0:
		st.stallDue = 0 // its own window is open: the connection's holds it
	case st.stallDue == 0:
		st.stallDue, st.stallSent = now+wt, 0
		h.armStall(wt)
	}
	// The connection's stall begins, or begins again if the streams it
	// held are gone (reset, or ended): st must not pay for their wait.
	// (st is not among the waiting yet: sendData adds it after this.)
	if h.sendWin <= 0 && (h.ws.due == 0 || !h.connWaits()) {
		h.ws.due, h.ws.sent = now+wt, 0
		h.armStall(wt)
	}
}

// stallSent: k bytes of st's DATA went out, progress for the stalls in
// progress, st's and the connection's: enough in all ends them. From
// sendData, on the loop.
func (h *h2conn) stallSent(st *h2stream, k int64) {
	if st.stallDue != 0 {
		if st.stallSent += k; st.stallSent >= h2StallMin {
			st.stallDue = 0
		}
	}
	if h.ws.due != 0 {
		if h.ws.sent += k; h.ws.sent >= h2StallMin {
			h.ws.due = 0
		}
	}
}

// connSent: the streams that waited for the connection window have sent
// what it let them: if it is still open, or none waits, it holds nothing.
func (h *h2conn) connSent() {
	if h.sendWin > 0 || len(h.waiting) == 0 {
		h.ws.due = 0
	}
}

// armStall arms the connection's stall timer to fire after d, unless it
// is armed: it then fires before any deadline noted since (each is now
// plus WriteTimeout), and arms itself again for them.
func (h *h2conn) armStall(d time.Duration) {
	if h.ws.timer != nil {
		return
	}
	h.ws.timer = aio.Delay(h.ls.l, d, func() (struct{}, error) {
		h.ws.timer = nil
		h.stallTimedOut()
		return struct{}{}, nil
	})
	aio.Adopt(h.c.Scope(), h.ws.timer) // the connection's end cancels it
}

// stopStall cancels the stall timer of a connection that is ending: no
// stream is left to stall, and the timer, in the connection's scope,
// would hold its lingering close (aio.Conn.Drain waits for the scope's
// handles) until it fired.
func (h *h2conn) stopStall() {
	if t := h.ws.timer; t != nil {
		h.ws.timer = nil
		t.Cancel()
	}
}

// stallTimedOut ends what a window has held past its deadline: the
// connection, if its own window is shut with streams waiting, else each
// stream whose own window is; then the timer is armed for the next
// deadline. On the loop, from the timer.
func (h *h2conn) stallTimedOut() {
	if h.dead || h.closed {
		return
	}
	now := h.ls.l.Now()
	if d := h.ws.due; d != 0 && d <= now {
		h.ws.due = 0
		if h.sendWin <= 0 && h.connWaits() {
			h.ws.counted = true
			h.ls.st.writeTimeouts.Add(1)
			h.goAwayClose(http2.ErrCodeCancel)
			return
		}
	}
	next := h.ws.due
	for _, st := range h.streams { // a reset forgets st: deleting while ranging is allowed
		d := st.stallDue
		switch {
		case d == 0:
		case d > now:
			if next == 0 || d < next {
				next = d
			}
		default:
			st.stallDue = 0
			if st.sendWin <= 0 && len(st.out) > st.off && !st.reset {
				h.ls.st.windowStalls.Add(1)
				h.resetStream(st.id, http2.ErrCodeCancel)
			}
		}
	}
	h.flush()
	if next != 0 && !h.dead {
		h.armStall(max(next-now, h.ls.cfg.WriteTimeout/8))
	}
}

// connWaits tells whether a stream has bytes that wait for the
// connection window.
func (h *h2conn) connWaits() bool {
	for _, st := range h.waiting {
		if !st.reset && len(st.out) > st.off {
			return true
		}
	}
	return false
}

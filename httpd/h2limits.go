package httpd

import (
	"time"

	"golang.org/x/net/http2"
)

// Budgets against hostile HTTP/2 clients: what a client may make a
// connection spend beyond the requests it is answered, and what happens
// past it. Each is a constant taken from what x/net/http2's server and
// nghttp2 do (no Config knob: a user has no reason to loosen them, and
// the ones that bound memory follow Config already):
//
//   - Resets (CVE-2023-44487, rapid reset, and its kin "made you reset"):
//     a stream that ends in RST_STREAM, the client's or one we send for
//     a stream error of the client's, or that is refused for going past
//     SETTINGS_MAX_CONCURRENT_STREAMS, still cost a header block decoded,
//     a handler started and cancelled. They spend a token bucket of
//     h2ResetBurst tokens refilled at h2ResetRate a second (nghttp2's
//     stream_reset_ratelim: 1000 and 33); an empty bucket ends the
//     connection with GOAWAY(ENHANCE_YOUR_CALM). (nghttp2 says
//     INTERNAL_ERROR; x/net/http2, which bounds handlers not yet started
//     instead, says ENHANCE_YOUR_CALM, the code RFC 9113 §5.4.1 has for
//     this.)
//   - Header blocks: a HEADERS frame and its CONTINUATION frames are cut
//     out whole before the Framer reads them, so they are bounded before
//     they are buffered: more than h2MaxContinuations CONTINUATION frames
//     (nghttp2's default), or more encoded bytes than h2BlockMax (twice
//     the header list we accept: x/net/http2's rule), end the connection
//     with GOAWAY(ENHANCE_YOUR_CALM) as soon as the frame headers show
//     it, whatever follows.
//   - The decoded header list (an HPACK bomb: a few bytes that name the
//     dynamic table's entries again and again) is bounded by our decoder
//     (h2block.go):
//     SETTINGS_MAX_HEADER_LIST_SIZE is Config.MaxHeadBytes, advertised,
//     and the decoder stops emitting fields past it (SetEmitEnabled), so
//     the expansion is never allocated. The block is still decoded to its
//     end, keeping the table in step, and the stream is answered 431 (as
//     net/http does): only that request is refused, the connection goes
//     on. A single field longer than the list is one past it too (x/net
//     ends the connection for it: initBlock).
//   - SETTINGS: a frame of more than h2MaxSettings settings ends the
//     connection with ENHANCE_YOUR_CALM (x/net/http2 refuses it too), and
//     a change of SETTINGS_INITIAL_WINDOW_SIZE costs one pass over the
//     streams per frame, however often the frame names it, and a frame
//     that names no value above the one in force and leaves that value
//     as it was costs none (applySettings). x/net/http2's
//     server also passes over its streams per frame.
//   - Control frames we owe (PING and SETTINGS acknowledgements,
//     RST_STREAM): past h2MaxQueuedControl of them written while the
//     socket's queue is not empty (the client is not reading), the
//     connection ends with ENHANCE_YOUR_CALM at once, its queue dropped
//     (nghttp2's max_outbound_ack is 1000; x/net/http2 allows 10000).
//     Below that the write queue's high-water mark pauses reading anyway.
//   - A write stall: a response that waits for a window the client keeps
//     shut is given up after Config.WriteTimeout, the stream's or the
//     connection's (h2stall.go). Besides, while a response waits for the
//     client's window, the connection is on its idle timeout
//     (Config.IdleTimeout), which DATA going out again takes it off: the
//     bound left when WriteTimeout is negative. A buffered response waits
//     as the view of its body it already is; a Stream's Write reports
//     Full past streamPendMax.
//
// Each end of a connection for a budget counts in Stats.Abusive.
const (
	h2ResetBurst       = 1000 // resets a connection may spend at once
	h2ResetRate        = 33   // and a second, on average
	h2MaxContinuations = 8    // CONTINUATION frames in one header block
	h2MaxSettings      = 100  // settings in one SETTINGS frame (x/net/http2's bound)
	h2MaxQueuedControl = 1000 // control frames queued behind a client that does not read
)

// h2limits is a connection's spending against the budgets. Owned by the
// loop.
type h2limits struct {
	resets  int64         // reset tokens spent: the bucket holds h2ResetBurst-resets
	resetAt time.Duration // the loop time the bucket was last refilled
	control int           // control frames written while the write queue was not empty
	flood   bool          // split found a header block past the bounds
	stalled bool          // a response waits for the client's window: the idle timeout runs
}

// h2BlockMax is the most encoded bytes a header block may have.
func (h *h2conn) h2BlockMax() int {
	return min(2*h.ls.cfg.MaxHeadBytes, (1+h2MaxContinuations)*h2MaxFrame)
}

// readMax is the most bytes split needs to see to find a frame, or a
// header block, or that one is past the bounds.
func (h *h2conn) readMax() int {
	return max(2*(9+h2MaxFrame)+h.ls.cfg.MaxHeadBytes, 9*(h2MaxContinuations+2)+h.h2BlockMax())
}

// blockTooLong reports whether the header block beginning at b, a HEADERS
// frame without END_HEADERS, is past the bounds, as far as the frame
// headers in b tell: too many CONTINUATION frames or too many bytes.
func (h *h2conn) blockTooLong(b []byte) bool {
	size, conts := 0, 0
	for n := 0; len(b)-n >= 9; {
		f := b[n:]
		if n > 0 {
			if http2.FrameType(f[3]) != http2.FrameContinuation {
				return false // the Framer refuses it
			}
			if conts++; conts > h2MaxContinuations {
				return true
			}
		}
		l := frameLen(f)
		if size += l; size > h.h2BlockMax() {
			return true
		}
		if n > 0 && http2.Flags(f[4])&http2.FlagContinuationEndHeaders != 0 {
			return false
		}
		n += 9 + l
	}
	return false
}

// splitFlood is split's answer to a header block past the bounds at
// data[n:]: the frames before it first, then nothing more (an empty
// token, which tells onFrame to end the connection).
func (h *h2conn) splitFlood(data []byte, n int) (int, []byte, error) {
	switch {
	case n > 0:
		return n, data[:n], nil
	case len(data) == 0:
		return 0, nil, nil
	}
	h.lim.flood = true
	return len(data), data[:0], nil
}

// spendReset spends a reset token; false, with the connection ended, when
// none is left.
func (h *h2conn) spendReset() bool {
	l := &h.lim
	now := h.ls.l.Now()
	if back := int64((now - l.resetAt) * h2ResetRate / time.Second); back > 0 {
		l.resets = max(l.resets-back, 0)
		l.resetAt = now
	}
	if l.resets >= h2ResetBurst {
		h.calm()
		return false
	}
	l.resets++
	return true
}

// spendControl counts a control frame about to be written; false, with
// the connection ended, when the client has left too many unread.
func (h *h2conn) spendControl() bool {
	if h.c.Buffered() == 0 {
		h.lim.control = 0 // the kernel took all we wrote: the client reads
		return true
	}
	if h.lim.control++; h.lim.control > h2MaxQueuedControl {
		h.calm()
		return false
	}
	return true
}

// calm ends the connection for a budget spent: GOAWAY(ENHANCE_YOUR_CALM),
// then the connection closes, which cancels every stream's handler. A
// client that does not read is not waited for: its queue is dropped.
func (h *h2conn) calm() {
	if h.dead || h.closed {
		return
	}
	h.ls.st.abusive.Add(1)
	h.goAwayClose(http2.ErrCodeEnhanceYourCalm)
}

// goAwayClose ends the connection for a limit: GOAWAY(code), then it
// closes once that is written, or at once if the client has left bytes
// unread (it would not read the GOAWAY either).
func (h *h2conn) goAwayClose(code http2.ErrCode) {
	h.goAwayDead(code)
	if h.c.Buffered() > 0 {
		h.c.Close()
		return
	}
	h.closeFlushed()
}

// stall: a response waits for the client's window: the connection goes on
// its idle timeout, unless it is already. (Not for a full write queue:
// that is the kernel's pace, which the connection's WriteTimeout judges.)
func (h *h2conn) stall() {
	if !h.lim.stalled {
		h.lim.stalled = true
		if !h.headTimed { // untimeHead sets it, once the block is whole
			h.hc.setTimeout(h.restQ())
		}
	}
}

// streamGone: a stream was forgotten: if no stream left has DATA waiting,
// the connection is stalled no more (with none left, the caller puts it
// on the idle timeout). Looks at every stream, but only while stalled.
func (h *h2conn) streamGone() {
	if !h.lim.stalled {
		return
	}
	for _, st := range h.streams {
		if len(st.out) > st.off && !st.reset {
			return
		}
	}
	h.unstall()
}

// unstall: DATA went out: the stall's timeout is off.
func (h *h2conn) unstall() {
	if h.lim.stalled {
		h.lim.stalled = false
		if !h.headTimed {
			h.hc.setTimeout(nil)
		}
	}
}

// spendRST counts a RST_STREAM about to be written with code: a control
// frame, and a reset token unless the stream ends for a reason of ours
// (CANCEL, INTERNAL_ERROR, and NO_ERROR after a complete response: a
// refused upload's 413); false, with the connection ended, past a budget.
func (h *h2conn) spendRST(code http2.ErrCode) bool {
	if !h.spendControl() {
		return false
	}
	return code == http2.ErrCodeCancel || code == http2.ErrCodeInternal || code == http2.ErrCodeNo ||
		h.spendReset()
}

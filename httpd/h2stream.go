package httpd

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2stream is one stream of an h2conn: its request while it has one, its
// windows, and its DATA in both directions. Owned by the loop.
//
// A stream stays in the connection's map until both sides are done (our
// END_STREAM or a reset, and the client's END_STREAM or reset) and its
// request has ended, so that late frames for it are judged as RFC 9113
// §5.1 says: a response sent before the body has all arrived leaves the
// stream half-closed (local), its arena back, the rest of the body read
// and dropped.
type h2stream struct {
	id uint32
	r  *Request // nil once the request has ended

	clen     int64 // the request's content-length; -1: none
	received int64 // body bytes received

	sendWin int64 // what we may send
	recvWin int64 // what the client may send
	unacked int64 // bytes consumed and not yet given back to the client

	// The stall of the stream's own window (h2stall.go): when it ends the
	// stream (0: not stalled), and how much DATA was sent since it began.
	stallDue  time.Duration
	stallSent int64

	// A body buffered in the arena (h2bodytime.go): when its next piece
	// is late (0: not timed), and when all of it is (BodyTimeout; 0: none).
	bodyDue time.Duration
	bodyBy  time.Duration

	rbuf []byte // body bytes waiting for the handler (OnData, Resume)
	rend bool   // the body's end waits in rbuf

	out    []byte // body bytes waiting for the window: a response's body (a view), or a Stream's own
	off    int    // out[off:] is still to send
	outEnd bool   // END_STREAM follows out
	full   bool   // the stream said Full: OnDrain is owed

	buffering   bool // the body goes to the arena: the handler has not started
	expect      bool // the client waits for 100 Continue, sent when the handler first asks for the body (bodyDemand)
	refused     bool // the body outgrew MaxBodyBytes: the rest is dropped, and reset (NO_ERROR) once the answer is out
	headersSent bool
	localDone   bool // END_STREAM sent
	remoteDone  bool // the client's END_STREAM or RST_STREAM arrived
	reset       bool // RST_STREAM sent or received: nothing more is sent
	peerReset   bool // reset by the client's RST_STREAM (not by ours since)
	waiting     bool // in h2conn.waiting
	closed      bool // forgotten by its connection: in loopState.h2free, or garbage
}

// newH2Stream returns a closed stream to reuse, or a new one.
func (ls *loopState) newH2Stream() *h2stream {
	if n := len(ls.h2free); n > 0 {
		st := ls.h2free[n-1]
		ls.h2free[n-1] = nil
		ls.h2free = ls.h2free[:n-1]
		return st
	}
	return new(h2stream)
}

// freeH2Stream keeps st, closed, for a new stream: as many as the loop
// has arenas, the streams that can have requests at once. Its state stays
// as it was (the code that closed it may still look at it, as it would at
// garbage) until newH2Stream hands it out: only a new stream's HEADERS,
// never within the call that closed it, does that. What it holds goes.
func (ls *loopState) freeH2Stream(st *h2stream) {
	st.rbuf, st.out, st.off = nil, nil, 0
	if len(ls.h2free) < ls.cfg.Arenas {
		ls.h2free = append(ls.h2free, st)
	}
}

// onHeaders opens a stream (or ends one with trailers: trailerIn).
func (h *h2conn) onHeaders(f *h2block) {
	id := f.id
	if st := h.streams[id]; st != nil { // trailers: the body's end
		switch {
		case f.selfDep && !st.reset:
			h.resetStream(id, http2.ErrCodeProtocol) // a stream cannot depend on itself
		case st.remoteDone:
			h.closedFrame(st, id)
		case !f.endStream:
			h.fail(http2.ErrCodeProtocol)
		case f.npseudo > 0:
			h.resetStream(id, http2.ErrCodeProtocol) // trailers have no pseudo-headers (RFC 9113 §8.1)
		case f.reqBad || st.clen >= 0 && st.received != st.clen:
			// Malformed (RFC 9113 §8.1.1, §8.2.2): a connection-specific
			// field, or a body whose DATA did not add up to its
			// content-length, which DATA with END_STREAM is checked for.
			h.resetStream(id, http2.ErrCodeProtocol)
		default:
			h.trailerIn(st, f)
		}
		return
	}
	if id%2 == 1 && id <= h.lastID {
		if known, _ := h.lateReset(id); known {
			h.closedFrame(nil, id)
			return
		}
	}
	if id%2 == 0 || id <= h.lastID {
		h.fail(http2.ErrCodeProtocol)
		return
	}
	h.lastID = id
	ls := h.ls
	switch {
	case f.selfDep:
		h.resetStream(id, http2.ErrCodeProtocol) // a stream cannot depend on itself
		return
	case h.goaway:
		h.refuseStream(id, false, f.endStream)
		return
	case h.open >= ls.h2Streams:
		h.refuseStream(id, false, f.endStream)
		ls.st.refused.Add(1)
		return
	case h.open > 0 && !ls.spare(): // the reserve is for connections with none
		h.refuseStream(id, true, f.endStream) // our shortage: no reset token
		ls.st.refused.Add(1)
		return
	}
	clen, ok := h2CheckRequest(f)
	if !ok || f.endStream && clen > 0 {
		// Malformed (RFC 9113 §8.1.1); a content-length over a body
		// that ends with the head (END_STREAM on HEADERS) too, as one
		// over the DATA that ends it is (onData).
		h.resetStream(id, http2.ErrCodeProtocol)
		return
	}
	r := ls.acquire()
	if r == nil { // no arena free: refused, the block decoded all the same
		h.refuseStream(id, true, f.endStream) // our shortage: no reset token
		ls.st.refused.Add(1)
		return
	}
	st := ls.newH2Stream()
	*st = h2stream{id: id, r: r, clen: clen, sendWin: h.peerInit, recvWin: h2StreamWindow,
		remoteDone: f.endStream}
	h.streams[id] = st
	h.open++
	r.h2s = st
	if !h.lim.stalled && !h.headTimed {
		h.hc.setTimeout(nil)
	}
	ls.openRequest(r, h)
	r.isHead = f.method == "HEAD" // before a refusal: its answer has no body then
	switch {
	case f.truncated || !h2SetHead(r, f): // the head is over the limits
		h.refuseHead(st, 431)
		return
	case len(r.head.Target) > ls.cfg.MaxURIBytes:
		h.refuseHead(st, 414)
		return
	case !h2TargetOK(&r.head):
		h.refuseHead(st, 400) // as HTTP/1.1 refuses the same target or host
		return
	}
	if limit := ls.cfg.MaxBodyBytes; limit > 0 && clen > limit {
		h.refuseBody(st)
		return
	}
	room := int64(r.arena.Room() / 2)
	expect := r.head.Expect == h1.Expect100Continue && !f.endStream
	// limited: its route's MaxBytesHandler refuses the declared body. Its
	// handler then starts at once, with no 100 asking for what it will not
	// take, as on HTTP/1.1: a client holding the body back would otherwise
	// wait for its 100 while the body was awaited here.
	limited := false
	if expect && clen >= 0 {
		_, limit := ls.routeAtHead(r)
		limited = clen > limit
	}
	switch {
	case f.endStream:
		r.body.buffered = true
		h.dispatch(st)
		return
	case clen >= 0 && clen <= room && !limited:
		r.body.length = clen
		st.buffering = true
		r.body.data = r.arena.take(int(clen))[:0]
	case clen < 0:
		r.body.length = -1
		st.buffering = true
		r.body.data = r.arena.take(int(room))[:0]
	default:
		r.body.length = clen
		st.expect = expect && !limited // asked for when the handler first reads (bodyDemand)
		h.dispatch(st)
		return
	}
	if expect {
		// A body buffered before the handler starts is asked for at
		// once, as on HTTP/1.1 (continueBuffering).
		_ = h.inform(r, 100, nil)
	}
	h.timeBody(st)
	if duplex, _ := ls.routeAtHead(r); duplex {
		h.startSoon(st)
	}
}

// startSoon starts st's Duplex handler once the frames read with its head
// have been taken, without waiting for more: a body that came whole with
// its head (a small POST, in one write) is buffered as for any handler,
// and the rest stream from what has arrived (a client streaming both ways
// may wait for the response before it sends more). Posted: the loop runs
// it after the read in progress.
func (h *h2conn) startSoon(st *h2stream) {
	r, seq := st.r, st.r.seq
	if h.ls.l.Post(func() {
		if st.r == r && r.live(seq) && st.buffering {
			h.overflow(st)
			h.flush() // outside onFrame, which flushes what a frame's handling wrote
		}
	}) != nil {
		h.overflow(st) // the loop is stopping: start it now, to be cancelled
	}
}

// overflow starts the handler of st, whose body was being buffered, with
// what has arrived: it comes first, then the rest streams.
func (h *h2conn) overflow(st *h2stream) {
	r := st.r
	st.buffering = false
	r.body.data = r.arena.shrink(r.body.data)
	r.body.prefix = len(r.body.data) > 0
	h.dispatch(st)
}

// refuseHead answers a request whose head is over a limit with status,
// before any handler: as on HTTP/1.1, 431 for the head, 414 for the
// target, 400 for a target HTTP/1.1 refuses (h1.CheckPath). A body still to come is dropped, and reset (NO_ERROR) once the
// answer is out, as a refused body is (refuseBody).
func (h *h2conn) refuseHead(st *h2stream, status int) {
	h.ls.st.badRequests.Add(1)
	st.refused = true
	h.answerRefused(st, status)
}

// answerRefused answers st's request with status in place of a handler's
// response: none started, or the one that did has ended (handleEnded).
// The body, whatever of it comes, is nobody's.
func (h *h2conn) answerRefused(st *h2stream, status int) {
	r := st.r
	r.body.buffered, r.body.done = true, true
	r.hdone = true
	r.resp = errResponse(status)
	h.respond(st)
}

// h2CheckRequest checks a request's header block beyond what is checked
// for any block (RFC 9113 §8.2, §8.3.1), from what h2block.emit noted of
// its fields, and returns its content-length (-1: none); false is a
// malformed request: a stream PROTOCOL_ERROR.
func h2CheckRequest(f *h2block) (int64, bool) {
	if f.reqBad || f.method == "" || f.proto != "" {
		return 0, false
	}
	if f.method != "CONNECT" && (f.path == "" || f.scheme == "") {
		return 0, false
	}
	if f.method == "CONNECT" && (f.pseudo&(pseudoPath|pseudoScheme) != 0 || f.authority == "") {
		return 0, false // §8.5: an :authority, and neither :scheme nor :path
	}
	// §8.3.1: a host field naming another authority than :authority is
	// malformed (the handler would read one host and be routed by the
	// other); two host fields are too, as x/net/http2's server has it.
	if f.hosts > 1 || f.hosts == 1 && f.authority != "" && f.host != f.authority {
		return 0, false
	}
	return f.clen, true
}

// h2TargetOK reports whether HTTP/1.1 takes the target and host of h, an
// HTTP/2 request's head: a CONNECT's authority, or anything else's :path
// and its host (:authority, or the host field), which HTTP/1.1 answers
// 400 when httpguts does not take it as a Host.
func h2TargetOK(h *h1.Head) bool {
	if h.Form == h1.FormAuthority {
		return h1.CheckAuthority(h.Target) == 0
	}
	if len(h.Host) > 0 && !httpguts.ValidHostHeader(bytesStr(h.Host)) {
		return false
	}
	return h1.CheckPath(h.Method, h.Target) == 0
}

// proto20 is the Proto of every HTTP/2 request.
var proto20 = []byte("HTTP/2.0")

// h2SetHead copies the request's header block into r's arena as the head
// the protocol-neutral Request reads; false when it does not fit.
func h2SetHead(r *Request, f *h2block) bool {
	size := f.size
	if size > r.arena.Room()/2 || size > r.ls.cfg.MaxHeadBytes {
		return false
	}
	buf := r.arena.take(size)[:0]
	view := func(s string) []byte {
		n := len(buf)
		buf = append(buf, s...)
		return buf[n:len(buf):len(buf)]
	}
	fields := r.head.Fields[:0]
	h := &r.head
	*h = h1.Head{Proto: proto20}
	for _, hf := range f.fields {
		switch hf.Name {
		case ":method":
			h.Method = view(hf.Value)
		case ":path":
			h.Target = view(hf.Value)
		case ":authority":
			if hf.Value != "" { // else the host field's, as x/net/http2's server takes it
				h.Host = view(hf.Value)
			}
		case ":scheme", ":protocol":
		default:
			if hf.Name == "expect" && httpguts.HeaderValuesContainsToken([]string{hf.Value}, "100-continue") {
				h.Expect = h1.Expect100Continue // other expectations are ignored, as net/http's HTTP/2 server does
			}
			if len(fields) >= r.ls.cfg.MaxFields {
				return false
			}
			fld := h1.Field{Name: view(hf.Name), Value: view(hf.Value)}
			if h.Host == nil && hf.Name == "host" {
				h.Host = fld.Value
			}
			fields = append(fields, fld)
		}
	}
	h.Fields = fields
	if string(h.Method) == "CONNECT" {
		// The target is the authority, as an HTTP/1.1 CONNECT's (and
		// net/http's RequestURI for an HTTP/2 one).
		h.Form, h.Target = h1.FormAuthority, h.Host
		return true
	}
	h.Path = h.Target
	if i := strings.IndexByte(bytesStr(h.Target), '?'); i >= 0 {
		h.Path, h.Query = h.Target[:i], h.Target[i+1:]
	}
	if string(h.Target) == "*" {
		h.Form = h1.FormAsterisk
	}
	return true
}

// onData takes DATA: into the arena while the body is being buffered,
// else to the handler (or held for it while it does not read).
func (h *h2conn) onData(f *http2.DataFrame) {
	n := int64(f.Header().Length) // padding included: flow control counts it
	h.recvWin -= n
	if h.recvWin < 0 {
		h.fail(http2.ErrCodeFlowControl)
		return
	}
	h.recvUnacked += n
	if h.recvUnacked >= h2ConnWindow/2 {
		_ = h.fr.WriteWindowUpdate(0, uint32(h.recvUnacked))
		h.recvWin += h.recvUnacked
		h.recvUnacked = 0
	}
	st := h.streams[f.StreamID]
	switch {
	case st == nil && f.StreamID > h.lastID:
		h.fail(http2.ErrCodeProtocol) // an idle stream
		return
	case st == nil || st.remoteDone:
		h.closedFrame(st, f.StreamID)
		return
	}
	st.recvWin -= n
	if st.recvWin < 0 {
		h.resetStream(st.id, http2.ErrCodeFlowControl)
		return
	}
	st.expect = false // the client sends the body without waiting: no 100 is owed
	p, end := f.Data(), f.StreamEnded()
	st.unacked += n - int64(len(p))
	st.received += int64(len(p))
	if st.clen >= 0 && (st.received > st.clen || end && st.received != st.clen) {
		h.resetStream(st.id, http2.ErrCodeProtocol)
		return
	}
	if st.received > st.bodyLimit(h.ls) && !st.refused {
		if end {
			st.remoteDone = true // the body has ended: no RST_STREAM is owed to stop it
		}
		h.refuseBody(st)
		if st.reset || st.closed {
			return
		}
	}
	h.bodyIn(st, p, end)
}

// bodyLimit is the bound of st's body: its request's, or MaxBodyBytes
// once the request has ended (the rest of the body is dropped then, but
// counted against the limit all the same).
func (st *h2stream) bodyLimit(ls *loopState) int64 {
	if st.r != nil {
		return st.r.bodyLimit
	}
	return ls.maxBody
}

// refuseBody refuses st's body, over MaxBodyBytes (its content-length, or
// what has arrived of it): 413 is the answer, in place of its handler's
// response (a handler reading the body is cancelled: its OnData never
// sees the end), and what the client still sends is dropped. A response
// the handler has already made whole (its DATA may still wait for the
// window) is kept instead of the 413. Once our END_STREAM is out,
// RST_STREAM(NO_ERROR) asks the client to stop sending (RFC 9113 §8.1:
// the response is complete). A Stream that has begun and not ended
// cannot become the 413: the stream is reset (CANCEL).
func (h *h2conn) refuseBody(st *h2stream) {
	var why error
	if r := st.r; r != nil {
		why = maxBytesCause(r.bodyLimit)
	}
	h.refuseBodyWith(st, 413, why)
}

// refuseBodyWith is refuseBody with the status that answers (413, or 408
// for a body too slow: bodyTimedOut) and why the handler, if one reads
// the body, is cancelled.
func (h *h2conn) refuseBodyWith(st *h2stream, status int, why error) {
	h.ls.st.badRequests.Add(1)
	st.refused = true
	r := st.r
	if r != nil {
		r.body.done = true // bodyIn drops the rest
		st.rbuf, st.rend = nil, false
		r.cancelFor(why)
	}
	switch {
	case r == nil || r.written || st.headersSent && (r.stream.p == nil || r.stream.ended): // answered already
		h.stopBody(st)
	case st.headersSent:
		h.resetStream(st.id, http2.ErrCodeCancel)
	default:
		r.refusal = status
		if hd := r.h; hd != nil {
			hd.Cancel() // handleEnded answers
			return
		}
		st.buffering = false // its handler never starts
		h.answerRefused(st, status)
	}
}

// stopBody ends a refused body that is still arriving, once its answer
// is out: RST_STREAM(NO_ERROR).
func (h *h2conn) stopBody(st *h2stream) {
	if st.refused && st.localDone && !st.remoteDone && !st.reset {
		h.resetCrossed(st.id, http2.ErrCodeNo, true)
	}
}

// bodyIn takes body bytes p of st (end: the last).
func (h *h2conn) bodyIn(st *h2stream, p []byte, end bool) {
	if end {
		st.remoteDone = true
	}
	r := st.r
	switch {
	case r == nil || st.reset || r.body.done: // the request has ended, or will not read: dropped
		st.unacked += int64(len(p))
	case st.buffering && len(p) <= cap(r.body.data)-len(r.body.data):
		r.body.data = append(r.body.data, p...)
		st.unacked += int64(len(p))
		if !end {
			h.bodyPiece(st, h.ls.l.Now())
		} else {
			st.buffering = false
			r.body.data = r.arena.shrink(r.body.data)
			r.body.buffered = true
			h.dispatch(st)
		}
	case st.buffering: // a body without content-length outgrew the room: it streams from here
		st.rbuf = append(st.rbuf, p...)
		st.rend = end
		h.overflow(st)
	case r.body.ready() && len(st.rbuf) == 0:
		if len(p) > 0 || end {
			r.body.deliver(p, end)
		}
		st.unacked += int64(len(p))
		if st.bodyDue != 0 && !end {
			h.bodyPiece(st, h.ls.l.Now())
		}
	default:
		st.rbuf = append(st.rbuf, p...)
		st.rend = end
	}
	h.credit(st)
	if end {
		h.untimeBody(st)
		h.maybeClose(st) // answered before the body's end: both sides are done now
	}
}

// credit gives consumed body bytes back to the client (WINDOW_UPDATE),
// unless what the stream has to send is past streamPendMax (an echo then
// waits for its client to read) or its body was refused (what follows is
// dropped, and the stream's window closes on it).
func (h *h2conn) credit(st *h2stream) {
	if st.unacked == 0 || st.remoteDone || st.reset || st.refused || len(st.out)-st.off >= streamPendMax {
		return
	}
	if st.unacked >= h2StreamWindow/4 || st.recvWin < h2StreamWindow/4 {
		_ = h.fr.WriteWindowUpdate(st.id, uint32(st.unacked))
		st.recvWin += st.unacked
		st.unacked = 0
	}
}

func (h *h2conn) bodyDemand(r *Request) {
	st := r.h2s
	if st == nil || h.closed || !r.body.ready() {
		return
	}
	if st.expect {
		// Its client holds the body back until asked (RFC 9110 §10.1.1).
		st.expect = false
		_ = h.inform(r, 100, nil)
	}
	h.timeStream(st)
	if len(st.rbuf) == 0 && !st.rend {
		return
	}
	p, end := st.rbuf, st.rend
	// The array goes with what it held: kept for the next pause, a
	// stream would hold the largest it ever needed (up to its window,
	// and append's slack) for as long as it lived.
	st.rbuf, st.rend = nil, false
	r.body.deliver(p, end)
	st.unacked += int64(len(p))
	h.credit(st)
	h.flush()
}

// dispatch runs st's handler and takes its reply: an immediate response
// is sent at once; a handle is adopted into the connection's scope and its
// end, a cleanup on it, sends its response and releases the arena.
func (h *h2conn) dispatch(st *h2stream) {
	ls, r := h.ls, st.r
	h.untimeBody(st)
	reply := ls.serve(r)
	if s := &r.stream; s.p != nil && reply.h != s.p.Handle() {
		s.p.Reject(ErrStreamClosed) // a stream begun and not the reply: dropped
		s.p = nil
		if st.headersSent { // its head is out: nothing else can follow
			dropReply(r, reply)
			h.resetStream(st.id, http2.ErrCodeInternal)
			h.maybeRelease(st)
			return
		}
	}
	if reply.h == nil {
		r.resp = reply.resp
		r.hdone = true
		h.respond(st)
		return
	}
	ls.adoptReply(r, reply.h)
	if r.stream.p != nil && !st.headersSent && !st.reset {
		h.startStream(st) // a stream's head goes at once (server-sent events)
	}
}

// handleEnded: r's handle has finished (loopState.endHandle): its
// response is sent (a cancelled handle sends nothing), and the arena goes
// back once that is written. On the loop.
func (h *h2conn) handleEnded(r *Request, v Response, err error, cancelled bool) {
	st := r.h2s
	switch {
	case st == nil || r.written || st.reset: // the stream or the connection is gone
	case r.refusal != 0: // its body was refused (refuseBody)
		h.answerRefused(st, r.refusal)
	case cancelled:
		h.resetStream(st.id, http2.ErrCodeCancel)
	case aborted(err): // http.ErrAbortHandler: reset as net/http's server does
		h.resetStream(st.id, http2.ErrCodeInternal)
	case r.stream.p != nil && r.stream.refused != nil && !st.headersSent:
		// Its head could not go out, ended or not: a 500 in its place.
		r.stream.p = nil
		r.resp = errResponse(500)
		h.respond(st)
	case r.stream.p != nil:
		if !r.stream.ended {
			if st.headersSent {
				h.resetStream(st.id, http2.ErrCodeInternal)
			} else {
				r.stream.p = nil
				r.resp = errResponse(500)
				h.respond(st)
			}
		}
	case err != nil:
		r.resp = errResponse(500)
		h.respond(st)
	default:
		r.resp = v
		h.respond(st)
	}
	if st != nil {
		h.maybeRelease(st)
	}
	h.flush()
}

// resetStream sends RST_STREAM(code) for id, and ends the stream if it is
// open: its handler is cancelled.
func (h *h2conn) resetStream(id uint32, code http2.ErrCode) { h.resetWith(id, code, false) }

// resetWith is resetStream; ours says the reset is for the server's own
// reason whatever the code (no arena free), so that it spends a control
// frame but no reset token (spendRST). It reports whether it sent the
// reset (not on a connection ending, a stream reset already, or a budget
// spent).
func (h *h2conn) resetWith(id uint32, code http2.ErrCode, ours bool) bool {
	if h.closed || h.dead {
		return false
	}
	st := h.streams[id]
	if st != nil && st.reset || ours && !h.spendControl() || !ours && !h.spendRST(code) {
		return false
	}
	_ = h.fr.WriteRSTStream(id, code)
	h.noteReset(id, true)
	if st != nil {
		st.remoteDone = true // RST closes both sides
		h.abortStream(st)
	}
	return true
}

// abortStream ends st, reset by either side: nothing more is sent, the
// handler's handle is cancelled (its end, adoptReply, releases the arena), and a
// response not sent is counted suppressed.
func (h *h2conn) abortStream(st *h2stream) {
	h.countOut(st)
	st.reset = true
	st.rbuf = nil
	st.out, st.off = nil, 0
	if r := st.r; r != nil {
		r.gone = true
		h.ls.suppress(r)
		r.cancelFor(ErrClientGone) // unless it was refused
		if hd := r.h; hd != nil {
			hd.Cancel()
		}
		neverDispatched(st)
		h.maybeRelease(st)
	}
	h.maybeClose(st)
}

// countOut stops counting st toward ls.h2Streams, once: when it is reset
// (closed, RFC 9113 §5.1.2, although its handler, cancelled, may hold its
// request a while longer), or forgotten. What reset streams hold stays
// bounded: each keeps an arena, and resets spend the rapid-reset budget.
func (h *h2conn) countOut(st *h2stream) {
	if !st.reset && !st.closed {
		h.open--
	}
}

// neverDispatched ends the handler side of a stream whose body was still
// being buffered: its handler never started, so no handle will end it.
func neverDispatched(st *h2stream) {
	if st.buffering {
		st.buffering = false
		st.r.hdone = true
	}
}

// maybeRelease ends st's request once its response is written (or never
// will be) and its handle has finished: its scope closes and its arena
// goes back.
func (h *h2conn) maybeRelease(st *h2stream) {
	r := st.r
	if r == nil || !r.written || !r.hdone || r.released {
		return
	}
	r.released = true
	st.r = nil
	h.untimeBody(st)
	st.buffering = false
	st.rbuf = nil
	r.h2s = nil
	h.ls.closeRequest(r)
	if st.localDone && !st.remoteDone && !st.reset {
		// The response is whole and the rest of the body is nobody's.
		// Without a reset the stream would stay open, the window
		// credited for bytes dropped, as long as the client liked, and
		// keep the connection from ever being idle.
		h.resetEarly(st)
	}
	h.maybeClose(st)
}

// maybeClose forgets st once both sides are done and its request ended.
func (h *h2conn) maybeClose(st *h2stream) {
	if st.r != nil || st.closed || !st.remoteDone || !st.reset && !st.localDone {
		return
	}
	h.countOut(st)
	st.closed = true // the callers may still look at it: this stops a second close
	delete(h.streams, st.id)
	h.streamGone()
	if !st.waiting { // h.waiting still holds one that is
		h.ls.freeH2Stream(st)
	}
	if len(h.streams) == 0 && !h.closed {
		if h.goaway {
			h.maybeEnd()
		} else if !h.headTimed { // untimeHead sets it, once the block is whole
			h.hc.idleAfterFlush()
		}
	}
}

// responses

// respond sends r's whole response: HEADERS, and DATA as the windows
// allow.
func (h *h2conn) respond(st *h2stream) {
	r := st.r
	resp := &r.resp
	status := resp.Status
	if status == 0 {
		status = 200
	}
	body := resp.Body
	clen, ok := r.length(status, resp) // a HEAD's may be GET's
	if !hasContent(status) {
		body, clen = nil, -1 // no content-length (RFC 9110 §8.6)
	}
	if r.isHead {
		body = nil
	}
	if !ok || !h.writeHeaders(st, status, resp.Header, clen, len(body) == 0, false) {
		why := errBadLength.Error()
		switch {
		case !finalStatus(status):
			why = errStatus.Error()
		case ok:
			why = "a field HTTP/2 cannot carry"
		}
		h.ls.logRefused(r, why)
		e := errResponse(500)
		body = e.Body
		if r.isHead {
			body = nil
		}
		h.writeHeaders(st, 500, e.Header, int64(len(e.Body)), len(body) == 0, false)
	}
	if resp.Close {
		h.shutdown() // GOAWAY: the streams open go on, no new one
	}
	if len(body) > 0 {
		st.out, st.off, st.outEnd = body, 0, true
		h.sendData(st)
		return
	}
	h.localEnd(st)
}

// localEnd: our END_STREAM is sent: the response is written.
func (h *h2conn) localEnd(st *h2stream) {
	st.localDone = true
	if r := st.r; r != nil {
		r.written = true
		h.maybeRelease(st)
	}
	h.stopBody(st)
	h.maybeClose(st)
}

// writeHeaders encodes a response head and writes it as HEADERS (and
// CONTINUATION) frames; false, with nothing written, when a field is
// invalid or the server's own, or the status is not a final one. Status 0
// is 200. clen < 0: no content-length. A Stream's header may carry
// content-length (stream), which Request.Stream checked: clen is its value.
func (h *h2conn) writeHeaders(st *h2stream, status int, hdr []Field, clen int64, end, stream bool) bool {
	if status == 0 {
		status = 200
	}
	if !finalStatus(status) {
		return false
	}
	h.hb.b = h.hb.b[:0]
	num := h.num[:0] // a local array would escape through the encoder's interface
	h.field(":status", bytesStr(strconv.AppendInt(num, int64(status), 10)))
	for _, f := range hdr {
		name, ok := h.lower(f.Name)
		switch {
		case !ok || !httpguts.ValidHeaderFieldValue(f.Value):
			return false
		case name == "content-length" && (clen >= 0 || stream):
			continue // checked (Request.length, Request.Stream): clen is its value
		case name == "content-length", name == "date", connectionField(name):
			return false
		}
		h.field(name, f.Value)
	}
	if clen >= 0 {
		h.field("content-length", bytesStr(strconv.AppendInt(num, clen, 10)))
	}
	h.date()
	h.writeBlock(st.id, end)
	st.headersSent = true
	return true
}

// writeBlock writes the header block encoded in h.hb as a HEADERS frame
// of stream id (and CONTINUATION frames), END_STREAM on it if end.
func (h *h2conn) writeBlock(id uint32, end bool) {
	block := h.hb.b
	first := true
	for first || len(block) > 0 {
		k := min(len(block), h.peerMaxFrame)
		frag := block[:k]
		block = block[k:]
		if first {
			_ = h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag,
				EndStream: end, EndHeaders: len(block) == 0})
			first = false
		} else {
			_ = h.fr.WriteContinuation(id, len(block) == 0, frag)
		}
	}
}

// date encodes the Date field. Its encoding is kept while the value stays
// (a second): Huffman-coding it was a few per cent of a small response's
// time. The encoder has no dynamic table and Date never comes first in a
// block (where a table size update would be), so the bytes do not depend
// on the block they go in.
func (h *h2conn) date() {
	d := h.ls.dateValue()
	if string(d) == string(h.dateRaw) {
		h.hb.b = append(h.hb.b, h.dateEnc...)
		return
	}
	n := len(h.hb.b)
	_ = h.enc.WriteField(hpack.HeaderField{Name: "date", Value: bytesStr(d)}) // kept here, not in encCache
	h.dateEnc = append(h.dateEnc[:0], h.hb.b[n:]...)
	h.dateRaw = append(h.dateRaw[:0], d...)
}

// lower returns name in lowercase (a view of a scratch buffer when it had
// to change), and whether it is a valid field name.
func (h *h2conn) lower(name string) (string, bool) {
	if !httpguts.ValidHeaderFieldName(name) {
		return "", false
	}
	i := 0
	for i < len(name) && (name[i] < 'A' || name[i] > 'Z') {
		i++
	}
	if i == len(name) {
		return name, true
	}
	b := append(h.lname[:0], name...)
	for ; i < len(b); i++ {
		if c := b[i]; 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	h.lname = b
	return bytesStr(b), true
}

// sendData sends what st has to send, as far as the windows and the write
// queue allow; the rest waits for a WINDOW_UPDATE or the drain. A stream
// in the waiting list sends nothing here: its turn comes from that list
// (sendWaiting), after the streams ahead of it, whatever woke it (a
// WINDOW_UPDATE or SETTINGS of its own, or its handler's Write) - else a
// client that keeps opening one stream's window would keep it first.
func (h *h2conn) sendData(st *h2stream) {
	if st.waiting {
		return
	}
	var trailer []Field // sent after the last DATA, which then does not end the stream
	if r := st.r; r != nil && st.outEnd {
		trailer = r.stream.endTrailer()
	}
	turn := 0
	for !st.reset && !st.localDone && !h.dead && !h.closed {
		n := len(st.out) - st.off
		if n == 0 {
			if st.outEnd {
				if len(trailer) > 0 {
					h.writeTrailer(st, trailer)
				} else {
					_ = h.fr.WriteData(st.id, true, nil)
				}
				h.localEnd(st)
			}
			break
		}
		// DATA frames of 16 KiB at most, whatever larger frames the
		// client allows (as nghttp2 sends them): the write queue's
		// bound (Full) is checked between frames, so a frame of 16 MiB
		// would queue that much past it for a client that does not read.
		k := min(int64(n), st.sendWin, h.sendWin, h2DefaultFrame)
		if k > 0 && turn >= h2TurnMax && !h.c.Full() {
			// Its turn is over: the others, and the loop's other
			// connections, go first (a client that reads as fast as
			// we write would otherwise hold the loop until the whole
			// body is out).
			h.wait(st)
			h.postTurn()
			return
		}
		if k <= 0 || h.c.Full() {
			if k <= 0 { // the client's window: a full queue is the kernel's pace, WriteTimeout's
				h.windowStall(st)
				h.stall()
			}
			if k > 0 || h.sendWin <= 0 {
				h.wait(st) // the connection's window or its write queue: any stream's turn
			}
			return // a stream window: its WINDOW_UPDATE sends it
		}
		end := st.outEnd && int(k) == n && len(trailer) == 0
		_ = h.fr.WriteData(st.id, end, st.out[st.off:st.off+int(k)])
		st.off += int(k)
		turn += int(k)
		st.sendWin -= k
		h.sendWin -= k
		h.stallSent(st, k)
		h.unstall()
		if len(h.out.b) >= h2OutFlush {
			h.flush() // so that Full tells the truth
		}
		if end {
			h.localEnd(st)
			break
		}
	}
	if len(st.out) == st.off && !st.reset {
		st.out, st.off = st.out[:0], 0 // all sent: the room is for what comes next
	}
	st.stallDue = 0 // all sent, or the stream is over: no window holds it
	h.drained(st)
}

// drained tells a stream that stopped being Full, and gives its client
// back the body bytes withheld meanwhile.
func (h *h2conn) drained(st *h2stream) {
	if r := st.r; r != nil && st.full && !h.streamFull(r) {
		st.full = false
		if r.stream.onDrain != nil {
			r.stream.onDrain()
		}
	}
	h.credit(st)
}

// wait puts st in the connection's queue of streams waiting to send.
func (h *h2conn) wait(st *h2stream) {
	if !st.waiting {
		st.waiting = true
		h.waiting = append(h.waiting, st)
	}
}

// postTurn lets the waiting streams go on once the loop has done what
// else it has to (posted once, however many streams wait).
func (h *h2conn) postTurn() {
	if h.turnPosted {
		return
	}
	h.turnPosted = true
	if h.ls.l.Post(func() {
		h.turnPosted = false
		if !h.dead && !h.closed && !h.c.Full() {
			h.sendWaiting()
			h.flush()
		}
	}) != nil {
		h.turnPosted = false // the loop is stopping: the connection ends with it
	}
}

// sendWaiting lets the waiting streams send, in turn (round robin): a
// stream that has had its turn and still waits goes after those that
// have not had theirs, so that one large response cannot hold the
// others back until it is whole.
func (h *h2conn) sendWaiting() {
	ws := h.waiting
	h.waiting = nil
	for i, st := range ws {
		st.waiting = false
		h.sendData(st)
		if h.sendWin <= 0 || h.c.Full() || h.turnPosted {
			again := h.waiting // those that had their turn and wait again: after the rest
			h.waiting = nil
			h.waitAgain(ws[i+1:])
			h.waitAgain(again)
			return
		}
	}
}

// waitAgain puts sts back in the waiting list, in order, but those reset
// meanwhile.
func (h *h2conn) waitAgain(sts []*h2stream) {
	for _, st := range sts {
		if st.waiting = false; !st.reset {
			h.wait(st)
		}
	}
}

// streams (Request.Stream)

// startStream sends the head of st's Stream.
// A head refused (by Request.Stream, or here: a field HTTP/2 cannot carry)
// is not sent: the stream's handle fails, and a 500 goes in its place
// (handleEnded).
func (h *h2conn) startStream(st *h2stream) {
	r := st.r
	s := &r.stream
	clen := s.length // a 204's or 304's has been refused
	if s.refused != nil {
		return
	}
	if !h.writeHeaders(st, s.status, s.hdr, clen, s.headOnly, true) {
		s.refuse(errBadStreamHeader)
		return
	}
	if s.closeConn {
		h.shutdown()
	}
	if s.headOnly {
		h.localEnd(st)
		r.endHeadStream()
	}
}

// errBadStreamHeader: a Stream's header has a field HTTP/2 cannot carry.
var errBadStreamHeader = errors.New("httpd: invalid stream header field")

func (h *h2conn) streamWrite(r *Request, p []byte) error {
	st := r.h2s
	if st == nil || st.reset || h.closed || h.dead {
		return ErrStreamClosed
	}
	s := &r.stream
	if s.length >= 0 && s.sent+int64(len(p)) > s.length {
		return ErrContentLength
	}
	s.sent += int64(len(p))
	if !st.headersSent {
		h.startStream(st)
		if st.reset || r.gone || s.refused != nil {
			return ErrStreamClosed
		}
	}
	if s.headOnly {
		return nil
	}
	if st.out == nil {
		if s.pend == nil {
			s.pend = h.ls.takePend()
		}
		st.out = s.pend[:0] // the Request's buffer, kept from stream to stream
	} else if st.off > 0 {
		st.out = st.out[:copy(st.out, st.out[st.off:])]
		st.off = 0
	}
	st.out = append(st.out, p...)
	s.pend = st.out[:0]
	h.sendData(st)
	h.flush()
	return nil
}

func (h *h2conn) streamEnd(r *Request) {
	st := r.h2s
	if st == nil || st.reset || h.closed || h.dead {
		return
	}
	if !st.headersSent {
		if h.startStream(st); !st.headersSent {
			return // refused: a 500 goes in its place
		}
	}
	if s := &r.stream; s.length >= 0 && s.sent != s.length && !s.headOnly {
		h.resetStream(st.id, http2.ErrCodeInternal) // short of its content-length
		h.flush()
		return
	}
	if !st.localDone {
		st.outEnd = true
		h.sendData(st)
	}
	h.flush()
}

func (h *h2conn) streamFull(r *Request) bool {
	st := r.h2s
	if st == nil {
		return false
	}
	queue := h.c.Full()
	full := len(st.out)-st.off >= streamPendMax || queue
	st.full = st.full || full
	h.queueFull = h.queueFull || queue
	return full
}

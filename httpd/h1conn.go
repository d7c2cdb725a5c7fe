package httpd

import (
	"crypto/tls"
	"errors"
	"net/netip"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// The HTTP/1.1 engine (RFC 9112): one h1conn per connection, on its loop.
//
// Reading goes through the connection's framer (aio.Conn.OnFrame), whose
// split function is the engine's parser: a head is a frame, and so is each
// piece of a body. The framer keeps, in the connection's own carry, only a
// head that spans reads and the bytes held back while the engine does not
// read, so an idle connection keeps no buffer. When the engine cannot take
// the next frame (no arena free, the pipeline full, a handler that has not
// asked for its body yet), split answers an empty frame without consuming
// anything, and the frame callback pauses reading: the framer holds the
// bytes until ResumeRead, and TCP flow control holds the client.
//
// A head is parsed in place (in the read buffer or the carry) into the
// loop's scratch Head, then copied into the request's arena with every
// view rebased there, so that the request outlives the read buffer.
//
// Requests wait in the connection's queue, in order, from the start of
// their handler to the write of their response: a response that is ready
// early waits for those before it (pump), and at most MaxPipeline requests
// are in the queue before reading stops.

// What the connection is reading (h1conn.rstate).
const (
	rsHead    = iota // request heads
	rsBody           // a Content-Length body: remaining bytes
	rsChunked        // a chunked body
	rsDiscard        // nothing more: the connection closes after its responses
)

// What split found, for onFrame (h1conn.tok).
const (
	tokHead     = iota + 1 // a request head
	tokBody                // body bytes
	tokStall               // nothing until reading resumes: h1conn.want says why
	tokOverflow            // a chunked body outgrew the arena: it streams from here
	tokError               // the request is refused: h1conn.perr
	tokH2                  // the HTTP/2 client preface: the connection is HTTP/2's (h2conn.go)
)

// Why reading is stalled (h1conn.stall, a set).
const (
	stallArena    = 1 << iota // no arena free
	stallPipeline             // MaxPipeline requests in the queue
	stallBody                 // the body waits for its handler (OnData, Resume)
	stallDiscard              // nothing more is a request: the FIN's linger reads it
)

// discardMax bounds what is read and dropped after a connection's last
// request while its responses are still going out: enough for requests
// pipelined past a "Connection: close" and for the client's EOF after
// them to be seen (a client gone away cancels its handlers), not for a
// client that sends on without reading to keep the loop busy dropping.
const discardMax = 64 << 10

// streamPendMax bounds what a stream writes before its turn while the
// body it may be echoing comes from its own connection: past it, reading
// the body stalls until the stream's turn comes.
const streamPendMax = 64 << 10

// smallWrite: a response head and a body up to this size go out in one
// write.
const smallWrite = 16 << 10

// h1conn is a connection's HTTP/1.1 state. Owned by its loop.
type h1conn struct {
	ls *loopState
	c  *aio.Conn

	parser    h1.Parser
	rstate    uint8
	tok       uint8 // split's finding, for onFrame
	want      uint8 // tokStall: the stall reason
	stall     uint8 // why reading is stalled now
	paused    bool  // the engine called PauseRead
	buffering bool  // cur's body is being buffered: its handler has not started
	closeAft  bool  // no more requests: close after the queued responses
	dropBody  bool  // rsDiscard reads and drops the rest of a body its handler left
	discarded int   // bytes rsDiscard dropped after the last request (discardMax)
	finished  bool  // the last response is written: FIN sent, waiting for the peer's
	eof       bool  // the client has finished sending
	closed    bool
	aborted   bool      // abort was called: nothing more is written, the close follows the flush
	flushWait bool      // idleAfterFlush waits for the queue to reach the kernel
	begun     bool      // a request head has arrived (or TLS chose no h2): the preface can no longer come
	alpnH2    bool      // ALPN chose h2: the client preface must come first
	perr      *h1.Error // tokError's
	errStatus int       // a refusal to answer once the queue is written (-1: none, just close)
	errHead   bool      // the refused request is a HEAD: its answer has no body
	cur       *Request  // the request whose body is being read
	remaining int64     // rsBody: bytes left
	reserved  *Request  // an arena taken for the next head
	h2        *h2conn   // the connection speaks HTTP/2: everything goes there

	qhead, qtail *Request // requests from dispatch to their response's write
	nq           int

	links    [linkCount]link
	deadline time.Duration // in headQ or idleQ: the loop time it closes at
	bodyBy   time.Duration // the loop time the body being buffered is late at (Config.BodyTimeout); 0: none
}

// accept serves a new connection. On the loop.
func (ls *loopState) accept(c *aio.Conn) {
	if ls.draining {
		c.Close()
		return
	}
	hc := &h1conn{ls: ls, c: c}
	if st, ok := c.TLS(); ok {
		// Over TLS the protocol is the one ALPN agreed (RFC 9113 §3.2,
		// RFC 7301 §3.2), never guessed from the first bytes: h2 must
		// begin with the client preface, anything else is HTTP/1.1,
		// where a preface is a request line like any other.
		hc.alpnH2 = st.NegotiatedProtocol == "h2"
		hc.begun = !hc.alpnH2
	}
	cfg := ls.cfg
	hc.parser.Limits = h1.Limits{MaxHead: cfg.MaxHeadBytes, MaxTarget: cfg.MaxURIBytes,
		MaxFields: cfg.MaxFields, MaxBody: cfg.MaxBodyBytes}
	ls.conns.push(hc)
	ls.st.connsOpen.Add(1)
	hc.setTimeout(&ls.headQ)
	if cfg.WriteTimeout > 0 { // the same aio.Conn serves HTTP/2: it holds there too
		_ = c.SetWriteTimeout(cfg.WriteTimeout)
	}
	_ = c.OnClose(hc.onClose)
	_ = c.OnEOF(hc.onEOF)
	_ = c.OnDrain(hc.onDrain)
	_ = c.OnFrame(hc.split, max(cfg.MaxHeadBytes, 2*h1.DefaultMaxTrailer), hc.onFrame)
}

// maxEmptyLines bounds the CR and LF bytes ignored before a request-line
// (emptyLines): net/http's server ignores as many after a POST.
const maxEmptyLines = 4

// emptyLines is how many bytes of empty lines (CRLF, or a bare LF), up to
// maxEmptyLines, begin data: the empty lines before a request-line, which
// RFC 9112 §2.2 asks a server to ignore (old clients send a CRLF after a
// POST body, which its Content-Length does not count). More is not an
// empty line but garbage, which the parser refuses, and so is a CR
// without its LF (§2.2: a bare CR is invalid). cut: data ends in a CR
// that may be an empty line's, its LF still to come.
func emptyLines(data []byte) (n int, cut bool) {
	for n < len(data) && n < maxEmptyLines {
		switch {
		case data[n] == '\n':
			n++
		case data[n] == '\r' && n+2 <= maxEmptyLines:
			if n+1 == len(data) {
				return n, true
			}
			if data[n+1] != '\n' {
				return n, false
			}
			n += 2
		default:
			return n, false
		}
	}
	return n, false
}

// split is the framer's SplitFunc: it finds the next frame and says what
// it is in hc.tok. It consumes nothing when the engine cannot take it.
func (hc *h1conn) split(data []byte, atEOF bool) (int, []byte, error) {
	if len(data) == 0 {
		return 0, nil, nil
	}
	switch hc.rstate {
	case rsHead:
		if !hc.begun {
			switch h2Preface(data) {
			case prefacePart:
				return 0, nil, nil
			case prefaceWhole:
				hc.tok = tokH2
				return h2PrefaceLen, data[:h2PrefaceLen], nil
			}
			if hc.alpnH2 {
				return 0, nil, errBadPreface
			}
		}
		if hc.pipelineFull() {
			return hc.stallTok(data, stallPipeline)
		}
		skip, cut := emptyLines(data)
		if cut {
			return 0, nil, nil // an empty line's CRLF, cut by the read
		}
		n, err := hc.parser.Parse(data[skip:], &hc.ls.head)
		switch {
		case err != nil:
			hc.perr, _ = err.(*h1.Error)
			hc.tok = tokError
			return len(data), data[:0], nil
		case n == 0:
			// The head has begun (empty lines alone are no head: the
			// connection stays idle): HeaderTimeout runs.
			if skip < len(data) && hc.links[linkTime].in != &hc.ls.headQ {
				hc.setTimeout(&hc.ls.headQ)
			}
			return 0, nil, nil
		case !hc.takeArena():
			hc.parser.Reset()
			return hc.stallTok(data, stallArena)
		}
		hc.tok = tokHead
		return skip + n, data[skip : skip+n], nil
	case rsBody:
		if !hc.buffering && hc.bodyBlocked() {
			return hc.stallTok(data, stallBody)
		}
		k := int(min(int64(len(data)), hc.remaining))
		hc.tok = tokBody
		return k, data[:k], nil
	case rsChunked:
		r := hc.cur
		in := data
		if hc.buffering {
			room := cap(r.body.data) - len(r.body.data)
			if room == 0 {
				hc.tok = tokOverflow
				return 0, data[:0], nil
			}
			in = data[:min(len(data), room)]
		} else if hc.bodyBlocked() {
			return hc.stallTok(data, stallBody)
		}
		p, n, err := r.dec.Decode(in)
		switch {
		case err != nil:
			hc.perr, _ = err.(*h1.Error)
			hc.tok = tokError
			return len(data), data[:0], nil
		case n == 0 && len(in) < len(data):
			hc.tok = tokOverflow // what fits is not a whole framing line
			return 0, data[:0], nil
		case n == 0:
			return 0, nil, nil
		}
		if p == nil {
			p = data[:0]
		}
		if r.dec.Done() {
			hc.ls.keepTrailer(r.dec.Trailer) // views into data: copied while it is valid
		}
		hc.tok = tokBody
		return n, p, nil
	default: // rsDiscard
		if !hc.dropBody && hc.qtail != nil && hc.qtail.upgrade {
			// What follows a last request that asks to switch protocols
			// is its handler's if it takes the connection: held, not dropped.
			return hc.stallTok(data, stallPipeline)
		}
		if hc.dropBody || hc.discarded+len(data) <= discardMax {
			hc.discarded += len(data) // the rest of a body is not counted
			return len(data), nil, nil
		}
		// What follows the last request is nobody's, and reading all
		// of it before the responses are out would let a client that
		// sends on without reading keep a core busy until
		// WriteTimeout: past discardMax it waits, and after the FIN
		// the lingering close reads and drops it (aio.Conn.Drain keeps
		// this pause until then).
		return hc.stallTok(data, stallDiscard)
	}
}

// stallTok is split's answer when the engine cannot take the next frame:
// an empty frame, consuming nothing, on which onFrame pauses reading.
func (hc *h1conn) stallTok(data []byte, why uint8) (int, []byte, error) {
	hc.tok, hc.want = tokStall, why
	return 0, data[:0], nil
}

// bodyBlocked reports whether the body being read cannot take bytes now:
// its handler has not asked for them, or paused, or its response waits
// for its turn with too much written already.
func (hc *h1conn) bodyBlocked() bool {
	r := hc.cur
	return !r.body.ready() || r.stream.p != nil && r != hc.qhead && len(r.stream.pend) >= streamPendMax
}

// takeArena reserves an arena for the head split found, and reports
// whether it got one: not while other connections wait for one before it,
// nor one of the loop's reserve while it holds others (loopState.spare).
func (hc *h1conn) takeArena() bool {
	if hc.reserved != nil {
		return true
	}
	ls := hc.ls
	if ls.waiters.head != nil || hc.holdsArena() && (ls.waitersMore.head != nil || !ls.spare()) {
		return false
	}
	hc.reserved = ls.acquire()
	return hc.reserved != nil
}

// pipelineFull reports whether no head is parsed now: MaxPipeline
// requests are queued, or the first asks to switch protocols (Upgrade,
// or CONNECT): what follows it may be another protocol's, which its
// handler takes with the connection (Hijack), as net/http leaves it
// unread until then. The heads read behind it wait in the framer.
func (hc *h1conn) pipelineFull() bool {
	return hc.nq >= hc.ls.cfg.MaxPipeline || hc.qtail != nil && hc.qtail.upgrade
}

// holdsArena reports whether the connection holds an arena: a request is
// in its queue, or its body is being read.
func (hc *h1conn) holdsArena() bool { return hc.nq > 0 || hc.cur != nil }

// onFrame is the framer's callback, with what split found.
func (hc *h1conn) onFrame(_ *aio.Conn, frame []byte) {
	switch hc.tok {
	case tokHead:
		hc.onHead(frame)
	case tokBody:
		hc.onBody(frame)
	case tokStall:
		hc.stallRead(hc.want)
	case tokOverflow:
		hc.overflow()
	case tokError:
		hc.refuse(hc.perr)
	case tokH2:
		hc.startH2()
	}
	hc.tok = 0
}

// onHead starts a request whose head is raw (parsed into ls.head).
func (hc *h1conn) onHead(raw []byte) {
	ls := hc.ls
	r := hc.reserved
	hc.reserved = nil
	hc.begun = true
	ls.openRequest(r, hc)
	r.setHead(&ls.head, raw)
	h := &r.head
	r.isHead = string(h.Method) == "HEAD"
	if h.Close || ls.draining {
		r.closeAf = true
		hc.closeAft = true
	}
	if h.Expect == h1.ExpectUnknown {
		hc.setTimeout(nil)
		r.closeAf, hc.closeAft = true, true
		hc.rstate = rsDiscard
		hc.enqueue(r)
		r.resp = errResponse(417)
		r.replied, r.hdone = true, true
		hc.pump()
		return
	}
	// 100 Continue is owed only for a body.
	r.expect = h.Expect == h1.Expect100Continue && h.Body != h1.BodyNone
	switch h.Body {
	case h1.BodyNone:
		r.body.buffered = true
		hc.nextHead()
		hc.enqueue(r)
		hc.dispatch(r)
	case h1.BodyLength:
		r.body.length = h.ContentLength
		hc.cur, hc.remaining, hc.rstate = r, h.ContentLength, rsBody
		// A body the arena holds arrives before the handler runs, after
		// a 100 Continue if the client waits for one: unless its route's
		// MaxBytesHandler would refuse it, which it then does at once,
		// with no 100 asking for a body it will not take.
		//
		// So it does for a Duplex handler, unlike a chunked body (and
		// unlike HTTP/2): a client streaming both ways over HTTP/1.1
		// does not know its body's length. A handler started before a
		// small body it ignores (a redirect, a 401) would answer before
		// the body is read and cost the connection (closing).
		buffer := h.ContentLength <= int64(r.arena.Room()/2)
		if buffer && r.expect {
			_, limit := ls.routeAtHead(r)
			buffer = h.ContentLength <= limit
		}
		if buffer {
			r.body.data = r.arena.take(int(h.ContentLength))[:0]
			hc.bufferBody()
			return
		}
		hc.enqueue(r)
		hc.dispatch(r)
	case h1.BodyChunked:
		r.body.length = -1
		r.dec.Reset()
		r.dec.MaxBody = r.bodyLimit
		hc.cur, hc.rstate = r, rsChunked
		r.body.data = r.arena.take(r.arena.Room() / 2)[:0]
		hc.bufferBody()
		if duplex, _ := ls.routeAtHead(r); duplex {
			hc.startSoon(r)
		}
	}
}

// startSoon starts r's Duplex handler, whose body is chunked, once the
// bytes read with its head have been taken, without waiting for the rest
// of its body, as HTTP/2's startSoon does: a body that came whole with
// its head is buffered as for any handler, and the rest streams from what
// has arrived. A client that streams both ways on HTTP/1.1 (Go's client,
// with a body it writes as it reads the response; net/http's server lets
// it, with EnableFullDuplex) waits for the response before it sends more.
// Posted: the loop runs it after the read in progress.
func (hc *h1conn) startSoon(r *Request) {
	seq := r.seq
	if hc.ls.l.Post(func() {
		if hc.cur == r && r.live(seq) && hc.buffering {
			hc.overflow()
		}
	}) != nil {
		hc.overflow() // the loop is stopping: start it now, to be cancelled
	}
}

// bufferBody begins buffering the body of hc.cur, whose head has just
// come whole. The head's own time ends here: HeaderTimeout counted it from
// its first byte, or from the connection's start on its first request,
// and what is left of it is no bound on the body, whose first pause is
// bounded from now (continueBuffering), as each later one is from the
// piece before it (onBody), and as HTTP/2 bounds it from its HEADERS
// (timeBody). Left under the head's deadline, a client that sent its head
// late in that time and the body in a write of its own was closed
// unanswered, with the body on its way.
func (hc *h1conn) bufferBody() {
	hc.buffering, hc.bodyBy = true, 0
	hc.setTimeout(nil)
	hc.continueBuffering()
}

// continueBuffering sends "100 Continue" for the body being buffered (its
// handler has not started) once no response before it is owed: an interim
// response must not overtake the final one of an earlier request, which
// its client would take it for. A buffered body may pause for
// HeaderTimeout at most, as a streamed one may: counted from the end of
// its head (bufferBody), or from its 100 Continue (its client does not
// send it while it waits for that), and restarted by each piece (onBody);
// not by a call here after a response (pump), which the client has no
// part in. BodyTimeout starts with it, for the whole body.
func (hc *h1conn) continueBuffering() {
	r := hc.cur
	switch {
	case r == nil || !hc.buffering:
		return
	case r.expect && hc.nq > 0:
		hc.setTimeout(nil) // the responses before it may take their time
		return
	case r.expect:
		hc.sendContinue(r)
		hc.setTimeout(&hc.ls.headQ)
	case hc.links[linkTime].in != &hc.ls.headQ:
		hc.setTimeout(&hc.ls.headQ) // from the head's end (bufferBody leaves it in none)
	}
	if d := hc.ls.cfg.BodyTimeout; d > 0 && hc.bodyBy == 0 {
		hc.bodyBy = hc.ls.l.Now() + d
	}
}

// nextHead readies reading for what follows a request: the next head, or
// nothing once the connection is to close.
func (hc *h1conn) nextHead() {
	if hc.closeAft {
		hc.rstate = rsDiscard
	} else {
		hc.rstate = rsHead
	}
}

// onBody takes body bytes of hc.cur: into its arena while it is being
// buffered, else to its handler.
func (hc *h1conn) onBody(p []byte) {
	r := hc.cur
	var end bool
	chunked := hc.rstate == rsChunked
	if !chunked {
		hc.remaining -= int64(len(p))
		end = hc.remaining == 0
	} else {
		end = r.dec.Done()
	}
	if hc.buffering {
		r.body.data = append(r.body.data, p...) // split kept it within the room
		if !end {
			if hc.bodyBy != 0 && hc.ls.l.Now() >= hc.bodyBy {
				hc.refuseWith(408) // BodyTimeout: too slow in all
				return
			}
			hc.setTimeout(&hc.ls.headQ) // the next pause is bounded too
			return
		}
		hc.buffering = false
		r.expect = false // the client sent the body without waiting
		r.body.data = r.arena.shrink(r.body.data)
		if chunked {
			r.setTrailer()
		}
		r.body.buffered = true
		hc.cur = nil
		hc.nextHead()
		hc.enqueue(r)
		hc.dispatch(r)
		return
	}
	if end {
		hc.cur = nil
		r.expect = false // the client sent the body without waiting: no 100 is owed, nor a close for it (closing)
		hc.nextHead()
		_ = hc.c.SetReadTimeout(0) // the body is in (timeBody)
		if chunked {
			r.setTrailer()
		}
	}
	if len(p) > 0 || end {
		r.body.deliver(p, end)
	}
}

// overflow starts the handler of a chunked body that outgrew the room it
// had in the arena: what was buffered comes first, then the rest streams.
func (hc *h1conn) overflow() {
	r := hc.cur
	hc.buffering = false
	r.body.data = r.arena.shrink(r.body.data)
	r.body.prefix = len(r.body.data) > 0
	hc.enqueue(r)
	hc.dispatch(r)
}

// refuse answers a request the parser refused, once the responses before
// it are written, and closes the connection: at once after a 400, after a
// lingering close (finish) for the others.
//
// A request line whose version is not HTTP/<digit>.<digit> is not HTTP/1
// at all: it gets no answer, only the close. A client that does not speak
// HTTP/1 gets nothing to misparse, and an HTTP/2 client whose preface is
// wrong sees the close RFC 9113 §3.4 asks for (the port speaks both).
func (hc *h1conn) refuse(err *h1.Error) {
	status := 400
	if err != nil {
		status = err.Status
		if err.Reason == h1.ReasonVersion {
			status = -1 // pump answers nothing: the connection just ends
		}
	}
	hc.refuseWith(status)
}

// refuseWith is refuse with the status to answer (-1: none).
func (hc *h1conn) refuseWith(status int) {
	hc.ls.st.badRequests.Add(1)
	hc.rstate = rsDiscard
	hc.closeAft = true
	if r := hc.cur; r != nil {
		hc.cur = nil
		hc.errHead = r.isHead
		if hc.buffering { // never dispatched: it ends here
			hc.buffering = false
			r.written, r.hdone = true, true
			hc.maybeRelease(r)
		} else { // its handler reads a body that will not end
			hc.refuseStreamed(r, status)
			return
		}
	}
	hc.errStatus = status
	hc.pump()
}

// refuseStreamed ends r, whose handler was reading the body the parser
// refused (a chunked body that outgrew MaxBodyBytes as it streamed, or a
// malformed chunk): its handle is cancelled, so its OnData never sees an
// end, and status is its answer in its turn, in place of whatever the
// handler replied. If its response has begun (a Stream's head is out), it
// cannot become the answer: it is cut short where it is. Then, as for
// any refusal, the connection closes once the answer is out after a 400
// (malformed framing is not lingered for), and lingers (finish) after a
// 413: the client, still sending the body, reads what was written rather
// than a reset.
func (hc *h1conn) refuseStreamed(r *Request, status int) {
	_ = hc.c.SetReadTimeout(0) // the linger times the rest (timeBody)
	switch {
	case r.written: // answered already
	case r.stream.started: // at the head of the queue, as a started stream is
		hc.ls.suppress(r)
		hc.pop(r)
	default:
		r.refusal = status
		r.replied = true
	}
	if status == 413 {
		r.cancelFor(maxBytesCause(r.bodyLimit))
	} else {
		r.cancelFor(ErrBadBody)
	}
	if hd := r.h; hd != nil {
		hd.Cancel()
	}
	if status == 400 {
		hc.errStatus = -1 // pump's end: the close, with no answer of its own
	}
	hc.maybeRelease(r)
	hc.pump()
}

// enqueue appends r to the connection's queue of requests.
func (hc *h1conn) enqueue(r *Request) {
	if hc.qtail != nil {
		hc.qtail.next = r
	} else {
		hc.qhead = r
	}
	hc.qtail = r
	hc.nq++
}

// dispatch runs r's handler and takes its reply: an immediate response is
// sent (in its turn), a handle is adopted into the connection's scope and
// its end, a cleanup on it, sends its response and releases the arena.
// The request has all it waits for from the client: HeaderTimeout stops.
func (hc *h1conn) dispatch(r *Request) {
	_, r.upgrade = r.head.Get("Upgrade")
	r.upgrade = r.upgrade || string(r.head.Method) == "CONNECT"
	if hc.upgradeH2(r) { // Upgrade: h2c (h2upgrade.go): r is stream 1 of HTTP/2
		return
	}
	ls := hc.ls
	hc.setTimeout(nil)
	reply := ls.serve(r)
	if r.written && r.gone {
		// Dropped while its handler ran: the handler ended the stream
		// that was the connection's last response (dropAfterLast), and
		// nothing of r is sent. Its reply is let go, and the request ends
		// here: no handle is left to end it, nor is it queued any more.
		if reply.h != nil {
			reply.h.Cancel()
			ls.adoptReply(r, reply.h) // ends it once a Work fn has returned (Arena)
		} else {
			r.hdone = true
		}
		hc.maybeRelease(r)
		return
	}
	if s := &r.stream; s.p != nil && reply.h != s.p.Handle() {
		// A stream begun and not the reply: dropped.
		s.p.Reject(ErrStreamClosed)
		if s.started { // its head is out: nothing else can follow
			dropReply(r, reply)
			if !s.ended {
				hc.c.Close() // cut where it is
			}
			// Ended, it may be written and off the queue already (its
			// End ran pump): no close or handle will release it then.
			hc.maybeRelease(r)
			return
		}
		s.p = nil
	}
	if reply.h == nil {
		r.resp = reply.resp
		r.replied, r.hdone = true, true
		hc.pump()
		return
	}
	ls.adoptReply(r, reply.h)
	if r.stream.p != nil && r == hc.qhead && !r.expect && hc.cur != r {
		// A stream's head goes at once, as on HTTP/2: an event stream is
		// open for its client before its first event. (Not while its body
		// is still to be read: a head sent then would have to close the
		// connection, and a 100 Continue owed would have to go first.)
		hc.pump()
	}
}

// handleEnded: r's handle has finished (loopState.endHandle). Its response
// is sent (in its turn) before the arena is released; a cancelled handle
// sends nothing. The arena goes back here unless the response still waits
// for its turn (then its write releases it): one release, whichever of the
// two comes last. An aborted handler (http.ErrAbortHandler) closes the
// connection as a cancelled one does, and its response is cut. On the loop.
func (hc *h1conn) handleEnded(r *Request, v Response, err error, cancelled bool) {
	switch {
	case r.written: // the connection is gone
	case r.refusal != 0: // refused: the refusal is its answer (pump)
	case cancelled, aborted(err):
		r.gone = true
	case r.stream.p != nil:
		if !r.stream.ended {
			if r.stream.started {
				r.gone = true
			} else {
				r.stream.p = nil
				r.resp = errResponse(500)
			}
		}
	case err != nil:
		r.resp = errResponse(500)
	default:
		r.resp = v
	}
	r.replied = true
	written := r.written // before its handle ended: a stream's end
	if !written {
		hc.pump()
	}
	hc.maybeRelease(r)
	if written {
		hc.finishIfLast(r) // its body may have arrived whole since
	}
}

// finishIfLast ends the connection after r, its last response (closing
// made it so), once r is released and nothing follows it: no request
// queued or being read, no refusal owed. It is for the orderings pump
// does not see, where r's handle, or the rest of its unread body, ends
// after pump wrote its response and returned. Not pump itself: the
// connection may since have become HTTP/2, or hold a head that
// Shutdown's drain keeps to answer.
func (hc *h1conn) finishIfLast(r *Request) {
	if r.closeAf && hc.h2 == nil && !hc.closed && hc.nq == 0 && hc.cur == nil && hc.errStatus == 0 {
		hc.finish()
	}
}

// pump writes the responses at the head of the queue that are ready, in
// order, and then decides what the connection does next.
//
// A response that ends the connection (Connection: close, a body its close
// delimits, a body cut short) is the last one written: requests queued
// after it (pipelined past it) get nothing, and the connection closes
// once it is out, which cancels them.
func (hc *h1conn) pump() {
	for r := hc.qhead; r != nil && !hc.closed && !hc.aborted; r = hc.qhead {
		switch {
		case r.gone:
			hc.ls.suppress(r)
			hc.pop(r)
			hc.maybeRelease(r)
			hc.abort() // a response is missing: the ones after it cannot be sent
			return
		case r.refusal != 0:
			hc.writeError(r.refusal, r.isHead)
		case r.stream.p != nil && r.stream.refused != nil && !r.stream.started:
			// Its head cannot go out (Request.Stream or startStream
			// refused it), whether or not the handler has ended it: a
			// 500 goes in its place. Its handle has failed; its end
			// finds the response written.
			r.stream.p = nil
			r.resp = errResponse(500)
			hc.write(r)
		case r.stream.p != nil:
			if !r.stream.started {
				hc.continueInTurn(r) // before the stream's final head
				hc.startStream(r)
				if hc.qhead != r {
					continue // its OnDrain ended it, and the pump that End ran wrote it
				}
				if r.stream.refused != nil {
					continue // answered by the case above
				}
			}
			if !r.stream.ended {
				return // the stream writes on as it goes
			}
			hc.endStream(r)
		case !r.replied:
			hc.continueInTurn(r)
			return
		default:
			hc.write(r)
		}
		last := r.closeAf // its head said so (closing)
		next := hc.cur != nil && hc.cur != r
		hc.pop(r)
		hc.maybeRelease(r)
		if last && (hc.qhead != nil || next || hc.errStatus != 0) {
			// Nothing after it may be sent: not the responses queued,
			// nor that of a later request whose body still arrives, nor
			// a refusal's answer. They are dropped, and the connection
			// ends lingering, as after any last response: the client
			// may still be sending (r's own body still arriving is read
			// and dropped so too: maybeRelease).
			hc.dropAfterLast()
			hc.finish()
			return
		}
	}
	if hc.closed || hc.aborted {
		return
	}
	if hc.stall&stallPipeline != 0 && !hc.pipelineFull() {
		hc.unstall(stallPipeline)
	}
	hc.continueBuffering()
	if hc.nq > 0 || hc.cur != nil {
		return
	}
	switch {
	case hc.errStatus != 0:
		status := hc.errStatus
		hc.errStatus = 0
		if status > 0 {
			hc.writeError(status, hc.errHead)
		}
		if status == 400 || status < 0 {
			// As nginx: a malformed request (a smuggling attempt, or not
			// HTTP at all) is not lingered for; the connection closes
			// once the answer is out.
			hc.abort()
		} else {
			hc.finish() // 413, 431...: the client may still be sending
		}
	case hc.closeAft:
		hc.finish()
	case hc.links[linkTime].in == nil:
		hc.idleAfterFlush() // kept alive: IdleTimeout runs
	}
}

// idleAfterFlush puts a kept-alive connection (HTTP/1.1, or HTTP/2 with
// no stream left) on IdleTimeout once its responses have reached the
// kernel: a large one that a slow client reads for longer than
// IdleTimeout is not idle, and one whose client stops reading is
// WriteTimeout's (Stats.WriteTimeouts), not idle's. One Flush handle,
// only when bytes wait. On the loop.
func (hc *h1conn) idleAfterFlush() {
	if hc.c.Buffered() == 0 {
		q := &hc.ls.idleQ
		if hc.h2 != nil {
			q = hc.h2.restQ()
		}
		hc.setTimeout(q)
		return
	}
	if hc.flushWait {
		return
	}
	hc.flushWait = true
	aio.Finally(hc.c.Flush(), func() {
		hc.flushWait = false
		if hc.idle() {
			hc.idleAfterFlush() // a response queued meanwhile is waited for too
		}
	})
}

// idle reports whether the connection still waits for nothing but its
// client's next request, with no timeout set.
func (hc *h1conn) idle() bool {
	if hc.closed || hc.links[linkTime].in != nil {
		return false
	}
	if h := hc.h2; h != nil {
		return !h.closed && !h.dead && !h.goaway && len(h.streams) == 0
	}
	return !hc.finished && hc.nq == 0 && hc.cur == nil
}

// pop takes r, written, off the head of the queue.
func (hc *h1conn) pop(r *Request) {
	hc.qhead = r.next
	if hc.qhead == nil {
		hc.qtail = nil
	}
	r.next = nil
	r.written = true
	hc.nq--
	if !hc.holdsArena() && hc.links[linkWait].in == &hc.ls.waitersMore {
		hc.ls.waiters.push(hc)      // it holds none now: it may take the reserve
		hc.setTimeout(&hc.ls.idleQ) // and waits as any waiter does (stallRead)
	}
}

// dropAfterLast ends what follows the connection's last response, which
// will get nothing: the requests queued after it (their handlers are
// cancelled, their responses counted suppressed), the one whose body is
// still arriving, a refusal's answer still owed. Their arenas come back
// once their handles end, and finish's FIN, which waits for the
// connection's handles, is not held by them.
func (hc *h1conn) dropAfterLast() {
	for r := hc.qhead; r != nil; r = hc.qhead {
		hc.ls.suppress(r)
		hc.pop(r)
		r.gone = true // nothing of it is sent: its stream's writes fail
		r.cancelFor(errAfterLast)
		if hd := r.h; hd != nil {
			hd.Cancel()
		}
		hc.maybeRelease(r)
	}
	if r := hc.cur; r != nil && hc.buffering { // never dispatched: it ends here
		hc.cur = nil
		hc.buffering = false
		r.written, r.hdone = true, true
		hc.maybeRelease(r)
	}
	hc.errStatus = 0
}

// abort closes the connection once what is written has reached the
// kernel: a response is missing, so nothing after it can be sent.
func (hc *h1conn) abort() {
	if hc.aborted {
		return
	}
	hc.aborted = true
	c := hc.c
	hc.rstate = rsDiscard
	aio.Finally(c.Flush(), func() { c.Close() })
}

// finish ends a connection whose last response is written, after a
// "Connection: close" response, on Shutdown, or at the client's EOF, with
// the root package's lingering close (aio.Conn.Drain): FIN once it is
// flushed, then what the client still sends (a pipelined request that
// crossed the FIN) is read and dropped until its EOF closes the
// connection, or Config.Listen.Conn.Linger after the FIN. Closing on
// those unread bytes would send a reset, which can destroy the responses
// the client has not read yet.
func (hc *h1conn) finish() {
	if hc.finished {
		return
	}
	hc.finished = true
	hc.rstate = rsDiscard
	hc.setTimeout(nil) // the linger's bound is the connection's own
	// It reads no more heads: it waits for no arena, and gives back one
	// handed to it as it waited, for a connection that still waits.
	hc.ls.waiters.remove(hc)
	hc.ls.waitersMore.remove(hc)
	if r := hc.reserved; r != nil {
		hc.reserved = nil
		hc.ls.release(r)
	}
	if !hc.dropBody && hc.h2 == nil {
		// Nothing more is read before the FIN: the handlers are done,
		// so no EOF is waited for, and drainIdle would read and drop.
		hc.stallRead(stallDiscard)
	}
	hc.c.Drain()
}

// maybeRelease ends r once its response is written (or never will be) and
// its handle has finished: its scope closes and its arena goes back.
func (hc *h1conn) maybeRelease(r *Request) {
	if !r.written || !r.hdone || r.released {
		return
	}
	r.released = true
	unread := hc.cur == r
	if unread { // its body is still arriving, unread: the connection ends
		hc.cur = nil
		hc.buffering = false
		if !hc.closed {
			hc.rstate = rsDiscard
			hc.closeAft = true
			hc.dropBody = true
			_ = hc.c.SetReadTimeout(0) // the linger times the rest (timeBody)
			// The rest is read and dropped while the connection lingers, so
			// that a client still sending it gets to read the response.
			hc.unstall(stallBody)
		}
	}
	hc.ls.closeRequest(r)
	if unread {
		hc.finishIfLast(r) // its response was the last (closing)
	}
}

// response writing

// appendHead appends a response head to the loop's scratch buffer and
// returns it.
func (hc *h1conn) appendHead(status int, hdr []Field, framing h1.Framing, length int64, close, minor0 bool) ([]byte, error) {
	ls := hc.ls
	if !finalStatus(status) {
		return ls.wbuf[:0], errStatus
	}
	resp := h1.Response{Status: status, Body: framing, ContentLength: length,
		Close: close, KeepAlive: minor0 && !close, Date: ls.dateValue(),
		Checked: h1.CheckedDate} // dateValue's is AppendDate's
	if own := ownFields(hdr); own != nil {
		resp.Fields = own
		resp.Checked |= h1.CheckedFields
		return h1.AppendResponse(ls.wbuf[:0], &resp)
	}
	fields := ls.fields[:0]
	for _, f := range hdr {
		switch name := strBytes(f.Name); {
		case framing != h1.BodyNone && h1.EqualFold(name, "Content-Length"):
			continue // the framing writes it (a stream's header may carry it)
		case h1.EqualFold(name, "Connection"):
			// The server's own, as on HTTP/2: a "close" here would be
			// sent and not done (RFC 9112 §9.6: the server closes after
			// it and reads no request after it).
			clear(fields)
			return ls.wbuf[:0], h1.ErrFieldOwned
		}
		fields = append(fields, h1.Field{Name: strBytes(f.Name), Value: strBytes(f.Value)})
	}
	ls.fields = fields
	resp.Fields = fields
	b, err := h1.AppendResponse(ls.wbuf[:0], &resp)
	clear(fields) // keep no view of a response that ended
	return b, err
}

// closing reports whether the response of r is the connection's last,
// and makes it so.
func (hc *h1conn) closing(r *Request) bool {
	if hc.cur == r || r.expect { // its body unread: what follows cannot be trusted to be a head
		r.closeAf = true
	}
	last := r.next == nil && hc.cur == nil
	if r.closeAf || last && (hc.closeAft || hc.ls.draining) {
		hc.closeAft = true
		if hc.rstate == rsHead {
			hc.rstate = rsDiscard
		}
		return true
	}
	return false
}

// write writes r's response.
func (hc *h1conn) write(r *Request) {
	resp := &r.resp
	status := resp.Status
	if status == 0 {
		status = 200
	}
	body := resp.Body
	framing := h1.BodyLength
	if !hasContent(status) {
		framing, body = h1.BodyNone, nil
	}
	if resp.Close {
		r.closeAf = true
	}
	closeNow := hc.closing(r)
	length, ok := r.length(status, resp) // a HEAD's may be GET's
	if length < 0 {
		framing, length = h1.BodyNone, 0 // HEAD, length not stated: none
	}
	buf, err := hc.appendHead(status, resp.Header, framing, length, closeNow, r.head.Minor == 0)
	if err != nil || !ok { // the handler's fields could split the response, or lie about its length
		if err == nil {
			err = errBadLength
		}
		hc.ls.logRefused(r, err.Error())
		e := errResponse(500)
		body = e.Body
		buf, _ = hc.appendHead(500, e.Header, h1.BodyLength, int64(len(body)), closeNow, r.head.Minor == 0)
	}
	if r.isHead {
		body = nil
	}
	if len(body) > 0 && len(buf)+len(body) <= smallWrite {
		buf = append(buf, body...)
		body = nil
	}
	_, _ = hc.c.Write(buf)
	if len(body) > 0 {
		_, _ = hc.c.Write(body)
	}
	hc.ls.wbuf = buf[:0]
}

// writeError writes the answer to a refused request (of HEAD: without
// its body); the connection closes after it.
func (hc *h1conn) writeError(status int, isHead bool) {
	e := errResponse(status)
	buf, err := hc.appendHead(status, e.Header, h1.BodyLength, int64(len(e.Body)), true, false)
	if err == nil {
		if !isHead {
			buf = append(buf, e.Body...)
		}
		_, _ = hc.c.Write(buf)
	}
	hc.ls.wbuf = buf[:0]
}

// sendContinue sends "100 Continue" to r's client, which waits for it
// before it sends the body; not once r's final head is out (a stream's),
// which an interim response cannot follow.
func (hc *h1conn) sendContinue(r *Request) {
	if r.expect && !r.stream.started {
		r.expect = false
		_, _ = hc.c.WriteString(h1.Continue)
	}
}

// continueInTurn sends the 100 Continue of r, whose turn has come, if its
// handler reads the body the client holds back for it.
func (hc *h1conn) continueInTurn(r *Request) {
	if r.expect && r == hc.cur && r.body.fn != nil {
		hc.sendContinue(r)
		hc.timeBody(r)
	}
}

// timeBody times the body that streams in to r's handler, which has asked
// for it: its client may pause in sending it for HeaderTimeout at most,
// counted while the connection reads (aio.Conn.SetReadTimeout: a stall,
// as when the handler has paused the body, or a full write queue stops
// the clock). Not while its 100 Continue is still owed: the client waits
// for that.
func (hc *h1conn) timeBody(r *Request) {
	if r == hc.cur && !hc.buffering && !r.expect {
		_ = hc.c.SetReadTimeout(hc.ls.cfg.HeaderTimeout)
	}
}

// streams

// startStream writes the head of r's stream, and what it wrote before its
// turn.
//
// A head refused here (a field that could split the response) is not
// written, nor is anything of the stream: its handle fails, and the 500
// that goes in its place is written when its end comes (handleEnded).
func (hc *h1conn) startStream(r *Request) {
	s := &r.stream
	if s.refused != nil {
		return
	}
	framing, length := h1.BodyChunked, int64(0)
	switch {
	case !hasContent(s.status):
		framing = h1.BodyNone // 204, 304: the head is the response
	case s.length >= 0 && (r.head.Minor == 0 || !s.trailed()): // a trailer needs the last chunk
		framing, length = h1.BodyLength, s.length
	case r.head.Minor == 0:
		framing = h1.BodyNone // delimited by the connection's end
		r.closeAf = true
	}
	if s.closeConn {
		r.closeAf = true
	}
	closeNow := hc.closing(r)
	buf, err := hc.appendHead(s.status, s.hdr, framing, length, closeNow, r.head.Minor == 0)
	hc.ls.wbuf = buf[:0]
	if err != nil {
		s.refuse(err)
		return
	}
	s.started = true
	_, _ = hc.c.Write(buf)
	s.chunked = framing == h1.BodyChunked
	if len(s.pend) > 0 {
		hc.writeBody(r, s.pend)
		s.pend = s.pend[:0]
	}
	hc.drainStream(r) // it was Full while it waited for its turn
	if hc.cur == r && hc.stall&stallBody != 0 && !hc.bodyBlocked() {
		hc.unstall(stallBody) // it stalled on streamPendMax before its turn
	}
	if s.headOnly {
		r.endHeadStream()
	}
}

// endStream writes the end of r's stream.
func (hc *h1conn) endStream(r *Request) {
	s := &r.stream
	switch {
	case s.headOnly:
	case s.length >= 0 && s.sent != s.length:
		hc.abort() // short of its Content-Length: the client must see it cut
	case s.chunked:
		hc.writeLastChunk(s)
	}
}

// writeBody writes p as stream bytes of r, which has its turn.
func (hc *h1conn) writeBody(r *Request, p []byte) {
	switch {
	case r.stream.headOnly:
	case r.stream.chunked && len(p) <= smallWrite:
		buf := h1.AppendChunk(hc.ls.wbuf[:0], p)
		_, _ = hc.c.Write(buf)
		hc.ls.wbuf = buf[:0]
	case r.stream.chunked:
		buf := h1.AppendChunkHeader(hc.ls.wbuf[:0], len(p))
		_, _ = hc.c.Write(buf)
		hc.ls.wbuf = buf[:0]
		_, _ = hc.c.Write(p)
		_, _ = hc.c.WriteString("\r\n")
	default:
		_, _ = hc.c.Write(p)
	}
}

func (hc *h1conn) streamWrite(r *Request, p []byte) error {
	if hc.aborted || hc.closed || hc.finished {
		return ErrStreamClosed // the connection ends with what is written
	}
	s := &r.stream
	if s.length >= 0 && s.sent+int64(len(p)) > s.length {
		return ErrContentLength
	}
	s.sent += int64(len(p))
	if r != hc.qhead {
		s.pend = append(s.pend, p...)
		return nil
	}
	if !s.started {
		if hc.startStream(r); !s.started {
			return ErrStreamClosed // its head was refused
		}
	}
	hc.writeBody(r, p)
	return nil
}

func (hc *h1conn) streamEnd(r *Request) {
	if r != hc.qhead || hc.closed {
		return // pump ends it in its turn
	}
	hc.pump()
}

func (hc *h1conn) streamFull(r *Request) bool {
	full := r != hc.qhead || hc.c.Full()
	r.stream.full = r.stream.full || full
	return full
}

// drainStream runs the OnDrain of r's stream if Full told its writer to
// wait and it no longer is.
func (hc *h1conn) drainStream(r *Request) {
	if s := &r.stream; s.full && s.onDrain != nil && !hc.streamFull(r) {
		s.full = false
		s.onDrain()
	}
}

func (hc *h1conn) bodyDemand(r *Request) {
	if r != hc.cur || hc.closed {
		return
	}
	if r.expect && r == hc.qhead {
		hc.sendContinue(r)
	}
	hc.timeBody(r)
	hc.unstall(stallBody)
}

func (hc *h1conn) conn() *aio.Conn { return hc.c }

func (hc *h1conn) remoteAddr() netip.AddrPort { return hc.c.RemoteAddr() }

func (hc *h1conn) tlsState() (tls.ConnectionState, bool) { return hc.c.TLS() }

// reading, stalls and the connection's end

// stallRead stops reading for why.
func (hc *h1conn) stallRead(why uint8) {
	if why == stallArena && hc.links[linkWait].in == nil {
		hc.ls.st.refused.Add(1)
		if hc.holdsArena() {
			hc.ls.waitersMore.push(hc)
			// Its head has come whole (no HeaderTimeout, which a head
			// that came in pieces started): its requests in progress
			// are under way, and it waits for them.
			hc.setTimeout(nil)
		} else {
			hc.ls.waiters.push(hc)
			// Its head has come whole: the wait is the server's, not a
			// head in progress (HeaderTimeout). It waits as long as an
			// idle connection may, from now.
			hc.setTimeout(&hc.ls.idleQ)
		}
	}
	hc.stall |= why
	if !hc.paused {
		hc.paused = true
		_ = hc.c.PauseRead()
	}
}

// unstall lifts a stall; reading resumes once none is left (and the write
// queue is not full: its drain resumes it then).
func (hc *h1conn) unstall(why uint8) {
	hc.stall &^= why
	if hc.stall == 0 && hc.paused && !hc.c.Full() {
		hc.paused = false
		_ = hc.c.ResumeRead()
	}
}

// onDrain: the write queue has drained.
func (hc *h1conn) onDrain(*aio.Conn) {
	hc.unstall(0) // the queue is no longer Full: resume unless a stall is left
	if r := hc.qhead; r != nil && r.stream.p != nil && r.stream.started {
		hc.drainStream(r)
	}
}

// onEOF: the client has finished sending. With nothing pending the
// connection ends; with requests pending, the client has gone away (their
// handlers are cancelled), unless Config.HalfClose.
func (hc *h1conn) onEOF(c *aio.Conn) {
	hc.eof = true
	switch {
	case hc.finished:
		// FIN sent or on its way: the connection closes once both are done
	case hc.cur != nil: // in the middle of a body
		c.Close()
	case hc.nq == 0:
		hc.finish()
	case hc.ls.cfg.HalfClose:
		hc.closeAft = true
		hc.rstate = rsDiscard
	default:
		c.Close()
	}
}

// timedOut: the connection's head or idle deadline has passed. An
// HTTP/2 connection says GOAWAY first, and lingers for its client's EOF.
func (hc *h1conn) timedOut() {
	if h := hc.h2; h != nil && !h.dead && !h.closed {
		h.idleClose()
		return
	}
	hc.c.Close()
}

// drain begins Shutdown for the connection: an idle one ends at once, a
// busy one after its last response, both with a lingering close (finish):
// a request the client sent while the connection was idle, or one that
// crossed our FIN, must not reset the connection before the client has
// read the responses it has.
func (hc *h1conn) drain() {
	if hc.h2 != nil {
		hc.h2.shutdown()
		return
	}
	// A connection whose whole head waits for an arena, with nothing
	// else in progress, is not idle: its request is served, in its turn,
	// with Connection: close (ending it unanswered would leave its client
	// unable to tell whether it was). A head waiting behind requests in
	// progress is dropped, as any pipelined after them: the Connection:
	// close of their last response tells the client.
	waiting := hc.links[linkWait].in == &hc.ls.waiters
	switch {
	case hc.finished: // lingering after its last response, bounded
		return
	case hc.nq == 0 && hc.cur == nil && !waiting:
		hc.finish()
		return
	}
	hc.closeAft = true
	if hc.rstate == rsHead && !waiting {
		hc.rstate = rsDiscard
	}
}

// setTimeout puts the connection in the timeout list q (nil: none), its
// deadline counted from now.
func (hc *h1conn) setTimeout(q *connList) {
	lk := &hc.links[linkTime]
	if lk.in != nil {
		lk.in.remove(hc)
	}
	if q != nil {
		hc.deadline = hc.ls.l.Now() + q.d
		q.push(hc)
	}
}

// cancelAllFor records err as why each request of the connection in
// progress is about to be cancelled (Request.Context).
func (hc *h1conn) cancelAllFor(err error) {
	if h := hc.h2; h != nil {
		h.cancelAllFor(err)
		return
	}
	for r := hc.qhead; r != nil; r = r.next {
		r.cancelFor(err)
	}
	if r := hc.cur; r != nil {
		r.cancelFor(err)
	}
}

// onClose: the connection is gone. Every request still queued is gone
// too: a pending handle is cancelled by the connection's scope, and its
// end (adoptReply) releases its arena; the others are released here.
func (hc *h1conn) onClose(_ *aio.Conn, err error) {
	hc.closed = true
	ls := hc.ls
	if errors.Is(err, aio.ErrWriteTimeout) {
		ls.st.writeTimeouts.Add(1)
	}
	for r := hc.qhead; r != nil; {
		next := r.next
		r.next = nil
		r.gone = true
		hc.ls.suppress(r)
		hc.maybeRelease(r)
		r = next
	}
	hc.qhead, hc.qtail, hc.nq = nil, nil, 0
	if r := hc.cur; r != nil && hc.buffering { // read in part, never dispatched
		r.written, r.hdone = true, true
		hc.maybeRelease(r)
	}
	hc.cur = nil
	hc.leaveLoop()
}

// leaveLoop takes the connection off its loop's books, closed or
// hijacked: the arena reserved for its next head goes back, it leaves
// every list, and it no longer counts as open, nor holds a drain.
func (hc *h1conn) leaveLoop() {
	ls := hc.ls
	if r := hc.reserved; r != nil {
		hc.reserved = nil
		ls.release(r)
	}
	for _, q := range [...]*connList{&ls.conns, &ls.waiters, &ls.waitersMore, &ls.headQ, &ls.idleQ} {
		q.remove(hc)
	}
	ls.st.connsOpen.Add(-1)
	ls.checkDrained()
}

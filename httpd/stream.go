package httpd

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd/internal/h1"
)

// ErrStreamClosed is what Stream.Write returns once the stream has ended,
// or its client has gone away (the stream's handle is then cancelled).
var ErrStreamClosed = errors.New("httpd: stream closed")

// ErrContentLength is what Stream.Write returns for bytes past the
// Content-Length its header declared (net/http's http.ErrContentLength):
// nothing of them is sent.
var ErrContentLength = errors.New("httpd: wrote more than the declared Content-Length")

// Stream is a response whose body is written piece by piece, on the loop,
// as it is made: server-sent events, a large body, an echo of a streamed
// request body. Make it with Request.Stream and return Stream.Reply from the
// handler. The body is chunked for HTTP/1.1 (or delimited by the
// connection's end for HTTP/1.0), unless the header has a Content-Length:
// exactly that many bytes must then be written (and HTTP/1.1 still chunks
// the body of a stream that has a trailer: SetTrailer).
//
// Write queues on the connection, as aio.Conn.Write does: it never blocks,
// and Full tells a writer to pause until OnDrain. The stream ends when the
// handler calls End, or when the client goes away: its handle is then
// cancelled, and with it the request's Scope (a timer feeding the stream
// stops if it was adopted there), and Write returns ErrStreamClosed.
//
// To cut a stream short (a subscriber too slow to keep, say), cancel its
// handle: the client sees the body end unfinished (HTTP/1.1 closes the
// connection, HTTP/2 resets the stream), as when a handler's handle is
// cancelled.
//
// A stream holds its request's arena (Config.Arenas, per loop) until it
// ends, as any request in progress does: a server of long-lived streams
// (server-sent events) sizes Arenas for as many streams at once, since a
// loop whose arenas are all taken reads no new request until one comes
// back.
//
// A Stream kept past the end of its request (by a timer or a goroutine's
// Post the handler did not adopt into Request.Scope) is closed: its Write
// returns ErrStreamClosed and End does nothing, whatever request the
// Request's slot serves by then.
//
// On the loop.
type Stream struct {
	r   *Request
	seq uint64                // the request it was made for (Request.live)
	h   *aio.Handle[Response] // its handle, which outlives the request
}

// streamState is a Request's streamed response, in its slab slot: what
// the engines read and write. The handler holds a Stream, which finds it
// only while its request lives. Owned by the loop.
type streamState struct {
	handle  *Stream // the handler's, made by Request.Stream
	r       *Request
	p       *aio.Promise[Response]
	status  int
	hdr     []Field
	length  int64  // Content-Length from the header; -1: none
	sent    int64  // body bytes written
	started bool   // the head is written
	ended   bool   // End was called
	chunked bool   // the body is chunked (the head says so)
	pend    []byte // bytes written before the stream's turn (pipelining)
	onDrain func()
	full    bool // HTTP/1.1: Full said true; OnDrain is owed (HTTP/2: h2stream.full)

	// headOnly: the response is its head (a HEAD's, or a status without
	// content: 204, 304), and the stream ends once the head is out.
	// refused: why the head cannot be sent (a status or Content-Length
	// checked here, a field the engine refused); the stream's handle
	// fails with it and a 500 goes in its place. Nothing of it is written.
	headOnly bool
	refused  error

	// closeConn: the connection ends after the stream, as Response.Close
	// (a FromHTTP handler's "Connection: close").
	closeConn bool

	// The trailer (trailer_out.go): SetTrailer's fields, sent after the
	// body; declared: the header has a Trailer field, so an HTTP/1.1 body
	// is chunked to carry them.
	trailer  []Field
	declared bool
}

// Stream starts a streamed response with status (0 is 200) and header
// (kept until the head is written: do not modify it), and returns it. The
// handler returns s.Reply(). On the loop, from the handler. A second call
// returns the first stream, unchanged, and says so to Server.ErrorLog.
//
// The stream of a HEAD request ends as soon as its head has gone out, as
// End ends it (a HEAD gets no body): Write returns ErrStreamClosed from
// then on, so an endless stream that a GET pattern also serves to HEAD
// stops. So does a stream whose status has no content (204, 304), whose
// Write returns http.ErrBodyNotAllowed.
//
// A head that cannot be sent is never written: a status out of 200-999
// (an interim 1xx cannot be a final answer), a Content-Length that is not
// digits, repeated, or on a status without content, a field with bytes
// that could split the response or one the server writes itself (as for
// a Response). The stream's handle fails with the reason, Write returns
// ErrStreamClosed, and the client gets a 500 in its place.
func (r *Request) Stream(status int, header []Field) *Stream {
	r.checkLoop()
	s := &r.stream
	if s.p != nil { // a second call: the first stream stays, as net/http keeps a first WriteHeader
		r.ls.srv.logf("httpd: %s %s: Request.Stream called again: the first stream is kept", r.Method(), r.Target())
		return s.handle
	}
	if status == 0 {
		status = 200
	}
	p := aio.NewPromise[Response](r.ls.l)
	*s = streamState{handle: &Stream{r: r, seq: r.seq, h: p.Handle()}, r: r, p: p, status: status,
		hdr: header, length: -1, pend: s.pend[:0], headOnly: r.isHead || !hasContent(status)}
	if !finalStatus(status) {
		s.refuse(errStatus)
	}
	for _, f := range header {
		switch name := strBytes(f.Name); {
		case h1.EqualFold(name, "Content-Length"):
			// As Request.length checks a Response's: digits only (no
			// sign), once, and only where the status has content.
			n, err := strconv.ParseUint(f.Value, 10, 63)
			if err != nil || s.length >= 0 || !hasContent(status) {
				s.refuse(errBadLength)
			}
			s.length = int64(n)
		case h1.EqualFold(name, "Trailer"):
			s.declared = true
		}
	}
	return s.handle
}

// state returns the stream's state in its request, or nil once the
// request has ended: its Request went back to the slab, and may serve
// another request by now. On the loop.
func (s *Stream) state() *streamState {
	s.r.checkLoop()
	if !s.r.live(s.seq) {
		return nil
	}
	return &s.r.stream
}

// refuse marks the stream's head as one that cannot be sent: its handle
// fails with err, and the engine answers 500 in its place (handleEnded).
func (s *streamState) refuse(err error) {
	if s.refused == nil {
		s.refused = err
		s.r.ls.logRefused(s.r, err.Error()) // as a Response's refused head is
		s.p.Reject(err)
	}
}

// A stream's buffer (Stream.pend, and HTTP/2's h2stream.out, the same
// bytes) grows up to streamPendMax with what the handler writes faster
// than it goes out. A Request keeps a small one from stream to stream; a
// larger one goes to a pool as its request ends, for the next stream that
// needs one, rather than stay with its slab slot for good: the slots taken
// at a peak of load would each keep 64 KiB more than their arena, long
// after it (the garbage collector empties the pool of what stays unused).
const pendKeep = 4 << 10

// keepPend returns what a Request keeps of its stream buffer b as its
// request ends: b, emptied, if it is small, else nothing (b goes to the
// loop's pool, or to the garbage collector past streamPendMax: a handler
// that wrote on regardless of Full made it). The bytes of b must all have
// gone out. On the loop.
func (ls *loopState) keepPend(b []byte) []byte {
	switch c := cap(b); {
	case c <= pendKeep:
		return b[:0]
	case c <= streamPendMax:
		p := new([]byte) // here only: &b would move b to the heap on every call
		*p = b[:0]
		ls.pends.Put(p)
	}
	return nil
}

// takePend returns a stream buffer from the loop's pool, or nil (append
// makes one). On the loop.
func (ls *loopState) takePend() []byte {
	if p, ok := ls.pends.Get().(*[]byte); ok {
		return *p
	}
	return nil
}

// errStatus is why a response whose status is not a final one is refused.
var errStatus = errors.New("its status is not a final one (200 to 999)")

// finalStatus reports whether status can end a response: not an interim
// 1xx, whose client would take the next response for this one's.
func finalStatus(status int) bool { return status >= 200 && status <= 999 }

// Reply returns the Reply of the stream, for the handler to return. It
// must be this Reply: any other (Later of a Within or a Then of the
// stream's handle included) drops the stream, and its client gets the
// other reply, or a cut response once the stream's head is out. To bound
// a stream in time, end it (End, after SetTrailer if need be) or cancel
// its handle from a timer (aio.Delay).
func (s *Stream) Reply() Reply { return Reply{h: s.h} }

// Handle returns the stream's handle: it completes when End has written
// the end of the body, and is cancelled when the client goes away. It is
// for watching the stream; the handler replies with Reply.
func (s *Stream) Handle() *aio.Handle[Response] { return s.h }

// Write sends p as the next bytes of the body (copied: p may be reused at
// once) and returns len(p), or 0 and ErrStreamClosed after End or once
// the client has gone away, or ErrContentLength if p would pass the
// declared Content-Length, or http.ErrBodyNotAllowed for a status without
// content (204, 304). An error of the connection closes it, as the
// client going away does. On the loop.
func (s *Stream) Write(p []byte) (int, error) {
	st := s.state()
	if st == nil || st.closed() {
		return 0, ErrStreamClosed
	}
	if !hasContent(st.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if err := s.r.eng.streamWrite(s.r, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteString is Write for a string. On the loop.
func (s *Stream) WriteString(str string) (int, error) { return s.Write(strBytes(str)) }

// Full reports whether the writer should pause: the connection's write
// queue is above its high-water mark, or the stream waits for the
// responses before its own (HTTP/1.1 pipelining), or (HTTP/2) its own
// bytes not yet sent, held by its flow-control window, reach 64 KiB.
// OnDrain tells when it is over. Over HTTP/2 the write queue is the
// connection's, shared by all its streams: one reader that falls behind
// makes every stream of its connection Full, so a server that writes
// many streams to one connection sizes ConnConfig.HighWater for them
// all. On the loop.
func (s *Stream) Full() bool {
	st := s.state()
	return st != nil && !st.closed() && s.r.eng.streamFull(s.r)
}

// OnDrain sets fn to run on the loop each time the stream stops being
// Full.
func (s *Stream) OnDrain(fn func()) {
	if st := s.state(); st != nil {
		st.onDrain = fn
	}
}

// End ends the body (the last chunk) and completes the stream's handle.
// Idempotent; after the client went away it does nothing. On the loop.
func (s *Stream) End() {
	if st := s.state(); st != nil {
		st.end()
	}
}

// end is End for the engine and the request. On the loop.
func (s *streamState) end() {
	if s.closed() {
		return
	}
	s.ended = true
	s.r.eng.streamEnd(s.r)
	s.p.Resolve(Response{Status: s.status})
}

// endHeadStream ends a head-only stream (a HEAD's, a 204's or a 304's)
// once its head has gone out: it gets no body, so the response is whole, and an endless stream (an event
// feed, which a GET pattern serves to HEAD too) would otherwise hold its
// arena, and on HTTP/2 a place under the connection's stream limit, for
// good. By a posted job: the engine sends the head from inside the
// handler's Write or its reply. On the loop.
func (r *Request) endHeadStream() {
	seq := r.seq
	_ = r.ls.l.Post(func() {
		if r.live(seq) && !r.stream.closed() {
			r.stream.end()
		}
	})
}

// closed reports whether the stream takes no more bytes: also one the
// engine dropped (its promise let go: it was not the handler's reply).
func (s *streamState) closed() bool {
	return s.ended || s.r.gone || s.p == nil || s.p.Handle().Status().Terminal()
}

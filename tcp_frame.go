package aio

import (
	"bufio"
	"fmt"
	"io"
	"math"
)

// Framing on the loop: OnFrame cuts a connection's byte stream into frames
// with a bufio.SplitFunc, as bufio.Scanner does for an io.Reader, but without
// a goroutine and, where it can, without a copy. A read is split in place in
// the loop's read buffer: a frame that lies whole in it is handed to the
// callback as a sub-slice of it. Only what split cannot use yet (the start of
// a frame whose end has not arrived, or the frames a pause held back) is
// copied, into the connection's carry, which the next read completes; the
// carry is dropped when it empties, so an idle connection keeps no buffer.
//
// The framer is the connection's reader from OnFrame until OnRead replaces
// it, and stays until it has passed on the bytes it holds: the framer in
// plain mode gives them to the new OnRead callback first, as one chunk, and
// then steps aside (c.fr = nil). While it holds frames it could not deliver
// (held) the connection does not read, so the carry never holds more than
// maxFrame bytes and one read; a job (frameResume) delivers them when reading could
// go on, which syncInterest notices for every way reading resumes
// (ResumeRead, a drained write queue, a new reader).

// DefaultMaxFrame is the frame size limit OnFrame uses for a maxFrame of 0:
// bufio.Scanner's default too.
const DefaultMaxFrame = bufio.MaxScanTokenSize

// ErrFrameTooLarge is the error a connection closes with when its OnFrame
// split function finds no frame in maxFrame bytes. errors.Is(err,
// bufio.ErrTooLong) holds for it too.
var ErrFrameTooLarge error = &kindError{"aio: tcp frame too large", []error{bufio.ErrTooLong}}

// maxEmptyFrames bounds the frames in a row that split may return without
// advancing (bufio.Scanner's limit too): one more closes the connection.
const maxEmptyFrames = 100

// minCarryStep is the least that a frame begun in the carry is extended by,
// from the next read, before split looks again: a small step would make
// split rescan the carry many times.
const minCarryStep = 512

// framer is a connection's OnFrame state (Conn.fr). Owned by the loop.
type framer struct {
	split bufio.SplitFunc
	max   int                         // bytes split sees at most: maxFrame
	fn    func(c *Conn, frame []byte) // the frame callback (plain mode: the new OnRead callback)
	plain bool                        // OnRead replaced the framer: pass on what it holds, then step aside

	// carry[off:] are bytes read and not consumed yet; nil when there are
	// none.
	carry []byte
	off   int

	held    bool // the carry may hold frames not delivered yet: the connection does not read
	queued  bool // a frameResume job is queued
	running bool // runFrames is delivering: reconfiguring takes effect at the next frame
	done    bool // split returned bufio.ErrFinalToken: what follows is discarded
	eof     bool // EOF was read: split sees atEOF, and the connection's EOF waits for the framer
	eofDone bool // split at EOF has nothing more to give
	empties int  // frames in a row that did not advance
}

// OnFrame sets a framing read callback and starts reading, in place of
// OnRead: the bytes that arrive are cut into frames by split, a
// bufio.SplitFunc (bufio.ScanLines, bufio.ScanWords, ScanLengthPrefixed, or
// a function of your own), and fn runs on the loop with each frame, in order. Split sees the
// bytes received and not yet consumed, as under bufio.Scanner, but at most
// maxFrame of them (0 means DefaultMaxFrame; negative is an error): a frame
// that split cannot find in maxFrame bytes (its delimiter or header
// included) closes the connection with ErrFrameTooLarge, however the bytes
// were cut into reads.
//
// frame is valid only until fn returns, like OnRead's b: a frame that lies
// whole in one read is a sub-slice of the loop's read buffer (no copy), and
// one that spans reads is kept in a buffer of the connection's own until it
// is complete. Copy what you keep.
//
// PauseRead called in fn takes effect at once: no more frames are delivered
// until ResumeRead, and the bytes already read are kept, in order, for
// then. So does a write queue that fn fills past ConnConfig.HighWater, until
// it drains.
//
// At EOF split is called with atEOF set until it has no more to give
// (bufio.ScanLines returns a last line without a newline), and then the
// connection's EOF follows as without OnFrame (OnEOF, or closing). Bytes
// split leaves at EOF close the connection with an error wrapping
// io.ErrUnexpectedEOF: the peer stopped in the middle of a frame.
//
// A reader installed in fn (OnRead, or OnFrame with another split) receives
// the bytes after the current frame: that is how a protocol switches
// framing, or from frames to a raw stream. Installed from elsewhere, it
// first receives the bytes the framer holds. Split returning
// bufio.ErrFinalToken ends the framing (a non-nil token is delivered first):
// the bytes after it, and those that arrive later, are discarded up to EOF,
// unless fn installs another reader.
//
// Any other error from split closes the connection with it wrapped, and so
// does a split that breaks the SplitFunc contract: an advance below 0 or
// past the data (bufio.ErrNegativeAdvance, bufio.ErrAdvanceTooFar), or more
// than 100 frames in a row without advancing (io.ErrNoProgress). A panic in
// split or fn closes the connection with a *PanicError (and reaches
// Config.OnPanic). Either way what fn wrote for the frames before goes to
// the kernel first, as with a Close in fn: a client that sent a good
// request and then a bad one reads the answer to the good one, then the
// close.
//
// Any goroutine; ErrNilFunc for a nil split or fn, ErrInvalidArgument for a
// negative maxFrame, ErrConnClosed after the connection closed.
func (c *Conn) OnFrame(split bufio.SplitFunc, maxFrame int, fn func(c *Conn, frame []byte)) error {
	switch {
	case split == nil || fn == nil:
		return ErrNilFunc
	case maxFrame < 0:
		return fmt.Errorf("%w: tcp OnFrame with a negative maxFrame %d", ErrInvalidArgument, maxFrame)
	case maxFrame == 0:
		maxFrame = DefaultMaxFrame
	}
	return c.runInlineIfOpen(func() { c.setReader(split, maxFrame, fn, false) })
}

// setOnRead makes fn the read callback (OnRead). A framer that holds bytes,
// or is delivering them now, passes them on to fn first. On the loop.
func (c *Conn) setOnRead(fn func(c *Conn, b []byte)) {
	if fr := c.fr; fr != nil && (fr.running || fr.len() > 0) {
		c.setReader(splitAll, math.MaxInt, fn, true)
		return
	}
	c.fr = nil
	c.onRead = fn
	c.update()
}

// setReader installs a framer, or reconfigures the one in place, which
// keeps the bytes it holds for the new split. On the loop.
func (c *Conn) setReader(split bufio.SplitFunc, maxFrame int, fn func(*Conn, []byte), plain bool) {
	fr := c.fr
	if fr == nil {
		fr = new(framer)
		c.fr = fr
	}
	fr.split, fr.max, fr.fn, fr.plain = split, maxFrame, fn, plain
	fr.done = false // empties stays: only an advance is progress, not a new reader
	if !fr.running && fr.len() > 0 {
		fr.held = true // the new split may find frames in them: deliver in a job
	}
	c.onRead = readFrames
	c.update()
}

// splitAll is the split of a framer in plain mode: every chunk is a frame,
// and no bytes are none (at EOF data is empty, not nil: see runFrames),
// so that the framer steps aside instead of delivering empty chunks.
func splitAll(data []byte, _ bool) (int, []byte, error) {
	if len(data) == 0 {
		return 0, nil, nil
	}
	return len(data), data, nil
}

// len returns the bytes the framer holds.
func (fr *framer) len() int { return len(fr.carry) - fr.off }

// readFrames is the OnRead callback of a connection with a framer.
func readFrames(c *Conn, b []byte) {
	if c.fr != nil {
		c.runFrames(b)
	}
}

// callFrames is runFrames outside a read callback, with its guard.
func (c *Conn) callFrames() {
	defer c.guard()
	c.runFrames(nil)
}

// runFrames delivers the frames of what the framer holds and then of b (a
// read; nil when resuming or at EOF) until every byte is consumed but a
// frame still incomplete, which is kept; or the connection stops reading,
// and the rest is kept, held; or it closes, because of fn or because split
// failed. On the loop; a panic goes to the caller's guard.
func (c *Conn) runFrames(b []byte) {
	fr := c.fr
	fr.running, fr.held = true, false // (held: reading was off, or a job cleared it)
	// The bytes kept from before come first. The frame that begins there
	// ends in b: b is appended a piece at a time, only as far as split needs
	// to find that end, and once every byte kept from before is consumed,
	// the rest of b is split in place.
	fed := 0 // b[:fed] is also at the end of the carry
	for fr.off < len(fr.carry)-fed {
		if fr.done {
			fr.discard(c)
			return
		}
		if !c.reading() {
			fr.carry = append(fr.carry, b[fed:]...)
			fr.stop(c, true)
			return
		}
		data := fr.carry[fr.off:]
		adv, tok, final, err := c.splitFrame(fr, data, fr.eof && fed == len(b))
		switch {
		case err != nil:
			c.closeAfterWrites(err) // the replies to the frames before go first
			return
		case adv == 0 && tok == nil && !final: // split wants more
			if fed == len(b) {
				fr.stop(c, false) // the next read goes on
				return
			}
			if fr.off > 0 { // what was consumed makes room
				fr.carry = fr.carry[:copy(fr.carry, data)]
				fr.off = 0
			}
			n := min(len(b)-fed, max(len(data), minCarryStep), fr.max-len(data))
			fr.carry = append(fr.carry, b[fed:fed+n]...)
			fed += n
			continue
		}
		fr.off += adv
		if !fr.deliver(c, tok, final) {
			return
		}
	}
	b = b[fed-fr.len():]
	fr.carry, fr.off = fr.carry[:0], 0 // kept for a tail
	for {
		switch {
		case fr.done:
			fr.discard(c)
			return
		case len(b) == 0 && (!fr.eof || fr.eofDone):
			fr.keep(nil)
			fr.stop(c, false)
			return
		case !c.reading():
			fr.keep(b)
			fr.stop(c, true)
			return
		}
		adv, tok, final, err := c.splitFrame(fr, b, fr.eof)
		switch {
		case err != nil:
			c.closeAfterWrites(err) // the replies to the frames before go first
			return
		case adv == 0 && tok == nil && !final: // split wants more
			fr.eofDone = fr.eof
			fr.keep(b)
			fr.stop(c, false)
			return
		}
		b = b[adv:]
		if len(b) > 0 && c.cork == corkArmed {
			// More follows in this read: the reply to this frame waits
			// to go out with the others (see corkHeld).
			c.cork = corkOn
		}
		if !fr.deliver(c, tok, final) {
			return
		}
	}
}

// deliver passes split's token, if any, to fn and reports whether delivering
// may go on (fn did not close the connection).
func (fr *framer) deliver(c *Conn, tok []byte, final bool) bool {
	if final {
		fr.done = true // before fn, which may install another reader
	}
	if tok != nil {
		fr.fn(c, tok)
	}
	return c.state == connOpen && c.fr == fr
}

// stop ends runFrames with the carry as it is; held says it holds bytes not
// delivered because the connection stopped reading. A framer in plain mode
// that has passed everything on steps aside.
func (fr *framer) stop(c *Conn, held bool) {
	fr.running = false
	fr.held = held
	if fr.plain && !held && fr.len() == 0 {
		c.onRead, c.fr = fr.fn, nil
	}
}

// discard drops what a framer that received its final token holds.
func (fr *framer) discard(c *Conn) {
	fr.carry, fr.off = nil, 0
	fr.eofDone = fr.eof
	fr.stop(c, false)
}

// keep makes tail, the rest of a read, the carry: in the carry's buffer if
// it fits without wasting much, in a new one if not; with no tail, the
// buffer goes.
func (fr *framer) keep(tail []byte) {
	if len(tail) == 0 {
		fr.carry, fr.off = nil, 0
		return
	}
	buf := fr.carry[:0]
	if cap(buf) < len(tail) || cap(buf) > max(4*len(tail), 4<<10) {
		buf = make([]byte, 0, len(tail)+minCarryStep) // and room for a first step
	}
	fr.carry, fr.off = append(buf, tail...), 0
}

// noBytes is an empty slice that is not nil.
var noBytes = []byte{}

// splitFrame runs split once over data, or its first fr.max bytes, and
// holds what it returns to the SplitFunc contract. adv == 0 with a nil tok
// and !final means split wants more bytes; err is the error to close the
// connection with.
func (c *Conn) splitFrame(fr *framer, data []byte, atEOF bool) (adv int, tok []byte, final bool, err error) {
	if len(data) > fr.max {
		data, atEOF = data[:fr.max], false // more is there: not the end yet
	}
	if data == nil {
		// Empty, not nil, as bufio.Scanner's buffer is at EOF: a split
		// that returns data as its final token (bufio's
		// ExampleScanner_emptyFinalToken) then gives an empty token, not
		// none.
		data = noBytes
	}
	adv, tok, err = fr.split(data, atEOF)
	if err == bufio.ErrFinalToken { // compared as bufio.Scanner does
		final, err = true, nil
	}
	switch {
	case err != nil:
		return 0, nil, false, fmt.Errorf("aio: tcp frame split on %s: %w", c.raddr, err)
	case adv < 0:
		return 0, nil, false, fmt.Errorf("aio: tcp frame split on %s: %w (%d)",
			c.raddr, bufio.ErrNegativeAdvance, adv)
	case adv > len(data):
		return 0, nil, false, fmt.Errorf("aio: tcp frame split on %s: %w (%d of %d bytes)",
			c.raddr, bufio.ErrAdvanceTooFar, adv, len(data))
	case adv > 0:
		fr.empties = 0
	case tok != nil || final: // a final token that does not advance, and a reader installed again, may come back
		if fr.empties++; fr.empties > maxEmptyFrames {
			return 0, nil, false, fmt.Errorf("aio: tcp frame split on %s: %d frames without advancing: %w",
				c.raddr, fr.empties, io.ErrNoProgress)
		}
	case atEOF && len(data) > 0:
		return 0, nil, false, fmt.Errorf("aio: tcp frame split on %s: EOF inside a frame (%d bytes): %w",
			c.raddr, len(data), io.ErrUnexpectedEOF)
	case len(data) >= fr.max:
		return 0, nil, false, fmt.Errorf("%w: none in %d bytes from %s", ErrFrameTooLarge, fr.max, c.raddr)
	}
	return adv, tok, final, nil
}

// framesEOF is the start of gotEOF on a connection with a framer: split
// sees atEOF and gives its last frames. It reports whether the connection's
// EOF may follow now: not if the connection closed, nor if it stopped
// reading before the last frame (frameResume calls gotEOF again once that
// is delivered). On the loop.
func (c *Conn) framesEOF() bool {
	fr := c.fr
	if !fr.eof {
		fr.eof = true
		c.callFrames()
	}
	return c.state == connOpen && fr.flushed(c)
}

// flushed reports whether the framer has given everything at EOF (or
// stepped aside).
func (fr *framer) flushed(c *Conn) bool { return c.fr != fr || fr.eofDone && !fr.held }

// frameResume is a Conn as the job that delivers the frames its framer held
// back: a job of its own type, so that queueing it allocates nothing.
type frameResume Conn

// resumeFrames queues the delivery of held frames. syncInterest calls it:
// every change that may let reading go on (ResumeRead, a drained write
// queue, a new reader) updates the interest. On the loop.
func (c *Conn) resumeFrames() {
	if fr := c.fr; fr != nil && fr.held && !fr.queued {
		fr.queued = true
		c.l.jobs.push(job{t: (*frameResume)(c)})
	}
}

func (r *frameResume) runTask(*Loop) {
	c := (*Conn)(r)
	fr := c.fr
	if fr == nil {
		return // closed
	}
	fr.queued = false
	if !fr.held {
		return
	}
	fr.held = false // reading would go on but for the held frames?
	if !c.reading() {
		fr.held = true // no: the next interest update queues another job
		return
	}
	c.callFrames()
	switch {
	case c.state != connOpen:
	case fr.eof && fr.flushed(c):
		c.gotEOF() // the last frames are out: now the EOF
	default:
		c.update() // read again, unless it held back again
	}
}

package httpd

import (
	"context"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"

	"github.com/valkyria/aio"
)

// A FromHTTP response that streams: once its handler flushes (or has
// written more than streamAt bytes), what it wrote goes to the loop as a
// Stream (chunked on HTTP/1.1, DATA frames on HTTP/2) and every later
// Write follows it there. The handler's goroutine and the loop meet in
// streamOut: Write copies its bytes and posts them, blocking while the
// stream is Full (until its OnDrain) or while too many posted bytes have
// not reached the stream yet, so that a large body never sits in memory;
// it fails once the client has gone away (the request's context is then
// cancelled too) or the stream has closed.

// streamAt is the most a FromHTTP response buffers before it streams: a
// response that stays below it (and is not flushed) is sent whole, with a
// Content-Length.
const streamAt = 64 << 10

// streamPostMax bounds the bytes handed to the loop that it has not
// written to the stream yet.
const streamPostMax = 64 << 10

// streamOut is a FromHTTP stream, between the handler's goroutine and the
// loop.
type streamOut struct {
	l   *aio.Loop // immutable
	r   *Request  // used on the loop only, while the request of seq lives
	seq uint64    // immutable
	s   *Stream   // the Stream, once begun; owned by the loop

	mu     sync.Mutex
	cond   sync.Cond
	posted int      // bytes posted to the loop and not yet written there
	full   bool     // the stream is Full: wait for its OnDrain
	err    error    // Write fails with it: the stream closed
	free   [][]byte // chunks the loop has written, for the next Writes
}

func newStreamOut(r *Request) *streamOut {
	o := &streamOut{l: r.ls.l, r: r, seq: r.seq}
	o.cond.L = &o.mu
	return o
}

// begin starts the Stream on the loop with status, header and the bytes
// buffered so far (first), and makes ctx's end close it for the writer.
// On the handler's goroutine.
func (o *streamOut) begin(ctx context.Context, status int, header []Field, first []byte, trailer []Field, closeConn bool) error {
	context.AfterFunc(ctx, func() { o.fail(ErrStreamClosed) }) // the Work's context ends with it
	o.mu.Lock()
	o.posted += len(first)
	o.mu.Unlock()
	if err := o.l.Post(func() { o.start(status, header, first, trailer, closeConn) }); err != nil {
		o.fail(ErrStreamClosed)
		return ErrStreamClosed
	}
	return nil
}

// start makes r's Stream, with trailer if it is known already (before
// the head: HTTP/1.1 chunks the body for it), and writes first. On the
// loop.
func (o *streamOut) start(status int, header []Field, first []byte, trailer []Field, closeConn bool) {
	r := o.r
	if !r.live(o.seq) || r.hdone || r.gone {
		o.done(len(first), ErrStreamClosed)
		return
	}
	s := r.Stream(status, header)
	r.stream.closeConn = closeConn
	_ = s.SetTrailer(trailer) // checked by responseWriter.trailer
	o.s = s
	aio.Adopt(r.Scope(), s.Handle()) // cancelled when the request ends, if not ended
	s.OnDrain(o.drained)
	startHead(r)
	o.put(first)
}

// startHead sends the head of r's stream now, if its turn has come: a
// handler that flushes before writing (server-sent events) shows its
// client the response has begun. On the loop.
func startHead(r *Request) {
	switch e := r.eng.(type) {
	case *h1conn:
		if r == e.qhead && !e.closed && !e.aborted && !e.finished {
			e.pump()
		}
	case *h2conn:
		if st := r.h2s; st != nil && !st.headersSent && !st.reset && !e.closed && !e.dead {
			e.startStream(st)
			e.flush()
		}
	}
}

// inform sends an interim response before the final one, which the
// loop receives after it (Post keeps the order of a goroutine's posts,
// and the handler's end comes after them). On the handler's goroutine.
func (o *streamOut) inform(status int, header []Field) {
	_ = o.l.Post(func() {
		if r := o.r; r.live(o.seq) && !r.hdone {
			_ = r.Inform(status, header) // sent, or not the place for it: a hint either way
		}
	})
}

// hijack asks the loop for the connection of the request (Hijack), and
// waits for its answer, or for ctx (the request's) to end. On the
// handler's goroutine.
func (o *streamOut) hijack(ctx context.Context) (net.Conn, error) {
	type answer struct {
		nc  net.Conn
		err error
	}
	ch := make(chan answer, 1) // the loop never waits on it
	if err := o.l.Post(func() {
		r := o.r
		if !r.live(o.seq) {
			ch <- answer{nil, ErrClientGone}
			return
		}
		nc, err := r.eng.hijack(r)
		ch <- answer{nc, err}
	}); err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		return a.nc, a.err
	case <-ctx.Done():
		// The loop may still hand the connection over; the view it made
		// is closed then, as nobody will.
		go func() {
			if a := <-ch; a.nc != nil {
				_ = a.nc.Close()
			}
		}()
		return nil, context.Cause(ctx)
	}
}

// interimFields returns the fields of h that an interim response may
// carry (checkInterimField).
func interimFields(h http.Header) []Field {
	var fields []Field
	for _, name := range slices.Sorted(maps.Keys(h)) { // in order, as net/http writes them
		for _, v := range h[name] {
			if f := (Field{Name: name, Value: v}); checkInterimField(f) == nil {
				fields = append(fields, f)
			}
		}
	}
	return fields
}

// write hands a copy of b to the loop, waiting while the stream is Full
// or too much is posted already. On the handler's goroutine.
func (o *streamOut) write(b []byte) (int, error) {
	o.mu.Lock()
	for o.err == nil && (o.full || o.posted >= streamPostMax) {
		o.cond.Wait()
	}
	if o.err != nil {
		o.mu.Unlock()
		return 0, o.err
	}
	o.posted += len(b)
	var c []byte
	if n := len(o.free); n > 0 && cap(o.free[n-1]) >= len(b) {
		c, o.free = o.free[n-1][:len(b)], o.free[:n-1]
	} else {
		c = make([]byte, len(b), max(len(b), 4<<10))
	}
	o.mu.Unlock()
	copy(c, b)
	if err := o.l.Post(func() { o.put(c) }); err != nil {
		o.fail(ErrStreamClosed)
		return 0, ErrStreamClosed
	}
	return len(b), nil
}

// put writes c to the stream. On the loop.
func (o *streamOut) put(c []byte) {
	var err error
	switch {
	case !o.current():
		err = ErrStreamClosed
	case len(c) > 0:
		_, err = o.s.Write(c)
	}
	full := err == nil && o.s.Full()
	o.mu.Lock()
	o.full = o.full || full
	if cap(c) > 0 && len(o.free) < 4 {
		o.free = append(o.free, c[:0])
	}
	o.mu.Unlock()
	o.done(len(c), err)
}

// current reports whether the stream start began is still its request's
// (the request lives: Stream.state) and was not dropped. On the loop.
func (o *streamOut) current() bool {
	if o.s == nil {
		return false
	}
	st := o.s.state()
	return st != nil && st.p != nil
}

// done accounts for n posted bytes the loop is through with, and records
// err.
func (o *streamOut) done(n int, err error) {
	o.mu.Lock()
	o.posted -= n
	if err != nil && o.err == nil {
		o.err = err
	}
	o.cond.Broadcast()
	o.mu.Unlock()
}

// drained is the Stream's OnDrain. On the loop.
func (o *streamOut) drained() {
	o.mu.Lock()
	o.full = false
	o.cond.Broadcast()
	o.mu.Unlock()
}

// fail makes the writer's waits and Writes end with err. Any goroutine.
func (o *streamOut) fail(err error) { o.done(0, err) }

// flushErr is what Flush reports. On the handler's goroutine.
func (o *streamOut) flushErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// end ends the stream, with trailer after its body, once every byte
// posted before is written, and waits for that, so that the handler's
// Work ends after its stream: ending first would cut it. On the handler's
// goroutine.
func (o *streamOut) end(ctx context.Context, trailer []Field) {
	ended := make(chan struct{})
	if o.l.Post(func() {
		if o.current() {
			_ = o.s.SetTrailer(trailer) // checked by responseWriter.trailer
			o.s.End()
		}
		close(ended)
	}) != nil {
		return
	}
	select {
	case <-ended:
	case <-ctx.Done(): // cancelled (the loop stops, the client went away): nothing to end
	}
}

package aio

import (
	"errors"
	"fmt"

	"github.com/valkyria/aio/internal/sock"
)

// Piped counts the bytes a Pipe copied each way: those it gave to the
// destination (its write queue, or the kernel pipe on the way to it), not
// those it read and had to drop. A destination closed before it sent what
// it held drops it, still counted: closed with an error, the Pipe fails
// then; closed by the program's Close, that is the program's doing.
type Piped struct {
	AToB, BToA int64
}

// errPipeLoops is Pipe's refusal of connections on two loops.
var errPipeLoops = fmt.Errorf("%w: Pipe of connections on different loops (dial the second on the first's loop)", ErrInvalidArgument)

// Pipe copies the bytes each connection reads to the other until both
// directions have ended, as a proxy or a tunnel does, with flow control per
// direction: a direction pauses reading its source while the destination's
// write queue is Full and resumes when it drains, and the other direction
// goes on meanwhile (both connections get ConnConfig.ReadWhileFull). On
// Linux the bytes move with splice(2), through a kernel pipe and never
// through user space or the write queue, as Go's io.Copy between two TCP
// connections does; a direction then holds back at most the destination's
// HighWater bytes, in the kernel, and Buffered and Full do not count them.
// Bytes the program writes to a piped connection go after those the pipe
// moved before, and its CloseWrite after both. Bytes that arrive for it
// after that CloseWrite, or after its Close, have nowhere to go: they are
// dropped, not counted, the connections end as they would (the sender is
// read, for nobody, up to its peer's EOF: cancel the pipe to end it
// sooner), and the pipe fails at its end with an error that counts them,
// for which errors.Is(err, ErrWriteClosed) holds, unless it fails with
// another error first (a reset, a timeout) or is cancelled. A FIN
// passes on as a half-close: when a reaches EOF, b's write side is closed
// once its queue is flushed, and the other way round; each connection
// closes once both its directions are finished, and one closed by Close
// half-closes the other as its EOF would. An error on either side (a
// reset, a timeout, a failed write, a TLS stream cut short of its
// close_notify by a FIN inside a record or a fatal alert) closes both at
// once, dropping what their write queues held, and passes on as a reset:
// the other connection's peer gets RST, not FIN, and what the kernel
// still held for it is dropped, so that a peer whose stream was cut short
// does not take it for whole (an upload its client aborted, a reply its
// server did). A TLS FIN between records, without close_notify, ends the
// stream as close_notify does (crypto/tls takes it so), and passes on as
// a FIN. A cancellation (Cancel, Stop, a drain's deadline) is the
// program's own end of the pipe: both close at once, without a reset.
//
// The handle completes with the byte counts when both connections have
// closed in order, fails with the first error otherwise, and is cancelled
// when Loop.Stop closes them. Cancelling it closes both connections. It is
// adopted by both connections' scopes, so that a Listener's Drain waits
// for it. Bytes a connection read before Pipe are the caller's: write them
// to the other first; a connection that already reached EOF passes it on
// at once. Bytes an OnFrame framer holds and has not delivered as a frame
// (what followed a header line, say) are piped first, as OnRead gets them.
//
// Pipe takes over both connections' OnRead, OnEOF, OnDrain and OnClose
// callbacks (the handle is the news of the end) and their PauseRead state.
// They must be on the same loop; a nil, identical or closed connection, or
// connections on two loops, fail the handle and close the connections that
// were given. Any goroutine.
func Pipe(a, b *Conn) *Handle[Piped] {
	switch {
	case a == nil || b == nil:
		err := fmt.Errorf("%w: Pipe of a nil connection", ErrInvalidArgument)
		for _, c := range []*Conn{a, b} {
			if c != nil {
				c.Close()
				return Fail[Piped](c.l, err)
			}
		}
		return Fail[Piped](nil, err)
	case a == b:
		a.Close()
		return Fail[Piped](a.l, fmt.Errorf("%w: Pipe of a connection to itself", ErrInvalidArgument))
	case a.l != b.l:
		a.Close()
		b.Close()
		return Fail[Piped](a.l, errPipeLoops)
	}
	p := &pipeNode{a: a, b: b}
	p.init(a.l)
	p.prod = p
	p.state.Store(uint32(Running))
	a.l.runInline(p.start)
	return &p.Handle
}

// pipeNode is Pipe's handle and state. Owned by the loop.
type pipeNode struct {
	Handle[Piped]
	a, b    *Conn
	stats   Piped
	open    int        // connections not closed yet
	refused int64      // bytes read for a connection that took no more (see refuse)
	err     error      // the first error that closed a connection
	dirs    [2]pipeDir // a to b, b to a
	busy    [2]*Promise[struct{}]
}

// pipeDir is one direction of a Pipe. Owned by the loop.
type pipeDir struct {
	src, dst *Conn
	n        *int64 // the bytes given to dst (its queue, or the kernel pipe), in the pipe's stats
	// The splice path (tcp_splice.go): the kernel pipe while it holds
	// bytes, how many, and whether splicing failed on these sockets.
	kp       kpipe
	held     int
	noSplice bool
}

// into returns the direction whose destination is c, from the one whose
// source is c.
func (p *pipeNode) into(c *Conn) *pipeDir {
	if c == p.b {
		return &p.dirs[0]
	}
	return &p.dirs[1]
}

func (p *pipeNode) from(c *Conn) *pipeDir {
	if c == p.a {
		return &p.dirs[0]
	}
	return &p.dirs[1]
}

// start wires the two directions. On the loop.
func (p *pipeNode) start() {
	a, b := p.a, p.b
	if a.state != connOpen || b.state != connOpen {
		a.closeWith(nil)
		b.closeWith(nil)
		p.settle(Piped{}, fmt.Errorf("aio: Pipe: %w", ErrConnClosed))
		return
	}
	if p.ended() { // cancelled before it started
		a.closeWith(nil)
		b.closeWith(nil)
		return
	}
	p.open = 2
	a.pipe, b.pipe = p, p
	p.dirs[0] = pipeDir{src: a, dst: b, n: &p.stats.AToB}
	p.dirs[1] = pipeDir{src: b, dst: a, n: &p.stats.BToA}
	p.dirs[0].start()
	p.dirs[1].start()
	// Each connection is busy while the pipe runs (see Listener.Drain): a
	// promise in its scope, not the pipe's handle, which the first orderly
	// close would cancel while the other connection still flushes.
	for i, c := range []*Conn{a, b} {
		p.busy[i] = NewPromise[struct{}](c.l)
		Adopt(c.Scope(), p.busy[i].Handle())
	}
}

// start wires the direction: what src reads is copied to dst (or spliced,
// see pull). On the loop.
func (d *pipeDir) start() {
	src, dst := d.src, d.dst
	src.readWhileFull = true
	src.held = false
	src.paused = false
	// As OnRead does: bytes an OnFrame framer still holds are piped
	// first, then the framer steps aside (and splicing may begin).
	src.setOnRead(func(src *Conn, b []byte) {
		if _, err := dst.write(b, false); err != nil {
			// dst's write side is shut (the program's CloseWrite: src's
			// own EOF would have ended its bytes), or dst has closed
			// (the program's Close; one closed with an error has closed
			// src too).
			d.refuse(len(b))
			return
		}
		*d.n += int64(len(b))
		if dst.full.Load() {
			d.pauseSource() // until dst drains
		}
	})
	src.onEOF = func(*Conn) { dst.closeWrite(nil) }
	dst.queue().onDrain = func(*Conn) { d.pauseSource() }
	src.onClose = func(src *Conn, err error) { d.pipe().closed(dst, err) }
	src.update()
	if src.eof { // EOF came before Pipe: pass it on now
		dst.closeWrite(nil)
	}
}

// refuse drops n bytes src read for a destination that can take no more
// (the program shut its write side, or closed it): they have nowhere to
// go. Counting them as copied, and completing as if they had been, would
// hide the loss; resetting src would lose the bytes queued to it from the
// other direction too. So the connections end as they would, and the pipe
// fails at its end with an error that counts what was dropped. On the
// loop.
func (d *pipeDir) refuse(n int) { d.pipe().refused += int64(n) }

// pipe returns the Pipe the direction belongs to.
func (d *pipeDir) pipe() *pipeNode { return d.src.pipe }

// pauseSource pauses src while dst cannot take more: its queue is Full
// (whoever filled it), or the kernel pipe holds bytes it did not take; and
// resumes it otherwise. On the loop.
func (d *pipeDir) pauseSource() {
	src := d.src
	if pause := d.dst.full.Load() || d.held > 0; pause != src.paused {
		src.paused = pause
		src.update()
	}
}

// closed runs when one connection has closed with err: an error closes the
// other at once, and the last close settles the pipe. On the loop.
func (p *pipeNode) closed(other *Conn, err error) {
	p.open--
	switch {
	case err != nil && p.err == nil:
		p.err = err
		if !errors.Is(err, ErrCancelled) && other.state == connOpen {
			// An abort passes on as one: a FIN would tell the other
			// peer that the stream it got was whole.
			_ = sock.SetResetOnClose(other.fd)
		}
		other.closeWith(err)
	case err == nil:
		// Closed in order, or by Close before its EOF was passed on:
		// nothing more comes from it either way.
		other.closeWrite(nil)
		// The other side's reads go nowhere now, but it must read on to
		// its EOF to close: if it was paused for the closed side, whose
		// queue and kernel pipe are gone, it would wait for ever.
		p.from(other).pauseSource()
	}
	if p.open > 0 {
		return
	}
	for _, b := range p.busy {
		b.Resolve(struct{}{})
	}
	switch {
	case p.err == nil && p.refused > 0:
		p.settle(p.stats, fmt.Errorf("aio: Pipe: %d bytes arrived for a connection that took no more (its CloseWrite or Close) and were dropped: %w",
			p.refused, ErrWriteClosed))
	case p.err == nil:
		p.settle(p.stats, nil)
	case errors.Is(p.err, ErrCancelled):
		p.cancel()
	default:
		p.settle(p.stats, p.err)
	}
}

// stop is the producer side: cancelling the pipe closes both connections.
func (p *pipeNode) stop() {
	p.a.closeWith(ErrCancelled)
	p.b.closeWith(ErrCancelled)
}

package aio

import (
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// A Pipe direction (pipeDir) moves its bytes with splice(2) where the
// system has it (Linux), as Go's io.Copy between two TCP connections does:
// what the source received goes into a kernel pipe and from there out to
// the destination, never through user space. That saves copying every
// byte twice (into the loop's read buffer and back into the kernel), most
// of a proxy's own work on large transfers. Elsewhere, or when splicing
// fails on the sockets, or while the destination's write queue holds bytes
// (a Write by the program; they go first), the direction copies through
// the read buffer and the write queue (tcp_pipe.go).
//
// The stream keeps its order: a direction splices in only when its kernel
// pipe is empty and the destination's queue too, pauses the source while
// the pipe holds bytes the destination did not take, and the destination
// sends those before anything queued after them (write, onWritable),
// and its FIN after both (closeWrite).
//
// Kernel pipes come from a pool per loop (tcpLoop.pipes) and go back as soon
// as they are empty, so a direction holds one only while the destination
// is full: a thousand idle proxied connections cost no pipe at all, and a
// busy loop a few. A pipe still holding bytes is released when its
// destination closes (its bytes are lost then, as queued writes are), and
// the pool's when the loop's last socket closes.

// pipeFn and spliceFn are the system calls of splicing. Variables only so
// that tests can make them fail (out of fds, a socket splice refuses);
// tests replace them while no loop runs and put them back before the next
// one starts.
var (
	pipeFn   = sock.Pipe
	spliceFn = sock.Splice
)

// kpipe is a kernel pipe: its two ends and its capacity.
type kpipe struct {
	r, w, size int
}

// maxFreePipes bounds a loop's pool of empty kernel pipes.
const maxFreePipes = 16

// takePipe returns an empty kernel pipe from the pool, or a new one. On the
// loop.
func (t *tcpLoop) takePipe() (kpipe, error) {
	if n := len(t.pipes); n > 0 {
		kp := t.pipes[n-1]
		t.pipes = t.pipes[:n-1]
		return kp, nil
	}
	r, w, size, err := pipeFn()
	if err == nil && size <= 0 { // no room: size 0 means no pipe here
		unix.Close(r)
		unix.Close(w)
		err = unix.EINVAL
	}
	return kpipe{r, w, size}, err
}

// putPipe takes back an empty kernel pipe, closing it if the pool is full
// or no socket is left to use it. On the loop.
func (t *tcpLoop) putPipe(kp kpipe) {
	if len(t.pipes) < maxFreePipes && t.refs > 0 {
		t.pipes = append(t.pipes, kp)
		return
	}
	kp.close()
}

// freePipes closes the pool. On the loop.
func (t *tcpLoop) freePipes() {
	for _, kp := range t.pipes {
		kp.close()
	}
	t.pipes = nil
}

func (kp kpipe) close() {
	unix.Close(kp.r)
	unix.Close(kp.w)
}

// splices reports whether the direction moves its next bytes by splice(2):
// the system has it, splice did not fail on these sockets, no framer holds
// bytes of the source, and nothing stands before them on the way out (the
// pipe is empty, the destination's queue too, and its write side is open:
// otherwise the copy path takes the bytes, and drops them after
// CloseWrite, failing the pipe at its end: see pipeDir.refuse). On the
// loop.
func (d *pipeDir) splices() bool {
	dst := d.dst
	return sock.SpliceSupported && !d.noSplice && d.held == 0 && d.src.fr == nil && d.src.tls == nil && dst.tls == nil &&
		dst.state == connOpen && dst.queued.Load() == 0 && !dst.wshut.Load()
}

// pull moves what the source received into the kernel pipe and on to the
// destination, until the source is drained, the destination full, or
// maxReadsPerEvent splices were made: readSome's work, without the read
// buffer. One splice takes at most the destination's HighWater, the bytes
// its queue would hold before the source paused. On the loop, when the
// source is readable and splices.
func (d *pipeDir) pull() {
	src := d.src
	for i := 0; i < maxReadsPerEvent; i++ {
		if d.kp.size == 0 {
			kp, err := src.tl.takePipe()
			if err != nil {
				// Out of fds, say: copy this time. That is the process's
				// state now, not the sockets': the next read tries again.
				src.readSome()
				return
			}
			d.kp = kp
		}
		want := min(d.kp.size, int(d.dst.hw))
		n, err := spliceFn(d.kp.w, src.fd, want)
		switch {
		case err == nil && n > 0:
			src.read(n)
			*d.n += int64(n)
			d.held = n
			d.push()
			if n < want || !src.reading() || !d.splices() { // drained, or dst full or gone
				return
			}
		case err == nil:
			d.dropPipe()
			src.gotEOF()
			return
		case errnoIs(err, unix.EAGAIN):
			d.dropPipe()
			return
		case errnoIs(err, unix.EINTR):
		case errnoIs(err, unix.EINVAL):
			// Not a socket splice takes from: nothing moved, copy instead.
			d.noSplice = true
			d.dropPipe()
			src.readSome()
			return
		default:
			d.dropPipe()
			src.closeWith(src.ioError("read", err))
			return
		}
	}
}

// push moves the kernel pipe's bytes out to the destination until it is
// empty or the destination full. Then, with the pipe empty, it goes back to
// the pool, the source resumes, and what the destination queued meanwhile
// follows (its Writable stays asked for while either holds bytes). On the
// loop.
func (d *pipeDir) push() {
	dst := d.dst
	for d.held > 0 {
		dst.beforeWrite(d.held)
		n, err := spliceFn(dst.fd, d.kp.r, d.held)
		if err != nil {
			if errnoIs(err, unix.EAGAIN) {
				break
			}
			if errnoIs(err, unix.EINTR) {
				continue
			}
			dst.closeWith(dst.ioError("write", err)) // releases the pipe
			return
		}
		d.held -= n
		dst.sent(n) // not the write queue's: its positions count Writes
	}
	if d.held == 0 {
		d.dropPipe()
	}
	d.pauseSource()
	dst.update()
}

// dropPipe gives an empty kernel pipe back to the pool. On the loop.
func (d *pipeDir) dropPipe() {
	if d.kp.size != 0 && d.held == 0 {
		d.src.tl.putPipe(d.kp)
		d.kp = kpipe{}
	}
}

// release lets go of the kernel pipe when a connection of the direction
// closed: back to the pool if empty, closed with the bytes it holds
// otherwise. On the loop.
func (d *pipeDir) release() {
	if d.kp.size == 0 {
		return
	}
	if d.held > 0 {
		d.kp.close()
	} else {
		d.src.tl.putPipe(d.kp)
	}
	d.kp, d.held = kpipe{}, 0
}

// splicedTo returns the bytes the kernel pipe of the Pipe direction into c
// holds for it: bytes that go out before anything c queues. On the loop.
func (c *Conn) splicedTo() int {
	if p := c.pipe; p != nil {
		return p.into(c).held
	}
	return 0
}

// unsplice releases the kernel pipe of the Pipe direction into c, as c
// closes: its bytes were for c. The pipe of the direction from c holds
// bytes c read for the other side, which sends them before the FIN that
// c's close passes on, as it sends what c's reads queued when copying;
// that side's close releases it. On the loop.
func (c *Conn) unsplice() {
	if p := c.pipe; p != nil {
		p.into(c).release()
	}
}

// onWritable sends what c holds for its peer: the bytes a Pipe spliced
// for it first, then its write queue. On the loop.
func (c *Conn) onWritable() {
	if p := c.pipe; p != nil {
		if d := p.into(c); d.held > 0 {
			d.push()
			if d.held > 0 || c.state != connOpen {
				return
			}
			if c.queued.Load() == 0 {
				if c.wshut.Load() && !c.wdone {
					c.shutdown() // CloseWrite waited for the pipe
				}
				return
			}
		}
	}
	if c.queued.Load() > 0 {
		c.flush()
	}
}

package aio

import (
	"fmt"
	"time"

	"github.com/valkyria/aio/internal/poll"
	"github.com/valkyria/aio/internal/sock"
	"golang.org/x/sys/unix"
)

// setBufferSizes sets the socket buffer sizes cfg asks for on fd: a
// listening socket (accepted ones inherit them) or one about to connect.
func setBufferSizes(fd int, cfg ConnConfig) error {
	if cfg.ReadBuffer > 0 {
		if err := sock.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, cfg.ReadBuffer); err != nil {
			return fmt.Errorf("setsockopt SO_RCVBUF: %w", err)
		}
	}
	if cfg.WriteBuffer > 0 {
		if err := sock.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, cfg.WriteBuffer); err != nil {
			return fmt.Errorf("setsockopt SO_SNDBUF: %w", err)
		}
	}
	return nil
}

// setConnOptions applies cfg's per-connection socket options to fd;
// TCP_NODELAY only if the socket does not have it already (inherited from
// its listener) or gets it later (see noDelayAfterFirst); the buffer sizes
// only with buffers (a socket about to connect: accepted ones inherit them).
func setConnOptions(fd int, cfg ConnConfig, skipNoDelay, buffers bool) error {
	if buffers {
		if err := setBufferSizes(fd, cfg); err != nil {
			return err
		}
	}
	if !cfg.Nagle && !skipNoDelay {
		if err := sock.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
			return fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
		}
	}
	if cfg.KeepAlive > 0 {
		if err := sock.SetKeepAlive(fd, cfg.KeepAlive); err != nil {
			return err
		}
	}
	return nil
}

// Values of Conn.noDelayDue. A dialed connection whose first write system
// call is small (up to noDelayLateMax bytes) gets TCP_NODELAY just before its
// second write system call rather than before connecting: Nagle's algorithm
// holds a small segment back only while earlier data is unacknowledged, and
// a first write of one segment on a fresh connection never finds any, so it
// goes out at once either way, on every TCP stack (classic Nagle as on the
// BSDs or gVisor's netstack, or Linux's Minshall variant). A larger first
// write could leave a small tail behind its earlier segments, so the option
// is set before it. A connection that writes once (a request, a reply)
// saves a system call.
const (
	noDelayNone       = iota // nothing to do: set, inherited, or Nagle wanted
	noDelayAfterFirst        // no write yet
	noDelayNow               // one write made: set it before the next
)

// noDelayLateMax is the largest first write that leaves TCP_NODELAY for
// later: one segment under the smallest MSS (536 bytes for IPv4).
const noDelayLateMax = 512

// beforeWrite runs before every write system call on c, of n bytes. On the
// loop.
func (c *Conn) beforeWrite(n int) {
	switch c.noDelayDue {
	case noDelayAfterFirst:
		if n <= noDelayLateMax {
			c.noDelayDue = noDelayNow
			return
		}
		fallthrough
	case noDelayNow:
		c.noDelayDue = noDelayNone
		// An error here (the connection failed) is the write's to report.
		_ = sock.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
}

// SetNoDelay sets or clears TCP_NODELAY (set by default; see
// ConnConfig.Nagle). On the loop it acts at once and returns the system
// call's error; elsewhere it is posted, and an error there (only a socket
// that already failed gives one) closes the connection with it (see
// Closed). Any goroutine; ErrConnClosed after the connection closed.
func (c *Conn) SetNoDelay(on bool) error {
	v := 0
	if on {
		v = 1
	}
	return c.sockopt(func() error {
		c.noDelayDue = noDelayNone // the caller's choice stands
		return unix.SetsockoptInt(c.fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, v)
	})
}

// SetKeepAlive turns TCP keep-alive on with idle time and probe interval d
// (whole seconds, at most 32767 s), or off for d == 0 (see
// ConnConfig.KeepAlive), acting and reporting as SetNoDelay does. Any
// goroutine; an error for negative d.
func (c *Conn) SetKeepAlive(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: tcp: negative KeepAlive %v", ErrInvalidArgument, d)
	}
	return c.sockopt(func() error { return sock.SetKeepAlive(c.fd, d) })
}

// sockopt runs set, a socket option's system call, on the loop: see
// SetNoDelay for how its error is reported.
func (c *Conn) sockopt(set func() error) error {
	if c.l.OnLoop() {
		if c.state == connClosed {
			return ErrConnClosed
		}
		return set()
	}
	return c.runInlineIfOpen(func() {
		if err := set(); err != nil {
			c.closeWith(c.ioError("setsockopt", err))
		}
	})
}

// connTimeouts are a connection's read, idle and write timeouts: one
// timer, armed for the earliest deadline. Activity only moves
// lastRead/lastIO/lastWrite; a timer that fires early re-arms itself, so a
// busy connection costs no timer-heap work per read or write. A timeout
// fires on the loop's timer, so it is as precise as the loop's timers (it
// is not swept at a coarser tick). Owned by the loop.
type connTimeouts struct {
	t                 timer
	read, idle, write time.Duration
	lastRead          time.Duration // loop clock of the last read, or of reading (re)starting
	lastIO            time.Duration // loop clock of the last byte read or written
	// lastWrite is the loop clock of the last write progress: a byte that
	// reached the kernel, bytes starting to wait (Writable interest added),
	// or the peer found acknowledging bytes the kernel held (fire).
	lastWrite time.Duration
	// sent counts the bytes that reached the kernel while a timeout is on
	// (plus those ackedBytes found there uncounted), and acked is sent less
	// the kernel's send queue when lastWrite was last set by a stall or a
	// check (0 with unknown, when the queue cannot be read): bytes the peer
	// has acknowledged. A stall is not the
	// peer's if acked grew, although the kernel took no new byte: a kernel
	// buffer of megabytes (Linux autotunes up to 4 MiB) wakes a writer
	// only when a third of it is free, so a client that reads a download
	// at a steady 100 KB/s would otherwise be cut after every WriteTimeout
	// of 30 s, though bytes flow all along.
	sent, acked uint64
	known       bool // acked holds a reading of the send queue
	// linger is the loop clock at which a draining connection that sent
	// its FIN stops waiting for the peer's EOF (tcp_drain.go); 0: none.
	linger time.Duration
	// lingerFor is ConnConfig.Linger: 0 means DefaultLinger, negative no
	// lingering close. Set when the connection is made.
	lingerFor time.Duration
}

// timeouts returns c's timeouts, making them on first use. On the loop (or
// before c is shared).
func (c *Conn) timeouts() *connTimeouts {
	if c.to == nil {
		c.to = &connTimeouts{}
		c.to.t.owner = c
		c.to.t.index = -1
	}
	return c.to
}

// SetReadTimeout sets ConnConfig.ReadTimeout (0 turns it off); it counts
// from the call. Any goroutine; an error for negative d or a closed
// connection.
func (c *Conn) SetReadTimeout(d time.Duration) error {
	return c.setTimeout("read", d, func(to *connTimeouts, now time.Duration) {
		to.read, to.lastRead = d, now
	})
}

// SetIdleTimeout sets ConnConfig.IdleTimeout (0 turns it off); it counts
// from the call. Any goroutine; an error for negative d or a closed
// connection.
func (c *Conn) SetIdleTimeout(d time.Duration) error {
	return c.setTimeout("idle", d, func(to *connTimeouts, now time.Duration) {
		to.idle, to.lastIO = d, now
	})
}

// SetWriteTimeout sets ConnConfig.WriteTimeout (0 turns it off): the
// connection closes with ErrWriteTimeout once bytes have waited to be sent
// for d with none taken by the kernel and none acknowledged by the peer;
// it counts from the call, or from when bytes start to wait (a call while
// they wait already counts the peer's acknowledgements from there too).
// Any goroutine; an error for negative d or a closed connection.
func (c *Conn) SetWriteTimeout(d time.Duration) error {
	return c.setTimeout("write", d, func(to *connTimeouts, now time.Duration) {
		to.write = d
		c.writeStalled(to, now)
	})
}

// setTimeout sets one of the timeouts and its reference time (set, given
// the loop's clock), on the loop.
func (c *Conn) setTimeout(what string, d time.Duration,
	set func(to *connTimeouts, now time.Duration)) error {
	if d < 0 {
		return fmt.Errorf("%w: tcp: negative %s timeout %v", ErrInvalidArgument, what, d)
	}
	return c.runInlineIfOpen(func() {
		if d == 0 && c.to == nil {
			return // off already: nothing to allocate
		}
		set(c.timeouts(), c.l.clock())
		c.armTimeouts()
	})
}

// startTimeouts starts the configured timeouts of a connection that just
// opened. On the loop.
func (c *Conn) startTimeouts() {
	c.l.checkOnLoop()
	if to := c.to; to != nil {
		now := c.l.clock()
		to.lastRead, to.lastIO, to.lastWrite = now, now, now
		c.armTimeouts()
	}
}

// deadline returns the earliest timeout deadline, if any is on.
func (c *Conn) deadline(to *connTimeouts) (time.Duration, bool) {
	var dl time.Duration
	ok := false
	if to.read > 0 && c.reading() {
		dl, ok = later(to.lastRead, to.read), true
	}
	if to.idle > 0 {
		if d := later(to.lastIO, to.idle); !ok || d < dl {
			dl, ok = d, true
		}
	}
	if to.write > 0 && c.ev&poll.Writable != 0 {
		if d := later(to.lastWrite, to.write); !ok || d < dl {
			dl, ok = d, true
		}
	}
	if to.linger > 0 && (!ok || to.linger < dl) {
		dl, ok = to.linger, true
	}
	return dl, ok
}

// armTimeouts arms the timer for the earliest deadline. A timer already armed
// for an earlier time is left alone: it fires, sees the deadline moved, and
// re-arms. On the loop.
func (c *Conn) armTimeouts() {
	c.l.checkOnLoop()
	to := c.to
	if c.state != connOpen || to == nil {
		return
	}
	dl, ok := c.deadline(to)
	armed := to.t.index >= 0
	switch {
	case !ok:
		if armed {
			c.l.removeTimer(&to.t)
		}
		return
	case armed && to.t.when <= dl:
		return
	case armed:
		c.l.removeTimer(&to.t)
	}
	to.t.when = dl
	c.l.addTimer(&to.t)
}

// writeStalled starts the write timeout's clock at now: bytes start to
// wait, or the timeout is set. With the timeout on, it reads the kernel's
// send queue, the baseline peerAcked compares with: one ioctl per stall,
// and none on a connection whose writes never wait. On the loop.
func (c *Conn) writeStalled(to *connTimeouts, now time.Duration) {
	to.lastWrite = now
	to.known = false
	if to.write > 0 {
		to.acked, to.known = c.ackedBytes(to)
	}
}

// peerAcked reports whether the peer acknowledged bytes since the write
// timeout's baseline was taken (writeStalled, or the last peerAcked that
// found progress), and moves the baseline. One ioctl, when the timeout
// would fire. On the loop.
func (c *Conn) peerAcked(to *connTimeouts) bool {
	acked, ok := c.ackedBytes(to)
	progressed := ok && to.known && acked > to.acked
	to.acked, to.known = acked, ok
	return progressed
}

// ackedBytes returns how many of the bytes counted in to.sent the peer has
// acknowledged: those no longer in the kernel's send queue. False when the
// queue cannot be read (not Linux). On the loop.
//
// Only differences of it mean anything (peerAcked compares two readings),
// so bytes that reached the kernel uncounted (sent before the timeout
// was turned on, which a SetWriteTimeout on a stalled connection does)
// are counted when the queue holds more than sent: sent moves up to the
// queue, a constant shift that no later reading undoes, since from then
// on every byte that enters the queue is counted too.
func (c *Conn) ackedBytes(to *connTimeouts) (uint64, bool) {
	q, err := sock.SendQueue(c.fd)
	if err != nil || q < 0 {
		return 0, false
	}
	if uint64(q) > to.sent {
		to.sent = uint64(q)
	}
	return to.sent - uint64(q), true
}

// fire runs when the timer is due: the connection closes if a deadline
// really passed, else the timer is re-armed. On the loop.
func (c *Conn) fire() {
	c.l.checkOnLoop()
	if c.state != connOpen {
		return
	}
	now, to := c.l.Now(), c.to
	var err error
	switch {
	case to.read > 0 && c.reading() && now >= later(to.lastRead, to.read):
		err = ErrReadTimeout
	case to.idle > 0 && now >= later(to.lastIO, to.idle):
		err = ErrIdleTimeout
	case to.write > 0 && c.ev&poll.Writable != 0 && now >= later(to.lastWrite, to.write):
		if c.peerAcked(to) {
			to.lastWrite = now
			c.armTimeouts()
			return
		}
		err = ErrWriteTimeout
	case to.linger > 0 && now >= to.linger:
		// The drain's lingering close ends (tcp_linger.go).
	default:
		c.armTimeouts()
		return
	}
	if to.linger > 0 {
		// Lingering, the connection has ended well already (its replies
		// flushed, its FIN sent): a timeout only cuts the linger short,
		// and is no failure of it.
		err = nil
	}
	c.closeWith(err)
}

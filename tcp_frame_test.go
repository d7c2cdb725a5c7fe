package aio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// frameListen listens on 127.0.0.1 and runs setup on the loop with every
// accepted connection, which it then hands over on the channel.
func frameListen(t testing.TB, l *Loop, cfg ListenConfig, setup func(c *Conn)) (*Listener, <-chan *Conn) {
	t.Helper()
	conns := make(chan *Conn, 4)
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) {
		setup(c)
		conns <- c
	})
	require.NoError(t, err)
	return ln, conns
}

// collectFrames returns a frame callback that sends a copy of every frame on
// the channel (room for n, so that the loop never blocks on it).
func collectFrames(n int) (func(*Conn, []byte), chan string) {
	frames := make(chan string, n)
	return func(_ *Conn, f []byte) { frames <- string(f) }, frames
}

// framesOf receives n frames.
func framesOf(t *testing.T, frames <-chan string, n int) []string {
	t.Helper()
	got := make([]string, n)
	for i := range got {
		got[i] = recv(t, frames)
	}
	return got
}

// noMoreFrames requires that nothing more was delivered by the time the
// loop runs a posted callback (so after the I/O callbacks before it).
func noMoreFrames(t *testing.T, l *Loop, frames <-chan string) {
	t.Helper()
	onLoop(t, l, func() {})
	require.Empty(t, frames)
}

// trickle writes p to nc in pieces of n bytes, each only once the loop has
// read and handled the one before, so that every piece is a read of its own.
func trickle(t *testing.T, l *Loop, nc net.Conn, p []byte, n int) {
	t.Helper()
	for len(p) > 0 {
		k := min(n, len(p))
		want := l.Stats().TCPBytesIn + uint64(k)
		netWrite(t, nc, p[:k])
		eventually(t, func() bool { return l.Stats().TCPBytesIn >= want }, "piece not read")
		onLoop(t, l, func() {}) // and its callback has returned
		p = p[k:]
	}
}

// netWrite writes p to nc.
func netWrite(t *testing.T, nc net.Conn, p []byte) {
	t.Helper()
	_, err := nc.Write(p)
	require.NoError(t, err)
}

// splitLen32 frames a 4-byte big-endian length followed by that many bytes.
func splitLen32(data []byte, _ bool) (int, []byte, error) {
	if len(data) < 4 {
		return 0, nil, nil
	}
	n := int(binary.BigEndian.Uint32(data))
	if len(data)-4 < n {
		return 0, nil, nil
	}
	return 4 + n, data[4 : 4+n], nil
}

// len32 is p with its splitLen32 header.
func len32(p []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(p))), p...)
}

// inReadBuffer reports whether b lies in l's shared read buffer. On the loop.
func inReadBuffer(l *Loop, b []byte) bool {
	buf := *l.tcp.buf
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= start && p+uintptr(len(b)) <= start+uintptr(len(buf))
}

// someLines returns n lines of varied lengths (some empty, some ending in
// \r\n) and the frames bufio.ScanLines makes of them.
func someLines(n int) ([]byte, []string) {
	var b bytes.Buffer
	want := make([]string, n)
	for i := range want {
		want[i] = strings.Repeat(string(rune('a'+i%26)), (i*37)%300)
		b.WriteString(want[i])
		if i%3 == 0 {
			b.WriteByte('\r')
		}
		b.WriteByte('\n')
	}
	return b.Bytes(), want
}

// ScanLines cuts the stream into the same lines whether they come in many
// small writes or in one write that spans many reads.
func TestOnFrameLines(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(1 << 12)
	ln, _ := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 1024, fn))
	})
	data, want := someLines(2000) // ~300 KB: several reads
	t.Run("small writes", func(t *testing.T) {
		nc := netDial(t, ln)
		for rest := data; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n') + 1
			netWrite(t, nc, rest[:i])
			rest = rest[i:]
		}
		require.Equal(t, want, framesOf(t, frames, len(want)))
	})
	t.Run("one write", func(t *testing.T) {
		nc := netDial(t, ln)
		netWrite(t, nc, data)
		require.Equal(t, want, framesOf(t, frames, len(want)))
	})
}

// Frames split across reads at every byte are put together, lines and
// length-prefixed frames alike.
func TestOnFrameByteByByte(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split bufio.SplitFunc
		data  []byte
		want  []string
	}{
		{"lines", bufio.ScanLines, []byte("alpha\nbeta\r\n\ngamma\n"), []string{"alpha", "beta", "", "gamma"}},
		{"length-prefixed", splitLen32,
			bytes.Join([][]byte{len32([]byte("alpha")), len32(nil), len32([]byte("be"))}, nil),
			[]string{"alpha", "", "be"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLoop(t)
			fn, frames := collectFrames(16)
			ln, _ := frameListen(t, l, ListenConfig{}, func(c *Conn) {
				assert.NoError(t, c.OnFrame(tc.split, 64, fn))
			})
			nc := netDial(t, ln)
			trickle(t, l, nc, tc.data, 1)
			require.Equal(t, tc.want, framesOf(t, frames, len(tc.want)))
			noMoreFrames(t, l, frames)
		})
	}
}

// A custom split: 4-byte big-endian lengths, frames from empty to several
// reads long, one write each and all in one write.
func TestOnFrameLengthPrefixed(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(64)
	ln, _ := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(splitLen32, 1<<20, fn))
	})
	var all []byte
	var want []string
	for i, n := range []int{0, 1, 100, 70_000, 300_000, 3} {
		p := make([]byte, n)
		pattern(p, i)
		want = append(want, string(p))
		all = append(all, len32(p)...)
	}
	nc := netDial(t, ln)
	for rest := all; len(rest) > 0; {
		n := 4 + int(binary.BigEndian.Uint32(rest))
		netWrite(t, nc, rest[:n])
		rest = rest[n:]
	}
	require.Equal(t, want, framesOf(t, frames, len(want)))
	netWrite(t, nc, all)
	require.Equal(t, want, framesOf(t, frames, len(want)))
}

// A frame that lies whole in a read is a sub-slice of the loop's read
// buffer; one that spans reads is copied. Splitting whole frames allocates
// nothing, nor does a stream whose reads end inside frames.
func TestOnFrameZeroCopy(t *testing.T) {
	l := startLoop(t)
	inBuf := make(chan bool, 256)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 64, func(c *Conn, f []byte) {
			inBuf <- inReadBuffer(l, f)
		}))
	})
	nc := netDial(t, ln)
	c := recv(t, conns)
	netWrite(t, nc, bytes.Repeat([]byte("a line\n"), 100)) // one segment: one read
	for range 100 {
		require.True(t, recv(t, inBuf), "a whole frame was copied")
	}
	trickle(t, l, nc, []byte("hel"), 3)
	trickle(t, l, nc, []byte("lo\nnext\n"), 8)
	require.False(t, recv(t, inBuf), "a frame that spans reads is the carry's")
	require.True(t, recv(t, inBuf), "after it, frames are in the read buffer again")

	n := 0 // on the loop
	count := func(*Conn, []byte) { n++ }
	whole := bytes.Repeat([]byte("a line\n"), 100)
	straddling := []byte("ab\ncd\nef") // every read ends inside a frame
	onLoop(t, l, func() {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 64, count))
		assert.Zero(t, testing.AllocsPerRun(100, func() { readFrames(c, whole) }))
		readFrames(c, straddling) // the carry's buffer is made once
		assert.Zero(t, testing.AllocsPerRun(100, func() { readFrames(c, straddling) }))
		assert.Equal(t, 101*100+2+101*2, n) // AllocsPerRun runs fn once more
		c.Close()                           // before EOF flushes "ef"
	})
}

// A frame longer than maxFrame closes the connection with ErrFrameTooLarge,
// whether it arrives in one read or dribbles in; one of exactly maxFrame
// bytes (delimiter included) is fine.
func TestOnFrameTooLarge(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(16)
	closeErr := make(chan error, 2)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 16, fn))
		assert.NoError(t, c.OnClose(func(_ *Conn, err error) { closeErr <- err }))
	})
	check := func(c *Conn) {
		t.Helper()
		_, err := wait(t, c.Closed())
		require.ErrorIs(t, err, ErrFrameTooLarge)
		require.ErrorIs(t, err, bufio.ErrTooLong)
		require.Contains(t, err.Error(), "16 bytes")
		require.Equal(t, err, recv(t, closeErr))
	}

	nc := netDial(t, ln)
	netWrite(t, nc, []byte("0123456789abcde\n0123456789abcdef\n"))
	check(recv(t, conns))
	require.Equal(t, []string{"0123456789abcde"}, framesOf(t, frames, 1))

	nc = netDial(t, ln)
	c := recv(t, conns)
	trickle(t, l, nc, []byte("0123456789"), 10)
	require.Equal(t, Running, c.Closed().Status(), "10 bytes are not too many yet")
	trickle(t, l, nc, []byte("0123456789"), 10)
	check(c)
	noMoreFrames(t, l, frames)
}

// A split function that breaks the SplitFunc contract, fails or panics
// closes the connection with a clear error, and so does a panicking fn.
func TestOnFrameBadSplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		split bufio.SplitFunc
		fn    func(*Conn, []byte)
		want  error // or, if nil, a *PanicError
	}{
		{"negative advance", func([]byte, bool) (int, []byte, error) { return -1, nil, nil }, nil, bufio.ErrNegativeAdvance},
		{"advance too far", func(d []byte, _ bool) (int, []byte, error) { return len(d) + 1, d, nil }, nil, bufio.ErrAdvanceTooFar},
		{"error", func([]byte, bool) (int, []byte, error) { return 0, nil, errBoom }, nil, errBoom},
		{"no progress", func([]byte, bool) (int, []byte, error) { return 0, []byte{}, nil }, nil, io.ErrNoProgress},
		// fn installs the reader again at each frame, which must not
		// reset the count of frames that did not advance (nil fn below).
		{"no progress, installed again", func([]byte, bool) (int, []byte, error) { return 0, []byte{}, nil }, nil, io.ErrNoProgress},
		{"final token without advance, installed again", func([]byte, bool) (int, []byte, error) {
			return 0, []byte("F"), bufio.ErrFinalToken
		}, nil, io.ErrNoProgress},
		{"panicking split", func([]byte, bool) (int, []byte, error) { panic("split boom") }, nil, nil},
		{"panicking fn", bufio.ScanLines, func(*Conn, []byte) { panic("fn boom") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLoop(t, Config{OnPanic: func(any) {}})
			fn := tc.fn
			if fn == nil {
				fn = func(*Conn, []byte) {}
				if strings.HasSuffix(tc.name, "installed again") {
					fn = func(c *Conn, _ []byte) { _ = c.OnFrame(tc.split, 0, fn) }
				}
			}
			ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
				assert.NoError(t, c.OnFrame(tc.split, 0, fn))
			})
			nc := netDial(t, ln)
			netWrite(t, nc, []byte("x\n"))
			_, err := wait(t, recv(t, conns).Closed())
			if tc.want == nil {
				var pe *PanicError
				require.ErrorAs(t, err, &pe)
				return
			}
			require.ErrorIs(t, err, tc.want)
			require.Contains(t, err.Error(), "aio: tcp frame split on 127.0.0.1:")
		})
	}
}

// At EOF split flushes the last frame (a line without a newline), and only
// then does the connection's EOF follow: OnEOF, or the close. A frame cut
// short by EOF is an error.
func TestOnFrameEOF(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(16)
	withEOF := true // on the loop
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		if withEOF {
			assert.NoError(t, c.OnEOF(func(c *Conn) { frames <- "EOF"; c.Close() }))
		}
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 0, fn))
	})
	nc := netDial(t, ln)
	netWrite(t, nc, []byte("a\nb\nlast"))
	require.NoError(t, nc.CloseWrite())
	require.Equal(t, []string{"a", "b", "last", "EOF"}, framesOf(t, frames, 4))
	_, err := wait(t, recv(t, conns).Closed())
	require.NoError(t, err)

	onLoop(t, l, func() { withEOF = false })
	nc = netDial(t, ln)
	netWrite(t, nc, []byte("a\n"))
	require.NoError(t, nc.CloseWrite())
	_, err = wait(t, recv(t, conns).Closed())
	require.NoError(t, err, "without OnEOF, EOF closes")
	require.Equal(t, []string{"a"}, framesOf(t, frames, 1), "no empty line after the last newline")
	noMoreFrames(t, l, frames)

	lnLen, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(splitLen32, 0, fn))
	})
	nc = netDial(t, lnLen)
	netWrite(t, nc, append(len32([]byte("ok")), len32([]byte("cut short"))[:6]...))
	require.NoError(t, nc.CloseWrite())
	_, err = wait(t, recv(t, conns).Closed())
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Equal(t, []string{"ok"}, framesOf(t, frames, 1))
}

// A split that gives the data left at EOF as its final token (bufio's
// ExampleScanner_emptyFinalToken) gives an empty token when none is left,
// as under bufio.Scanner: "1,2," is "1", "2", "", and nothing at all is
// one empty frame. Bug: split saw nil data at EOF, so the token was nil and
// no frame was delivered.
func TestOnFrameEmptyFinalToken(t *testing.T) {
	onComma := func(data []byte, atEOF bool) (int, []byte, error) {
		if i := bytes.IndexByte(data, ','); i >= 0 {
			return i + 1, data[:i], nil
		}
		if !atEOF {
			return 0, nil, nil
		}
		return 0, data, bufio.ErrFinalToken
	}
	l := startLoop(t)
	fn, frames := collectFrames(16)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(onComma, 0, fn))
	})
	for input, want := range map[string][]string{"1,2,": {"1", "2", ""}, "": {""}, "1,2": {"1", "2"}} {
		var scanned []string // what bufio.Scanner gives: the reference
		sc := bufio.NewScanner(strings.NewReader(input))
		sc.Split(onComma)
		for sc.Scan() {
			scanned = append(scanned, sc.Text())
		}
		require.Equal(t, want, scanned, "%q under bufio.Scanner", input)
		nc := netDial(t, ln)
		netWrite(t, nc, []byte(input))
		require.NoError(t, nc.CloseWrite())
		_, err := wait(t, recv(t, conns).Closed())
		require.NoError(t, err)
		assert.Equal(t, want, framesOf(t, frames, len(want)), "%q", input)
		noMoreFrames(t, l, frames)
	}
}

// PauseRead in fn stops the frames at once; the connection reads nothing
// more while it holds frames; ResumeRead delivers the rest in order, and
// EOF waits behind them.
func TestOnFramePauseInFn(t *testing.T) {
	l := startLoop(t)
	frames := make(chan string, 64)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnEOF(func(c *Conn) { frames <- "EOF"; c.Close() }))
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 0, func(c *Conn, f []byte) {
			frames <- string(f)
			assert.NoError(t, c.PauseRead())
		}))
	})
	nc := netDial(t, ln)
	c := recv(t, conns)
	data, want := someLines(50)
	data = append(data, "unterminated"...)
	want = append(want, "unterminated", "EOF")
	netWrite(t, nc, data)
	require.NoError(t, nc.CloseWrite())
	for i, w := range want {
		require.Equal(t, w, recv(t, frames), "frame %d", i)
		noMoreFrames(t, l, frames)
		if w == "EOF" {
			break
		}
		require.False(t, onLoopValue(t, l, c.reading), "reading while paused")
		require.NoError(t, c.ResumeRead())
	}
	_, err := wait(t, c.Closed())
	require.NoError(t, err)
}

// A reply that fills the write queue past HighWater stops the frames as
// PauseRead does, and the connection reads no more until it has delivered
// what it holds: the carry stays within a frame and a read. Small socket
// buffers on both sides make nearly every reply fill the queue.
func TestOnFrameBackpressure(t *testing.T) {
	const requests, replySize, maxFrame = 200, 32 << 10, 4 << 10
	l := startLoop(t)
	full := make(chan struct{})
	// On the loop: the most the carry and the write queue held; the replies
	// that filled the queue.
	carried, queued, stops := 0, 0, 0
	reply := make([]byte, replySize)
	cfg := ListenConfig{Conn: ConnConfig{HighWater: 16 << 10}}
	ln, conns := frameListen(t, l, cfg, func(c *Conn) {
		assert.NoError(t, unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096))
		assert.NoError(t, c.OnFrame(bufio.ScanLines, maxFrame, func(c *Conn, f []byte) {
			carried = max(carried, len(c.fr.carry))
			copy(reply, f[:8]) // the request's number
			assert.NoError(t, send(c, reply))
			queued = max(queued, c.Buffered())
			if c.held {
				if stops++; stops == 1 {
					close(full)
				}
			}
		}))
	})
	d := net.Dialer{Timeout: waitTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			assert.NoError(t, unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096))
		})
	}}
	nc, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	var req bytes.Buffer // 1 KB requests: 200 KB, several reads
	for i := range requests {
		fmt.Fprintf(&req, "%08d%s\n", i, strings.Repeat("-", 1000))
	}
	netWrite(t, nc, req.Bytes())
	recv(t, full)
	got := make([]byte, replySize)
	for i := range requests {
		_, err := io.ReadFull(nc, got)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%08d", i), string(got[:8]))
	}
	c := recv(t, conns)
	v := onLoopValue(t, l, func() [3]int { return [3]int{carried, queued, stops} })
	t.Logf("%d of %d replies filled the write queue; at most %d bytes carried, %d queued",
		v[2], requests, v[0], v[1])
	require.LessOrEqual(t, v[0], maxFrame+ReadBufferSize, "the carry")
	require.LessOrEqual(t, v[1], cfg.Conn.HighWater+replySize, "the write queue")
	require.True(t, onLoopValue(t, l, func() bool { return c.fr.carry == nil }), "the carry went once empty")
}

// The carry is dropped when it empties and when the connection closes: an
// idle connection holds no buffer; a large one is not kept for small tails.
func TestOnFrameCarryReleased(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(16)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 1<<20, fn))
	})
	nc := netDial(t, ln)
	c := recv(t, conns)
	carry := func() int { return onLoopValue(t, l, func() int { return cap(c.fr.carry) }) }
	big := bytes.Repeat([]byte("x"), 200_000)
	trickle(t, l, nc, big, len(big)) // several reads, all carried
	require.GreaterOrEqual(t, carry(), len(big))
	trickle(t, l, nc, []byte("\nab"), 3)
	require.Equal(t, strings.Repeat("x", len(big)), recv(t, frames))
	require.Less(t, carry(), 4<<10, "a small tail in a small buffer")
	trickle(t, l, nc, []byte("c\n"), 2)
	require.Equal(t, "abc", recv(t, frames))
	require.Zero(t, carry(), "nothing held: no buffer")

	trickle(t, l, nc, []byte("partial"), 7)
	_, err := wait(t, c.Close())
	require.NoError(t, err)
	require.Nil(t, onLoopValue(t, l, func() *framer { return c.fr }), "closing drops the framer")
}

// A reader installed in fn (OnRead, OnFrame) receives the bytes after the
// current frame; one installed elsewhere first receives those the framer
// holds. ErrFinalToken ends the frames, and what follows is discarded.
func TestOnFrameSwitchReader(t *testing.T) {
	l := startLoop(t)
	// switcher is a server that reads lines and switches reader on some;
	// everything it receives goes to out, one channel per subtest (a
	// client's close at the end of one is an EOF the next must not see).
	type switcher struct {
		ln    *Listener
		conns <-chan *Conn
		out   chan string
		raw   func(*Conn, []byte)
	}
	serve := func(t *testing.T, split bufio.SplitFunc) *switcher {
		s := &switcher{out: make(chan string, 64)}
		s.raw = func(_ *Conn, b []byte) { s.out <- "raw:" + string(b) }
		words := func(_ *Conn, f []byte) { s.out <- "word:" + string(f) }
		s.ln, s.conns = frameListen(t, l, ListenConfig{}, func(c *Conn) {
			assert.NoError(t, c.OnEOF(func(c *Conn) { s.out <- "EOF" }))
			assert.NoError(t, c.OnFrame(split, 0, func(c *Conn, f []byte) {
				s.out <- "line:" + string(f)
				switch string(f) {
				case "RAW":
					assert.NoError(t, c.OnRead(s.raw))
				case "WORDS":
					assert.NoError(t, c.OnFrame(bufio.ScanWords, 0, words))
				case "PAUSE":
					assert.NoError(t, c.PauseRead())
				}
			}))
		})
		return s
	}
	got := func(t *testing.T, s *switcher, n int) string {
		t.Helper()
		return strings.Join(framesOf(t, s.out, n), "|")
	}

	t.Run("framing in fn", func(t *testing.T) {
		s := serve(t, bufio.ScanLines)
		nc := netDial(t, s.ln)
		netWrite(t, nc, []byte("one\nWORDS\nred green\nblue"))
		require.Equal(t, "line:one|line:WORDS|word:red|word:green", got(t, s, 4))
		require.NoError(t, nc.CloseWrite())
		require.Equal(t, "word:blue|EOF", got(t, s, 2))
	})
	t.Run("raw in fn", func(t *testing.T) {
		s := serve(t, bufio.ScanLines)
		nc := netDial(t, s.ln)
		c := recv(t, s.conns)
		netWrite(t, nc, []byte("one\nRAW\nbytes\nafter"))
		require.Equal(t, "line:one|line:RAW|raw:bytes\nafter", got(t, s, 3))
		netWrite(t, nc, []byte("more"))
		require.Equal(t, "raw:more", got(t, s, 1))
		require.Nil(t, onLoopValue(t, l, func() *framer { return c.fr }), "the framer stepped aside")
	})
	// The switch made by the last line, unterminated, at EOF: the plain
	// reader has nothing to deliver, and EOF follows. Bug: it was given
	// empty chunks until the connection closed with io.ErrNoProgress.
	t.Run("raw in fn at EOF", func(t *testing.T) {
		s := serve(t, bufio.ScanLines)
		nc := netDial(t, s.ln)
		c := recv(t, s.conns)
		netWrite(t, nc, []byte("RAW"))
		require.NoError(t, nc.CloseWrite())
		require.Equal(t, "line:RAW|EOF", got(t, s, 2))
		noMoreFrames(t, l, s.out)
		_, err := wait(t, c.Close())
		require.NoError(t, err, "closed by the program, not by an error")
	})
	t.Run("raw from elsewhere", func(t *testing.T) {
		s := serve(t, bufio.ScanLines)
		nc := netDial(t, s.ln)
		c := recv(t, s.conns)
		trickle(t, l, nc, []byte("PAUSE\nheld\npart"), 100)
		require.Equal(t, "line:PAUSE", got(t, s, 1))
		require.NoError(t, c.OnRead(s.raw))
		noMoreFrames(t, l, s.out)
		require.NoError(t, c.ResumeRead())
		require.Equal(t, "raw:held\npart", got(t, s, 1))
		netWrite(t, nc, []byte("tail"))
		require.Equal(t, "raw:tail", got(t, s, 1))
	})
	t.Run("final token", func(t *testing.T) {
		s := serve(t, func(data []byte, atEOF bool) (int, []byte, error) {
			adv, tok, err := bufio.ScanLines(data, atEOF)
			if string(tok) == "QUIT" {
				return adv, tok, bufio.ErrFinalToken
			}
			return adv, tok, err
		})
		nc := netDial(t, s.ln)
		netWrite(t, nc, []byte("a\nQUIT\nb\n"))
		require.Equal(t, "line:a|line:QUIT", got(t, s, 2))
		netWrite(t, nc, []byte("c\n"))
		require.NoError(t, nc.CloseWrite())
		require.Equal(t, "EOF", got(t, s, 1), "after the final token, bytes are discarded up to EOF")
	})
}

// Bad arguments and a closed connection get clear errors, on the loop and
// off it.
func TestOnFrameMisuse(t *testing.T) {
	l := startLoop(t)
	ln := echoListen(t, l, ListenConfig{})
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	nop := func(*Conn, []byte) {}
	require.ErrorIs(t, c.OnFrame(nil, 0, nop), ErrNilFunc)
	require.ErrorIs(t, c.OnFrame(bufio.ScanLines, 0, nil), ErrNilFunc)
	require.ErrorIs(t, c.OnFrame(bufio.ScanLines, -1, nop), ErrInvalidArgument)
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	require.ErrorIs(t, c.OnFrame(bufio.ScanLines, 0, nop), ErrConnClosed)
	require.ErrorIs(t, onLoopValue(t, l, func() error { return c.OnFrame(bufio.ScanLines, 0, nop) }), ErrConnClosed)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// lineChunks returns reads of ReadBufferSize bytes of 61-byte lines, which
// straddle the reads as a stream's do, and the lines in each.
func lineChunks() (chunks [61][]byte, lines int) {
	line := append(bytes.Repeat([]byte("x"), 60), '\n')
	all := bytes.Repeat(line, len(chunks)*ReadBufferSize/len(line)+1)
	for i := range chunks {
		chunks[i] = all[i*ReadBufferSize : (i+1)*ReadBufferSize]
	}
	return chunks, ReadBufferSize / len(line)
}

// BenchmarkOnFrameLines is the framer's cost per read of ScanLines frames
// (64 KiB of 61-byte lines, the last one cut by the read's end): "framer"
// splits on the loop as a read callback does, "bufio.Scanner" is the same
// work through a Scanner for reference, and "socket" is a connection
// receiving them over loopback, system calls included.
func BenchmarkOnFrameLines(b *testing.B) {
	chunks, perChunk := lineChunks()
	b.Run("framer", func(b *testing.B) {
		l := startLoop(b)
		n := 0 // on the loop
		ln, conns := frameListen(b, l, ListenConfig{}, func(c *Conn) {
			_ = c.OnFrame(bufio.ScanLines, 0, func(*Conn, []byte) { n++ })
		})
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(b, err)
		defer nc.Close()
		c := recv(b, conns)
		b.SetBytes(ReadBufferSize)
		b.ReportAllocs()
		b.ResetTimer()
		onLoop(b, l, func() {
			for i := range b.N {
				readFrames(c, chunks[i%len(chunks)])
			}
		})
		b.StopTimer()
		got := 0
		onLoop(b, l, func() { got = n })
		require.GreaterOrEqual(b, got, b.N*perChunk)
	})
	b.Run("bufio.Scanner", func(b *testing.B) {
		n := 0
		sc := bufio.NewScanner(&chunkReader{chunks: chunks[:], left: b.N})
		sc.Buffer(make([]byte, 2*ReadBufferSize), 2*ReadBufferSize)
		b.SetBytes(ReadBufferSize)
		b.ReportAllocs()
		b.ResetTimer()
		for sc.Scan() {
			n++
		}
		b.StopTimer()
		require.NoError(b, sc.Err())
		require.GreaterOrEqual(b, n, b.N*perChunk)
	})
	// Over loopback, with a plain OnRead that counts newlines for reference.
	b.Run("socket", func(b *testing.B) {
		benchLinesOverSocket(b, chunks[:], func(c *Conn, count func(int)) {
			_ = c.OnFrame(bufio.ScanLines, 0, func(*Conn, []byte) { count(1) })
		})
	})
	b.Run("socket OnRead", func(b *testing.B) {
		benchLinesOverSocket(b, chunks[:], func(c *Conn, count func(int)) {
			_ = c.OnRead(func(_ *Conn, p []byte) { count(bytes.Count(p, []byte{'\n'})) })
		})
	})
}

// benchLinesOverSocket sends b.N chunks of lines over loopback to a
// connection that install sets up to count the lines it receives.
func benchLinesOverSocket(b *testing.B, chunks [][]byte, install func(c *Conn, count func(int))) {
	l := startLoop(b)
	want := b.N * ReadBufferSize / 61 // the lines completed
	n, done := 0, make(chan struct{}) // n on the loop
	count := func(k int) {
		if n += k; n >= want && done != nil {
			close(done)
			done = nil
		}
	}
	finished := done
	ln, _ := frameListen(b, l, ListenConfig{}, func(c *Conn) { install(c, count) })
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(b, err)
	defer nc.Close()
	b.SetBytes(ReadBufferSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := nc.Write(chunks[i%len(chunks)]); err != nil {
			b.Fatal(err)
		}
	}
	recv(b, finished)
}

// chunkReader reads the chunks in turn, left of them in all.
type chunkReader struct {
	chunks [][]byte
	i, off int // the chunk being read, and how far
	left   int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[r.i][r.off:])
	if r.off += n; r.off == len(r.chunks[r.i]) {
		r.i, r.off, r.left = (r.i+1)%len(r.chunks), 0, r.left-1
	}
	return n, nil
}

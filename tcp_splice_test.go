package aio

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// pipeModes runs f once for each way a Pipe direction moves its bytes:
// spliced (where the system splices; with moves, the test fails if no
// splice moved a byte there), and copied through the read buffer, because
// no kernel pipe could be made or because the sockets refused splice(2).
// The system calls are put back after f's loops have stopped.
func pipeModes(t *testing.T, moves bool, f func(t *testing.T)) {
	t.Helper()
	for _, mode := range []string{"splice", "no pipe", "splice refused"} {
		t.Run(mode, func(t *testing.T) {
			realPipe, realSplice := pipeFn, spliceFn
			t.Cleanup(func() { pipeFn, spliceFn = realPipe, realSplice })
			var spliced atomic.Int64
			switch mode {
			case "splice":
				spliceFn = func(out, in, n int) (int, error) {
					m, err := realSplice(out, in, n)
					spliced.Add(int64(max(m, 0)))
					return m, err
				}
			case "no pipe":
				pipeFn = func() (int, int, int, error) { return -1, -1, 0, unix.EMFILE }
			case "splice refused":
				spliceFn = func(int, int, int) (int, error) { return 0, unix.EINVAL }
			}
			f(t)
			if mode == "splice" && pipeSplices && moves {
				require.Positive(t, spliced.Load(), "bytes moved by splice")
			}
		})
	}
}

// pipeSplices says whether this system splices (Linux).
var pipeSplices = func() bool {
	r, w, _, err := pipeFn()
	if err != nil {
		return false
	}
	unix.Close(r)
	unix.Close(w)
	return true
}()

// proxyConns starts a proxy on l to upstream whose pipes report their two
// connections (a the client's, b the upstream's) with the pipe.
type pipedConns struct {
	a, b *Conn
	pipe *Handle[Piped]
}

func proxyConns(t *testing.T, l *Loop, upstream string, cfg ConnConfig) (*Listener, <-chan pipedConns) {
	return proxyConnsAfter(t, l, upstream, cfg, func(*Conn) {})
}

// proxyConnsAfter is proxyConns calling before with the dialed connection
// just before Pipe, on the loop.
func proxyConnsAfter(t *testing.T, l *Loop, upstream string, cfg ConnConfig, before func(u *Conn)) (*Listener, <-chan pipedConns) {
	t.Helper()
	ch := make(chan pipedConns, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) {
		Then(Adopt(c.Scope(), Dial(l, upstream, cfg)), func(u *Conn) (struct{}, error) {
			before(u)
			ch <- pipedConns{a: c, b: u, pipe: Pipe(c, u)}
			return struct{}{}, nil
		})
	})
	require.NoError(t, err)
	return ln, ch
}

// stalledUpstream makes a client ↔ proxy ↔ upstream chain whose upstream
// does not read yet, and a client that sends total bytes of pattern and
// half-closes; it returns once the proxy holds bytes for the upstream that
// the upstream's socket did not take (in the kernel pipe, or in the write
// queue when copying), with the upstream's side of the proxy.
func stalledUpstream(t *testing.T, l *Loop, total int) (net.Conn, pipedConns, <-chan error) {
	t.Helper()
	// A small receive buffer, set before the connection is made so that
	// autotuning does not grow it: the upstream stalls soon.
	lc := net.ListenConfig{Control: rcvBuf(peerBuffer)}
	nl, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	ln, pcs := proxyConns(t, l, nl.Addr().String(), smallBuffers)
	t.Cleanup(func() { ln.Close() })
	nc, up := proxyEnds(t, ln, nl)
	pc := recv(t, pcs)
	sent := make(chan error, 1)
	go func() {
		out := make([]byte, total)
		pattern(out, 0)
		_, err := nc.Write(out)
		if err == nil {
			err = nc.CloseWrite()
		}
		sent <- err
	}()
	eventually(t, func() bool {
		return onLoopValue(t, l, func() bool { return pc.b.splicedTo() > 0 || pc.b.Buffered() > 0 })
	}, "the proxy never held bytes back for the upstream")
	return up, pc, sent
}

// drain reads what nc receives until nothing came for 50 ms.
func drain(t *testing.T, nc net.Conn) []byte {
	t.Helper()
	var got []byte
	buf := make([]byte, 64<<10)
	for {
		require.NoError(t, nc.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		n, err := nc.Read(buf)
		got = append(got, buf[:n]...)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return got
		}
		require.NoError(t, err)
	}
}

// A Write by the program to a piped connection goes after the bytes the
// pipe moved before it, spliced or queued, and before those it moves
// after it: the stream keeps the order in which things happened on the
// loop.
func TestPipeWriteKeepsOrder(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		const total = 4 << 20
		l := startLoop(t)
		up, pc, sent := stalledUpstream(t, l, total)
		marker := []byte("--the program's own bytes--")
		var got []byte
		k := onLoopValue(t, l, func() int64 {
			// With the loop held here, the upstream takes what the sockets
			// hold, so that the kernel would take the marker at once: it
			// must still wait for the bytes the proxy holds.
			got = drain(t, up)
			_, err := pc.b.Write(marker)
			require.NoError(t, err)
			return pc.b.pipe.stats.AToB // what the client sent before the marker
		})
		require.NoError(t, up.SetDeadline(time.Now().Add(waitTimeout)))
		rest, err := io.ReadAll(up)
		require.NoError(t, err)
		got = append(got, rest...)
		require.NoError(t, recv(t, sent))
		want := make([]byte, total)
		pattern(want, 0)
		want = append(want[:k:k], append(marker, want[k:]...)...)
		require.Equal(t, len(want), len(got))
		require.True(t, bytes.Equal(want, got), "the stream the upstream received")
	})
}

// CloseWrite on a piped connection sends its FIN after the bytes the pipe
// moved before it; what the client sends afterwards has nowhere to go: it
// is dropped, and the pipe fails with ErrWriteClosed, while the upstream
// still gets every byte from before and the FIN.
func TestPipeCloseWriteAfterPipedBytes(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		const total = 4 << 20
		l := startLoop(t)
		up, pc, sent := stalledUpstream(t, l, total)
		k := onLoopValue(t, l, func() int64 {
			pc.b.CloseWrite()
			return pc.b.pipe.stats.AToB
		})
		got, err := io.ReadAll(up) // to the FIN
		require.NoError(t, err)
		requirePatternPrefix(t, k, got)
		require.NoError(t, up.Close())
		_, err = wait(t, pc.pipe)
		require.ErrorIs(t, err, ErrWriteClosed)
		_, err = wait(t, pc.a.Closed())
		require.NoError(t, err, "the client's side ends as it would")
		require.NoError(t, recv(t, sent), "the client's bytes were taken (and dropped)")
	})
}

// Bytes spliced count as read for the read timeout: a read timeout, which
// counts from the last byte read, restarts when the pipe moves one.
func TestPipeSplicedBytesAreReads(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		l := startLoop(t)
		nl, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer nl.Close()
		ln, pcs := proxyConns(t, l, nl.Addr().String(), ConnConfig{ReadTimeout: time.Hour})
		nc, up := proxyEnds(t, ln, nl)
		pc := recv(t, pcs)
		before := onLoopValue(t, l, func() time.Duration { return pc.a.to.lastRead })
		_, err = nc.Write([]byte("x"))
		require.NoError(t, err)
		_, err = io.ReadFull(up, make([]byte, 1))
		require.NoError(t, err)
		after := onLoopValue(t, l, func() time.Duration { return pc.a.to.lastRead })
		require.Greater(t, after, before)
		require.True(t, pc.pipe.Cancel())
		closedLoopTCP(t, l.closeListener(t, ln))
	})
}

// A kernel pipe that reports no capacity is closed at once, and the
// direction copies instead.
func TestPipeUnusableKernelPipe(t *testing.T) {
	realPipe := pipeFn
	t.Cleanup(func() { pipeFn = realPipe })
	var made atomic.Int64
	pipeFn = func() (int, int, int, error) {
		r, w, _, err := realPipe()
		made.Add(1)
		return r, w, 0, err
	}
	pipes := pipeFDs(t)
	l := startLoop(t)
	ln, nc, up, pipe := pipedPair(t, l)
	_, err := nc.Write([]byte("hello"))
	require.NoError(t, err)
	got := make([]byte, 5)
	_, err = io.ReadFull(up, got)
	require.NoError(t, err)
	require.Equal(t, "hello", string(got))
	if pipeSplices {
		require.Positive(t, made.Load(), "a kernel pipe was asked for")
	}
	require.Equal(t, pipes, pipeFDs(t), "kernel pipes left open")
	require.True(t, pipe.Cancel())
	closedLoopTCP(t, l.closeListener(t, ln))
}

// requirePatternPrefix requires got, the stream an upstream received up
// to the FIN, to be the first k bytes of the client's pattern: what the
// pipe counted as moved before the FIN, no more and no less.
func requirePatternPrefix(t *testing.T, k int64, got []byte) {
	t.Helper()
	want := make([]byte, k)
	pattern(want, 0)
	require.Equal(t, len(want), len(got))
	require.True(t, bytes.Equal(want, got), "the stream before the FIN")
}

// pipeFDs counts the process's open kernel pipes.
func pipeFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd here: %v", err)
	}
	n := 0
	for _, e := range ents {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(link, "pipe:") {
			n++
		}
	}
	return n
}

// A side closed by Close while the proxy still holds bytes it read from
// that side for the other (in the kernel pipe, or in the write queue when
// copying) does not take them back: the other side sends them, then its
// FIN, so that what it delivers is what the pipe counts; the kernel pipe
// that held them comes back.
func TestPipeCloseKeepsBytesForTheOtherSide(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		const total = 4 << 20
		pipes := -1
		if pipeSplices {
			pipes = pipeFDs(t)
		}
		l := startLoop(t)
		up, pc, sent := stalledUpstream(t, l, total)
		k := onLoopValue(t, l, func() int64 {
			pc.a.Close()
			return pc.b.pipe.stats.AToB
		})
		got, err := io.ReadAll(up) // to the FIN
		require.NoError(t, err)
		recv(t, sent) // the client's writes end, failed or not, now that its side closed
		requirePatternPrefix(t, k, got)
		require.NoError(t, up.Close())
		n, err := wait(t, pc.pipe)
		require.NoError(t, err)
		require.Equal(t, k, n.AToB)
		if pipeSplices {
			_, err = wait(t, l.Stop())
			require.NoError(t, err)
			require.Equal(t, pipes, pipeFDs(t), "kernel pipes left open")
		}
	})
}

// Failing to make a kernel pipe (out of fds, say) copies that read, and
// the direction splices again once a pipe can be made: the failure was the
// process's state at that moment, not the sockets'.
func TestPipeSplicesAgainAfterNoPipe(t *testing.T) {
	realPipe, realSplice := pipeFn, spliceFn
	t.Cleanup(func() { pipeFn, spliceFn = realPipe, realSplice })
	var refused atomic.Bool
	var spliced atomic.Int64
	pipeFn = func() (int, int, int, error) {
		if refused.CompareAndSwap(false, true) {
			return -1, -1, 0, unix.EMFILE
		}
		return realPipe()
	}
	spliceFn = func(out, in, n int) (int, error) {
		m, err := realSplice(out, in, n)
		spliced.Add(int64(max(m, 0)))
		return m, err
	}
	l := startLoop(t)
	ln, nc, up, pipe := pipedPair(t, l)
	for _, msg := range []string{"copied", "spliced"} {
		_, err := nc.Write([]byte(msg))
		require.NoError(t, err)
		got := make([]byte, len(msg))
		_, err = io.ReadFull(up, got)
		require.NoError(t, err)
		require.Equal(t, msg, string(got))
	}
	if pipeSplices {
		require.True(t, refused.Load(), "the first kernel pipe was refused")
		require.Positive(t, spliced.Load(), "bytes spliced after the refusal")
	}
	require.True(t, pipe.Cancel())
	closedLoopTCP(t, l.closeListener(t, ln))
}

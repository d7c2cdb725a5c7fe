package aio

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// smallBuffers are the socket buffers and water marks of the pipe tests:
// small enough that every direction pauses and resumes many times. Not
// smaller: loopback's MSS is 64 KiB, and a receive window far below it
// crawls through zero-window probes even on a direct connection (8 MiB
// each way took 43 s with 16 KiB, 0.5 s with 64 KiB).
var smallBuffers = ConnConfig{ReadBuffer: peerBuffer, WriteBuffer: peerBuffer, HighWater: 32 << 10}

// peerBuffer is the socket buffer size of the test's peers.
const peerBuffer = 64 << 10

// talker is a peer that alternates between writing a chunk of chunk bytes
// and reading as many, in one goroutine, so that it stops reading while it
// writes (the upstream that deadlocked a proxy coupling its directions),
// reading slowly: it sends total bytes of pattern from sendOff, checks
// total bytes of pattern from recvOff, half-closes after its last byte and
// reads on to EOF.
func talker(nc *net.TCPConn, sendOff, recvOff, total, chunk int) error {
	_ = nc.SetReadBuffer(peerBuffer)
	_ = nc.SetWriteBuffer(peerBuffer)
	out := make([]byte, chunk)
	sent, got := 0, 0
	for sent < total || got < total {
		if sent < total {
			n := min(chunk, total-sent)
			pattern(out[:n], sendOff+sent)
			if _, err := nc.Write(out[:n]); err != nil {
				return fmt.Errorf("write at %d: %w", sent, err)
			}
			if sent += n; sent == total {
				if err := nc.CloseWrite(); err != nil {
					return err
				}
			}
		}
		if got < total {
			n := min(chunk, total-got)
			if err := slowRead(nc, recvOff+got, n); err != nil {
				return fmt.Errorf("read at %d: %w", got, err)
			}
			got += n
		}
	}
	if n, err := nc.Read(out); err != io.EOF {
		return fmt.Errorf("after the last byte: %d bytes, %v (want EOF)", n, err)
	}
	return nil
}

// slowRead reads n bytes of pattern from off, checking them, slowly.
func slowRead(nc net.Conn, off, n int) error {
	in := make([]byte, 8<<10)
	want := make([]byte, len(in))
	for got := 0; got < n; {
		k, err := nc.Read(in[:min(len(in), n-got)])
		if err != nil {
			return err
		}
		pattern(want[:k], off+got)
		if !bytes.Equal(want[:k], in[:k]) {
			return fmt.Errorf("bytes differ at %d", off+got)
		}
		if (off+got)/(32<<10) != (off+got+k)/(32<<10) {
			time.Sleep(50 * time.Microsecond) // a slow reader: pacing, not synchronisation
		}
		got += k
	}
	return nil
}

// halfConn is a peer's end that half-closes and sizes its socket
// buffers: a *net.TCPConn, or a TLS end over one (tlsHalf).
type halfConn interface {
	net.Conn
	CloseWrite() error
	SetReadBuffer(int) error
	SetWriteBuffer(int) error
}

// duplex is a peer that writes and reads at once (two goroutines): it
// sends total bytes of pattern from sendOff and half-closes, and checks
// total bytes of pattern from recvOff, slowly, then EOF.
func duplex(nc halfConn, sendOff, recvOff, total int) error {
	_ = nc.SetReadBuffer(peerBuffer)
	_ = nc.SetWriteBuffer(peerBuffer)
	werr := make(chan error, 1)
	go func() {
		out := make([]byte, 64<<10)
		for sent := 0; sent < total; sent += len(out) {
			pattern(out, sendOff+sent)
			if _, err := nc.Write(out); err != nil {
				werr <- err
				return
			}
		}
		werr <- nc.CloseWrite()
	}()
	err := slowRead(nc, recvOff, total)
	if err == nil {
		if n, rerr := nc.Read(make([]byte, 1)); rerr != io.EOF {
			err = fmt.Errorf("after the last byte: %d bytes, %v (want EOF)", n, rerr)
		}
	}
	return errors.Join(err, <-werr)
}

// upstreamTalker listens with Go's net package and runs talker on the
// first connection, reporting on the channel.
func upstreamTalker(t *testing.T, total int) (string, <-chan error) {
	return acceptOnce(t, func(nc *net.TCPConn) error {
		return talker(nc, 1<<30, 0, total, 1<<20)
	})
}

// proxyTo listens on l and pipes each client to a connection dialed to
// upstream, handing the pipe handles over.
func proxyTo(t *testing.T, l *Loop, upstream string, cfg ConnConfig) (*Listener, <-chan *Handle[Piped]) {
	t.Helper()
	pipes := make(chan *Handle[Piped], 4)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) {
		d := Adopt(c.Scope(), Dial(l, upstream, cfg))
		Then(d, func(u *Conn) (struct{}, error) {
			pipes <- Pipe(c, u)
			return struct{}{}, nil
		})
	})
	require.NoError(t, err)
	return ln, pipes
}

// Pipe moves 8 MiB each way between a client that reads as it writes and
// an upstream that stops reading while it writes 1 MiB chunks, both slow
// readers, through small socket buffers, byte-exact; the FINs pass on as
// half-closes, and both connections close in order. (With the directions
// coupled, the proxy stops reading the upstream's chunk once its queue to
// the upstream is full, and the upstream never reads it down.)
func TestPipeBothWaysWithBackpressure(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		const total = 8 << 20
		upstream, upDone := upstreamTalker(t, total)
		fds := fdCount(t)
		l := startLoop(t)
		ln, pipes := proxyTo(t, l, upstream, smallBuffers)

		nc := netDial(t, ln)
		clientDone := make(chan error, 1)
		go func() { clientDone <- duplex(nc, 0, 1<<30, total) }()
		require.NoError(t, recv(t, clientDone), "client")
		require.NoError(t, recv(t, upDone), "upstream")
		got, err := wait(t, recv(t, pipes))
		require.NoError(t, err)
		require.Equal(t, Piped{AToB: total, BToA: total}, got)
		st := l.Stats() // the loop runs the proxy alone: both ways, in and out
		require.EqualValues(t, 2*total, st.TCPBytesIn)
		require.EqualValues(t, 2*total, st.TCPBytesOut)
		closedLoopTCP(t, l.closeListener(t, ln))
		nc.Close()
		require.Zero(t, l.Stats().TCPWriteQueued)
		require.Equal(t, fds+2, fdCount(t), "only the loop's poller fds are left") // epoll + wakeup
	})
}

// pipedPair starts a proxy on l to a Go listener and connects a client:
// the client's and the upstream's net.Conns, and the pipe.
func pipedPair(t *testing.T, l *Loop) (*Listener, *net.TCPConn, *net.TCPConn, *Handle[Piped]) {
	t.Helper()
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	ln, pipes := proxyTo(t, l, nl.Addr().String(), ConnConfig{})
	nc, up := proxyEnds(t, ln, nl)
	return ln, nc, up, recv(t, pipes)
}

// proxyEnds dials ln, a proxy to nl, and accepts the connection the proxy
// makes to nl: the client's end and the upstream's, each with a deadline
// of waitTimeout and closed when the test ends. The accept is bounded
// too: a proxy that never dials fails the test.
func proxyEnds(t *testing.T, ln *Listener, nl net.Listener) (nc, up *net.TCPConn) {
	t.Helper()
	nc = netDial(t, ln)
	require.NoError(t, nl.(*net.TCPListener).SetDeadline(time.Now().Add(waitTimeout)))
	c, err := nl.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	up = c.(*net.TCPConn)
	require.NoError(t, up.SetDeadline(time.Now().Add(waitTimeout)))
	return nc, up
}

// A reset on one side closes both at once, passes on as a reset (so the
// other peer does not take its cut stream for whole), and fails the pipe
// with it; either way round.
func TestPipeResetClosesBoth(t *testing.T) {
	for _, upstreamResets := range []bool{true, false} {
		t.Run(map[bool]string{true: "upstream", false: "client"}[upstreamResets], func(t *testing.T) {
			pipeModes(t, true, func(t *testing.T) {
				l := startLoop(t)
				ln, nc, up, pipe := pipedPair(t, l)
				from, to := nc, up
				if upstreamResets {
					from, to = up, nc
				}
				_, err := from.Write([]byte("hello"))
				require.NoError(t, err)
				_, err = io.ReadFull(to, make([]byte, 5))
				require.NoError(t, err)
				require.NoError(t, from.SetLinger(0))
				require.NoError(t, from.Close()) // RST

				_, err = wait(t, pipe)
				require.ErrorIs(t, err, unix.ECONNRESET)
				require.Equal(t, Failed, pipe.Status())
				_, err = to.Read(make([]byte, 1))
				require.ErrorIs(t, err, unix.ECONNRESET, "the other side is reset too, not closed in order")
				closedLoopTCP(t, l.closeListener(t, ln))
			})
		})
	}
}

// Any error passes on as a reset, a timeout too: the other peer's stream
// did not end, it was given up on. (The side that timed out closes as a
// timed-out connection does, with a FIN.)
func TestPipeTimeoutPassesOnAsReset(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { nl.Close() })
	ln, pipes := proxyTo(t, l, nl.Addr().String(), ConnConfig{IdleTimeout: 50 * time.Millisecond})
	nc, up := proxyEnds(t, ln, nl)
	pipe := recv(t, pipes)
	_, err = wait(t, pipe)
	require.ErrorIs(t, err, ErrIdleTimeout)
	_, cerr := nc.Read(make([]byte, 1))
	_, uerr := up.Read(make([]byte, 1))
	resets := 0
	for _, err := range []error{cerr, uerr} {
		if errors.Is(err, unix.ECONNRESET) {
			resets++
		} else {
			require.ErrorIs(t, err, io.EOF)
		}
	}
	require.GreaterOrEqual(t, resets, 1, "client %v, upstream %v", cerr, uerr)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Cancelling the pipe closes both connections; the handle is cancelled.
func TestPipeCancelClosesBoth(t *testing.T) {
	pipeModes(t, false, func(t *testing.T) {
		l := startLoop(t)
		ln, nc, up, pipe := pipedPair(t, l)
		require.True(t, pipe.Cancel())
		_, err := wait(t, pipe)
		require.ErrorIs(t, err, ErrCancelled)
		_, err = nc.Read(make([]byte, 1))
		require.Error(t, err)
		_, err = up.Read(make([]byte, 1))
		require.Error(t, err)
		closedLoopTCP(t, l.closeListener(t, ln))
	})
}

// A connection that reached EOF before Pipe passes it on at once.
func TestPipeEOFBeforePipe(t *testing.T) {
	pipeModes(t, true, func(t *testing.T) {
		l := startLoop(t)
		nl, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer nl.Close()
		pipes := make(chan *Handle[Piped], 1)
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
			var early []byte
			_ = c.OnRead(func(c *Conn, b []byte) { early = append(early, b...) })
			_ = c.OnEOF(func(c *Conn) { // the client said all it had to say
				Then(Dial(l, nl.Addr().String(), ConnConfig{}), func(u *Conn) (struct{}, error) {
					_, err := u.Write(early)
					pipes <- Pipe(c, u)
					return struct{}{}, err
				})
			})
		})
		require.NoError(t, err)
		nc := netDial(t, ln)
		_, err = nc.Write([]byte("request"))
		require.NoError(t, err)
		require.NoError(t, nc.CloseWrite())
		up, err := nl.Accept()
		require.NoError(t, err)
		defer up.Close()
		_ = up.SetDeadline(time.Now().Add(waitTimeout))
		req, err := io.ReadAll(up) // to the EOF Pipe passed on
		require.NoError(t, err)
		require.Equal(t, "request", string(req))
		_, err = up.Write([]byte("reply"))
		require.NoError(t, err)
		require.NoError(t, up.(*net.TCPConn).CloseWrite())
		reply, err := io.ReadAll(nc)
		require.NoError(t, err)
		require.Equal(t, "reply", string(reply))
		got, err := wait(t, recv(t, pipes))
		require.NoError(t, err)
		require.Equal(t, Piped{AToB: 0, BToA: 5}, got, "the early bytes were the caller's")
		closedLoopTCP(t, l.closeListener(t, ln))
	})
}

// Pipe refuses what it cannot pipe with a clear error, closing what it
// was given.
func TestPipeRefusals(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{})
	l1, l2 := startLoopOn(t, rt), startLoopOn(t, rt)
	ln := echoListen(t, l1, ListenConfig{})
	dial := func(l *Loop) *Conn {
		c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
		require.NoError(t, err)
		return c
	}
	_, err := wait(t, Pipe(nil, nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
	a := dial(l1)
	_, err = wait(t, Pipe(a, nil))
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = wait(t, a.Closed())
	require.NoError(t, err, "the connection given was closed")
	a = dial(l1)
	_, err = wait(t, Pipe(a, a))
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "itself")
	a, b := dial(l1), dial(l2)
	_, err = wait(t, Pipe(a, b))
	require.True(t, errors.Is(err, errPipeLoops))
	a, b = dial(l1), dial(l1)
	_, err = wait(t, b.Close())
	require.NoError(t, err)
	_, err = wait(t, Pipe(a, b))
	require.ErrorIs(t, err, ErrConnClosed)
	_, err = wait(t, a.Closed())
	require.NoError(t, err)
	closedLoopTCP(t, l1.closeListener(t, ln))
	closedLoopTCP(t, l2)
}

// A side closed by Close before its peer's EOF ends the other direction
// too: the other side is half-closed once its queue is flushed, and the
// pipe completes when that side has closed.
func TestPipeCloseOneSideHalfClosesTheOther(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	type piped struct {
		client *Conn
		pipe   *Handle[Piped]
	}
	pipes := make(chan piped, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		Then(Dial(l, nl.Addr().String(), ConnConfig{}), func(u *Conn) (struct{}, error) {
			pipes <- piped{c, Pipe(c, u)}
			return struct{}{}, nil
		})
	})
	require.NoError(t, err)
	nc, up := proxyEnds(t, ln, nl)
	p := recv(t, pipes)
	_, err = nc.Write([]byte("last words"))
	require.NoError(t, err)
	got := make([]byte, len("last words"))
	_, err = io.ReadFull(up, got)
	require.NoError(t, err)
	_, err = wait(t, p.client.Close())
	require.NoError(t, err)
	rest, err := io.ReadAll(up) // EOF: the client's side will send nothing more
	require.NoError(t, err)
	require.Empty(t, rest)
	require.NoError(t, up.Close())
	n, err := wait(t, p.pipe)
	require.NoError(t, err)
	require.Equal(t, int64(len("last words")), n.AToB)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// Closing the destination of a direction whose source is paused for it
// (its queue full, or the kernel pipe holding bytes it did not take)
// half-closes the source, which must then read on to its peer's EOF and
// close, so that the pipe ends: failed, since what it read went nowhere.
// It stayed paused: the pipe never ended and held a drain to its
// deadline.
func TestPipeCloseOfAFullSideResumesTheOther(t *testing.T) {
	pipeModes(t, false, func(t *testing.T) {
		l := startLoop(t)
		t.Cleanup(func() { l.Stop() }) // a stuck pipe would hold the runtime's drain for its whole deadline
		_, pc, sent := stalledUpstream(t, l, 4<<20)
		eventually(t, func() bool { return onLoopValue(t, l, func() bool { return pc.a.paused }) },
			"the client's side never paused")
		_, err := wait(t, pc.b.Close()) // the upstream's side, whose queue or pipe is full
		require.NoError(t, err)
		// The client's side reads on, for nobody, to the client's FIN and
		// closes: the client's write ends, and so does the pipe.
		require.NoError(t, recvWithin(t, 5*time.Second, sent), "the client's write never finished")
		_, err = waitWithin(t, 5*time.Second, pc.pipe)
		require.ErrorIs(t, err, ErrWriteClosed, "the bytes read for nobody were dropped")
	})
}

// A header line read with OnFrame, then Pipe (a CONNECT proxy): the bytes
// the framer holds, sent with the header, go through the pipe first, and
// the frame callback does not run again. They were lost, and the old
// callback got them at EOF.
func TestPipeAfterOnFrameKeepsTheFramersBytes(t *testing.T) {
	l := startLoop(t)
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	late := make(chan string, 4)
	pipes := make(chan *Handle[Piped], 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		first := true
		_ = c.OnFrame(bufio.ScanLines, 0, func(c *Conn, f []byte) {
			if !first {
				late <- string(f) // Pipe owns the connection by now
				return
			}
			first = false
			_ = c.PauseRead()
			Then(Dial(l, nl.Addr().String(), ConnConfig{}), func(u *Conn) (struct{}, error) {
				pipes <- Pipe(c, u)
				return struct{}{}, nil
			})
		})
	})
	require.NoError(t, err)
	nc := netDial(t, ln)
	netWrite(t, nc, []byte("CONNECT upstream\npartial")) // one read: the framer keeps "partial"
	up, err := nl.Accept()
	require.NoError(t, err)
	defer up.Close()
	require.NoError(t, up.SetDeadline(time.Now().Add(waitTimeout)))
	pipe := recv(t, pipes)
	onLoop(t, l, func() {}) // the pipe has started
	netWrite(t, nc, []byte(" more\n"))
	require.NoError(t, nc.CloseWrite())
	got, err := io.ReadAll(up) // to the FIN the pipe passes on
	require.NoError(t, err)
	require.Equal(t, "partial more\n", string(got), "bytes the framer held were lost")
	require.Empty(t, late, "the frame callback ran after Pipe took the connection over")
	require.NoError(t, up.Close())
	_, err = wait(t, pipe)
	require.NoError(t, err)
}

// Bytes that arrive for a side whose write side the program closed
// (CloseWrite, during the pipe or before it), or which has closed in order
// since, have nowhere to go: they are dropped, not counted, and the pipe,
// its connections ending as they would, fails with ErrWriteClosed saying
// how many. Bug: they were counted as copied, and the pipe completed as
// if they had been delivered.
func TestPipeBytesAfterCloseWriteFailThePipe(t *testing.T) {
	for _, mode := range []string{"during", "before", "closed first"} {
		before, closedFirst := mode != "during", mode == "closed first"
		t.Run("CloseWrite "+mode, func(t *testing.T) {
			pipeModes(t, false, func(t *testing.T) {
				l := startLoop(t)
				nl, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				defer nl.Close()
				ln, pcs := proxyConnsAfter(t, l, nl.Addr().String(), ConnConfig{}, func(u *Conn) {
					if before {
						u.CloseWrite()
					}
				})
				nc, up := proxyEnds(t, ln, nl)
				pc := recv(t, pcs)
				pipe, u := pc.pipe, pc.b
				if !before {
					_, err = wait(t, u.CloseWrite())
					require.NoError(t, err)
				}
				rest, err := io.ReadAll(up) // the FIN of that CloseWrite
				require.NoError(t, err)
				require.Empty(t, rest)
				require.NoError(t, nc.SetReadDeadline(time.Now().Add(waitTimeout)))
				if closedFirst {
					require.NoError(t, up.Close()) // u closes in order, and the client gets the FIN
					_, err = wait(t, u.Closed())
					require.NoError(t, err)
					_, err = nc.Read(make([]byte, 1))
					require.ErrorIs(t, err, io.EOF)
				}

				_, err = nc.Write([]byte("nowhere to go"))
				require.NoError(t, err)
				require.NoError(t, nc.CloseWrite())
				if !closedFirst {
					require.NoError(t, up.Close()) // the upstream's FIN: its side closes in order
					_, err = nc.Read(make([]byte, 1))
					require.ErrorIs(t, err, io.EOF, "the client's side ends as it would")
				}
				_, err = wait(t, pipe)
				require.ErrorIs(t, err, ErrWriteClosed, "the bytes were dropped silently")
				require.ErrorContains(t, err, "13 bytes")
				closedLoopTCP(t, l.closeListener(t, ln))
			})
		})
	}
}

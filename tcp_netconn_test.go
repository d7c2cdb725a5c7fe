package aio

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/nettest"
	"golang.org/x/sys/unix"
)

// viewPair returns a view of an accepted connection and a package net
// connection to it, with cfg on the accepted side's listener. Both sides
// use an Ethernet-sized MSS (see setMSS).
func viewPair(t *testing.T, l *Loop, cfg ListenConfig) (view net.Conn, c *Conn, peer *net.TCPConn) {
	t.Helper()
	accepted := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", cfg, func(c *Conn) { accepted <- c })
	require.NoError(t, err)
	rc, err := ln.SyscallConn()
	require.NoError(t, err)
	require.NoError(t, setMSS(rc)) // accepted sockets inherit it
	d := net.Dialer{Timeout: waitTimeout, Control: func(_, _ string, rc syscall.RawConn) error { return setMSS(rc) }}
	nc, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	c = recv(t, accepted)
	l.closeListener(t, ln)
	return c.NetConn(), c, nc.(*net.TCPConn)
}

// setMSS gives a socket the MSS of an Ethernet path. Loopback's is 64 KiB,
// and a receive buffer as small as these tests use (16 KiB) is then below
// one segment: Linux no longer advertises the window a read opens, and the
// sender waits on its zero-window probes, seconds at a time (package net
// stalls the same way).
func setMSS(rc syscall.RawConn) error {
	var err error
	if cerr := rc.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_MAXSEG, 1460)
	}); cerr != nil {
		return cerr
	}
	return err
}

// closedView waits for the view's connection to close.
func closedView(t *testing.T, c *Conn) {
	t.Helper()
	recv(t, c.Closed().Done())
	onLoop(t, c.Loop(), func() {}) // the view's OnClose has run
}

// io.Copy both ways through a view, 8 MiB each way, byte-exact, with socket
// buffers small enough that both directions wait on flow control: the peer
// streams a pattern and half-closes, the view side echoes it with
// io.Copy(view, view) and half-closes at EOF, the peer reads it all back.
func TestNetConnCopy(t *testing.T) {
	const size = 8 << 20
	l := startLoop(t)
	fds := fdCount(t)
	small := ConnConfig{ReadBuffer: 16 << 10, WriteBuffer: 16 << 10, HighWater: 64 << 10}
	view, c, peer := viewPair(t, l, ListenConfig{Conn: small})
	require.NoError(t, peer.SetReadBuffer(16<<10))
	require.NoError(t, peer.SetWriteBuffer(16<<10))
	require.Same(t, view, c.NetConn(), "NetConn made a second view")

	copyBothWays(t, view, peer, size)

	require.NoError(t, view.Close())
	require.NoError(t, peer.Close())
	closedView(t, c)
	_, kept := netViews.Load(c)
	require.False(t, kept, "the closed connection's view is still registered")
	require.EqualValues(t, size, l.Stats().TCPBytesIn)
	require.EqualValues(t, size, l.Stats().TCPBytesOut)
	require.Equal(t, fds, fdCount(t))
	closedLoopTCP(t, l)
}

// copyBothWays streams size bytes of pattern from peer to view, which
// echoes them with io.Copy(view, view) and half-closes at EOF; peer
// half-closes after its last byte and reads the echo, byte-exact, to EOF.
func copyBothWays(t *testing.T, view net.Conn, peer halfConn, size int) {
	t.Helper()
	echoed := make(chan error, 1)
	go func() {
		_, err := io.Copy(view, view)
		if err == nil {
			err = view.(interface{ CloseWrite() error }).CloseWrite()
		}
		echoed <- err
	}()
	want := make([]byte, size)
	pattern(want, 0)
	sent := make(chan error, 1)
	go func() {
		_, err := io.Copy(peer, bytes.NewReader(want))
		if err == nil {
			err = peer.CloseWrite()
		}
		sent <- err
	}()
	got, err := io.ReadAll(peer)
	require.NoError(t, err)
	require.NoError(t, recv(t, sent))
	require.NoError(t, recv(t, echoed))
	require.Equal(t, sha256.Sum256(want), sha256.Sum256(got), "the echo differs")
	require.Len(t, got, size)
}

// Read and Write deadlines, as package net's: a deadline that passes ends
// the blocked call with a timeout (os.ErrDeadlineExceeded, a net.Error
// whose Timeout is true), a deadline in the past fails the next call at
// once, and clearing it makes the calls work again. A Write held back by a
// peer that does not read returns what it queued, which stays bounded.
func TestNetConnDeadlines(t *testing.T) {
	l := startLoop(t)
	hw := 64 << 10
	view, c, peer := viewPair(t, l, ListenConfig{Conn: ConnConfig{HighWater: hw,
		ReadBuffer: 16 << 10, WriteBuffer: 16 << 10}})
	isTimeout := func(err error) {
		t.Helper()
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var ne net.Error
		require.True(t, errors.As(err, &ne) && ne.Timeout(), "not a net.Error timeout: %v", err)
		_, direct := err.(net.Error)
		require.True(t, direct, "callers type-assert net.Error: %T", err)
	}

	// Read: a deadline passes while it waits.
	require.NoError(t, view.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	buf := make([]byte, 64)
	n, err := view.Read(buf)
	require.Zero(t, n)
	isTimeout(err)
	// Expired, it fails at once even with bytes to read.
	_, err = peer.Write([]byte("hello"))
	require.NoError(t, err)
	_, err = view.Read(buf)
	isTimeout(err)
	require.NoError(t, view.SetReadDeadline(time.Time{}))
	// Setting deadlines again (per request, as net/http does) allocates
	// nothing once the timer is made.
	later := time.Now().Add(time.Hour)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		_ = view.SetDeadline(later)
		_ = view.SetDeadline(time.Time{})
	}))
	n, err = io.ReadFull(view, buf[:5])
	require.NoError(t, err)
	require.Equal(t, "hello", string(buf[:n]))

	// A deadline set while Read waits ends it.
	done := make(chan error, 1)
	go func() { _, err := view.Read(buf); done <- err }()
	time.Sleep(20 * time.Millisecond) // a window for Read to block: not synchronisation
	require.NoError(t, view.SetReadDeadline(time.Now().Add(-time.Second)))
	isTimeout(recv(t, done))
	require.NoError(t, view.SetReadDeadline(time.Now().Add(waitTimeout)))
	_, err = peer.Write([]byte("again"))
	require.NoError(t, err)
	_, err = io.ReadFull(view, buf[:5])
	require.NoError(t, err)

	// Write: the peer does not read, so the queue fills and Write waits
	// until the deadline, having queued part of the bytes.
	big := make([]byte, 16<<20)
	require.NoError(t, view.SetWriteDeadline(time.Now().Add(200*time.Millisecond)))
	n, err = view.Write(big)
	isTimeout(err)
	require.Positive(t, n)
	require.Less(t, n, len(big))
	require.LessOrEqual(t, c.Buffered(), hw+netConnWriteChunk, "the write queue was not bounded")
	_, err = view.Write([]byte("x"))
	isTimeout(err)

	// The peer reads what was queued; without a deadline, writing works.
	require.NoError(t, view.SetWriteDeadline(time.Time{}))
	drained := make(chan int64, 1)
	go func() { k, _ := io.Copy(io.Discard, peer); drained <- k }()
	k, err := view.Write([]byte("tail"))
	require.NoError(t, err)
	require.Equal(t, 4, k)
	require.NoError(t, view.Close())
	closedView(t, c)
	require.EqualValues(t, n+4, recv(t, drained), "the bytes queued before Close were sent")
	require.ErrorIs(t, view.SetDeadline(time.Time{}), net.ErrClosed)
}

// Close unblocks a blocked Read and a blocked Write; the peer's close gives
// io.EOF after the bytes it sent; a reset reaches Write; calls on the loop
// refuse rather than deadlock.
func TestNetConnCloseAndEOF(t *testing.T) {
	l := startLoop(t)
	hw := 64 << 10
	view, c, peer := viewPair(t, l, ListenConfig{Conn: ConnConfig{HighWater: hw,
		ReadBuffer: 16 << 10, WriteBuffer: 16 << 10}})

	readErr, writeErr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := view.Read(make([]byte, 8)); readErr <- err }()
	go func() { _, err := view.Write(make([]byte, 16<<20)); writeErr <- err }()
	eventually(t, func() bool { return c.Buffered() > hw }, "the write queue never filled")
	require.NoError(t, view.Close())
	require.ErrorIs(t, recv(t, readErr), net.ErrClosed)
	require.ErrorIs(t, recv(t, writeErr), net.ErrClosed)
	require.Error(t, view.Close(), "a second Close")
	_, err := view.Read(make([]byte, 8))
	require.ErrorIs(t, err, net.ErrClosed)
	require.NoError(t, peer.Close()) // the lingering close ends at the reset
	closedView(t, c)

	// The peer's close: the bytes it sent, then io.EOF; writing still works
	// until the view closes (half-close).
	view, c, peer = viewPair(t, l, ListenConfig{})
	_, err = peer.Write([]byte("last words"))
	require.NoError(t, err)
	require.NoError(t, peer.CloseWrite())
	got, err := io.ReadAll(view)
	require.NoError(t, err)
	require.Equal(t, "last words", string(got))
	n, err := view.Read(make([]byte, 8))
	require.Zero(t, n)
	require.Equal(t, io.EOF, err)
	_, err = view.Write([]byte("reply"))
	require.NoError(t, err)
	require.NoError(t, view.Close())
	reply, err := io.ReadAll(peer)
	require.NoError(t, err)
	require.Equal(t, "reply", string(reply))
	closedView(t, c)
	require.NoError(t, peer.Close())

	// A reset: Write fails with it.
	view, c, peer = viewPair(t, l, ListenConfig{})
	require.NoError(t, peer.SetLinger(0))
	require.NoError(t, peer.Close())
	closedView(t, c)
	_, err = view.Write([]byte("to nobody"))
	require.Error(t, err)
	_, err = view.Read(make([]byte, 8))
	require.Error(t, err)

	// On the loop Read and Write would deadlock: they refuse.
	view, c, peer = viewPair(t, l, ListenConfig{})
	onLoop(t, l, func() {
		_, err := view.Read(make([]byte, 8))
		require.ErrorIs(t, err, ErrAwaitOnLoop)
		_, err = view.Write([]byte("x"))
		require.ErrorIs(t, err, ErrAwaitOnLoop)
		require.NoError(t, view.SetDeadline(time.Now().Add(time.Second)))
		require.NoError(t, view.Close())
	})
	closedView(t, c)
	require.NoError(t, peer.Close())

	// A view of a connection closed already reports it.
	view, c, peer = viewPair(t, l, ListenConfig{})
	require.NoError(t, peer.Close())
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = c.NetConn().Read(make([]byte, 8))
	require.ErrorIs(t, err, net.ErrClosed)
	closedLoopTCP(t, l)
}

// A view made after OnFrame takes over the bytes the framer holds (the
// start of a line whose end has not arrived): they come first to Read, not
// to the frame callback, and nothing is lost.
func TestNetConnAfterOnFrame(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(4)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(bufio.ScanLines, 1024, fn))
	})
	nc := netDial(t, ln)
	c := recv(t, conns)
	netWrite(t, nc, []byte("hello\npart"))
	require.Equal(t, "hello", recv(t, frames))
	onLoop(t, l, func() {}) // "part" is in the framer's carry
	view := c.NetConn()
	onLoop(t, l, func() {}) // the view has taken over (NetConn posts that)
	netWrite(t, nc, []byte("ial\n"))
	require.NoError(t, nc.CloseWrite())
	got, err := io.ReadAll(view)
	require.NoError(t, err)
	require.Equal(t, "partial\n", string(got))
	require.Empty(t, frames, "the frame callback ran after the view took over")
	require.NoError(t, view.Close())
	closedView(t, c)
	closedLoopTCP(t, l.closeListener(t, ln))
}

// viewPipe makes nettest's pairs: a view of a dialed connection and one of
// the accepted connection (views at both ends), or a package net client
// at the other end (netPeer).
func viewPipe(t *testing.T, l *Loop, netPeer bool) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		accepted := make(chan *Conn, 1)
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { accepted <- c })
		if err != nil {
			return nil, nil, nil, err
		}
		defer ln.Close()
		if netPeer {
			c2, err = net.Dial("tcp", ln.Addr().String())
		} else {
			var dialed *Conn
			dialed, err = Dial(l, ln.Addr().String(), ConnConfig{}).Wait(testCtx(t))
			if dialed != nil {
				c2 = dialed.NetConn()
			}
		}
		if err != nil {
			return nil, nil, nil, err
		}
		c1 = recv(t, accepted).NetConn()
		return c1, c2, func() { c1.Close(); c2.Close() }, nil
	}
}

// golang.org/x/net/nettest's conformance test of net.Conn, on views.
func TestNetConnConformance(t *testing.T) {
	l := startLoop(t)
	t.Run("views", func(t *testing.T) { nettest.TestConn(t, viewPipe(t, l, false)) })
	t.Run("view-net", func(t *testing.T) { nettest.TestConn(t, viewPipe(t, l, true)) })
	closedLoopTCP(t, l)
}

// viewListener is a net.Listener whose Accept returns views of the
// connections an aio Listener accepts.
type viewListener struct {
	ln    *Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func listenViews(t *testing.T, l *Loop) *viewListener {
	vl, _ := listenViewsN(t, l, 64)
	return vl
}

// listenViewsN is a viewListener on l with room for n connections not yet
// accepted; dropped counts those refused, closed, when it is full.
func listenViewsN(t *testing.T, l *Loop, n int) (vl *viewListener, dropped *atomic.Int64) {
	t.Helper()
	dropped = new(atomic.Int64)
	vl = &viewListener{conns: make(chan net.Conn, n), done: make(chan struct{})}
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		select { // on the loop: never block
		case vl.conns <- c.NetConn():
		default:
			dropped.Add(1)
			c.Close()
		}
	})
	require.NoError(t, err)
	vl.ln = ln
	return vl, dropped
}

func (vl *viewListener) Accept() (net.Conn, error) {
	select {
	case c := <-vl.conns:
		return c, nil
	case <-vl.done:
		return nil, net.ErrClosed
	}
}

func (vl *viewListener) Close() error {
	vl.once.Do(func() { close(vl.done); vl.ln.Close() })
	return nil
}

func (vl *viewListener) Addr() net.Addr { return net.TCPAddrFromAddrPort(vl.ln.Addr()) }

// net/http's server, unchanged, over views: requests with bodies, keep-alive,
// and Shutdown closing idle connections.
func TestNetConnHTTPServer(t *testing.T) {
	l := startLoop(t)
	vl := listenViews(t, l)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
		}),
		ReadTimeout: waitTimeout,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(vl) }()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: waitTimeout}
	url := "http://" + vl.Addr().String()
	for i := 0; i < 5; i++ {
		resp, err := client.Get(url + "/get")
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, "GET /get 0", string(b))
	}
	big := strings.Repeat("x", 1<<20)
	resp, err := client.Post(url+"/post", "text/plain", strings.NewReader(big))
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, fmt.Sprintf("POST /post %d", len(big)), string(b))
	require.EqualValues(t, 1, l.Stats().TCPAccepted, "keep-alive reused the connection")

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	require.ErrorIs(t, recv(t, served), http.ErrServerClosed)
	tr.CloseIdleConnections()
	closedLoopTCP(t, l)
}

// benchServerConn returns the server side of a loopback connection, a view
// or (std) a package net connection, and the package net client of it.
func benchServerConn(b *testing.B, std bool) (server, client net.Conn) {
	b.Helper()
	if std {
		nl, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		defer nl.Close()
		client, err = net.Dial("tcp", nl.Addr().String())
		require.NoError(b, err)
		server, err = nl.Accept()
		require.NoError(b, err)
		return server, client
	}
	l := startLoop(b)
	accepted := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { accepted <- c })
	require.NoError(b, err)
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(b, err)
	return recv(b, accepted).NetConn(), client
}

// Streaming from a goroutine: 64 KiB Writes on the server side, read and
// discarded by a package net client; the view beside a net.Conn.
func BenchmarkNetConnStream(b *testing.B) {
	for _, std := range []bool{false, true} {
		name := map[bool]string{false: "view", true: "net"}[std]
		b.Run(name, func(b *testing.B) {
			server, client := benchServerConn(b, std)
			read := make(chan int64, 1)
			go func() { n, _ := io.Copy(io.Discard, client); read <- n }()
			chunk := make([]byte, 64<<10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := server.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			require.NoError(b, server.Close())
			require.EqualValues(b, b.N*len(chunk), recv(b, read))
			b.StopTimer()
			client.Close()
		})
	}
}

// Request and response of 64 bytes: a package net client, a server
// goroutine echoing through the view or a net.Conn.
func BenchmarkNetConnPingPong(b *testing.B) {
	for _, std := range []bool{false, true} {
		name := map[bool]string{false: "view", true: "net"}[std]
		b.Run(name, func(b *testing.B) {
			server, client := benchServerConn(b, std)
			go func() { _, _ = io.Copy(server, server); server.Close() }()
			msg := make([]byte, 64)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := client.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(client, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			client.Close()
		})
	}
}

// A view's Write (and Read) on a connection that closed with an error, here
// the peer's reset seen by a read: the error says the write failed because
// the connection had closed, with the cause after, and errors.Is still
// finds the cause.
func TestNetConnWriteAfterCloseCause(t *testing.T) {
	l := startLoop(t)
	view, c, peer := viewPair(t, l, ListenConfig{})
	require.NoError(t, peer.SetLinger(0))
	require.NoError(t, peer.Close())
	closedView(t, c)
	_, cause := wait(t, c.Closed())
	require.ErrorIs(t, cause, syscall.ECONNRESET)

	for _, op := range []string{"write", "read"} {
		var err error
		if op == "write" {
			_, err = view.Write([]byte("to nobody"))
		} else {
			_, err = view.Read(make([]byte, 8))
		}
		require.ErrorIs(t, err, syscall.ECONNRESET, op)
		require.ErrorIs(t, err, cause, op)
		var oe *net.OpError
		require.ErrorAs(t, err, &oe, op)
		require.Equal(t, op, oe.Op)
		require.Equal(t, "aio: tcp connection closed: "+cause.Error(), oe.Err.Error(), op)
		require.False(t, oe.Timeout(), op)
	}
	closedLoopTCP(t, l)

	// A cause that is a timeout stays one, and one that says the
	// connection closed already is not said twice.
	v := &netConn{cerr: ErrIdleTimeout}
	require.True(t, v.opError("write", v.closeCause()).(*net.OpError).Timeout())
	require.ErrorIs(t, v.closeCause(), ErrTimeout)
	v.cerr = errConnStopped
	require.Equal(t, errConnStopped, v.closeCause())
	v.cerr = nil
	require.Equal(t, ErrConnClosed, v.closeCause())
}

// A NetConn view holds its connection busy until its Close: the goroutine
// that uses it is the connection's work, which a drain cannot see. A
// drain (Runtime.Shutdown here, Listener.Drain alike) leaves the
// connection to that goroutine, bytes flowing both ways; the view's Close
// ends it, and the drain with it. When the drain's time is up instead
// (Shutdown's context: Stop), Read and Write say why the connection
// closed: errors.Is(err, ErrStopped).
func TestNetConnHoldsItsConnectionThroughADrain(t *testing.T) {
	for _, byClose := range []bool{true, false} {
		t.Run(map[bool]string{true: "view closes", false: "context ends"}[byClose], func(t *testing.T) {
			rt := newRuntime(t, RuntimeConfig{})
			l := startLoopOn(t, rt)
			view, _, peer := viewPair(t, l, ListenConfig{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			shut := make(chan error, 1)
			go func() { shut <- rt.Shutdown(ctx) }()
			eventually(t, func() bool {
				var started bool
				onLoop(t, l, func() { started = l.tcp.drain != nil })
				return started
			}, "the drain does not start")

			_, err := peer.Write([]byte("ping"))
			require.NoError(t, err)
			got := make([]byte, 4)
			_, err = io.ReadFull(view, got)
			require.NoError(t, err)
			require.Equal(t, "ping", string(got))
			_, err = view.Write([]byte("pong"))
			require.NoError(t, err)
			_, err = io.ReadFull(peer, got)
			require.NoError(t, err, "the drain cut the view's connection")
			require.Equal(t, "pong", string(got))
			require.Empty(t, shut, "Shutdown returned with the view open")

			if byClose {
				require.NoError(t, view.Close())
				require.NoError(t, recv(t, shut))
				return
			}
			cancel()
			require.ErrorIs(t, recv(t, shut), context.Canceled)
			require.NoError(t, view.SetReadDeadline(time.Now().Add(waitTimeout)))
			_, err = view.Read(got)
			require.ErrorIs(t, err, ErrStopped)
			require.ErrorIs(t, err, net.ErrClosed)
			_, err = view.Write([]byte("late"))
			require.ErrorIs(t, err, ErrStopped)
		})
	}
}

// A view closed with bytes its Writes counted still queued (the write
// deadline has passed, or the queue does not flush in time) resets the
// connection: the peer reads what reached it and then an error, not a
// clean EOF it would take for the end of the stream. Bug: it got a FIN
// after 64 KiB of the 192 KiB Write had reported written. Once the queue
// has flushed, Close still ends cleanly.
func TestNetConnCloseWithWritesQueuedResets(t *testing.T) {
	l := startLoop(t)
	cfg := ListenConfig{Conn: ConnConfig{WriteBuffer: 16 << 10, HighWater: 64 << 10}}
	view, c, peer := viewPair(t, l, cfg)
	require.NoError(t, peer.SetReadBuffer(16<<10))
	var n int
	var err error
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		n, err = view.Write(make([]byte, 32<<20)) // the peer does not read yet
	}()
	// Full: the kernel stopped taking bytes (the loop met EAGAIN) and the
	// queue grew to HighWater, more than the kernel takes later, while the
	// peer does not read, as its window updates. Merely queued bytes
	// could all reach the kernel before the Close below, which then ends
	// cleanly, as it should.
	require.Eventually(t, c.Full, waitTimeout, time.Millisecond,
		"bytes the kernel does not take fill the queue")
	require.NoError(t, view.SetWriteDeadline(time.Now())) // the blocked Write returns
	recv(t, wrote)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Positive(t, n)
	require.NoError(t, view.Close())
	got, err := io.Copy(io.Discard, peer)
	require.Error(t, err, "a clean EOF after %d bytes of the %d Write counted", got, n)
	assert.ErrorIs(t, err, syscall.ECONNRESET)
	closedView(t, c)

	view, c, peer = viewPair(t, l, cfg)
	_, err = view.Write([]byte("all of it"))
	require.NoError(t, err)
	require.NoError(t, view.Close())
	b, err := io.ReadAll(peer)
	require.NoError(t, err, "a view whose queue flushed closes cleanly")
	assert.Equal(t, "all of it", string(b))
	closedView(t, c)
}

// A NetConn view lets go of its read buffer (64 KiB and more) once
// everything was read and no byte can follow (the peer's FIN, or the
// connection gone): the goroutine code keeps the view (its net.Conn)
// until it gets round to Close, or for good when it forgets to, and the
// connection stays open until then (the view holds its scope busy).
func TestNetConnViewLetsGoOfItsBufferAtTheEnd(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { conns <- c })
	require.NoError(t, err)
	nc := netDial(t, ln)
	c := recv(t, conns)
	v := c.NetConn().(*netConn)
	t.Cleanup(func() { _ = v.Close() }) // the view holds the connection open
	const size = 256 << 10
	go func() {
		_, _ = nc.Write(make([]byte, size))
		_ = nc.Close()
	}()
	// The buffer may be replaced as it grows: the last one is watched.
	var freed chan struct{}
	var last *byte
	buf := make([]byte, 4096)
	n := 0
	for {
		m, err := v.Read(buf)
		n += m
		v.mu.Lock()
		if p := unsafe.SliceData(v.buf); p != nil && p != last {
			last, freed = p, make(chan struct{})
			runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, freed)
		}
		v.mu.Unlock()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	last = nil
	require.Equal(t, size, n)
	require.NotNil(t, freed)
	onLoop(t, l, func() {})
	collected(t, freed, "the view keeps its read buffer after the end")
	runtime.KeepAlive(v)
	require.NoError(t, v.Close())
	_, err = wait(t, c.Closed())
	require.NoError(t, err)
}

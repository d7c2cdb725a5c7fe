package aio

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// 200 concurrent clients from Go's net package each send a random payload of
// up to 1 MiB to an echo server served by two loops on one port
// (SO_REUSEPORT), half-close, and check every byte of the echo.
func TestTCPEchoManyClients(t *testing.T) {
	const clients, maxSize = 200, 1 << 20
	a, b := startLoop(t, Config{Name: "echo-a"}), startLoop(t, Config{Name: "echo-b"})
	cfg := ListenConfig{ReusePort: true}
	la := echoListen(t, a, cfg)
	lb, err := Listen(b, la.Addr().String(), cfg, func(c *Conn) { _ = c.OnRead(tcpEcho) })
	require.NoError(t, err)
	require.Equal(t, la.Addr(), lb.Addr())

	var wg sync.WaitGroup
	var sent atomic.Int64
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			payload := make([]byte, 1+rng.IntN(maxSize))
			for j := range payload {
				payload[j] = byte(rng.Uint32())
			}
			nc, err := net.DialTimeout("tcp", la.Addr().String(), waitTimeout)
			if !assert.NoError(t, err) {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(waitTimeout))
			werr := make(chan error, 1)
			go func() {
				_, err := nc.Write(payload)
				if err == nil {
					err = nc.(*net.TCPConn).CloseWrite()
				}
				werr <- err
			}()
			got := make([]byte, len(payload))
			_, err = io.ReadFull(nc, got)
			assert.NoError(t, err, "client %d", i)
			n, err := nc.Read(make([]byte, 1))
			assert.Equal(t, 0, n)
			assert.ErrorIs(t, err, io.EOF, "the server closes after echoing everything")
			assert.NoError(t, <-werr)
			assert.True(t, bytes.Equal(payload, got), "client %d: echo differs", i)
			sent.Add(int64(len(payload)))
		}()
	}
	wg.Wait()
	for _, l := range []*Loop{a, b} {
		eventually(t, func() bool { return l.Stats().TCPOpen == 0 }, "connections left open on %s", l.Name())
	}
	sa, sb := a.Stats(), b.Stats()
	require.EqualValues(t, clients, sa.TCPAccepted+sb.TCPAccepted)
	require.EqualValues(t, clients, sa.TCPClosed+sb.TCPClosed)
	require.Equal(t, uint64(sent.Load()), sa.TCPBytesIn+sb.TCPBytesIn)
	require.Equal(t, uint64(sent.Load()), sa.TCPBytesOut+sb.TCPBytesOut)
	require.Zero(t, sa.TCPWriteQueued+sb.TCPWriteQueued)
	t.Logf("accepted: %s %d, %s %d", a.Name(), sa.TCPAccepted, b.Name(), sb.TCPAccepted)
}

// IPv6: a Dial to a listener on ::1 echoes, and both ends see the
// right addresses.
func TestTCPIPv6Echo(t *testing.T) {
	skipWithoutLoopback(t, "::1")
	l := startLoop(t)
	ln, accepted := echoListenConns(t, l, "[::1]:0", ListenConfig{}, 1)
	require.True(t, ln.Addr().Addr().Is6())
	c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
	require.NoError(t, err)
	sc := recv(t, accepted)
	require.Equal(t, ln.Addr(), c.RemoteAddr())
	require.Equal(t, c.LocalAddr(), sc.RemoteAddr())
	require.Equal(t, ln.Addr(), sc.LocalAddr())
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(c *Conn, b []byte) { got <- string(b) }))
	require.NoError(t, send(c, []byte("over v6")))
	require.Equal(t, "over v6", recv(t, got))
	_, err = wait(t, c.Close())
	require.NoError(t, err)
	_, err = wait(t, sc.Closed())
	require.NoError(t, err)
}

// Stop with connections open closes every one of them, completes (cancels)
// their Closed handles, fails their pending writes, and leaves no fd.
func TestTCPStopClosesConnections(t *testing.T) {
	fds := fdCount(t)
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{Name: "stop"})
	var mu sync.Mutex
	var handles []*Handle[struct{}]
	keep := func(h *Handle[struct{}]) {
		mu.Lock()
		handles = append(handles, h)
		mu.Unlock()
	}
	accepted := 0 // on the loop
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(tcpEcho)
		keep(c.Closed())
		if accepted++; accepted <= 2 {
			keep(writeFlush(c, make([]byte, 24<<20))) // stays queued: the clients do not read
		}
	})
	require.NoError(t, err)
	keep(ln.Closed())
	const n = 20
	for i := 0; i < n; i++ {
		c, err := wait(t, Dial(l, ln.Addr().String(), ConnConfig{}))
		require.NoError(t, err)
		keep(c.Closed())
	}
	eventually(t, func() bool { return l.Stats().TCPOpen == 2*n }, "connections not all open")
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, handles, 1+2*n+2)
	for _, h := range handles {
		require.Equal(t, Cancelled, h.Status())
		select {
		case <-h.Done():
		default:
			t.Fatal("a handle is not done after Stop")
		}
	}
	s := l.Stats()
	require.Zero(t, s.TCPOpen)
	require.Zero(t, s.TCPListeners)
	require.Zero(t, s.TCPWriteQueued)
	require.Zero(t, s.Handles)
	require.EqualValues(t, 2*n, s.TCPClosed)
	require.Equal(t, fds, fdCount(t))
	require.Equal(t, 0, rt.Running())
}

// A Conn's Closed is not lazily tracked (the fd table holds it): Stop still
// closes a Dial's connecting socket (the Dial handle is cancelled) and the
// connections accepted after Stop within the same poll batch; Stats.Handles
// and the TCP counters come back to zero and no fd is left.
func TestTCPStopClosesConnectingAndLateConns(t *testing.T) {
	stuck := stuckAddr(t)
	fds := fdCount(t)
	rt := newRuntime(t, RuntimeConfig{})
	l := startLoopOn(t, rt, Config{Name: "stop-late"})
	var mu sync.Mutex
	var closed []*Handle[struct{}]
	n := 0 // on the loop
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		mu.Lock()
		closed = append(closed, c.Closed())
		mu.Unlock()
		if n++; n == 1 {
			l.Stop() // the rest of the batch is accepted while stopping
		}
	})
	require.NoError(t, err)
	dial := Dial(l, stuck, ConnConfig{})
	// An off-loop Dial posts its connect ahead of this callback.
	require.GreaterOrEqual(t, onLoopValue(t, l, func() int { return connectingFD(l) }), 0, "the dial is not connecting")
	// Hold the loop so that several connections are pending in one batch:
	// the kernel completes their handshakes from the backlog meanwhile.
	release := holdLoop(t, l)
	var ncs []net.Conn
	for i := 0; i < 3; i++ {
		ncs = append(ncs, netDial(t, ln))
	}
	release()
	_, err = l.Stop().Wait(testCtx(t))
	require.NoError(t, err)
	for _, nc := range ncs {
		nc.Close()
	}
	require.Equal(t, Cancelled, dial.Status())
	mu.Lock()
	require.Len(t, closed, 3)
	for _, h := range closed {
		require.Equal(t, Cancelled, h.Status())
	}
	mu.Unlock()
	s := l.Stats()
	require.Zero(t, s.Handles)
	require.Zero(t, s.TCPOpen)
	require.Zero(t, s.TCPListeners)
	require.Zero(t, s.Timers)
	require.Equal(t, fds, fdCount(t))
	require.Equal(t, 0, rt.Running())
}

// Regression test: an idle timer made Stop close a Conn too early.
//
// Stop cancels pending handles first and closes sockets after, whether or
// not a connection has a timeout: a connection's idle timer used to close
// it in the first cancelling pass, before the OnCancel callbacks of other
// handles, while one without a timer closed after them.
func TestTCPStopClosesSocketsAfterCancelling(t *testing.T) {
	for _, cfg := range []ConnConfig{{}, {IdleTimeout: time.Hour}} {
		rt := newRuntime(t, RuntimeConfig{})
		l := startLoopOn(t, rt, Config{Name: "stop-order"})
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{Conn: cfg}, func(c *Conn) { _ = c.OnRead(tcpEcho) })
		require.NoError(t, err)
		c, err := wait(t, Dial(l, ln.Addr().String(), cfg))
		require.NoError(t, err)
		var openAtCancel atomic.Bool
		p := NewPromise[int](l)
		p.Handle().OnCancel(func() { openAtCancel.Store(c.Closed().Status() == Running) })
		_, err = l.Stop().Wait(testCtx(t))
		require.NoError(t, err)
		require.True(t, openAtCancel.Load(), "idle timeout %v: the connection closed before OnCancel ran", cfg.IdleTimeout)
		require.Equal(t, Cancelled, c.Closed().Status())
		require.Zero(t, l.Stats().TCPOpen)
		require.Zero(t, l.Stats().Timers)
		require.Equal(t, 0, rt.Running())
	}
}

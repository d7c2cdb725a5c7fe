package aio

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A connection whose write queue never fully empties (steady streaming to a
// slower reader) keeps every consumed segment slot of c.wq: wh only resets
// when the queue is empty, so len(c.wq) grows with the bytes ever queued.
func TestTCPWriteQueueStaysBounded(t *testing.T) {
	l := startLoop(t)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { conns <- c })
	require.NoError(t, err)
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	c := <-conns

	const total = 96 << 20
	stop := make(chan struct{})
	go func() { // a slow but steady reader
		buf := make([]byte, 64<<10)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := nc.Read(buf); err != nil {
				if err != io.EOF {
					return
				}
				return
			}
			time.Sleep(500 * time.Microsecond)
		}
	}()
	defer close(stop)

	chunk := make([]byte, 4<<10)
	var sent int
	var maxLive, maxLen int
	var emptied int
	done := make(chan struct{})
	var tick *Handle[struct{}]
	onLoop(t, l, func() {
		tick = Every(l, time.Millisecond, func() {
			if sent >= total {
				select {
				case <-done:
				default:
					close(done)
				}
				return
			}
			if c.Buffered() == 0 && sent > 0 {
				emptied++
			}
			for c.Buffered() < 4<<20 && sent < total {
				_ = c.Send(chunk)
				sent += len(chunk)
			}
			if live := len(c.wq) - c.wh; live > maxLive {
				maxLive = live
			}
			if len(c.wq) > maxLen {
				maxLen = len(c.wq)
			}
		})
	})
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("timeout")
	}
	tick.Cancel()
	onLoop(t, l, func() {})
	t.Logf("live segments max %d, len(c.wq) max %d, queue emptied %d times", maxLive, maxLen, emptied)
	require.Less(t, maxLen, 4*maxLive+64, "c.wq kept %d slots for at most %d live segments", maxLen, maxLive)
}

// An epoll batch can hold an event for an fd that an earlier callback of the
// same batch closed; if that callback also opened a socket (a Dial) that got
// the same fd number, the stale event reaches the connecting Conn, whose
// finishConnect reads SO_ERROR = 0 and declares the connection established.
func TestTCPStaleEventDoesNotCompleteDial(t *testing.T) {
	l := startLoop(t)
	stuck := stuckAddr(t)
	type dialRes struct {
		h     *Handle[*Conn]
		oldFD int
		newFD int
	}
	res := make(chan dialRes, 1)
	var all []*Conn
	fired := false
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		all = append(all, c)
		_ = c.OnRead(func(c *Conn, b []byte) {
			if fired {
				return
			}
			fired = true
			other := all[0]
			if other == c {
				other = all[1]
			}
			old := other.fd
			other.Close()
			h := Dial(l, stuck, ConnConfig{})
			nfd := -1 // the dial's socket, while connecting
			for fd, hd := range l.fds {
				if cc, ok := hd.(*Conn); ok && cc.state == connConnecting {
					nfd = fd
				}
			}
			res <- dialRes{h: h, oldFD: old, newFD: nfd}
		})
	})
	require.NoError(t, err)
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer a.Close()
	b, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer b.Close()
	eventually(t, func() bool { return l.Stats().TCPAccepted == 2 }, "not accepted")
	onLoop(t, l, func() {}) // the OnRead interest is registered

	// Hold the loop so that both readiness events land in one poll batch.
	require.NoError(t, l.Post(func() { time.Sleep(100 * time.Millisecond) }))
	time.Sleep(20 * time.Millisecond)
	_, err = a.Write([]byte("x"))
	require.NoError(t, err)
	_, err = b.Write([]byte("y"))
	require.NoError(t, err)

	r := <-res
	if r.newFD != r.oldFD {
		t.Skipf("the dial's socket got fd %d, not the closed %d", r.newFD, r.oldFD)
	}
	time.Sleep(50 * time.Millisecond) // the connect to stuck cannot finish
	st := r.h.Status()
	if st == Completed {
		c, _ := r.h.Result()
		t.Logf("dial to a black-holed address completed; conn %v -> %v", c.LocalAddr(), c.RemoteAddr())
	}
	require.Equal(t, Running, st, "a stale event for the closed fd %d completed the dial", r.oldFD)
	r.h.Cancel()
	_, _ = wait(t, r.h)
}

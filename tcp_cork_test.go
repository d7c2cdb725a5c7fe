package aio

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// corkServer listens on l and answers each read with what reply writes,
// on the loop; it returns the client's connection.
func corkServer(t *testing.T, l *Loop, reply func(c *Conn)) io.ReadWriter {
	t.Helper()
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, _ []byte) { reply(c) })
	})
	require.NoError(t, err)
	return netDial(t, ln)
}

// The replies a read callback writes go out in two system calls however
// many there are: the first at once, the rest together when the callback
// returns, in order.
func TestWritesOfOneReadGoOutTogether(t *testing.T) {
	l := startLoop(t)
	const replies = 16
	var want bytes.Buffer
	for i := range replies {
		fmt.Fprintf(&want, "reply %02d\n", i)
	}
	client := corkServer(t, l, func(c *Conn) {
		for i := range replies {
			_, _ = fmt.Fprintf(c, "reply %02d\n", i)
		}
	})
	writes := exchange(t, l, client, "go", want.String())
	require.Equal(t, uint64(2), writes, "write system calls for %d replies", replies)
}

// exchange sends req on client, reads the reply, which must be want, and
// returns how many write system calls l made meanwhile.
func exchange(t *testing.T, l *Loop, client io.ReadWriter, req, want string) uint64 {
	t.Helper()
	var before, after uint64
	onLoop(t, l, func() { before = l.tcp.writes })
	_, err := io.WriteString(client, req) // one write: one read on the loopback
	require.NoError(t, err)
	got := make([]byte, len(want))
	_, err = io.ReadFull(client, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	onLoop(t, l, func() { after = l.tcp.writes })
	return after - before
}

// A large write in a read callback is not held back: what the callback
// wrote before it goes first, and the order holds.
func TestWritesOfOneReadKeepOrderAroundALargeOne(t *testing.T) {
	l := startLoop(t)
	large := bytes.Repeat([]byte("L"), 2*chunkSize)
	want := "a" + "b" + string(large) + "c"
	client := corkServer(t, l, func(c *Conn) {
		for _, p := range [][]byte{[]byte("a"), []byte("b"), large, []byte("c")} {
			_, _ = c.Write(p)
		}
	})
	exchange(t, l, client, "go", want)
}

// A read callback that writes replies and then closes sends them all
// before the close, as it did when each write went out at once.
func TestWritesOfOneReadGoBeforeItsClose(t *testing.T) {
	l := startLoop(t)
	client := corkServer(t, l, func(c *Conn) {
		for _, s := range []string{"first ", "second ", "third"} {
			_, _ = c.WriteString(s)
		}
		c.Close()
	})
	_, err := client.Write([]byte("go"))
	require.NoError(t, err)
	got, err := io.ReadAll(client)
	require.NoError(t, err)
	require.Equal(t, "first second third", string(got))
}

// A Flush made in a read callback after held writes completes once they
// are out, at the callback's end.
func TestFlushInAReadCallbackCoversHeldWrites(t *testing.T) {
	l := startLoop(t)
	flushed := make(chan error, 1)
	client := corkServer(t, l, func(c *Conn) {
		_, _ = c.WriteString("one ")
		_, _ = c.WriteString("two")
		h := c.Flush()
		Finally(h, func() { _, err := h.Result(); flushed <- err })
	})
	exchange(t, l, client, "go", "one two")
	require.NoError(t, recv(t, flushed))
}

// Frames that arrive together in one read are answered with one write
// system call: a framer with more of the read after a frame lets the
// first reply wait too.
func TestFramesOfOneReadAreAnsweredInOneWrite(t *testing.T) {
	l := startLoop(t)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
		_ = c.OnFrame(bufio.ScanLines, 0, func(c *Conn, line []byte) {
			_, _ = fmt.Fprintf(c, "got %s\n", line)
		})
	})
	require.NoError(t, err)
	client := netDial(t, ln)
	const lines = 16
	var req, want bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&req, "%02d\n", i)
		fmt.Fprintf(&want, "got %02d\n", i)
	}
	writes := exchange(t, l, client, req.String(), want.String())
	require.Equal(t, uint64(1), writes, "write system calls for %d replies", lines)
}

// The replies to the frames of a read that come before one that fails
// (too large, or its callback panics) go out before the close, as they
// did when each write went out at once: the failure does not take back
// what was answered.
func TestRepliesBeforeAFailingFrameGoOut(t *testing.T) {
	for _, tc := range []struct{ name, req string }{
		{"too large", "short\n" + strings.Repeat("x", 100) + "\n"},
		{"panic", "short\npanic\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := startLoop(t, Config{OnPanic: func(any) {}})
			ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) {
				_ = c.OnFrame(bufio.ScanLines, 64, func(c *Conn, line []byte) {
					if string(line) == "panic" {
						panic("boom")
					}
					_, _ = fmt.Fprintf(c, "got %s\n", line)
				})
			})
			require.NoError(t, err)
			client := netDial(t, ln)
			_, err = io.WriteString(client, tc.req) // one read: the server consumes it all
			require.NoError(t, err)
			got, err := io.ReadAll(client)
			require.NoError(t, err)
			require.Equal(t, "got short\n", string(got))
		})
	}
}

package aio

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTLSDrainMidHandshake: a drain closes a connection still in its
// handshake at once (nothing of the program's runs on it), and ends.
func TestTLSDrainMidHandshake(t *testing.T) {
	l := startLoop(t)
	ln, nc := stalledClient(t, l)
	_, err := wait(t, ln.Drain(time.Hour))
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, nc)
	require.NoError(t, err, "closed with a FIN")
	// Counted once the handshake's coroutine has ended, after the close.
	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 1 }, "not counted")
}

// TestTLSNotTLS: a client that speaks plain text to a TLS listener fails
// the handshake and is closed; the accept callback never runs.
func TestTLSNotTLS(t *testing.T) {
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	accepted := make(chan struct{}, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(*Conn) { accepted <- struct{}{} })
	require.NoError(t, err)
	nc := netDial(t, ln)
	_, err = io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, nc) // ends when the server closes
	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 1 }, "not counted")
	require.Empty(t, accepted)
}

// TestTLSOnFrame cuts the plaintext into lines.
func TestTLSOnFrame(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnFrame(bufio.ScanLines, 0, func(c *Conn, line []byte) {
			_, _ = c.Write([]byte(strings.ToUpper(string(line)) + "\n"))
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	_, err = io.WriteString(tc, "one\ntw")
	require.NoError(t, err)
	_, err = io.WriteString(tc, "o\nthree\n")
	require.NoError(t, err)
	br := bufio.NewReader(tc)
	for _, want := range []string{"ONE\n", "TWO\n", "THREE\n"} {
		got, err := br.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// TestTLSPauseResume: a reader that pauses after each chunk gets the
// rest, in order, each time it resumes: what crypto/tls and the
// connection hold while it is paused waits.
func TestTLSPauseResume(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	chunks := make(chan string, 16)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		conns <- c
		_ = c.OnRead(func(c *Conn, b []byte) {
			chunks <- string(b)
			_ = c.PauseRead()
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	var buf strings.Builder
	_, err = io.WriteString(tc, "first")
	require.NoError(t, err)
	got := recv(t, chunks)
	c := recv(t, conns)
	require.NoError(t, c.ResumeRead())
	_, err = io.WriteString(tc, strings.Repeat("x", 200000)) // 13 records
	require.NoError(t, err)
	buf.WriteString(got)
	for buf.Len() < len("first")+200000 {
		buf.WriteString(recv(t, chunks))
		require.NoError(t, c.ResumeRead()) // each chunk paused it again
	}
	require.Equal(t, "first"+strings.Repeat("x", 200000), buf.String())
}

// TestTLSGathersCallbackWrites: the small writes of one read callback go
// out as one record (TLS 1.2: the record types are in clear).
func TestTLSGathersCallbackWrites(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	scfg.MaxVersion = tls.VersionTLS12
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			for _, s := range []string{"a", "b", "c"} {
				_, _ = c.Write([]byte(s))
			}
		})
	})
	require.NoError(t, err)
	rc := &recordConn{Conn: netDial(t, ln)}
	tc := tls.Client(rc, ccfg)
	require.NoError(t, tc.Handshake())
	_, err = io.WriteString(tc, "go")
	require.NoError(t, err)
	got := make([]byte, 3)
	_, err = io.ReadFull(tc, got)
	require.NoError(t, err)
	require.Equal(t, "abc", string(got))
	data := 0
	for _, typ := range rc.recordTypes() {
		if typ == 23 {
			data++
		}
	}
	require.Equal(t, 1, data, "application data records")
}

// heldConn holds what its client writes until flush, so that data and a
// close_notify reach the peer in one segment, and one read.
type heldConn struct {
	*net.TCPConn
	hold bool
	buf  []byte
}

func (h *heldConn) Write(p []byte) (int, error) {
	if h.hold {
		h.buf = append(h.buf, p...)
		return len(p), nil
	}
	return h.TCPConn.Write(p)
}

func (h *heldConn) flush() error {
	h.hold = false
	_ = h.SetWriteDeadline(time.Now().Add(waitTimeout)) // tls.Conn.CloseWrite set it to now
	_, err := h.TCPConn.Write(h.buf)
	h.buf = nil
	return err
}

// A close_notify that crypto/tls reads while reading is paused (the read
// callback paused on the data that came with it) ends the stream once
// reading resumes, with the TCP connection still open: OnEOF runs. It
// never did: crypto/tls had returned its io.EOF already, and with no byte
// left buffered the loop did not ask it again, so the connection hung
// until the peer gave up (a Go client that writes, calls CloseWrite and
// reads the reply does exactly this).
func TestTLSCloseNotifyWhilePaused(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	paused, eof := make(chan *Conn, 1), make(chan struct{}, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			_ = c.PauseRead()
			paused <- c
		})
		_ = c.OnEOF(func(c *Conn) { eof <- struct{}{}; c.CloseWrite() })
	})
	require.NoError(t, err)
	hc := &heldConn{TCPConn: netDial(t, ln)}
	tc := tls.Client(hc, ccfg)
	require.NoError(t, tc.Handshake())
	hc.hold = true
	_, err = tc.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, tc.CloseWrite()) // close_notify; TCP stays open
	require.NoError(t, hc.flush())
	c := recv(t, paused)
	// Posted: it runs after the read that delivered "hello" and the
	// close_notify with it.
	require.NoError(t, l.Post(func() { _ = c.ResumeRead() }))
	recv(t, eof)
	_, err = io.ReadAll(tc)
	require.NoError(t, err, "the server's close_notify")
	closedLoopTCP(t, l.closeListener(t, ln))
}

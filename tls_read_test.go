package aio

import (
	"bufio"
	"crypto/tls"
	"io"
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

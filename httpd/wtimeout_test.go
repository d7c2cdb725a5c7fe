package httpd

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/sys/unix"
)

// wtConfig is a server config whose write timeout (wt) runs out quickly,
// with a small send buffer, so that a client that stops reading fills the
// connection's queue at once.
func wtConfig(wt time.Duration) Config {
	cfg := Config{WriteTimeout: wt}
	cfg.Listen.Conn.WriteBuffer = 16 << 10
	return cfg
}

// floodMux serves GET /flood: a stream that writes while it is not Full
// and never ends; and GET /big: 8 MiB at once.
func floodMux() *Mux {
	m := NewMux()
	chunk := make([]byte, 32<<10)
	big := make([]byte, 8<<20)
	m.HandleFunc("GET /flood", func(r *Request) Reply {
		s := r.Stream(200, nil)
		fill := func() {
			for !s.Full() {
				if _, err := s.Write(chunk); err != nil {
					return
				}
			}
		}
		s.OnDrain(fill)
		fill()
		return s.Reply()
	})
	m.HandleFunc("GET /big", func(r *Request) Reply { return Bytes(200, big) })
	return m
}

// dialTiny connects with a tiny receive buffer: a client that does not
// read stops the server's writes after a few KiB.
func dialTiny(t *testing.T, addr string) net.Conn { return dialRcvBuf(t, addr, 4<<10) }

// dialRcvBuf connects with a receive buffer of size bytes.
func dialRcvBuf(t *testing.T, addr string, size int) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: waitTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, size)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
	t.Cleanup(func() { nc.Close() })
	return nc
}

// An HTTP/1.1 client that asks for a streamed or a large response and
// never reads it is closed once the kernel has taken nothing for
// WriteTimeout: the stream's handler is cancelled, every arena comes back,
// and Stats counts it.
func TestWriteTimeoutH1(t *testing.T) {
	const wt = 150 * time.Millisecond
	ts := startServer(t, floodMux(), wtConfig(wt))
	for i, path := range []string{"/flood", "/big"} {
		nc := dialTiny(t, ts.addr)
		start := time.Now()
		_, err := io.WriteString(nc, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		eventually(t, func() bool { return ts.Stats().WriteTimeouts == uint64(i+1) }, "%s: no write timeout: %+v", path, ts.Stats())
		assert.GreaterOrEqual(t, time.Since(start), wt, path)
		ts.atRest(t)
		eventually(t, func() bool { return ts.Stats().ConnsOpen == 0 }, "%s: the connection is closed", path)
	}
	assert.Equal(t, uint64(1), ts.Stats().Cancelled, "the stream's handler")
}

// A slow but steady reader is not cut: every byte the kernel takes
// restarts the clock.
func TestWriteTimeoutSlowReader(t *testing.T) {
	const wt = 150 * time.Millisecond
	ts := startServer(t, floodMux(), wtConfig(wt))
	nc := dialRaw(t, ts.addr)
	nc.send("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 64<<10)
	for end := time.Now().Add(4 * wt); time.Now().Before(end); {
		_, err := io.ReadFull(nc, buf)
		require.NoError(t, err)
		time.Sleep(wt / 6) // the client's pace, not a synchronisation
	}
	st := ts.Stats()
	assert.Zero(t, st.WriteTimeouts, "progress keeps the connection")
	assert.Equal(t, int64(1), st.HandlersPending, "the stream goes on")
	nc.Close()
	ts.atRest(t)
}

// A client that reads steadily, but slower than the server's kernel send
// buffer drains, is not cut although the kernel takes no new byte for
// longer than WriteTimeout (it wakes the writer only when a third of the
// buffer is free): the client acknowledges bytes all along, and that is
// progress. Linux autotunes the buffer up to 4 MiB, so with the default
// 30 s a download read at 100 KB/s was cut; here a 400 KiB buffer read at
// 200 KB/s stalls for about 0.7 s, and WriteTimeout is 300 ms. Over
// HTTP/2 the client's transport reads the socket ahead into its stream
// window (4 MiB for Go's), so there the window stalls instead, and its
// own rule (DATA sent) must not cut this reader either.
func TestWriteTimeoutReaderBehindTheKernelBuffer(t *testing.T) {
	const wt = 300 * time.Millisecond
	cfg := Config{WriteTimeout: wt}
	cfg.Listen.Conn.WriteBuffer = 200 << 10
	readSlowly := func(t *testing.T, body io.Reader) {
		buf := make([]byte, 8<<10)
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			_, err := io.ReadFull(body, buf)
			require.NoError(t, err)
			time.Sleep(40 * time.Millisecond) // the client's pace, not a synchronisation
		}
	}
	t.Run("h1", func(t *testing.T) {
		ts := startServer(t, floodMux(), cfg)
		nc := dialRcvBuf(t, ts.addr, 32<<10)
		_, err := io.WriteString(nc, "GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		readSlowly(t, nc)
		assert.Zero(t, ts.Stats().WriteTimeouts, "a reader that keeps acknowledging is cut")
		nc.Close()
		ts.atRest(t)
	})
	t.Run("h2", func(t *testing.T) {
		ts := startServer(t, floodMux(), cfg)
		tr := &http2.Transport{AllowHTTP: true,
			DialTLSContext: func(context.Context, string, string, *tls.Config) (net.Conn, error) {
				return dialRcvBuf(t, ts.addr, 32<<10), nil
			}}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: waitTimeout}).Get("http://" + ts.addr + "/flood")
		require.NoError(t, err)
		readSlowly(t, resp.Body)
		assert.Zero(t, ts.Stats().WriteTimeouts, "a reader that keeps acknowledging is cut")
		require.NoError(t, resp.Body.Close())
		ts.atRest(t)
	})
}

// The write timeout holds on an HTTP/2 connection whose client grants
// windows and then stops reading.
func TestWriteTimeoutH2(t *testing.T) {
	const wt = 150 * time.Millisecond
	ts := startServer(t, floodMux(), wtConfig(wt))
	c := openH2(t, ts.addr)
	const window = 1<<31 - 1
	require.NoError(t, c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}))
	_, ok := c.next().(*http2.SettingsFrame)
	require.True(t, ok)
	require.NoError(t, c.fr.WriteSettingsAck())
	require.NoError(t, c.fr.WriteWindowUpdate(0, window-65535))
	c.get(1, "/flood")
	eventually(t, func() bool { return ts.Stats().WriteTimeouts == 1 }, "no write timeout: %+v", ts.Stats())
	ts.atRest(t)
	st := ts.Stats()
	assert.Equal(t, uint64(1), st.Cancelled, "the stream's handler")
	assert.Zero(t, st.ConnsOpen)
}

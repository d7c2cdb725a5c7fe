package httpd

import (
	"io"
	"net"
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
func dialTiny(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: waitTimeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<10)
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

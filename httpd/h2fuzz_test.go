package httpd

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Seeds are valid frame sequences (after the preface and an empty
// SETTINGS) for FuzzH2Frames to start from.
func h2Seeds() [][]byte {
	var seeds [][]byte
	var buf, hb bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	enc := hpack.NewEncoder(&hb)
	block := func(method, path string, extra ...string) []byte {
		hb.Reset()
		fields := []string{":method", method, ":scheme", "http", ":authority", "x", ":path", path}
		fields = append(fields, extra...)
		for i := 0; i < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return bytes.Clone(hb.Bytes())
	}
	seq := func(write func()) {
		buf.Reset()
		write()
		seeds = append(seeds, bytes.Clone(buf.Bytes()))
	}
	seq(func() {
		_ = fr.WriteSettingsAck()
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("GET", "/health"),
			EndStream: true, EndHeaders: true})
	})
	seq(func() {
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("POST", "/echo",
			"content-length", "5"), EndHeaders: true})
		_ = fr.WriteData(1, false, []byte("hel"))
		_ = fr.WriteData(1, true, []byte("lo"))
		_ = fr.WriteWindowUpdate(0, 1000)
	})
	seq(func() {
		b := block("GET", "/slow?ms=50", "x-a", strings.Repeat("a", 100))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b[:10], EndStream: true})
		_ = fr.WriteContinuation(3, false, b[10:20])
		_ = fr.WriteContinuation(3, true, b[20:])
		_ = fr.WritePing(false, [8]byte{1, 2, 3})
		_ = fr.WriteRSTStream(3, http2.ErrCodeCancel)
	})
	seq(func() {
		_ = fr.WritePriority(5, http2.PriorityParam{StreamDep: 0, Weight: 15})
		_ = fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10},
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 14})
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 5, BlockFragment: block("GET", "/health"),
			EndStream: true, EndHeaders: true, PadLength: 4})
		_ = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	})
	seq(func() { // a Duplex handler, its body in parts; an early answer, and DATA crossing its reset
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("POST", "/duplex"), EndHeaders: true})
		_ = fr.WriteData(1, false, []byte("one\n"))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block("POST", "/unread",
			"content-length", "1000"), EndHeaders: true})
		_ = fr.WriteData(3, false, make([]byte, 100))
		_ = fr.WritePing(true, [8]byte{'c', 'r', 'o', 's', 's', 'i', 'n', 'g'})
		_ = fr.WriteData(3, false, make([]byte, 100))
		_ = fr.WriteData(1, true, []byte("two\n"))
	})
	seq(func() { // a Duplex handler behind a body limit: within, then past it
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block("POST", "/limited"), EndHeaders: true})
		_ = fr.WriteData(1, false, make([]byte, 60))
		_ = fr.WriteData(1, false, make([]byte, 60))
		_ = fr.WriteData(1, true, make([]byte, 10))
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block("POST", "/limited",
			"content-length", "101"), EndHeaders: true})
		_ = fr.WriteData(3, true, make([]byte, 101))
	})
	return seeds
}

// fuzzMux is testMux with a Duplex echo (POST /duplex), the same behind
// a body limit of 100 bytes (POST /limited), and a handler that answers
// without reading its body (POST /unread).
func fuzzMux() *Mux {
	m := testMux()
	m.Handle("POST /duplex", Duplex(HandlerFunc(echoHandler)))
	m.Handle("POST /limited", MaxBytesHandler(Duplex(HandlerFunc(echoHandler)), 100))
	m.HandleFunc("POST /unread", func(r *Request) Reply { return Text(401, "no") })
	return m
}

// FuzzH2Frames feeds arbitrary bytes, after the preface and SETTINGS, to a
// real HTTP/2 connection over loopback, then ends the client's side. The
// server must not panic, must answer or close (it closes at the client's
// EOF, at the latest), and must come back to rest: no connection,
// stream, handler or arena left. (What it reads at once is bounded by its
// OnFrame limit: a frame or header block longer ends the connection.)
func FuzzH2Frames(f *testing.F) {
	for _, s := range h2Seeds() {
		f.Add(s)
	}
	ts := startServer(f, fuzzMux(), Config{})
	f.Fuzz(func(t *testing.T, in []byte) {
		nc, err := net.DialTimeout("tcp", ts.addr, waitTimeout)
		require.NoError(t, err)
		defer nc.Close()
		require.NoError(t, nc.SetDeadline(time.Now().Add(waitTimeout)))
		var out bytes.Buffer
		out.WriteString(http2.ClientPreface)
		_ = http2.NewFramer(&out, nil).WriteSettings()
		out.Write(in)
		if _, err := nc.Write(out.Bytes()); err == nil {
			_ = nc.(*net.TCPConn).CloseWrite()
		}
		_, err = io.Copy(io.Discard, nc) // until the server closes
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server neither closed nor stopped")
		eventually(t, func() bool {
			st := ts.Stats()
			return st.ConnsOpen == 0 && st.ArenasInUse == 0 && st.StreamsOpen == 0 && st.HandlersPending == 0
		}, "not at rest: %+v", ts.Stats())
		require.Zero(t, ts.l.Stats().Panics, "the engine panicked") // (a handler's panic is answered 500)
	})
}

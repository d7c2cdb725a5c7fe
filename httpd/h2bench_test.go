package httpd

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
)

// h2Bench is a benchmark's HTTP/2 client: raw frames from reused buffers,
// so that the allocations counted are the server's and the loop's.
type h2Bench struct {
	nc   net.Conn
	req  []byte // HEADERS frames, their stream ids rewritten at each use
	buf  []byte // a frame's payload as read
	hdr  [9]byte
	next uint32 // the next stream id
	data int    // DATA bytes received since the last connection WINDOW_UPDATE
	wu   []byte // a WINDOW_UPDATE frame for the connection
}

// h2HealthBlock is the header block of GET /health, in HPACK without the
// dynamic table: :method GET and :scheme http indexed, :path and
// :authority literals with indexed names.
var h2HealthBlock = []byte("\x82\x86\x04\x07/health\x01\x05bench")

// dialH2Bench connects, sends the preface and SETTINGS, and readies m
// request frames for each write.
func dialH2Bench(b *testing.B, addr string, m int) *h2Bench {
	nc, err := net.DialTimeout("tcp", addr, waitTimeout)
	require.NoError(b, err)
	b.Cleanup(func() { nc.Close() })
	_, err = io.WriteString(nc, http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
	require.NoError(b, err)
	c := &h2Bench{nc: nc, buf: make([]byte, h2MaxFrame), next: 1}
	for range m {
		var f [9]byte
		f[2] = byte(len(h2HealthBlock))
		f[3] = byte(http2.FrameHeaders)
		f[4] = byte(http2.FlagHeadersEndHeaders | http2.FlagHeadersEndStream)
		c.req = append(append(c.req, f[:]...), h2HealthBlock...)
	}
	c.wu = []byte{0, 0, 4, byte(http2.FrameWindowUpdate), 0, 0, 0, 0, 0, 0, 0, 0, 0}
	return c
}

// round sends the m requests and reads their m responses, checking that
// each is a 200 with body "ok".
func (c *h2Bench) round(b *testing.B) {
	step := len(c.req) / (9 + len(h2HealthBlock))
	for i := 0; i < len(c.req); i += 9 + len(h2HealthBlock) {
		binary.BigEndian.PutUint32(c.req[i+5:], c.next)
		c.next += 2
	}
	if _, err := c.nc.Write(c.req); err != nil {
		b.Fatal(err)
	}
	for ended := 0; ended < step; {
		if _, err := io.ReadFull(c.nc, c.hdr[:]); err != nil {
			b.Fatal(err)
		}
		n := int(c.hdr[0])<<16 | int(c.hdr[1])<<8 | int(c.hdr[2])
		if _, err := io.ReadFull(c.nc, c.buf[:n]); err != nil {
			b.Fatal(err)
		}
		switch http2.FrameType(c.hdr[3]) {
		case http2.FrameData:
			if string(c.buf[:n]) != "ok" {
				b.Fatalf("body %q", c.buf[:n])
			}
			c.data += n
		case http2.FrameHeaders: // :status 200 is the static table's 0x88
			p := c.buf[:n]
			if len(p) > 0 && p[0] == 0x20 { // the first block's table size update (0)
				p = p[1:]
			}
			if len(p) == 0 || p[0] != 0x88 {
				b.Fatalf("head % x", c.buf[:n])
			}
		case http2.FrameRSTStream, http2.FrameGoAway:
			b.Fatalf("frame %v", http2.FrameType(c.hdr[3]))
		}
		if http2.Flags(c.hdr[4])&http2.FlagDataEndStream != 0 &&
			(http2.FrameType(c.hdr[3]) == http2.FrameData || http2.FrameType(c.hdr[3]) == http2.FrameHeaders) {
			ended++
		}
	}
	if c.data >= 1<<14 { // the connection window stays open
		binary.BigEndian.PutUint32(c.wu[9:], uint32(c.data))
		c.data = 0
		if _, err := c.nc.Write(c.wu); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkH2Health measures GET /health over one HTTP/2 connection, with
// allocations: streams one at a time (m1) and ten at a time, as h2load
// -m10 sends them (m10). An op is one request.
func BenchmarkH2Health(b *testing.B) {
	for _, m := range []int{1, 10} {
		b.Run("m"+itoa(m), func(b *testing.B) {
			ts := startServer(b, testMux(), Config{})
			c := dialH2Bench(b, ts.addr, m)
			require.NoError(b, c.nc.SetDeadline(time.Now().Add(time.Hour)))
			c.round(b) // the connection's first allocations are not the request's
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += m {
				c.round(b)
			}
		})
	}
}

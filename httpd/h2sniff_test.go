package httpd

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// h2Sniff counts the frames going one way on an HTTP/2 connection, by
// type and by whether they are on stream 0, from the bytes alone.
type h2Sniff struct {
	mu     sync.Mutex // the Transport reads and writes on goroutines of its own
	skip   int        // bytes still to skip: the client preface
	hdr    []byte     // the frame header being read
	left   int        // the payload bytes still to skip
	conn   map[http2.FrameType]int
	stream map[http2.FrameType]int
}

func newH2Sniff(skip int) *h2Sniff {
	return &h2Sniff{skip: skip, conn: map[http2.FrameType]int{}, stream: map[http2.FrameType]int{}}
}

func (s *h2Sniff) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(p) > 0 {
		switch {
		case s.skip > 0:
			n := min(s.skip, len(p))
			s.skip -= n
			p = p[n:]
		case s.left > 0:
			n := min(s.left, len(p))
			s.left -= n
			p = p[n:]
		default:
			n := min(9-len(s.hdr), len(p))
			s.hdr = append(s.hdr, p[:n]...)
			p = p[n:]
			if len(s.hdr) == 9 {
				s.left = frameLen(s.hdr)
				t := http2.FrameType(s.hdr[3])
				if id := uint32(s.hdr[5]&0x7f)<<24 | uint32(s.hdr[6])<<16 | uint32(s.hdr[7])<<8 | uint32(s.hdr[8]); id == 0 {
					s.conn[t]++
				} else {
					s.stream[t]++
				}
				s.hdr = s.hdr[:0]
			}
		}
	}
}

// counts returns how many frames of type t went on stream 0 and on the
// other streams.
func (s *h2Sniff) counts(t http2.FrameType) (conn, stream int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn[t], s.stream[t]
}

// sniffConn is a client connection whose frames are counted both ways.
type sniffConn struct {
	net.Conn
	in, out *h2Sniff // from the server, from the client
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in.feed(p[:n])
	return n, err
}

func (c *sniffConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out.feed(p[:n])
	return n, err
}

// h2SniffClient is h2Client whose one connection's frames are counted: in
// from the server, out from the client.
func h2SniffClient(t testing.TB) (c *http.Client, in, out *h2Sniff) {
	in, out = newH2Sniff(0), newH2Sniff(len(http2.ClientPreface))
	var once sync.Once
	tr := &http2.Transport{AllowHTTP: true,
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			var d net.Dialer
			nc, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			sniffed := false
			once.Do(func() { nc, sniffed = &sniffConn{Conn: nc, in: in, out: out}, true })
			if !sniffed {
				t.Errorf("a second connection")
			}
			return nc, nil
		}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitTimeout}, in, out
}

package aio

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
)

// BenchmarkTLSHandshake is a full TLS 1.3 handshake (no resumption) and
// one byte echoed, by crypto/tls's client over TCP, against a TLS echo
// server on a loop (aio) and against crypto/tls with a goroutine per
// connection (gostd). The allocations count both ends: the difference
// between the two is the server side's, what aio adds or saves.
func BenchmarkTLSHandshake(b *testing.B) {
	scfg, ccfg := tlsConfigs(b)
	ccfg = ccfg.Clone()
	ccfg.ClientSessionCache = nil // every handshake a full one
	b.Run("aio", func(b *testing.B) {
		l := startLoop(b)
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) { _ = c.OnRead(tcpEcho) })
		if err != nil {
			b.Fatal(err)
		}
		benchHandshakes(b, ln.Addr().String(), ccfg)
		_, _ = wait(b, ln.Close())
	})
	b.Run("gostd", func(b *testing.B) {
		nl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		acceptEach(b, nl, func(nc net.Conn) {
			go func() {
				defer nc.Close()
				sc := tls.Server(nc, scfg)
				_, _ = io.Copy(sc, sc)
			}()
		})
		benchHandshakes(b, nl.Addr().String(), ccfg)
	})
}

// benchHandshakes runs b.N handshakes against addr, one at a time.
func benchHandshakes(b *testing.B, addr string, cfg *tls.Config) {
	buf := make([]byte, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := tls.Dial("tcp", addr, cfg)
		if err == nil {
			if _, err = c.Write(buf); err == nil {
				_, err = io.ReadFull(c, buf)
			}
			_ = c.Close()
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

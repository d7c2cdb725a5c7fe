package aio

import (
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestTLSHandshakeReadsBounded: a handshake buffers at most a whole record
// (and one read) of what its peer sends, however much the peer has sent:
// a peer flooding bytes during a handshake that waits for its turn (or for
// the loop) is held back by the kernel, as a plain connection that does
// not read is, instead of growing the loop's memory without bound.
func TestTLSHandshakeReadsBounded(t *testing.T) {
	l := startLoop(t)
	scfg, _ := tlsConfigs(t)
	// A receive buffer that holds all the flood while the loop is held.
	ln := tlsEchoListen(t, l, ListenConfig{TLS: scfg, Conn: ConnConfig{ReadBuffer: 4 << 20}})
	nc := netDial(t, ln)
	eventually(t, func() bool { return l.Stats().TCPOpen == 1 }, "not accepted")

	const flood = 1 << 20
	release := holdLoop(t, l)
	// A handshake record's header, then zeros: crypto/tls fails on the
	// first record, and what was read until then is all it read.
	msg := make([]byte, 5+flood)
	copy(msg, []byte{22, 3, 1, 0x40, 0})
	_, err := nc.Write(msg)
	require.NoError(t, err)
	eventually(t, func() bool { return outq(t, nc) == 0 }, "the flood is not all with the server")
	release()

	eventually(t, func() bool { return l.Stats().TLSHandshakeErrors == 1 }, "the handshake did not fail")
	require.Less(t, l.Stats().TCPBytesIn, uint64(maxRecord+ReadBufferSize),
		"the handshake read past the record it needed")
}

// TestTLSHandshakeReadsResume: a server flight larger than a record (a
// long certificate chain) that arrives all at once is read in steps,
// reading resuming as the handshake takes the records it holds.
func TestTLSHandshakeReadsResume(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	var chain [][]byte
	for len(chain)*len(testTLSCert.Certificate[0]) < 5*maxRecord {
		chain = append(chain, testTLSCert.Certificate[0])
	}
	scfg = scfg.Clone()
	scfg.Certificates = []tls.Certificate{{Certificate: chain, PrivateKey: testTLSCert.PrivateKey}}
	nl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer nl.Close()
	// The server holds the loop from the ClientHello until its whole
	// flight is with the client's kernel: the client reads it at once.
	hold, held := make(chan struct{}), make(chan struct{})
	scfg.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		_ = l.Post(func() { close(held); <-hold })
		<-held
		return nil, nil
	}
	served := make(chan error, 1)
	go func() {
		nc, err := nl.Accept()
		if err != nil {
			served <- err
			return
		}
		defer nc.Close()
		tc := tls.Server(&releaseConn{TCPConn: nc.(*net.TCPConn), release: hold}, scfg)
		if err = tc.Handshake(); err == nil {
			_, err = tc.Write([]byte("after a long chain"))
		}
		served <- err
	}()
	d := Dialer{TLS: ccfg, Conn: ConnConfig{ReadBuffer: 4 << 20}}
	c, err := wait(t, d.Dial(l, nl.Addr().String()))
	require.NoError(t, err)
	require.NoError(t, recv(t, served))
	st, _ := c.TLS()
	require.Len(t, st.PeerCertificates, len(chain))
	got := make(chan string, 1)
	require.NoError(t, c.OnRead(func(_ *Conn, b []byte) { got <- string(b) }))
	require.Equal(t, "after a long chain", recv(t, got))
	c.Close()
}

// releaseConn closes release once its first write is all with the peer.
type releaseConn struct {
	*net.TCPConn
	release chan struct{}
	once    sync.Once
}

func (r *releaseConn) Write(p []byte) (int, error) {
	n, err := r.TCPConn.Write(p)
	r.once.Do(func() {
		for i := 0; i < 1000 && err == nil; i++ {
			var q int
			if q, err = outqErr(r.TCPConn); q == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		close(r.release)
	})
	return n, err
}

// outq is the bytes nc's kernel has not had acknowledged yet: on
// loopback, 0 once they are all in the peer's receive buffer.
func outq(t *testing.T, nc *net.TCPConn) int {
	n, err := outqErr(nc)
	require.NoError(t, err)
	return n
}

func outqErr(nc *net.TCPConn) (int, error) {
	raw, err := nc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ierr error
	if err = raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.TIOCOUTQ) }); err != nil {
		return 0, err
	}
	return n, ierr
}

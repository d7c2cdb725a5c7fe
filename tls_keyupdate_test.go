package aio

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A KeyUpdate that asks for one is answered (RFC 8446 §4.6.3): crypto/tls
// writes the answer while it reads. A peer that floods them and reads
// nothing fills the write queue with answers; once it is full, reading
// stops until it drains, whatever ReadWhileFull says (which Pipe and
// NetConn set): reading more would make more answers. Before, such a
// connection's queue grew with the flood, megabytes past HighWater.
func TestTLSKeyUpdateAnswersBoundTheQueue(t *testing.T) {
	const highWater = 16 << 10
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	var maxQueued atomic.Int64
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg,
		Conn: ConnConfig{ReadWhileFull: true, HighWater: highWater, WriteBuffer: 4096}}, func(c *Conn) {
		conns <- c
		_ = c.OnRead(func(c *Conn, _ []byte) {
			if n := int64(c.Buffered()); n > maxQueued.Load() {
				maxQueued.Store(n)
			}
		})
	})
	require.NoError(t, err)
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	nc, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	w := tls13Dial(t, nc, ccfg)
	c := recv(t, conns)

	var flood []byte
	for len(flood) < 1<<20 { // about 1 MiB of answers asked for
		for range 15 { // crypto/tls takes 16 records without data in a row at most
			flood = append(flood, w.keyUpdate()...)
		}
		flood = append(flood, w.data([]byte("x"))...)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = nc.Write(flood) }) // blocks once the server stops reading
	eventually(t, func() bool { return onLoopValue(t, l, func() bool { return c.held }) },
		"the connection reads on while its queue fills with answers")
	assert.LessOrEqual(t, maxQueued.Load(), int64(highWater+16<<10), "answers queued past HighWater")
	require.NoError(t, nc.Close())
	wg.Wait()
}

// The records of the program's own writes are not answers: a TLS
// connection with ReadWhileFull reads on while its queue is full of what
// it wrote, as a plain one does (its two directions are independent).
// Taken for answers, the first record of each write made on a full queue
// held reading back.
func TestTLSReadWhileFullReadsOnAFullQueue(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	var read atomic.Int64
	reply := make([]byte, 64<<10)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg, Conn: ConnConfig{ReadWhileFull: true}}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			read.Add(int64(len(b)))
			_, _ = c.Write(reply) // to a client that reads nothing: the queue fills
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	const size = 4 << 20
	_, err = tc.Write(make([]byte, size)) // returns once the server has read most of it
	require.NoError(t, err)
	eventually(t, func() bool { return read.Load() == size }, "the server stopped reading on a full queue")
	require.NoError(t, tc.NetConn().Close())
}

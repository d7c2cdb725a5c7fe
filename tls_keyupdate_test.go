package aio

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
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
	var maxQueued, read atomic.Int64
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg,
		Conn: ConnConfig{ReadWhileFull: true, HighWater: highWater, WriteBuffer: 4096}}, func(c *Conn) {
		conns <- c
		_ = c.OnRead(func(c *Conn, b []byte) {
			read.Add(int64(len(b)))
			if n := int64(c.Buffered()); n > maxQueued.Load() {
				maxQueued.Store(n)
			}
		})
	})
	require.NoError(t, err)
	d := net.Dialer{Control: rcvBuf(4096)}
	nc, err := d.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	w := tls13Dial(t, nc, ccfg)
	c := recv(t, conns)

	var flood []byte
	groups := 0
	for ; len(flood) < 1<<20; groups++ { // about 1 MiB of answers asked for
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

	wg.Go(func() { _, _ = io.Copy(io.Discard, nc) }) // the client reads the answers: reading resumes
	eventually(t, func() bool { return read.Load() == int64(groups) }, "the rest of the flood was not read")
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

// A connection that read tlsRecordsPerTurn records in a loop iteration
// waits for the iteration's I/O to be done to read on, so that a flood of
// costly records (a KeyUpdate: some 10 µs of key derivation for 27 bytes,
// whether it asks for an answer or not) cannot hold the loop: read in one
// turn, a megabyte of them stalled every other connection of the loop for
// half a second. The flood here, read by the loop in one poll, takes a
// turn per tlsRecordsPerTurn records (two with the resumed pump).
func TestTLSKeyUpdateFloodTakesTurns(t *testing.T) {
	for _, answer := range []bool{true, false} {
		l := startLoop(t)
		scfg, ccfg := tlsConfigs(t)
		var read atomic.Int64
		ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg}, func(c *Conn) {
			_ = c.OnRead(func(_ *Conn, b []byte) { read.Add(int64(len(b))) })
		})
		require.NoError(t, err)
		nc := netDial(t, ln)
		w := tls13Dial(t, nc, ccfg)
		const groups = 100 // 1600 records, in 42 KiB
		var flood []byte
		for range groups {
			for range 15 {
				flood = append(flood, w.keyUpdateAsking(answer)...)
			}
			flood = append(flood, w.data([]byte("x"))...)
		}
		release := holdLoop(t, l)
		_, err = nc.Write(flood)
		require.NoError(t, err)
		before := l.Stats().Iterations
		release()
		eventually(t, func() bool { return read.Load() == groups }, "the flood's data was not all read")
		turns := l.Stats().Iterations - before
		assert.GreaterOrEqual(t, turns, uint64(groups*16/(2*tlsRecordsPerTurn)), "answers asked for: %v", answer)
		require.NoError(t, nc.Close())
	}
}

// A close_notify is not an answer to what was read: a connection with
// ReadWhileFull that half-closes on a full queue reads on what its peer
// still sends, as its two directions are independent. Taken for an
// answer, it held reading until the peer read, and a peer that finishes
// its upload before it reads waited for a timeout.
func TestTLSCloseWriteOnAFullQueueReadsOn(t *testing.T) {
	l := startLoop(t)
	scfg, ccfg := tlsConfigs(t)
	var read atomic.Int64
	var once atomic.Bool
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{TLS: scfg,
		Conn: ConnConfig{ReadWhileFull: true, HighWater: 16 << 10, WriteBuffer: 4096}}, func(c *Conn) {
		_ = c.OnRead(func(c *Conn, b []byte) {
			read.Add(int64(len(b)))
			if once.CompareAndSwap(false, true) {
				_, _ = c.Write(make([]byte, 4<<20)) // to a client that reads nothing yet: the queue stays full
				c.CloseWrite()
			}
		})
	})
	require.NoError(t, err)
	tc := tlsDial(t, ln, ccfg)
	const size = 4 << 20
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = tc.Write(make([]byte, size)) })
	eventually(t, func() bool { return read.Load() == size }, "reading stopped after CloseWrite on a full queue")
	require.NoError(t, tc.NetConn().Close())
	wg.Wait()
}

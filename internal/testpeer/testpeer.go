// Package testpeer holds what the tests of several packages do as a
// misbehaving peer of a connection.
package testpeer

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// WriteUntilBlocked writes to c without reading, until limit bytes are
// written or a write blocks for d (the kernel buffers are full: the other
// side stopped reading), and returns how many bytes were written. A write
// error other than the deadline fails the test. The deadline is left set.
func WriteUntilBlocked(t testing.TB, c net.Conn, limit int, d time.Duration) int {
	t.Helper()
	junk := make([]byte, 64<<10)
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(d)))
	written := 0
	for written < limit {
		n, err := c.Write(junk)
		written += n
		if err != nil {
			var ne net.Error
			require.ErrorAs(t, err, &ne)
			require.True(t, ne.Timeout(), "the write blocks: %v", err)
			break
		}
	}
	return written
}

// Trickle writes piece to w every d, from a goroutine of its own, until
// a write fails or stop is called: a slow client that never pauses for
// long (a slow POST). stop returns once the goroutine has ended.
func Trickle(w io.Writer, piece []byte, d time.Duration) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(d): // paces the slow client
			}
			if _, err := w.Write(piece); err != nil {
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

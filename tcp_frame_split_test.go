package aio

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each prefix size cuts its frames, empty ones included, however the bytes
// arrive; a length over the bound is ErrFrameTooLarge.
func TestScanLengthPrefixed(t *testing.T) {
	for _, prefix := range []int{1, 2, 4} {
		var in bytes.Buffer
		want := []string{"", "a", "hello", string(bytes.Repeat([]byte{'x'}, 200))}
		for _, w := range want {
			var h [4]byte
			binary.BigEndian.PutUint32(h[:], uint32(len(w)))
			in.Write(h[4-prefix:])
			in.WriteString(w)
		}
		sc := bufio.NewScanner(iotest.OneByteReader(&in))
		sc.Split(ScanLengthPrefixed(prefix, 200))
		var got []string
		for sc.Scan() {
			got = append(got, sc.Text())
		}
		require.NoError(t, sc.Err(), "prefix %d", prefix)
		require.Equal(t, want, got, "prefix %d", prefix)

		_, _, err := ScanLengthPrefixed(prefix, 199)([]byte{0, 0, 0, 200}[4-prefix:], false)
		require.ErrorIs(t, err, ErrFrameTooLarge, "prefix %d", prefix)
	}
	adv, tok, err := ScanLengthPrefixed(2, 10)([]byte{0, 3, 'a', 'b'}, false)
	require.NoError(t, err)
	require.Zero(t, adv, "a frame not all there yet")
	require.Nil(t, tok)

	require.Panics(t, func() { ScanLengthPrefixed(3, 10) })
	require.Panics(t, func() { ScanLengthPrefixed(4, -1) })
}

// A peer that announces a frame over the bound is refused as soon as the
// length is in, not when OnFrame's own bound fills: the connection closes
// with ErrFrameTooLarge though only a few bytes came. A frame cut short by
// EOF is io.ErrUnexpectedEOF.
func TestScanLengthPrefixedOnFrame(t *testing.T) {
	l := startLoop(t)
	fn, frames := collectFrames(4)
	closeErr := make(chan error, 2)
	ln, conns := frameListen(t, l, ListenConfig{}, func(c *Conn) {
		assert.NoError(t, c.OnFrame(ScanLengthPrefixed(4, 1024), 4+1024, fn))
		assert.NoError(t, c.OnClose(func(_ *Conn, err error) { closeErr <- err }))
	})

	nc := netDial(t, ln)
	recv(t, conns)
	netWrite(t, nc, append(len32([]byte("ok")), 0, 0x10, 0, 0, 'a', 'b', 'c')) // then 1 MiB announced
	require.ErrorIs(t, recv(t, closeErr), ErrFrameTooLarge)
	require.Equal(t, []string{"ok"}, framesOf(t, frames, 1))

	nc = netDial(t, ln)
	recv(t, conns)
	netWrite(t, nc, []byte{0, 0, 0, 10, 'a'})
	require.NoError(t, nc.CloseWrite())
	require.ErrorIs(t, recv(t, closeErr), io.ErrUnexpectedEOF)
	noMoreFrames(t, l, frames)
}

// maxPayload math.MaxInt means no bound but OnFrame's. A 4-byte length of
// 0x7fffffff is within it, and on a 32-bit system prefix+length overflowed
// int: the split panicked (slice bounds out of range), so one header from
// a peer crashed a bufio.Scanner's program. make test's 386 run checks it
// (on a kernel that runs 386 binaries; qemu-arm showed it too).
func TestScanLengthPrefixedLengthNearMaxInt(t *testing.T) {
	split := ScanLengthPrefixed(4, math.MaxInt)
	for _, hdr := range [][]byte{{0x7f, 0xff, 0xff, 0xff}, {0x7f, 0xff, 0xff, 0xfd}} {
		require.NotPanics(t, func() {
			adv, tok, err := split(append(hdr, 'a'), false)
			require.NoError(t, err)
			require.Zero(t, adv, "the frame is not all there yet")
			require.Nil(t, tok)
		})
	}
}

// Under a bufio.Scanner, a stream cut inside a frame or its length is
// io.ErrUnexpectedEOF, as under OnFrame; it ended like a clean stream.
func TestScanLengthPrefixedTruncatedUnderScanner(t *testing.T) {
	for _, in := range [][]byte{{0, 5, 'a', 'b'}, {0}} {
		sc := bufio.NewScanner(bytes.NewReader(in))
		sc.Split(ScanLengthPrefixed(2, 10))
		for sc.Scan() {
		}
		require.ErrorIs(t, sc.Err(), io.ErrUnexpectedEOF, "%x", in)
	}
}

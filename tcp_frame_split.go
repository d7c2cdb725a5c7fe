package aio

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// ScanLengthPrefixed returns a split function for OnFrame (or a
// bufio.Scanner) that cuts frames made of a big-endian unsigned length of
// prefix bytes (1, 2 or 4) followed by that many bytes of payload, and
// returns each payload without its length. A length over maxPayload is an
// error that matches ErrFrameTooLarge as soon as the length has arrived,
// before any of the payload: without it, a peer that announces a large
// frame and sends little of it holds the connection until OnFrame's own
// bound is reached. Give OnFrame a maxFrame of at least prefix+maxPayload.
// A stream that ends inside a frame or its length is an error wrapping
// io.ErrUnexpectedEOF. It panics if prefix is not 1, 2 or 4 or maxPayload
// is negative, as these are the program's mistakes.
func ScanLengthPrefixed(prefix, maxPayload int) bufio.SplitFunc {
	if prefix != 1 && prefix != 2 && prefix != 4 {
		panic(fmt.Sprintf("aio: ScanLengthPrefixed: a prefix of %d bytes (1, 2 or 4)", prefix))
	}
	if maxPayload < 0 {
		panic(fmt.Sprintf("aio: ScanLengthPrefixed: negative maxPayload %d", maxPayload))
	}
	return func(data []byte, atEOF bool) (advance int, token []byte, err error) {
		if len(data) < prefix {
			return 0, nil, cutShort(atEOF, len(data))
		}
		var n uint64
		switch prefix {
		case 1:
			n = uint64(data[0])
		case 2:
			n = uint64(binary.BigEndian.Uint16(data))
		case 4:
			n = uint64(binary.BigEndian.Uint32(data))
		}
		if n > uint64(maxPayload) {
			return 0, nil, fmt.Errorf("%w: a length of %d over %d", ErrFrameTooLarge, n, maxPayload)
		}
		if uint64(len(data)-prefix) < n { // not all there: no prefix+n, which overflows a 32-bit int
			return 0, nil, cutShort(atEOF, len(data))
		}
		end := prefix + int(n)
		return end, data[prefix:end:end], nil
	}
}

// cutShort is the error of a frame that is not all there: none before EOF.
func cutShort(atEOF bool, have int) error {
	if !atEOF || have == 0 {
		return nil
	}
	return fmt.Errorf("aio: length-prefixed frame cut short at %d bytes: %w", have, io.ErrUnexpectedEOF)
}

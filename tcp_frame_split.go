package aio

import (
	"bufio"
	"encoding/binary"
	"fmt"
)

// ScanLengthPrefixed returns a split function for OnFrame (or a
// bufio.Scanner) that cuts frames made of a big-endian unsigned length of
// prefix bytes (1, 2 or 4) followed by that many bytes of payload, and
// returns each payload without its length. A length over maxPayload is an
// error that matches ErrFrameTooLarge as soon as the length has arrived,
// before any of the payload: without it, a peer that announces a large
// frame and sends little of it holds the connection until OnFrame's own
// bound is reached. Give OnFrame a maxFrame of at least prefix+maxPayload.
// It panics if prefix is not 1, 2 or 4 or maxPayload is negative, as
// these are the program's mistakes. At EOF, a frame cut short is left
// unconsumed (OnFrame closes the connection with io.ErrUnexpectedEOF).
func ScanLengthPrefixed(prefix, maxPayload int) bufio.SplitFunc {
	if prefix != 1 && prefix != 2 && prefix != 4 {
		panic(fmt.Sprintf("aio: ScanLengthPrefixed: a prefix of %d bytes (1, 2 or 4)", prefix))
	}
	if maxPayload < 0 {
		panic(fmt.Sprintf("aio: ScanLengthPrefixed: negative maxPayload %d", maxPayload))
	}
	return func(data []byte, atEOF bool) (advance int, token []byte, err error) {
		if len(data) < prefix {
			return 0, nil, nil
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
		end := prefix + int(n)
		if len(data) < end {
			return 0, nil, nil
		}
		return end, data[prefix:end:end], nil
	}
}

package h1

import "bytes"

// DefaultMaxTrailer is the trailer section limit of a ChunkedDecoder whose
// MaxTrailer is 0: net/http's bound too (its reader's buffer).
const DefaultMaxTrailer = 4 << 10

// maxChunkLine bounds a chunk-size line, CRLF excluded: a longer one is
// refused, as net/http refuses it.
const maxChunkLine = 4096

// maxChunkOverhead is how far the framing may outgrow the data: net/http's
// defence against a sender that pads chunks with extensions.
const maxChunkOverhead = 16 << 10

// States of a ChunkedDecoder.
const (
	chunkSize    = iota // expecting a chunk-size line
	chunkData           // inside a chunk's data
	chunkCRLF           // expecting the CRLF after a chunk's data
	chunkTrailer        // after the last chunk: expecting the trailer section
	chunkDone           // the body is complete
)

// ChunkedDecoder decodes a chunked body (RFC 9112 §7.1) from successive
// buffers, without copying: the data it returns are sub-slices of its
// input. The zero ChunkedDecoder is ready for use, with the default
// limits; Reset readies it for the next body. It is not safe for
// concurrent use.
type ChunkedDecoder struct {
	MaxBody    int64 // data bytes in all; 0 means DefaultMaxBody, < 0 none. More is refused with 413.
	MaxTrailer int   // bytes of the trailer section; 0 means DefaultMaxTrailer. More is refused with 431.

	// Trailer holds the trailer fields once Done reports true. They point
	// into the buffer given to the last Decode: valid while it is. Decode
	// reuses its storage for the next body.
	Trailer []Field

	state    uint8
	err      Reason // sticky: the body was refused
	rem      uint64 // data bytes left in the current chunk
	total    int64  // data bytes so far
	excess   int64  // framing bytes beyond what the data allows (net/http's rule)
	pos      int    // trailer section: where the current line starts
	searched int    // a pending line (or trailer section) holds no LF before this
}

// Reset readies d for the next body; the limits and Trailer's storage stay.
func (d *ChunkedDecoder) Reset() {
	*d = ChunkedDecoder{MaxBody: d.MaxBody, MaxTrailer: d.MaxTrailer, Trailer: d.Trailer[:0]}
}

// Limit lowers MaxBody to n (0: the body must be empty) for the rest of
// the body, and reports false, changing nothing, when the data decoded so
// far, with what remains of the chunk being decoded, already exceed n.
// n >= MaxBody changes nothing.
func (d *ChunkedDecoder) Limit(n int64) bool {
	n = max(n, 0)
	// total+rem cannot overflow: a chunk is taken only within MaxBody.
	if d.total+int64(d.rem) > n {
		return false
	}
	if n < d.maxBody() {
		d.MaxBody = n
		if n == 0 {
			d.MaxBody = -1
		}
	}
	return true
}

// maxBody is the limit MaxBody stands for.
func (d *ChunkedDecoder) maxBody() int64 {
	switch {
	case d.MaxBody == 0:
		return DefaultMaxBody
	case d.MaxBody < 0:
		return 0
	}
	return d.MaxBody
}

// Done reports whether the whole body, trailer section included, has been
// decoded.
func (d *ChunkedDecoder) Done() bool { return d.state == chunkDone }

// Decode decodes the chunked body bytes at the start of in. It consumes the
// framing it finds up to the next chunk data and returns that data, at most
// one chunk's worth, as data (a sub-slice of in: no copy), with n the
// bytes of in consumed, data included. The body continues at in[n:].
//
// When Decode returns n == 0 and no error before Done, in ends within a
// chunk-size line, the CRLF after a chunk, or the trailer section: call
// again with more bytes. Until then, every call must be given a buffer
// that starts with the same unconsumed bytes (it may have moved or grown).
//
// It returns an *Error when the body must be refused (the connection must
// be closed), and returns it again on any later call until Reset. Once
// Done, Decode consumes nothing.
func (d *ChunkedDecoder) Decode(in []byte) (data []byte, n int, err error) {
	if d.err != 0 {
		return nil, 0, d.err.Err()
	}
	if d.searched > len(in) {
		d.pos, d.searched = 0, 0 // the buffer shrank: the contract is broken, look again
	}
	for {
		b := in[n:]
		switch d.state {
		case chunkSize:
			adv, r := d.sizeLine(b)
			if r != 0 {
				return nil, n, d.fail(r)
			}
			if adv == 0 {
				return nil, n, nil
			}
			n += adv
		case chunkData:
			if len(b) == 0 {
				return nil, n, nil
			}
			k := len(b)
			if uint64(k) > d.rem {
				k = int(d.rem)
			}
			d.rem -= uint64(k)
			d.total += int64(k)
			if d.rem == 0 {
				d.state = chunkCRLF
			}
			return b[:k], n + k, nil
		case chunkCRLF:
			if len(b) < 2 {
				if len(b) == 1 && b[0] != '\r' {
					return nil, n, d.fail(ReasonChunkCRLF)
				}
				return nil, n, nil
			}
			if b[0] != '\r' || b[1] != '\n' {
				return nil, n, d.fail(ReasonChunkCRLF)
			}
			n += 2
			d.state = chunkSize
		case chunkTrailer:
			adv, r := d.trailer(b)
			if r != 0 {
				return nil, n, d.fail(r)
			}
			return nil, n + adv, nil
		default:
			return nil, n, nil
		}
	}
}

func (d *ChunkedDecoder) fail(r Reason) error {
	d.err = r
	return r.Err()
}

// sizeLine parses the chunk-size line at the start of b: adv is its length
// with its CRLF, or 0 if it is not complete yet.
//
// As net/http: the line must end in CRLF (a bare LF is refused: RFC 9112
// errata 7633) with no CR before; whitespace after the size (before the
// CRLF) is allowed when there is no extension, and the extension is
// skipped whatever it holds; the size is 1 to 16 hex digits.
func (d *ChunkedDecoder) sizeLine(b []byte) (adv int, r Reason) {
	end := min(len(b), maxChunkLine+1)
	i := bytes.IndexByte(b[d.searched:end], '\n')
	if i < 0 {
		d.searched = end
		if len(b) > maxChunkLine {
			return 0, ReasonChunkLineTooLong
		}
		return 0, 0
	}
	lf := d.searched + i
	d.searched = 0
	line := b[:lf]
	if len(line) == 0 || line[len(line)-1] != '\r' || bytes.IndexByte(line[:len(line)-1], '\r') >= 0 {
		return 0, ReasonChunkSize
	}
	line = line[:len(line)-1]
	if len(line) >= maxChunkLine {
		return 0, ReasonChunkLineTooLong
	}
	d.excess += int64(len(line)) + 2 // the line, and the CRLF after the data
	for len(line) > 0 && (line[len(line)-1] == ' ' || line[len(line)-1] == '\t') {
		line = line[:len(line)-1] // trailing whitespace only: a leading one fails below
	}
	if k := bytes.IndexByte(line, ';'); k >= 0 {
		line = line[:k]
	}
	size, ok := parseHex(line)
	if !ok {
		return 0, ReasonChunkSize
	}
	// net/http's arithmetic, wrap-around included, so that the same
	// bodies are refused.
	d.excess -= 16 + 2*int64(size)
	d.excess = max(d.excess, 0)
	if d.excess > maxChunkOverhead {
		return 0, ReasonChunkOverhead
	}
	if size == 0 {
		d.state = chunkTrailer
		return lf + 1, 0
	}
	if size > uint64(d.maxBody()-d.total) {
		return 0, ReasonBodyTooLarge
	}
	d.rem, d.state = size, chunkData
	return lf + 1, 0
}

// trailer parses the trailer section at the start of b, up to and with the
// empty line that ends the body: adv is its length, 0 if it is not complete
// yet. Every line must end in CRLF; the fields are checked as a head's are
// and stored in d.Trailer.
func (d *ChunkedDecoder) trailer(b []byte) (adv int, r Reason) {
	maxTrailer := d.MaxTrailer
	if maxTrailer <= 0 {
		maxTrailer = DefaultMaxTrailer
	}
	end := min(len(b), maxTrailer)
	for {
		i := bytes.IndexByte(b[d.searched:end], '\n')
		if i < 0 {
			d.searched = end
			if len(b) >= maxTrailer {
				return 0, ReasonTrailerTooLarge
			}
			return 0, 0
		}
		lf := d.searched + i
		line := b[d.pos:lf]
		d.pos, d.searched = lf+1, lf+1
		if len(line) == 0 || line[len(line)-1] != '\r' {
			return 0, ReasonTrailerLineEnding
		}
		if len(line) == 1 {
			break
		}
	}
	adv = d.pos
	d.Trailer = d.Trailer[:0]
	for pos := 0; pos < adv-2; {
		lf := pos + bytes.IndexByte(b[pos:], '\n')
		line := b[pos : lf-1]
		pos = lf + 1
		f, r := parseField(line)
		if r != 0 {
			return 0, r
		}
		d.Trailer = append(d.Trailer, f)
	}
	d.pos, d.searched = 0, 0
	d.state = chunkDone
	return adv, 0
}

// parseHex parses 1 to 16 hex digits.
func parseHex(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		var x byte
		switch {
		case '0' <= c && c <= '9':
			x = c - '0'
		case 'a' <= c && c <= 'f':
			x = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			x = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(x)
	}
	return n, true
}

package h1

import "strconv"

// AppendChunk appends data to dst as one chunk of a chunked body: its size
// line, the data and CRLF. Empty data appends nothing: a chunk of size 0
// would end the body (AppendLastChunk does that).
func AppendChunk(dst, data []byte) []byte {
	if len(data) == 0 {
		return dst
	}
	dst = AppendChunkHeader(dst, len(data))
	dst = append(dst, data...)
	return append(dst, "\r\n"...)
}

// AppendChunkHeader appends the size line of a chunk of n bytes, for a
// writer that sends the data without copying it: the n bytes of data and
// then CRLF must follow. n <= 0 appends nothing.
func AppendChunkHeader(dst []byte, n int) []byte {
	if n <= 0 {
		return dst
	}
	dst = strconv.AppendUint(dst, uint64(n), 16)
	return append(dst, "\r\n"...)
}

// AppendLastChunk appends the end of a chunked body: the last (empty)
// chunk, the trailer fields, and the empty line. The fields are checked as
// AppendResponse checks them; on an error dst is returned unchanged.
func AppendLastChunk(dst []byte, trailer []Field) ([]byte, error) {
	start := len(dst)
	dst = append(dst, "0\r\n"...)
	dst, err := appendFields(dst, trailer)
	if err != nil {
		return dst[:start], err
	}
	return append(dst, "\r\n"...), nil
}

package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http/httputil"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chunkedCase is a chunked body and what the decoder makes of it: the
// data, the trailer fields ("Name: value" each) and the bytes the body
// takes, or the reason it is refused.
type chunkedCase struct {
	name    string
	in      string
	reason  Reason
	data    string
	trailer []string
	n       int // 0: all of in
}

var chunkedCases = []chunkedCase{
	{name: "empty", in: "0\r\n\r\n"},
	{name: "one chunk", in: "5\r\nhello\r\n0\r\n\r\n", data: "hello"},
	{name: "chunks", in: "5\r\nhello\r\n1;a=b\r\n \r\nA\r\n0123456789\r\n000\r\n\r\n", data: "hello 0123456789"},
	{name: "extension with anything", in: "3;x=\"a;b\"\x00\t\r\nabc\r\n0;y\r\n\r\n", data: "abc"},
	{name: "upper hex", in: "B\r\nhello world\r\n0\r\n\r\n", data: "hello world"},
	{name: "trailing whitespace", in: "3 \t\r\nabc\r\n0 \r\n\r\n", data: "abc"},
	{name: "16 hex digits", in: "0000000000000003\r\nabc\r\n0\r\n\r\n", data: "abc"},
	{name: "trailers", in: "3\r\nabc\r\n0\r\nX-Sum: 12 \r\nx-other:\r\n\r\n", data: "abc", trailer: []string{"X-Sum: 12", "x-other: "}},
	{name: "what follows is left", in: "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n", data: "abc", n: 13},

	{name: "no size", in: "\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "bad hex", in: "g\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "sign", in: "+3\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "hex prefix", in: "0x3\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "leading space", in: " 3\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "space before extension", in: "3 ;x\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "17 hex digits", in: "00000000000000003\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "bare LF size line", in: "3\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "CR inside size line", in: "3\r;x\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkSize},
	{name: "bare LF last chunk", in: "3\r\nabc\r\n0\n\r\n", reason: ReasonChunkSize},
	{name: "data too long", in: "3\r\nabcd\r\n0\r\n\r\n", reason: ReasonChunkCRLF},
	{name: "bare LF after data", in: "3\r\nabc\n0\r\n\r\n", reason: ReasonChunkCRLF},
	{name: "size line too long", in: "3;" + strings.Repeat("x", 4094) + "\r\nabc\r\n0\r\n\r\n", reason: ReasonChunkLineTooLong},
	{name: "size line without end", in: "3;" + strings.Repeat("x", 5000), reason: ReasonChunkLineTooLong},
	{name: "extension padding", in: strings.Repeat("1;"+strings.Repeat("x", 300)+"\r\na\r\n", 60) + "0\r\n\r\n", reason: ReasonChunkOverhead},
	{name: "body too large", in: "400\r\n", reason: ReasonBodyTooLarge},
	{name: "trailer bare LF", in: "0\r\nX: y\n\r\n", reason: ReasonTrailerLineEnding},
	{name: "trailer bare LF end", in: "0\r\nX: y\r\n\n", reason: ReasonTrailerLineEnding},
	{name: "trailer obs-fold", in: "0\r\nX: y\r\n z\r\n\r\n", reason: ReasonObsFold},
	{name: "trailer no colon", in: "0\r\nX\r\n\r\n", reason: ReasonFieldLine},
	{name: "trailer bad value", in: "0\r\nX: a\x00\r\n\r\n", reason: ReasonFieldValue},
	{name: "trailer space before colon", in: "0\r\nX : y\r\n\r\n", reason: ReasonSpaceBeforeColon},
	{name: "trailer too large", in: "0\r\nX: " + strings.Repeat("y", 600) + "\r\n\r\n", reason: ReasonTrailerTooLarge},
}

// testDecoder is a decoder whose limits the cases reach.
func testDecoder() ChunkedDecoder { return ChunkedDecoder{MaxBody: 1000, MaxTrailer: fuzzMaxTrailer} }

func TestChunkedDecode(t *testing.T) {
	for _, c := range chunkedCases {
		t.Run(c.name, func(t *testing.T) {
			for _, step := range []int{len(c.in) + 1, 1, 2, 3, 7} {
				d := testDecoder()
				body, n, err := decodeFed(&d, []byte(c.in), step)
				if c.reason != 0 {
					require.Same(t, c.reason.Err(), err, "step %d", step)
					assert.False(t, d.Done())
					_, n2, err2 := d.Decode([]byte(c.in)[n:])
					assert.Zero(t, n2)
					assert.Same(t, err, err2, "the error sticks")
					continue
				}
				require.NoError(t, err, "step %d", step)
				require.True(t, d.Done(), "step %d", step)
				assert.Equal(t, c.data, string(body), "step %d", step)
				want := c.n
				if want == 0 {
					want = len(c.in)
				}
				assert.Equal(t, want, n, "step %d", step)
				var tr []string
				for _, f := range d.Trailer {
					tr = append(tr, string(f.Name)+": "+string(f.Value))
				}
				assert.Equal(t, c.trailer, tr)
			}
		})
	}
}

// TestChunkedZeroCopy: the data is the input, not a copy of it, and a
// decoder left Done consumes nothing more.
func TestChunkedZeroCopy(t *testing.T) {
	in := []byte("5\r\nhello\r\n6\r\n world\r\n0\r\nA: b\r\n\r\nnext")
	var d ChunkedDecoder
	data, n, err := d.Decode(in)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
	assert.Same(t, &in[3], &data[0])
	assert.Equal(t, 8, n)
	in = in[n:]
	data, n, err = d.Decode(in)
	require.NoError(t, err)
	assert.Equal(t, " world", string(data))
	assert.Same(t, &in[5], &data[0])
	in = in[n:]
	data, n, err = d.Decode(in)
	require.NoError(t, err)
	assert.Empty(t, data)
	assert.True(t, d.Done())
	require.Len(t, d.Trailer, 1)
	assert.Same(t, &in[5], &d.Trailer[0].Name[0])
	assert.Equal(t, "next", string(in[n:]))
	_, n, err = d.Decode(in[n:])
	assert.Zero(t, n)
	assert.NoError(t, err)

	trailer := &d.Trailer[:1][0]
	d.Reset()
	assert.False(t, d.Done())
	data, _, err = d.Decode([]byte("1\r\nx\r\n0\r\nB: c\r\n\r\n"))
	require.NoError(t, err)
	assert.Equal(t, "x", string(data))
	for !d.Done() {
		_, n, err = d.Decode([]byte("\r\n0\r\nB: c\r\n\r\n"))
		require.NoError(t, err)
		require.NotZero(t, n)
	}
	assert.Same(t, trailer, &d.Trailer[0], "the trailer storage is reused")
}

func TestChunkedShrunkBuffer(t *testing.T) {
	var d ChunkedDecoder
	_, n, err := d.Decode([]byte("5;abcdef"))
	require.NoError(t, err)
	require.Zero(t, n)
	// Against the contract, a shorter buffer: no panic, a fresh look.
	_, n, err = d.Decode([]byte("5"))
	require.NoError(t, err)
	require.Zero(t, n)
	data, _, err := d.Decode([]byte("5\r\nhello"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(data))
}

func TestChunkedEncode(t *testing.T) {
	var b []byte
	b = AppendChunk(b, []byte("hello"))
	b = AppendChunk(b, nil)
	b = AppendChunkHeader(b, 0)
	b = AppendChunk(b, bytes.Repeat([]byte("x"), 300))
	b = AppendChunkHeader(b, 3)
	b = append(b, "abc\r\n"...)
	b, err := AppendLastChunk(b, []Field{{Name: []byte("X-Sum"), Value: []byte("42")}})
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("5\r\nhello\r\n12c\r\nxxx")))
	assert.True(t, bytes.HasSuffix(b, []byte("xxx\r\n3\r\nabc\r\n0\r\nX-Sum: 42\r\n\r\n")))

	got, err := io.ReadAll(httputil.NewChunkedReader(bufio.NewReader(bytes.NewReader(b))))
	require.NoError(t, err)
	want := "hello" + strings.Repeat("x", 300) + "abc"
	assert.Equal(t, want, string(got))

	var d ChunkedDecoder
	body, n, err := decodeFed(&d, b, len(b))
	require.NoError(t, err)
	assert.True(t, d.Done())
	assert.Equal(t, len(b), n)
	assert.Equal(t, want, string(body))
	require.Len(t, d.Trailer, 1)
	assert.Equal(t, "42", string(d.Trailer[0].Value))

	for _, bad := range []Field{{Name: []byte("X Y"), Value: nil}, {Name: []byte("X"), Value: []byte("a\r\nb: c")}} {
		out, err := AppendLastChunk([]byte("keep"), []Field{bad})
		assert.Error(t, err)
		assert.Equal(t, "keep", string(out))
	}
}

// decodeFed decodes data with d, given step more bytes at a time, as a
// connection would: the bytes d did not consume are kept and more appended.
// It returns the data, the bytes consumed, and the error.
func decodeFed(d *ChunkedDecoder, data []byte, step int) (body []byte, consumed int, err error) {
	var pending []byte
	for off := 0; ; {
		if off < len(data) {
			end := min(off+step, len(data))
			pending = append(pending, data[off:end]...)
			off = end
		}
		for !d.Done() {
			chunk, n, err := d.Decode(pending)
			body = append(body, chunk...)
			consumed += n
			pending = pending[n:]
			if err != nil {
				return body, consumed, err
			}
			if n == 0 {
				break
			}
		}
		if d.Done() || off == len(data) {
			return body, consumed, nil
		}
	}
}

// TestChunkedLimit: Limit lowers the bound of the rest of a body, counting
// what was decoded and what the chunk being decoded still owes; it
// refuses a bound already passed, changing nothing, and never loosens
// one; a bound of 0 leaves room for the empty body only.
func TestChunkedLimit(t *testing.T) {
	for _, c := range []struct{ rest, body string }{
		{"56789\r\n2\r\nab\r\n0\r\n\r\n", "56789ab"},
		{"56789\r\n3\r\nabc\r\n0\r\n\r\n", ""}, // 13 bytes: over
	} {
		d := testDecoder()
		data, _, err := d.Decode([]byte("a\r\n01234"))
		require.NoError(t, err)
		assert.Equal(t, "01234", string(data))
		assert.False(t, d.Limit(9), "5 decoded and 5 owed by the chunk")
		assert.True(t, d.Limit(12))
		assert.True(t, d.Limit(500), "a looser bound changes nothing")
		body, _, err := decodeFed(&d, []byte(c.rest), len(c.rest))
		if c.body == "" {
			assert.Same(t, ReasonBodyTooLarge.Err(), err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, c.body, string(body))
	}
	for _, c := range []struct {
		in string
		ok bool
	}{{"0\r\n\r\n", true}, {"1\r\nx\r\n0\r\n\r\n", false}} {
		d := testDecoder()
		require.True(t, d.Limit(0))
		_, _, err := decodeFed(&d, []byte(c.in), len(c.in))
		if c.ok {
			require.NoError(t, err)
			assert.True(t, d.Done())
		} else {
			assert.Same(t, ReasonBodyTooLarge.Err(), err, "Limit(0): no data at all")
		}
	}
}

package h1

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendResponse(t *testing.T) {
	date := AppendDate(nil, time.Date(2024, 5, 7, 9, 12, 44, 0, time.FixedZone("x", 3600)))
	b, err := AppendResponse([]byte("prev"), &Response{
		Status: 200, Body: BodyLength, ContentLength: 5, Date: date,
		Fields: []Field{{Name: []byte("Content-Type"), Value: []byte("text/plain")}},
	})
	require.NoError(t, err)
	assert.Equal(t, "prev"+"HTTP/1.1 200 OK\r\n"+
		"Date: Tue, 07 May 2024 08:12:44 GMT\r\n"+
		"Content-Type: text/plain\r\n"+
		"Content-Length: 5\r\n\r\n", string(b))

	for _, c := range []struct {
		r    Response
		want string
	}{
		{Response{Status: 100}, Continue},
		{Response{Status: 204, Close: true}, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"},
		{Response{Status: 200, Body: BodyChunked, KeepAlive: true}, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"},
		{Response{Status: 304, Body: BodyLength, ContentLength: 10}, "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"},
		{Response{Status: 200, Body: BodyLength}, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"},
		{Response{Status: 599}, "HTTP/1.1 599 \r\n\r\n"},
		{Response{Status: 418, Reason: "Short and stout"}, "HTTP/1.1 418 Short and stout\r\n\r\n"},
		{Response{Status: 101, Fields: []Field{{Name: []byte("Connection"), Value: []byte("Upgrade")}, {Name: []byte("Upgrade"), Value: []byte("h2c")}}},
			"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"},
	} {
		b, err := AppendResponse(nil, &c.r)
		require.NoError(t, err)
		assert.Equal(t, c.want, string(b))
	}
}

// TestAppendResponseChecked: what the caller vouches for is written as
// it would be once checked.
func TestAppendResponseChecked(t *testing.T) {
	r := Response{Status: 200, Body: BodyLength, ContentLength: 5, Close: true,
		Date:   AppendDate(nil, time.Now()),
		Fields: []Field{{Name: []byte("Content-Type"), Value: []byte("text/plain")}, {Name: []byte("X"), Value: []byte("")}}}
	want, err := AppendResponse(nil, &r)
	require.NoError(t, err)
	for _, c := range []Checked{CheckedDate, CheckedFields, CheckedDate | CheckedFields} {
		r.Checked = c
		b, err := AppendResponse(nil, &r)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(b), "%b", c)
	}
}

func TestAppendResponseRefuses(t *testing.T) {
	f := func(name, value string) []Field { return []Field{{Name: []byte(name), Value: []byte(value)}} }
	for _, c := range []struct {
		r   Response
		err error
	}{
		{Response{Status: 99}, ErrStatus},
		{Response{Status: 1000}, ErrStatus},
		{Response{Status: 204, Body: BodyLength}, ErrFraming},
		{Response{Status: 103, Body: BodyChunked}, ErrFraming},
		{Response{Status: 200, Body: BodyLength, ContentLength: -1}, ErrContentLen},
		{Response{Status: 200, Reason: "OK\r\nX: y"}, ErrReason},
		{Response{Status: 200, Fields: f("X Y", "v")}, ErrFieldName},
		{Response{Status: 200, Fields: f("", "v")}, ErrFieldName},
		{Response{Status: 200, Fields: f("X", "a\r\nSet-Cookie: b")}, ErrFieldValue},
		{Response{Status: 200, Fields: f("X", "a\x00")}, ErrFieldValue},
		{Response{Status: 200, Date: []byte("now\n")}, ErrFieldValue},
		{Response{Status: 200, Fields: f("content-length", "1")}, ErrFieldOwned},
		{Response{Status: 200, Fields: f("Transfer-Encoding", "chunked")}, ErrFieldOwned},
		{Response{Status: 200, Close: true, Fields: f("Connection", "x")}, ErrFieldOwned},
		{Response{Status: 200, Date: []byte("d"), Fields: f("date", "x")}, ErrFieldOwned},
	} {
		b, err := AppendResponse([]byte("keep"), &c.r)
		assert.ErrorIs(t, err, c.err, "%+v", c.r)
		assert.Equal(t, "keep", string(b), "dst comes back unchanged")
	}
}

// TestAppendResponseNetHTTP: net/http reads what AppendResponse writes as
// it was meant.
func TestAppendResponseNetHTTP(t *testing.T) {
	b, err := AppendResponse(nil, &Response{
		Status: 404, Body: BodyChunked, Close: true, Date: AppendDate(nil, time.Now()),
		Fields: []Field{{Name: []byte("x-a"), Value: []byte("1")}, {Name: []byte("X-A"), Value: []byte("2")}},
	})
	require.NoError(t, err)
	b = AppendChunk(b, []byte("not found"))
	b, err = AppendLastChunk(b, []Field{{Name: []byte("X-T"), Value: []byte("t")}})
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "404 Not Found", resp.Status)
	assert.Equal(t, []string{"chunked"}, resp.TransferEncoding)
	assert.True(t, resp.Close)
	assert.Equal(t, []string{"1", "2"}, resp.Header["X-A"])
	_, err = http.ParseTime(resp.Header.Get("Date"))
	assert.NoError(t, err)
	assert.Equal(t, "not found", string(body))
	assert.Equal(t, "t", resp.Trailer.Get("X-T"))
}

// TestDefaultReason: without a Reason, every status line carries
// net/http's reason phrase, and net/http reads the status back.
func TestDefaultReason(t *testing.T) {
	for code := 100; code < 1000; code++ {
		b, err := AppendResponse(nil, &Response{Status: code})
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("HTTP/1.1 %d %s\r\n\r\n", code, http.StatusText(code)), string(b))
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(b)), nil)
		require.NoError(t, err, "%d", code)
		assert.Equal(t, code, resp.StatusCode)
	}
}

func TestAppendDate(t *testing.T) {
	now := time.Now()
	assert.Equal(t, now.UTC().Format(http.TimeFormat), string(AppendDate(nil, now)))
}

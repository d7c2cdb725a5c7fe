package h1

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// headCase is a request head and what Parse makes of it: refused with
// reason, or accepted and then checked by want.
type headCase struct {
	name   string
	in     string
	reason Reason
	want   func(t *testing.T, h *Head)
}

// testLimits are small enough for the table to reach every limit.
var testLimits = Limits{MaxHead: 512, MaxTarget: 64, MaxFields: 8, MaxBody: 1000}

// refusedHeads: the smuggling vectors and malformed heads, with why.
var refusedHeads = []headCase{
	// Request line.
	{name: "empty line first", in: "\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonRequestLine},
	{name: "leading space", in: " GET / HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonRequestLine},
	{name: "two spaces after method", in: "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonRequestLine},
	{name: "two spaces before version", in: "GET /  HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "trailing space", in: "GET / HTTP/1.1 \r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "tab separator", in: "GET\t/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonMethod},
	{name: "missing version", in: "GET /\r\nHost: x\r\n\r\n", reason: ReasonRequestLine},
	{name: "missing version LF", in: "GET /\nHost: x\n\n", reason: ReasonRequestLine},
	{name: "method only", in: "GET\r\n\r\n", reason: ReasonRequestLine},
	{name: "bad method token", in: "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonMethod},
	{name: "NUL in method", in: "GE\x00T / HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonMethod},
	{name: "lowercase version", in: "GET / http/1.1\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "short version", in: "GET / HTTP/1\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "version letters", in: "GET / HTTP/a.b\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "long version", in: "GET / HTTP/1.1.1\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "CR CR LF", in: "GET / HTTP/1.1\r\r\nHost: x\r\n\r\n", reason: ReasonVersion},
	{name: "HTTP/2.0", in: "GET / HTTP/2.0\r\nHost: x\r\n\r\n", reason: ReasonVersionUnsupported},
	{name: "HTTP/0.9", in: "GET / HTTP/0.9\r\n\r\n", reason: ReasonVersionUnsupported},
	{name: "h2 preface", in: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", reason: ReasonVersionUnsupported},
	{name: "NUL in target", in: "GET /a\x00b HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTarget},
	{name: "DEL in target", in: "GET /a\x7fb HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTarget},
	{name: "bad escape", in: "GET /a%zz HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTarget},
	{name: "short escape", in: "GET /a%4 HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTarget},
	{name: "target too long", in: "GET /" + strings.Repeat("a", 64) + " HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetTooLong},
	{name: "asterisk with GET", in: "GET * HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "relative target", in: "GET a/b HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "ftp scheme", in: "GET ftp://x/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "opaque", in: "GET http:x HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "empty authority", in: "GET http:///a HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "userinfo", in: "GET http://u:p@x/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "escaped host", in: "GET http://%41/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "bad port", in: "GET http://x:8a/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "two colons", in: "GET http://x:1:2/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "IPv4 literal", in: "GET http://[1.2.3.4]/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "bad IPv6 literal", in: "GET http://[::g]/ HTTP/1.1\r\nHost: x\r\n\r\n", reason: ReasonTargetForm},
	{name: "CONNECT empty target", in: "CONNECT  HTTP/1.1\r\n\r\n", reason: ReasonRequestLine},
	{name: "CONNECT without port", in: "CONNECT x HTTP/1.1\r\n\r\n", reason: ReasonTargetForm},
	{name: "CONNECT with path", in: "CONNECT x:1/a HTTP/1.1\r\n\r\n", reason: ReasonTargetForm},

	// Field lines.
	{name: "obs-fold", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n", reason: ReasonObsFold},
	{name: "obs-fold tab", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n", reason: ReasonObsFold},
	{name: "space before first field", in: "GET / HTTP/1.1\r\n Host: x\r\n\r\n", reason: ReasonObsFold},
	{name: "space before colon", in: "GET / HTTP/1.1\r\nHost : x\r\n\r\n", reason: ReasonSpaceBeforeColon},
	{name: "tab before colon", in: "GET / HTTP/1.1\r\nHost\t: x\r\n\r\n", reason: ReasonSpaceBeforeColon},
	{name: "TE space before colon", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n", reason: ReasonSpaceBeforeColon},
	{name: "no colon", in: "GET / HTTP/1.1\r\nHost: x\r\nX\r\n\r\n", reason: ReasonFieldLine},
	{name: "empty name", in: "GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", reason: ReasonFieldLine},
	{name: "bad name", in: "GET / HTTP/1.1\r\nHost: x\r\nX(Y: v\r\n\r\n", reason: ReasonFieldName},
	{name: "space in name", in: "GET / HTTP/1.1\r\nHost: x\r\nX Y: v\r\n\r\n", reason: ReasonFieldName},
	{name: "CR in value", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n", reason: ReasonFieldValue},
	{name: "CR at end of value", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\r\r\n\r\n", reason: ReasonFieldValue},
	{name: "NUL in value", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n", reason: ReasonFieldValue},
	{name: "DEL in value", in: "GET / HTTP/1.1\r\nHost: x\r\nX: a\x7fb\r\n\r\n", reason: ReasonFieldValue},
	{name: "too many fields", in: "GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: y\r\n", 8) + "\r\n", reason: ReasonTooManyFields},
	{name: "head too large", in: "GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("y", 512) + "\r\n\r\n", reason: ReasonHeadTooLarge},
	{name: "head one over MaxHead", in: "GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("y", 512-31) + "\r\n\r\n", reason: ReasonHeadTooLarge},
	{name: "request line too large", in: "GET / HTTP/1.1" + strings.Repeat(" ", 600), reason: ReasonVersion},
	{name: "method too large", in: strings.Repeat("G", 600), reason: ReasonHeadTooLarge},

	// Host.
	{name: "no Host in 1.1", in: "GET / HTTP/1.1\r\n\r\n", reason: ReasonHostMissing},
	{name: "no Host in absolute-form", in: "GET http://x/ HTTP/1.1\r\n\r\n", reason: ReasonHostMissing},
	{name: "two Hosts", in: "GET / HTTP/1.1\r\nHost: x\r\nhost: x\r\n\r\n", reason: ReasonHostDuplicate},
	{name: "bad Host", in: "GET / HTTP/1.1\r\nHost: x/y\r\n\r\n", reason: ReasonHostInvalid},
	{name: "Host with space", in: "GET / HTTP/1.1\r\nHost: x y\r\n\r\n", reason: ReasonHostInvalid},

	// Framing: the smuggling vectors.
	{name: "CL and TE", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", reason: ReasonContentLengthWithTE},
	{name: "TE and CL", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", reason: ReasonContentLengthWithTE},
	{name: "CL differs", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", reason: ReasonContentLengthConflict},
	{name: "CL list", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 3\r\n\r\n", reason: ReasonContentLength},
	{name: "CL sign", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\n", reason: ReasonContentLength},
	{name: "CL negative", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", reason: ReasonContentLength},
	{name: "CL hex", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0x10\r\n\r\n", reason: ReasonContentLength},
	{name: "CL empty", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n\r\n", reason: ReasonContentLength},
	{name: "CL overflow", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775808\r\n\r\n", reason: ReasonContentLength},
	{name: "CL over MaxBody", in: "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1001\r\n\r\n", reason: ReasonBodyTooLarge},
	{name: "TE gzip", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE chunked then gzip", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE gzip then chunked", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", reason: ReasonTransferCoding},
	{name: "TE two fields", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", reason: ReasonTransferCoding},
	{name: "TE chunked twice", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE chunked comma", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked,\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE empty", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE identity", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE xchunked", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n", reason: ReasonTransferEncoding},
	{name: "TE in HTTP/1.0", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", reason: ReasonTransferEncodingHTTP10},
	{name: "Trailer announces CL", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: a, content-length\r\n\r\n", reason: ReasonTrailerField},
	{name: "Trailer announces TE", in: "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: Transfer-Encoding\r\n\r\n", reason: ReasonTrailerField},
}

// acceptedHeads: heads Parse takes, and what it makes of them.
var acceptedHeads = []headCase{
	{name: "minimal", in: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "GET", string(h.Method))
		assert.Equal(t, "/health", string(h.Target))
		assert.Equal(t, "/health", string(h.Path))
		assert.Nil(t, h.Query)
		assert.Equal(t, "HTTP/1.1", string(h.Proto))
		assert.Equal(t, 1, h.Minor)
		assert.Equal(t, FormOrigin, h.Form)
		assert.Equal(t, "x", string(h.Host))
		assert.Equal(t, BodyNone, h.Body)
		assert.Equal(t, int64(0), h.ContentLength)
		assert.False(t, h.Close)
		assert.Equal(t, ExpectNone, h.Expect)
		assert.Equal(t, []Field{{Name: []byte("Host"), Value: []byte("x")}}, h.Fields)
	}},
	{name: "bare LF", in: "GET / HTTP/1.1\nHost: x\n\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "x", string(h.Host))
	}},
	{name: "mixed line endings", in: "GET / HTTP/1.1\r\nHost: x\nA: b\r\n\n", want: func(t *testing.T, h *Head) {
		assert.Len(t, h.Fields, 2)
	}},
	{name: "query", in: "GET /a/b?c=d&e HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "/a/b", string(h.Path))
		assert.Equal(t, "c=d&e", string(h.Query))
	}},
	{name: "empty query", in: "GET /a? HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "/a", string(h.Path))
		assert.NotNil(t, h.Query)
		assert.Empty(t, h.Query)
	}},
	{name: "escapes and odd bytes", in: "GET /a%20b/\xc3\xa9|{}#f HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "/a%20b/\xc3\xa9|{}#f", string(h.Path))
	}},
	{name: "value whitespace", in: "GET / HTTP/1.1\r\nHost:x\r\nA: \t b c \t\r\nB:\r\n\r\n", want: func(t *testing.T, h *Head) {
		v, ok := h.Get("a")
		assert.True(t, ok)
		assert.Equal(t, "b c", string(v))
		v, ok = h.Get("B")
		assert.True(t, ok)
		assert.Empty(t, v)
	}},
	{name: "obs-text value", in: "GET / HTTP/1.1\r\nHost: x\r\nA: \xff\xfe\r\n\r\n", want: func(t *testing.T, h *Head) {
		v, _ := h.Get("A")
		assert.Equal(t, "\xff\xfe", string(v))
	}},
	{name: "content-length", in: "POST /p HTTP/1.1\r\nHost: x\r\ncontent-length: 0012\r\n\r\nbody", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyLength, h.Body)
		assert.Equal(t, int64(12), h.ContentLength)
	}},
	{name: "content-length 0", in: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyNone, h.Body)
		assert.Equal(t, int64(0), h.ContentLength)
	}},
	{name: "content-length at MaxBody", in: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, int64(1000), h.ContentLength)
	}},
	{name: "same content-length twice", in: "POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyLength, h.Body)
		assert.Equal(t, int64(5), h.ContentLength)
	}},
	{name: "chunked", in: "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked \r\nTrailer: X-Sum\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyChunked, h.Body)
		assert.Equal(t, int64(-1), h.ContentLength)
	}},
	{name: "GET with body", in: "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyLength, h.Body)
	}},
	{name: "Trailer without chunked", in: "POST / HTTP/1.1\r\nHost: x\r\nTrailer: Content-Length\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, BodyNone, h.Body)
	}},
	{name: "connection close", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Close\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.True(t, h.Close)
	}},
	{name: "connection upgrade", in: "GET / HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nConnection: closed\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.False(t, h.Close)
	}},
	{name: "HTTP/1.0 closes", in: "GET / HTTP/1.0\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, 0, h.Minor)
		assert.True(t, h.Close)
		assert.Nil(t, h.Host)
	}},
	{name: "HTTP/1.0 keep-alive", in: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.False(t, h.Close)
	}},
	{name: "HTTP/1.0 keep-alive and close", in: "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.True(t, h.Close)
	}},
	{name: "HTTP/1.2 as 1.1", in: "GET / HTTP/1.2\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, 2, h.Minor)
		assert.False(t, h.Close)
	}},
	{name: "expect 100-continue", in: "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, Expect100Continue, h.Expect)
	}},
	{name: "expect ignored in 1.0", in: "PUT / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, ExpectNone, h.Expect)
	}},
	{name: "expect unknown", in: "PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, ExpectUnknown, h.Expect)
	}},
	{name: "expect empty", in: "PUT / HTTP/1.1\r\nHost: x\r\nExpect:\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, ExpectNone, h.Expect)
	}},
	{name: "empty Host", in: "GET / HTTP/1.1\r\nHost:\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.NotNil(t, h.Host)
		assert.Empty(t, h.Host)
	}},
	{name: "absolute-form", in: "GET HTTP://Example.com:8080/a?b HTTP/1.1\r\nHost: other\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, FormAbsolute, h.Form)
		assert.Equal(t, "Example.com:8080", string(h.Host))
		assert.Equal(t, "/a", string(h.Path))
		assert.Equal(t, "b", string(h.Query))
	}},
	{name: "absolute-form no path", in: "GET https://x?q HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "x", string(h.Host))
		assert.Empty(t, h.Path)
		assert.Equal(t, "q", string(h.Query))
	}},
	{name: "absolute-form IPv6", in: "GET http://[::1]:80/ HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "[::1]:80", string(h.Host))
	}},
	{name: "absolute-form empty port", in: "GET http://x:/ HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "x:", string(h.Host))
	}},
	{name: "CONNECT", in: "CONNECT example.com:443 HTTP/1.1\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, FormAuthority, h.Form)
		assert.Equal(t, "example.com:443", string(h.Host))
	}},
	{name: "CONNECT origin-form", in: "CONNECT /rpc HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, FormOrigin, h.Form)
	}},
	{name: "OPTIONS *", in: "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, FormAsterisk, h.Form)
		assert.Equal(t, "*", string(h.Path))
	}},
	{name: "extension method", in: "M-SEARCH! / HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Equal(t, "M-SEARCH!", string(h.Method))
	}},
	{name: "target at MaxTarget", in: "GET /" + strings.Repeat("a", 63) + " HTTP/1.1\r\nHost: x\r\n\r\n", want: func(t *testing.T, h *Head) {
		assert.Len(t, h.Target, 64)
	}},
	{name: "fields at MaxFields", in: "GET / HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X: y\r\n", 7) + "\r\n", want: func(t *testing.T, h *Head) {
		assert.Len(t, h.Fields, 8)
		n := 0
		for v := range h.Values("x") {
			assert.Equal(t, "y", string(v))
			n++
		}
		assert.Equal(t, 7, n)
	}},
	{name: "head at MaxHead", in: "GET / HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("y", 512-32) + "\r\n\r\n", want: func(t *testing.T, h *Head) {
		v, _ := h.Get("x")
		assert.Len(t, v, 512-32)
	}},
}

func TestParseRefuses(t *testing.T) {
	for _, c := range refusedHeads {
		t.Run(c.name, func(t *testing.T) {
			p := Parser{Limits: testLimits}
			var h Head
			n, err := p.Parse([]byte(c.in), &h)
			assert.Zero(t, n)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, c.reason.String(), e.Reason.String())
			assert.Equal(t, c.reason.Status(), e.Status)
			assert.True(t, e.Close, "a refused head closes the connection")
			assert.Same(t, c.reason.Err(), e)
		})
	}
}

func TestParseStatuses(t *testing.T) {
	for r, status := range map[Reason]int{
		ReasonRequestLine: 400, ReasonObsFold: 400, ReasonContentLengthWithTE: 400,
		ReasonTargetTooLong: 414, ReasonHeadTooLarge: 431, ReasonTooManyFields: 431,
		ReasonBodyTooLarge: 413, ReasonTransferCoding: 501, ReasonVersionUnsupported: 505,
		ReasonTransferEncoding: 400, ReasonTrailerTooLarge: 431,
	} {
		assert.Equal(t, status, r.Err().Status, r.String())
	}
	for r := Reason(1); r < reasonCount; r++ {
		assert.NotEmpty(t, reasonText[r], "reason %d has no text", r)
		assert.Equal(t, "h1: "+r.String(), r.Err().Error())
	}
	assert.Equal(t, "unknown reason", Reason(0).String())
	assert.Equal(t, 400, reasonCount.Status())
}

func TestParseAccepts(t *testing.T) {
	for _, c := range acceptedHeads {
		t.Run(c.name, func(t *testing.T) {
			p := Parser{Limits: testLimits}
			var h Head
			buf := []byte(c.in)
			n, err := p.Parse(buf, &h)
			require.NoError(t, err)
			end := bytes.Index(buf, []byte("\n\r\n"))
			if alt := bytes.Index(buf, []byte("\n\n")); end < 0 || alt >= 0 && alt < end {
				end = alt + 2
			} else {
				end += 3
			}
			require.Equal(t, end, n, "the head ends after its blank line")
			c.want(t, &h)
		})
	}
}

// TestParseAnyCut feeds every head of the tables a byte at a time, and in
// two pieces cut at every offset: the outcome must be the one of the
// whole head, with "need more" before it.
func TestParseAnyCut(t *testing.T) {
	for _, c := range append(append([]headCase{}, refusedHeads...), acceptedHeads...) {
		t.Run(c.name, func(t *testing.T) {
			buf := []byte(c.in)
			var whole Head
			p := Parser{Limits: testLimits}
			wantN, wantErr := p.Parse(buf, &whole)

			var h Head
			n, err := parseFed(&p, buf, &h, 1)
			assert.Equal(t, wantN, n)
			assert.Equal(t, wantErr, err)
			if wantErr == nil {
				assert.Equal(t, whole, h)
			}
			for cut := 1; cut < len(buf); cut++ {
				p.Reset()
				n, err := p.Parse(buf[:cut], &h)
				if n == 0 && err == nil {
					n, err = p.Parse(buf, &h)
				}
				require.Equal(t, wantN, n, "cut at %d", cut)
				require.Equal(t, wantErr, err, "cut at %d", cut)
			}
		})
	}
}

// parseFed gives p growing prefixes of buf, step bytes more each time,
// until it completes or refuses a head or buf is used up.
func parseFed(p *Parser, buf []byte, h *Head, step int) (int, error) {
	for end := min(step, len(buf)); ; end = min(end+step, len(buf)) {
		n, err := p.Parse(buf[:end], h)
		if n > 0 || err != nil || end == len(buf) {
			return n, err
		}
	}
}

func TestParsePipelined(t *testing.T) {
	buf := []byte("GET /a HTTP/1.1\r\nHost: x\r\n\r\n" +
		"POST /b HTTP/1.1\r\nHost: y\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /c HTTP/1.0\r\n\r\n" +
		"GET /d HTTP/1.1\r\nHo")
	var p Parser
	var h Head
	var got []string
	for {
		n, err := p.Parse(buf, &h)
		require.NoError(t, err)
		if n == 0 {
			break
		}
		got = append(got, string(h.Method)+" "+string(h.Target)+" "+string(h.Host))
		buf = buf[n+int(max(h.ContentLength, 0)):]
	}
	assert.Equal(t, []string{"GET /a x", "POST /b y", "GET /c "}, got)
	assert.Equal(t, "GET /d HTTP/1.1\r\nHo", string(buf), "the partial head is left")
}

func TestParseReusesHead(t *testing.T) {
	var p Parser
	var h Head
	_, err := p.Parse([]byte("GET /a?q HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nContent-Length: 4\r\nConnection: close\r\nExpect: 100-continue\r\n\r\n"), &h)
	require.NoError(t, err)
	fields := &h.Fields[:1][0]
	_, err = p.Parse([]byte("GET http://y/b HTTP/1.1\r\nHost: x\r\n\r\n"), &h)
	require.NoError(t, err)
	assert.Same(t, fields, &h.Fields[0], "the fields' storage is reused")
	assert.Len(t, h.Fields, 1)
	assert.Equal(t, "y", string(h.Host))
	assert.Nil(t, h.Query)
	assert.Equal(t, BodyNone, h.Body)
	assert.False(t, h.Close)
	assert.Equal(t, ExpectNone, h.Expect)
	_, ok := h.Get("A")
	assert.False(t, ok)
}

func TestParseShrunkBuffer(t *testing.T) {
	var p Parser
	var h Head
	n, err := p.Parse([]byte("GET /abc HTTP/1.1\r\nHost: x\r\n"), &h)
	require.NoError(t, err)
	require.Zero(t, n)
	// Against the contract, a shorter buffer: no panic, a fresh start.
	n, err = p.Parse([]byte("GET / HTTP/1.1\r\n"), &h)
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = p.Parse([]byte("GET / HTTP/1.1\r\nHost: y\r\n\r\n"), &h)
	require.NoError(t, err)
	assert.Equal(t, 27, n)
	assert.Equal(t, "y", string(h.Host))
}

func TestParseNeedsMore(t *testing.T) {
	var p Parser
	var h Head
	for _, in := range []string{"", "G", "GET", "GET /", "GET / HTTP/1.1", "GET / HTTP/1.1\r", "GET / HTTP/1.1\r\nHost: x", "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r"} {
		p.Reset()
		n, err := p.Parse([]byte(in), &h)
		assert.Zero(t, n, "%q", in)
		assert.NoError(t, err, "%q", in)
	}
}

func TestParseDefaultLimits(t *testing.T) {
	var p Parser
	var h Head
	long := "GET /" + strings.Repeat("a", DefaultMaxTarget) + " HTTP/1.1\r\nHost: x\r\n\r\n"
	_, err := p.Parse([]byte(long), &h)
	assert.Same(t, ReasonTargetTooLong.Err(), err)
	big := "GET / HTTP/1.1\r\nHost: x\r\nA: " + strings.Repeat("a", DefaultMaxHead) + "\r\n\r\n"
	_, err = p.Parse([]byte(big), &h)
	assert.Same(t, ReasonHeadTooLarge.Err(), err)
	many := "GET / HTTP/1.1\r\n" + strings.Repeat("Host: x\r\n", DefaultMaxFields+1) + "\r\n"
	_, err = p.Parse([]byte(many), &h)
	assert.Same(t, ReasonTooManyFields.Err(), err)
	huge := "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 9223372036854775807\r\n\r\n"
	_, err = p.Parse([]byte(huge), &h)
	assert.NoError(t, err, "no body limit by default")
	assert.Equal(t, int64(9223372036854775807), h.ContentLength)
}

// TestParseUnboundedLimits: limits as large as an int holds mean no
// limit, and the scan of a target still ends (it must not overflow).
func TestParseUnboundedLimits(t *testing.T) {
	p := Parser{Limits: Limits{MaxHead: math.MaxInt, MaxTarget: math.MaxInt}}
	done := make(chan error, 1)
	go func() {
		var h Head
		_, err := p.Parse([]byte("GET /abc HTTP/1.1\r\nHost: x\r\n\r\n"), &h)
		done <- err
	}()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Parse did not return")
	}
}

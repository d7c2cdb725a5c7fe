package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// fuzzLimits are small, so that the fuzzer reaches them.
var fuzzLimits = Limits{MaxHead: 2048, MaxTarget: 256, MaxFields: 16, MaxBody: 1 << 20}

// FuzzParseRequest parses data with Parse and with net/http's
// http.ReadRequest, the oracle: both accept it or both refuse it, and when
// both accept it they agree on the method, target, version, fields, host,
// body framing, keep-alive and the head's length. Parse may refuse what
// net/http accepts only for one of the reasons of stricterThanNetHTTP,
// whose condition the test checks on net/http's own reading of the data;
// never the other way round. Parse is also fed data in pieces, which must
// not change its answer.
func FuzzParseRequest(f *testing.F) {
	for _, c := range refusedHeads {
		f.Add([]byte(c.in))
	}
	for _, c := range acceptedHeads {
		f.Add([]byte(c.in))
	}
	for _, s := range fuzzSeedHeads {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := Parser{Limits: fuzzLimits}
		var h Head
		n, err := p.Parse(data, &h)
		checkPieces(t, data, n, err, &h)

		rd := bytes.NewReader(data)
		br := bufio.NewReader(rd)
		req, rerr := http.ReadRequest(br)
		consumed := len(data) - rd.Len() - br.Buffered()

		switch {
		case n > 0 && rerr == nil:
			compareWithNetHTTP(t, data[:n], &h, req, consumed)
		case n > 0:
			t.Fatalf("Parse accepts what net/http refuses (%v): %q", rerr, data)
		case rerr == nil && err == nil:
			t.Fatalf("Parse wants more where net/http accepts: %q", data)
		case rerr == nil:
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse error %T %v is not an *Error", err, err)
			}
			if !stricterThanNetHTTP(e.Reason, data, req, consumed) {
				t.Fatalf("Parse refuses (%v) what net/http accepts, for no listed reason: %q", err, data)
			}
		}
	})
}

// fuzzSeedHeads add to the tables' heads a few that real clients send.
var fuzzSeedHeads = []string{
	browserGET,
	"GET / HTTP/1.1\r\nHost: x\r\nPragma: no-cache\r\n\r\n",
	"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
	"GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://user@x/ HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET http://[fe80::1%25en0]/ HTTP/1.1\r\nHost: x\r\n\r\n",
	"HEAD / HTTP/1.0\r\nUser-Agent: curl\r\nConnection: keep-alive\r\n\r\n",
}

// stricterThanNetHTTP reports whether reason is one for which Parse may
// refuse a head net/http accepts, and its condition holds for data as
// net/http read it (req, and the consumed bytes of the head). See the
// package documentation.
func stricterThanNetHTTP(reason Reason, data []byte, req *http.Request, consumed int) bool {
	switch reason {
	case ReasonHeadTooLarge:
		return consumed > fuzzLimits.MaxHead
	case ReasonTooManyFields:
		return bytes.Count(data[:consumed], []byte("\n"))-2 > fuzzLimits.MaxFields
	case ReasonTargetTooLong:
		return len(req.RequestURI) > fuzzLimits.MaxTarget
	case ReasonBodyTooLarge:
		return req.ContentLength > fuzzLimits.MaxBody
	case ReasonVersionUnsupported: // net/http's server: 505
		return req.ProtoMajor != 1
	case ReasonHostMissing: // net/http's server: 400
		return req.ProtoAtLeast(1, 1) && len(rawHeader(data)["Host"]) == 0 && req.Method != "CONNECT"
	case ReasonHostInvalid: // net/http's server: 400
		hosts := rawHeader(data)["Host"]
		return len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0])
	case ReasonSpaceBeforeColon, ReasonFieldName: // net/http's server: 400
		for k := range req.Header {
			if !httpguts.ValidHeaderFieldName(k) {
				return true
			}
		}
		return false
	case ReasonObsFold:
		lines := bytes.Split(data[:consumed], []byte("\n"))
		for _, l := range lines[2:] {
			if len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
				return true
			}
		}
		return false
	case ReasonContentLengthWithTE:
		raw := rawHeader(data)
		return len(req.TransferEncoding) > 0 && len(raw["Content-Length"]) > 0
	case ReasonTransferEncodingHTTP10:
		return req.ProtoMajor == 1 && req.ProtoMinor == 0 && len(rawHeader(data)["Transfer-Encoding"]) > 0
	case ReasonTargetForm:
		return targetFormNotTaken(req.Method, req.RequestURI)
	case ReasonRequestLine:
		return req.RequestURI == "" // net/http takes an empty target with CONNECT
	}
	return false
}

// rawHeader reads the fields of the head in data with net/textproto,
// before net/http drops or merges any.
func rawHeader(data []byte) textproto.MIMEHeader {
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	if _, err := tp.ReadLine(); err != nil {
		return nil
	}
	h, _ := tp.ReadMIMEHeader()
	return h
}

// The request-targets that are not origin-form and that Parse takes,
// written independently of target.go.
var (
	regNameRE   = `[A-Za-z0-9\-._~!$&'()*+,;=]+`
	ipLiteralRE = `\[[0-9A-Fa-f:.]+\]`
	authorityRE = regexp.MustCompile(`^(?:` + regNameRE + `|` + ipLiteralRE + `):[0-9]+$`)
	absoluteRE  = regexp.MustCompile(`(?s)^(?i:https?)://(?:` + regNameRE + `|` + ipLiteralRE + `)(?::[0-9]*)?(?:[/?].*)?$`)
)

func targetFormNotTaken(method, uri string) bool {
	switch {
	case strings.HasPrefix(uri, "/"):
		return false // Parse takes every origin-form net/http takes
	case uri == "*":
		return method != "OPTIONS"
	case method == "CONNECT":
		return !authorityRE.MatchString(uri)
	}
	return !absoluteRE.MatchString(uri)
}

// compareWithNetHTTP checks that h, parsed from head, says what net/http's
// req says.
func compareWithNetHTTP(t *testing.T, head []byte, h *Head, req *http.Request, consumed int) {
	t.Helper()
	fail := func(what string, ours, theirs any) {
		t.Helper()
		t.Fatalf("%s: Parse says %v, net/http %v, for %q", what, ours, theirs, head)
	}
	if len(head) != consumed {
		fail("head length", len(head), consumed)
	}
	if string(h.Method) != req.Method {
		fail("method", string(h.Method), req.Method)
	}
	if string(h.Target) != req.RequestURI {
		fail("target", string(h.Target), req.RequestURI)
	}
	if string(h.Proto) != req.Proto || req.ProtoMajor != 1 || h.Minor != req.ProtoMinor {
		fail("version", string(h.Proto), req.Proto)
	}
	if string(h.Host) != req.Host {
		fail("host", string(h.Host), req.Host)
	}
	chunked := len(req.TransferEncoding) == 1 && req.TransferEncoding[0] == "chunked"
	if (h.Body == BodyChunked) != chunked || h.ContentLength != req.ContentLength {
		fail("body framing", h.ContentLength, req.ContentLength)
	}
	if (h.Body == BodyLength) != (req.ContentLength > 0) {
		fail("body framing", h.Body, req.ContentLength)
	}
	if h.Close != req.Close {
		fail("close", h.Close, req.Close)
	}
	if ours := netHTTPView(h); !maps.EqualFunc(ours, req.Header, slices.Equal) {
		fail("fields", ours, req.Header)
	}
}

// netHTTPView is h's fields as net/http's Request.Header holds them: keys
// canonical, values grouped, Host moved to Request.Host, the framing
// fields dropped or merged as readTransfer does, and Pragma: no-cache
// implying Cache-Control.
func netHTTPView(h *Head) http.Header {
	hd := http.Header{}
	for _, f := range h.Fields {
		k := string(AppendCanonical(nil, f.Name))
		hd[k] = append(hd[k], string(f.Value))
	}
	delete(hd, "Host") // in Request.Host
	delete(hd, "Transfer-Encoding")
	if h.Body == BodyChunked {
		delete(hd, "Content-Length")
		delete(hd, "Trailer")
	} else if cl := hd["Content-Length"]; len(cl) > 1 {
		hd["Content-Length"] = cl[:1]
	}
	if p := hd["Pragma"]; len(p) > 0 && p[0] == "no-cache" && hd["Cache-Control"] == nil {
		hd["Cache-Control"] = []string{"no-cache"}
	}
	return hd
}

// checkPieces parses data again, fed in pieces whose sizes data chooses,
// and wants the answer Parse gave for it whole.
func checkPieces(t *testing.T, data []byte, n int, err error, whole *Head) {
	t.Helper()
	step := 1
	if len(data) > 0 {
		step = 1 + int(data[len(data)/2])%7
	}
	p := Parser{Limits: fuzzLimits}
	var h Head
	n2, err2 := parseFed(&p, data, &h, step)
	if n2 != n || err2 != err {
		t.Fatalf("fed %d bytes at a time, Parse says (%d, %v), whole (%d, %v): %q", step, n2, err2, n, err, data)
	}
	if n > 0 && !reflect.DeepEqual(*whole, h) {
		t.Fatalf("fed %d bytes at a time, Parse reads another head from %q", step, data)
	}
}

// chunkedPrefix is the head FuzzChunked puts before the body it fuzzes, for
// net/http to read the body and its trailers.
const chunkedPrefix = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"

// maxFuzzSeed leaves the tables' longest inputs out of the seeds: the
// fuzzer spends its time minimising what it finds from them.
const maxFuzzSeed = 1024

// fuzzMaxTrailer is the trailer limit of FuzzChunked: small, so that the
// fuzzer reaches it.
const fuzzMaxTrailer = 512

// FuzzChunked decodes data as a chunked body with ChunkedDecoder, fed in
// pieces whose sizes data chooses, and with net/http: the chunks with
// httputil.NewChunkedReader, the whole body, trailers included, through
// http.ReadRequest. Both accept it or both refuse it; when both accept,
// they agree on the data, the trailers and where the body ends. The
// decoder may refuse what net/http accepts only for the trailer reasons of
// trailerStricter, checked on the data.
func FuzzChunked(f *testing.F) {
	for _, c := range chunkedCases {
		if len(c.in) <= maxFuzzSeed {
			f.Add([]byte(c.in))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		step := 1
		if len(data) > 0 {
			step = 1 + int(data[0])%11
		}
		d := ChunkedDecoder{MaxTrailer: fuzzMaxTrailer}
		body, n, err := decodeFed(&d, data, step)
		d2 := ChunkedDecoder{MaxTrailer: fuzzMaxTrailer}
		body2, n2, err2 := decodeFed(&d2, data, len(data)+1)
		if !bytes.Equal(body, body2) || n != n2 || err != err2 || d.Done() != d2.Done() {
			t.Fatalf("fed %d bytes at a time, the decoder says (%d, %v), whole (%d, %v): %q", step, n, err, n2, err2, data)
		}

		// The chunks alone.
		cdata, cerr := io.ReadAll(httputil.NewChunkedReader(bufio.NewReaderSize(bytes.NewReader(data), 64<<10)))
		// The whole body.
		full := append([]byte(chunkedPrefix), data...)
		rd := bytes.NewReader(full)
		br := bufio.NewReaderSize(rd, 64<<10)
		req, rerr := http.ReadRequest(br)
		if rerr != nil {
			t.Fatalf("net/http refuses the fixed head: %v", rerr)
		}
		rdata, rerr := io.ReadAll(req.Body)
		consumed := len(full) - rd.Len() - br.Buffered() - len(chunkedPrefix)

		switch err {
		case ReasonChunkSize.Err(), ReasonChunkCRLF.Err(), ReasonChunkLineTooLong.Err(), ReasonChunkOverhead.Err():
			if cerr == nil {
				t.Fatalf("the decoder refuses chunks (%v) that net/http takes: %q", err, data)
			}
		}
		switch {
		case d.Done() && rerr == nil:
			if !bytes.Equal(body, rdata) || !bytes.Equal(body, cdata) {
				t.Fatalf("data: the decoder says %q, net/http %q: %q", body, rdata, data)
			}
			if n != consumed {
				t.Fatalf("body length: the decoder says %d, net/http %d: %q", n, consumed, data)
			}
			ours := http.Header{}
			for _, f := range d.Trailer {
				k := string(AppendCanonical(nil, f.Name))
				ours[k] = append(ours[k], string(f.Value))
			}
			if len(ours) == 0 {
				ours = nil
			}
			if !maps.EqualFunc(ours, req.Trailer, slices.Equal) || (ours == nil) != (req.Trailer == nil) {
				t.Fatalf("trailers: the decoder says %v, net/http %v: %q", ours, req.Trailer, data)
			}
		case d.Done():
			t.Fatalf("the decoder accepts what net/http refuses (%v): %q", rerr, data)
		case rerr == nil && err == nil:
			t.Fatalf("the decoder wants more where net/http accepts: %q", data)
		case rerr == nil:
			var e *Error
			if !errors.As(err, &e) || !trailerStricter(e.Reason, data, n, consumed, req.Trailer) {
				t.Fatalf("the decoder refuses (%v) what net/http accepts, for no listed reason: %q", err, data)
			}
		}
	})
}

// trailerStricter reports whether the decoder may refuse, for reason, a
// trailer section that net/http accepts: data[from:to] is the section as
// net/http read it.
func trailerStricter(reason Reason, data []byte, from, to int, trailer http.Header) bool {
	section := data[from:to]
	switch reason {
	case ReasonTrailerTooLarge:
		return len(section) > fuzzMaxTrailer
	case ReasonTrailerLineEnding:
		return bytes.Count(section, []byte("\n")) != bytes.Count(section, []byte("\r\n"))
	case ReasonObsFold:
		for i, l := range bytes.Split(section, []byte("\n")) {
			if i > 0 && len(l) > 0 && (l[0] == ' ' || l[0] == '\t') {
				return true
			}
		}
	case ReasonSpaceBeforeColon, ReasonFieldName:
		for k := range trailer {
			if !httpguts.ValidHeaderFieldName(k) {
				return true
			}
		}
	}
	return false
}

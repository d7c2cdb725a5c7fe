package h1

import (
	"bytes"
	"math"
	"unsafe"

	"golang.org/x/net/http/httpguts"
)

// Defaults of Limits.
const (
	DefaultMaxHead   = 64 << 10      // bytes of a request head, request line and blank line included
	DefaultMaxTarget = 8 << 10       // bytes of a request-target
	DefaultMaxFields = 100           // field lines in a head
	DefaultMaxBody   = math.MaxInt64 // bytes of a body: no limit
)

// Limits bound what Parser.Parse accepts. A zero field means its default.
type Limits struct {
	MaxHead   int   // a longer head is refused with 431
	MaxTarget int   // a longer request-target is refused with 414
	MaxFields int   // more field lines are refused with 431
	MaxBody   int64 // a longer Content-Length is refused with 413
}

func (l Limits) withDefaults() Limits {
	if l.MaxHead <= 0 {
		l.MaxHead = DefaultMaxHead
	}
	if l.MaxTarget <= 0 {
		l.MaxTarget = DefaultMaxTarget
	}
	if l.MaxFields <= 0 {
		l.MaxFields = DefaultMaxFields
	}
	if l.MaxBody <= 0 {
		l.MaxBody = DefaultMaxBody
	}
	return l
}

// Where the parser is in the head.
const (
	phaseMethod  = iota // scanning the method
	phaseTarget         // scanning the request-target
	phaseVersion        // scanning the version
	phaseFields         // the request line is complete and valid: looking for the blank line
)

// Parser parses request heads, one after the other, from a buffer that may
// hold only the start of one. The zero Parser is ready for use, with the
// default Limits. A Parser is not safe for concurrent use: it belongs to
// one connection.
//
// A head may arrive in pieces: Parse then answers "need more" and
// remembers how far it looked, so that the bytes it searched are not
// searched again however the head is cut (the fields are parsed once, when
// the head is complete). Until Parse completes a head or refuses it, every
// call must be given a buffer that starts with the same bytes as the one
// before (the buffer may have moved or grown); Reset forgets a partial
// head.
//
// The outcome does not depend on how the head was cut: a head fed a byte
// at a time is accepted or refused, with the same Reason, as when it
// arrives whole.
type Parser struct {
	Limits Limits

	// Progress through the head being parsed; all offsets are from the
	// start of the buffer.
	phase    uint8
	pos      int // request line: the next byte to scan; fields: the start of the line whose end is sought
	searched int // fields: pos <= searched, and buf[pos:searched] holds no LF
	mEnd     int // the SP after the method
	tEnd     int // the SP after the target
	lineEnd  int // the byte after the request line's LF
	tgt      target
}

// Reset forgets a partial head: the next Parse starts a new one.
func (p *Parser) Reset() {
	*p = Parser{Limits: p.Limits}
}

// Parse parses the request head at the start of buf into h.
//
// It returns n > 0 when buf holds a whole head: h describes it, and the
// head is buf[:n] (a body or the next request starts at buf[n]). It returns
// n == 0 and a nil error when buf holds only the start of a head: call
// again with more bytes. It returns an *Error when the head must be
// refused; the connection must then be closed after the answer. In every
// case but "need more" the Parser is ready for the next head.
//
// h points into buf: it is valid while buf holds the same bytes. Only
// when Parse returns n > 0 does h describe a head; after a refusal its
// contents are unspecified (its Fields' storage is kept for reuse).
func (p *Parser) Parse(buf []byte, h *Head) (n int, err error) {
	lim := p.Limits.withDefaults()
	if p.pos > len(buf) || p.searched > len(buf) {
		p.Reset() // the buffer shrank: the contract is broken, start over
	}
	end := min(len(buf), lim.MaxHead) // the head's last LF lies before end
	if p.phase < phaseFields {
		if r := p.scanRequestLine(buf[:end], lim); r != 0 {
			p.Reset()
			return 0, r.Err()
		}
		if p.phase < phaseFields {
			return p.needMore(len(buf), lim)
		}
	}
	// When the search for the blank line starts in this call (the usual
	// case: the head in one read), each field line is parsed as it is
	// found, and read once. A head that arrives in pieces is searched as
	// it comes, and finish parses its fields once it is complete.
	fs := fieldScan{fields: h.Fields[:0]}
	fresh := p.pos == p.lineEnd && p.searched == p.lineEnd
	for {
		i := bytes.IndexByte(buf[p.searched:end], '\n')
		if i < 0 {
			p.searched = end
			h.Fields = fs.fields // the storage, kept
			return p.needMore(len(buf), lim)
		}
		lf := p.searched + i
		blank := lf == p.pos || lf == p.pos+1 && buf[p.pos] == '\r'
		if fresh && !blank {
			fs.line(buf[p.pos:lf], lim)
		}
		p.pos, p.searched = lf+1, lf+1
		if blank {
			break
		}
	}
	n = p.pos
	if !fresh {
		fs.lines(buf[:n], p.lineEnd, lim)
	}
	r := p.finish(buf[:n], lim, h, &fs)
	p.Reset()
	if r != 0 {
		return 0, r.Err()
	}
	return n, nil
}

// needMore answers a head that is not complete in a buffer of size bytes:
// 431 if no more bytes could complete it within the limit.
func (p *Parser) needMore(size int, lim Limits) (int, error) {
	if size >= lim.MaxHead {
		p.Reset()
		return 0, ReasonHeadTooLarge.Err()
	}
	return 0, nil
}

// scanRequestLine goes on scanning the request line in b, byte by byte, so
// that a bad byte is refused as soon as it arrives and the outcome is the
// same however the line is cut. When the line is complete it is checked as
// a whole and the phase becomes phaseFields.
//
// Each phase runs over the bytes it accepts without a second look (token
// bytes, target bytes) and stops at the first it does not, which decides.
func (p *Parser) scanRequestLine(b []byte, lim Limits) Reason {
	i := p.pos
	for i < len(b) {
		c := b[i]
		if c == '\n' {
			p.pos, p.searched, p.lineEnd = i+1, i+1, i+1
			return p.checkRequestLine(b[:i])
		}
		switch p.phase {
		case phaseMethod:
			switch {
			case httpguts.IsTokenRune(rune(c)):
				i++
				for i < len(b) && httpguts.IsTokenRune(rune(b[i])) {
					i++
				}
				continue
			case c == ' ':
				if i == 0 {
					return ReasonRequestLine
				}
				p.mEnd, p.phase = i, phaseTarget
			case c == '\r':
				return ReasonRequestLine
			default:
				return ReasonMethod
			}
		case phaseTarget:
			switch {
			case c == ' ':
				if i == p.mEnd+1 {
					return ReasonRequestLine // two spaces, or no target
				}
				p.tEnd, p.phase = i, phaseVersion
			case c == '\r':
				return ReasonRequestLine // no version
			case c < '!' || c == 0x7f:
				return ReasonTarget // a control byte (net/url refuses them too)
			default:
				// The target's bytes up to its limit: one more is too many.
				// (MaxTarget may be as large as an int: no sum with it.)
				stop := len(b)
				if lim.MaxTarget < len(b)-p.mEnd-1 {
					stop = p.mEnd + lim.MaxTarget + 1
				}
				for i < stop && b[i] >= '!' && b[i] != 0x7f {
					i++
				}
				if i == stop && i < len(b) && b[i] >= '!' && b[i] != 0x7f {
					return ReasonTargetTooLong
				}
				continue
			}
		case phaseVersion:
			// Any bytes up to the longest version and its CR, then the LF.
			stop := p.tEnd + len(" HTTP/1.1\r")
			if i >= stop {
				return ReasonVersion
			}
			k := bytes.IndexByte(b[i:min(len(b), stop+1)], '\n')
			switch {
			case k >= 0:
				i += k // the LF, above
			case stop < len(b):
				return ReasonVersion // b[stop] is not the LF
			default:
				i = len(b)
			}
			continue
		}
		i++
	}
	p.pos = len(b)
	return 0
}

// checkRequestLine checks the complete request line (its LF excluded).
func (p *Parser) checkRequestLine(line []byte) Reason {
	if p.phase != phaseVersion {
		return ReasonRequestLine
	}
	v := line[p.tEnd+1:]
	if len(v) > 0 && v[len(v)-1] == '\r' {
		v = v[:len(v)-1]
	}
	// HTTP-version = "HTTP/" DIGIT "." DIGIT, case-sensitive (RFC 9112 §2.3).
	if len(v) != len("HTTP/1.1") || string(v[:5]) != "HTTP/" || !isDigit(v[5]) || v[6] != '.' || !isDigit(v[7]) {
		return ReasonVersion
	}
	if v[5] != '1' {
		return ReasonVersionUnsupported // HTTP/0.9, HTTP/2.0 (the h2 preface too), ...
	}
	tgt, r := checkTarget(line[:p.mEnd], line[p.mEnd+1:p.tEnd], p.mEnd+1)
	if r != 0 {
		return r
	}
	p.tgt = tgt
	p.phase = phaseFields
	return 0
}

// fieldNotes gathers, while the fields are parsed, what the framing and
// connection decisions need.
type fieldNotes struct {
	hosts    int
	host     []byte
	cls      int
	cl       []byte // the first Content-Length value
	clDiffer bool   // a later Content-Length differs from the first
	tes      int
	te       teState
	trailer  bool // a Trailer field announces a framing field
	close    bool // Connection: close
	keep     bool // Connection: keep-alive
	expect   Expect
}

// fieldScan parses the field lines of a head, in order, until the first
// it refuses.
type fieldScan struct {
	fields []Field
	nt     fieldNotes
	n      int    // lines seen
	r      Reason // the first refusal
}

// line parses the field line l (its LF excluded).
func (fs *fieldScan) line(l []byte, lim Limits) {
	if fs.r != 0 {
		return
	}
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	if fs.n++; fs.n > lim.MaxFields {
		fs.r = ReasonTooManyFields
		return
	}
	f, r := parseField(l)
	if r != 0 {
		fs.r = r
		return
	}
	fs.fields = append(fs.fields, f)
	fs.nt.note(f)
}

// lines parses the field lines of the complete head b, from pos to the
// blank line.
func (fs *fieldScan) lines(b []byte, pos int, lim Limits) {
	for fs.r == 0 {
		lf := pos + bytes.IndexByte(b[pos:], '\n')
		if lf == pos || lf == pos+1 && b[pos] == '\r' {
			return
		}
		fs.line(b[pos:lf], lim)
		pos = lf + 1
	}
}

// finish makes the framing decisions of the complete head b, whose
// fields fs has parsed, into h.
func (p *Parser) finish(b []byte, lim Limits, h *Head, fs *fieldScan) Reason {
	h.Fields = fs.fields // keep the storage even if the head is refused
	if fs.r != 0 {
		return fs.r
	}
	nt := &fs.nt
	minor := int(b[p.tEnd+8] - '0')
	method := b[:p.mEnd]
	contentLength, r := nt.check(method, minor, lim)
	if r != 0 {
		return r
	}

	h.Method = method
	h.Target = b[p.mEnd+1 : p.tEnd]
	h.Proto = b[p.tEnd+1 : p.tEnd+9]
	h.Minor = minor
	t := &p.tgt
	h.Form = t.form
	h.Path = b[t.pathLo:t.pathHi]
	h.Query = nil
	if t.queryLo >= 0 {
		h.Query = b[t.queryLo:p.tEnd]
	}
	h.Host = nil
	if t.hostLo >= 0 {
		h.Host = b[t.hostLo:t.hostHi]
	} else if nt.hosts == 1 {
		h.Host = nt.host
	}
	h.Body, h.ContentLength = BodyNone, 0
	if nt.tes > 0 {
		h.Body, h.ContentLength = BodyChunked, -1
	} else if contentLength > 0 {
		h.Body, h.ContentLength = BodyLength, contentLength
	}
	h.Close = nt.close || minor == 0 && !nt.keep
	h.Expect = nt.expect
	if minor == 0 && h.Expect == Expect100Continue {
		h.Expect = ExpectNone // RFC 9110 §10.1.1: ignored in HTTP/1.0
	}
	return 0
}

// parseField parses one field line (its line ending excluded).
func parseField(line []byte) (Field, Reason) {
	if line[0] == ' ' || line[0] == '\t' {
		return Field{}, ReasonObsFold // or whitespace before the first field: both refused
	}
	colon := bytes.IndexByte(line, ':')
	if colon <= 0 {
		return Field{}, ReasonFieldLine
	}
	name := line[:colon]
	if !httpguts.ValidHeaderFieldName(str(name)) {
		if c := name[len(name)-1]; c == ' ' || c == '\t' {
			return Field{}, ReasonSpaceBeforeColon
		}
		return Field{}, ReasonFieldName
	}
	value := trimOWS(line[colon+1:])
	if !httpguts.ValidHeaderFieldValue(str(value)) {
		return Field{}, ReasonFieldValue
	}
	return Field{Name: name, Value: value}, 0
}

// note records what the field means for the decisions.
func (nt *fieldNotes) note(f Field) {
	switch len(f.Name) {
	case len("host"):
		if EqualFold(f.Name, "host") {
			nt.hosts++
			nt.host = f.Value
		}
	case len("expect"):
		if EqualFold(f.Name, "expect") {
			for v, more := f.Value, true; more; {
				var e []byte
				e, v, more = element(v)
				switch {
				case len(e) == 0:
				case EqualFold(e, "100-continue") && nt.expect == ExpectNone:
					nt.expect = Expect100Continue
				default:
					nt.expect = ExpectUnknown
				}
			}
		}
	case len("trailer"):
		if EqualFold(f.Name, "trailer") {
			// A framing field in the trailers is refused, as net/http
			// refuses it, when the body is chunked (see check).
			for v, more := f.Value, true; more; {
				var e []byte
				e, v, more = element(v)
				nt.trailer = nt.trailer || EqualFold(e, "transfer-encoding") ||
					EqualFold(e, "trailer") || EqualFold(e, "content-length")
			}
		}
	case len("connection"):
		if EqualFold(f.Name, "connection") {
			for v, more := f.Value, true; more; {
				var e []byte
				e, v, more = element(v)
				nt.close = nt.close || EqualFold(e, "close")
				nt.keep = nt.keep || EqualFold(e, "keep-alive")
			}
		}
	case len("content-length"):
		if EqualFold(f.Name, "content-length") {
			if nt.cls == 0 {
				nt.cl = f.Value
			} else if !bytes.Equal(nt.cl, f.Value) {
				nt.clDiffer = true
			}
			nt.cls++
		}
	case len("transfer-encoding"):
		if EqualFold(f.Name, "transfer-encoding") {
			nt.tes++
			for v, more := f.Value, true; more; {
				var e []byte
				e, v, more = element(v)
				nt.te.add(e)
			}
		}
	}
}

// check makes the Host and framing decisions, the smuggling defences, and
// returns the Content-Length (0 when there is none).
func (nt *fieldNotes) check(method []byte, minor int, lim Limits) (int64, Reason) {
	switch {
	case nt.hosts > 1:
		return 0, ReasonHostDuplicate
	case nt.hosts == 1 && !httpguts.ValidHostHeader(str(nt.host)):
		return 0, ReasonHostInvalid
	case nt.hosts == 0 && minor >= 1 && string(method) != "CONNECT":
		return 0, ReasonHostMissing
	}
	if nt.tes > 0 && minor == 0 {
		// RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has
		// faulty framing, whatever its Content-Length says.
		return 0, ReasonTransferEncodingHTTP10
	}
	var n int64
	if nt.cls > 0 {
		if nt.clDiffer {
			return 0, ReasonContentLengthConflict
		}
		var ok bool
		if n, ok = parseContentLength(nt.cl); !ok {
			return 0, ReasonContentLength
		}
		if nt.tes > 0 {
			return 0, ReasonContentLengthWithTE
		}
	}
	if nt.tes > 0 {
		if r := nt.te.check(); r != 0 {
			return 0, r
		}
		if nt.trailer {
			return 0, ReasonTrailerField
		}
	}
	if n > lim.MaxBody {
		return 0, ReasonBodyTooLarge
	}
	return n, 0
}

// teState follows the transfer codings of the Transfer-Encoding fields, in
// order, as one list (RFC 9110 §5.3).
type teState struct {
	codings      int
	lastChunked  bool // the last coding so far is chunked
	chunkedTwice bool // a coding follows chunked
	empty        bool // an empty list element
}

func (t *teState) add(coding []byte) {
	t.codings++
	t.empty = t.empty || len(coding) == 0
	t.chunkedTwice = t.chunkedTwice || t.lastChunked
	t.lastChunked = EqualFold(coding, "chunked")
}

// check accepts exactly "chunked" (as net/http does): a list that does not
// end in chunked, or applies it twice, cannot be framed (RFC 9112 §6.3:
// 400); codings before a final chunked are codings this server does not
// implement (501).
func (t *teState) check() Reason {
	switch {
	case t.empty || !t.lastChunked || t.chunkedTwice:
		return ReasonTransferEncoding
	case t.codings > 1:
		return ReasonTransferCoding
	}
	return 0
}

// parseContentLength parses 1*DIGIT up to math.MaxInt64.
func parseContentLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// element returns the first element of a comma-separated list value,
// without its surrounding whitespace, and the rest after its comma; more
// is false when e is the last element.
func element(v []byte) (e, rest []byte, more bool) {
	i := bytes.IndexByte(v, ',')
	if i < 0 {
		return trimOWS(v), nil, false
	}
	return trimOWS(v[:i]), v[i+1:], true
}

// trimOWS removes the optional whitespace (SP, HTAB) around v.
func trimOWS(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// str views b as a string without copying, for the httpguts checks: the
// string must not outlive the call it is passed to while b may change.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

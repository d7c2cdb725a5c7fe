package h1

// Reason says why the parser refused a message. Every Reason maps to one
// HTTP status (Status) and one error value (Err), so a refusal costs no
// allocation.
type Reason uint8

// The reasons for refusing a request head or a chunked body. The status
// each answers with is in the comment.
const (
	_ Reason = iota

	// Request line.
	ReasonRequestLine        // 400: not "method SP target SP version"
	ReasonMethod             // 400: the method is not a token
	ReasonTarget             // 400: a control byte or a bad %-escape in the target
	ReasonTargetForm         // 400: a target form or authority this parser does not take
	ReasonTargetTooLong      // 414: the target is longer than Limits.MaxTarget
	ReasonVersion            // 400: the version is not HTTP/d.d
	ReasonVersionUnsupported // 505: a version other than HTTP/1.x

	// Field section.
	ReasonHeadTooLarge     // 431: the head is longer than Limits.MaxHead
	ReasonTooManyFields    // 431: more field lines than Limits.MaxFields
	ReasonFieldLine        // 400: a field line without a colon or a name
	ReasonFieldName        // 400: a field name that is not a token
	ReasonSpaceBeforeColon // 400: whitespace between a field name and its colon
	ReasonObsFold          // 400: a field line folded onto the next (obs-fold)
	ReasonFieldValue       // 400: a control byte (CR, LF, NUL...) in a field value

	// Host.
	ReasonHostMissing   // 400: an HTTP/1.1 request without Host
	ReasonHostDuplicate // 400: more than one Host field
	ReasonHostInvalid   // 400: a Host value that is not a host[:port]

	// Body framing.
	ReasonContentLength          // 400: a Content-Length that is not a decimal number
	ReasonContentLengthConflict  // 400: Content-Length fields that differ
	ReasonContentLengthWithTE    // 400: Content-Length and Transfer-Encoding together
	ReasonTransferEncoding       // 400: a Transfer-Encoding that does not end in chunked once
	ReasonTransferCoding         // 501: a transfer coding other than chunked
	ReasonTransferEncodingHTTP10 // 400: Transfer-Encoding in an HTTP/1.0 request
	ReasonTrailerField           // 400: a Trailer field announcing a framing field
	ReasonBodyTooLarge           // 413: a body longer than Limits.MaxBody

	// Chunked body.
	ReasonChunkSize         // 400: a chunk-size line that is not HEXDIG[;ext] CRLF
	ReasonChunkLineTooLong  // 400: a chunk-size line of 4096 bytes or more
	ReasonChunkCRLF         // 400: chunk data not followed by CRLF
	ReasonChunkOverhead     // 400: far more framing than data (extension padding)
	ReasonTrailerTooLarge   // 431: a trailer section longer than MaxTrailer
	ReasonTrailerLineEnding // 400: a trailer line not ending in CRLF

	reasonCount
)

var reasonText = [reasonCount]string{
	ReasonRequestLine:            "malformed request line",
	ReasonMethod:                 "invalid method",
	ReasonTarget:                 "invalid request target",
	ReasonTargetForm:             "unsupported request target form",
	ReasonTargetTooLong:          "request target too long",
	ReasonVersion:                "malformed HTTP version",
	ReasonVersionUnsupported:     "unsupported HTTP version",
	ReasonHeadTooLarge:           "request head too large",
	ReasonTooManyFields:          "too many header fields",
	ReasonFieldLine:              "malformed header line",
	ReasonFieldName:              "invalid header name",
	ReasonSpaceBeforeColon:       "whitespace before colon in header",
	ReasonObsFold:                "folded header line",
	ReasonFieldValue:             "invalid header value",
	ReasonHostMissing:            "missing Host header",
	ReasonHostDuplicate:          "duplicate Host header",
	ReasonHostInvalid:            "invalid Host header",
	ReasonContentLength:          "invalid Content-Length",
	ReasonContentLengthConflict:  "conflicting Content-Length headers",
	ReasonContentLengthWithTE:    "Content-Length with Transfer-Encoding",
	ReasonTransferEncoding:       "invalid Transfer-Encoding",
	ReasonTransferCoding:         "unsupported transfer coding",
	ReasonTransferEncodingHTTP10: "Transfer-Encoding in HTTP/1.0",
	ReasonTrailerField:           "Trailer announces a framing field",
	ReasonBodyTooLarge:           "request body too large",
	ReasonChunkSize:              "invalid chunk size line",
	ReasonChunkLineTooLong:       "chunk size line too long",
	ReasonChunkCRLF:              "missing CRLF after chunk data",
	ReasonChunkOverhead:          "too much chunk framing",
	ReasonTrailerTooLarge:        "trailer section too large",
	ReasonTrailerLineEnding:      "trailer line without CRLF",
}

var reasonStatus = [reasonCount]int{
	ReasonTargetTooLong:      414,
	ReasonVersionUnsupported: 505,
	ReasonHeadTooLarge:       431,
	ReasonTooManyFields:      431,
	ReasonTransferCoding:     501,
	ReasonBodyTooLarge:       413,
	ReasonTrailerTooLarge:    431,
}

// String is the reason's text, as in the error.
func (r Reason) String() string {
	if r == 0 || r >= reasonCount {
		return "unknown reason"
	}
	return reasonText[r]
}

// Status is the HTTP status code that answers the reason: 400 unless its
// comment says otherwise.
func (r Reason) Status() int {
	if r == 0 || r >= reasonCount {
		return 400
	}
	if s := reasonStatus[r]; s != 0 {
		return s
	}
	return 400
}

// Err is the reason's error value: always the same *Error, so comparing
// errors, or errors.Is, works.
func (r Reason) Err() *Error {
	if r == 0 || r >= reasonCount {
		r = ReasonRequestLine
	}
	return &errTable[r]
}

// Error is a refusal: the status to answer with, why, and whether the
// connection must close after the answer. Parse and Decode return only
// *Error values, and those from Reason.Err: never modify one.
type Error struct {
	Status int    // 400, 413, 414, 431, 501 or 505
	Reason Reason // why
	// Close: the connection must be closed after the answer. It holds for
	// every error this package returns today: once framing is in doubt,
	// the next byte cannot be trusted to start a message (RFC 9112 §11.2).
	Close bool
	text  string
}

func (e *Error) Error() string { return e.text }

var errTable = func() (t [reasonCount]Error) {
	for r := Reason(1); r < reasonCount; r++ {
		t[r] = Error{Status: r.Status(), Reason: r, Close: true, text: "h1: " + r.String()}
	}
	return t
}()

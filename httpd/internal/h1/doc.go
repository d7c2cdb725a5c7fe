// Package h1 is the wire format of HTTP/1.1 (RFC 9112) for httpd, apart
// from any connection or loop: a request-head parser (Parser), a chunked
// body decoder (ChunkedDecoder) and encoder (AppendChunk,
// AppendLastChunk), and a response-head writer (AppendResponse).
//
// # Zero copy, and how long things live
//
// Nothing here copies the bytes it parses. A Head's method, target,
// fields and host, a ChunkedDecoder's data and trailer fields, are
// sub-slices of the buffer they were parsed from, typically the loop's
// read buffer. They are valid only while that buffer holds the same bytes:
// once the buffer is reused (the next read, a compaction), they show other
// bytes. Whoever keeps a request beyond that copies what it keeps. The
// writers append to a caller's []byte and allocate nothing when it has
// room.
//
// Both parsers take input that may stop anywhere: they answer "need more"
// and, given the same bytes again with more after them, go on where they
// stopped without searching again what they searched, and the outcome does
// not depend on where the input was cut.
//
// # Strictness
//
// A request is accepted only if net/http's http.ReadRequest accepts it
// too; the fuzz tests check it (FuzzParseRequest, FuzzChunked), and for
// every accepted request that the method, target, version, fields, host,
// body framing and keep-alive decision agree. Refusals carry the status
// to answer with (Error); after any of them the connection must close,
// because once the framing of a message is in doubt, so is the start of
// the next one (request smuggling, RFC 9112 §11.2).
//
// Where net/http accepts a message, this package refuses it in these cases
// only, each checked by name in the fuzz test:
//
//   - limits: a head over Limits.MaxHead or with more than MaxFields field
//     lines (431), a target over MaxTarget (414), a Content-Length over
//     MaxBody (413), a trailer section over MaxTrailer (431);
//   - what net/http's server, rather than ReadRequest, refuses: a version
//     other than HTTP/1.x (505), no Host in HTTP/1.1, an invalid Host,
//     whitespace between a field name and its colon (400);
//   - smuggling vectors that net/http resolves instead of refusing
//     (RFC 9112 lets a server refuse them): Content-Length together with
//     Transfer-Encoding (net/http drops the Content-Length),
//     Transfer-Encoding in an HTTP/1.0 request (net/http ignores it; RFC
//     9112 §6.1 calls the framing faulty), and obs-fold, a field line
//     continued on the next (net/http joins them; RFC 9112 §5.2);
//   - request-targets a server has no use for, which a front end may read
//     differently: asterisk-form other than with OPTIONS, authority-form
//     other than host:port with CONNECT (net/http takes even an empty
//     target there), and absolute-form other than http(s)://host[:port]
//     with a plain host (no userinfo, no %-escape);
//   - trailer lines ending in a bare LF (net/http accepts some of them),
//     like the chunk lines, which both refuse.
//
// Bare LF ends the lines of a head, as in net/http (RFC 9112 §2.2 allows
// it), but not the lines of a chunked body, as in net/http (errata 7633).
// Field names, values and Host are checked with golang.org/x/net's
// httpguts, as net/http checks them.
//
// Statuses follow net/http where it answers, except that a
// Transfer-Encoding not ending in chunked, or applying it twice, is 400 as
// RFC 9112 §6.3 requires (net/http says 501), and 501 is kept for codings
// before a final chunked, which this server does not implement.
package h1

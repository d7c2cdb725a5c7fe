package httpd

import (
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Header blocks, read without the Framer's ReadMetaHeaders: the Framer
// hands over HEADERS and CONTINUATION frames as they are, and each
// fragment goes, in arrival order, to the connection's one hpack decoder
// (refused and reset streams too: the dynamic table stays in step). The
// decoder emits into a field slice the connection reuses, and the checks
// are made as the fields are emitted, in the one pass over them.
//
// What x/net/http2's Framer.readMetaFrame does is repeated here, check
// for check and in its order, so that the answers stay the same: a field
// name or value invalid (httpguts), a pseudo-header after a regular field
// (both: a stream PROTOCOL_ERROR at the block's end, a connection one if
// a CONTINUATION follows), a pseudo-header unknown, repeated, or of a
// response (a stream PROTOCOL_ERROR); past SETTINGS_MAX_HEADER_LIST_SIZE
// (Config.MaxHeadBytes) the decoder stops emitting and the block is
// truncated (431), its later fragments still decoded, within split's
// bound on the block, to keep the table in step; before that, a fragment
// of more than twice the budget left ends the connection; HPACK errors
// and a block that ends mid-field are a connection COMPRESSION_ERROR. One
// answer differs: a single field longer than the list truncates the block
// too (431), where x/net's decoder refuses its string and ends the
// connection (initBlock). Why: readMetaFrame allocated a frame, a closure
// with its captured counters and a growing field slice for every block,
// most of a small request's allocations.

// h2block is the header block being read, and the connection's decoder.
// Owned by the loop.
type h2block struct {
	dec    *hpack.Decoder
	fields []hpack.HeaderField // the block's fields as kept, reused from block to block
	max    uint32              // the header list we accept (SETTINGS_MAX_HEADER_LIST_SIZE)

	id        uint32 // the block's stream
	open      bool   // a HEADERS frame without END_HEADERS was read: CONTINUATION follows
	endStream bool   // the HEADERS frame had END_STREAM
	selfDep   bool   // the HEADERS frame's priority names its own stream

	headRemain  uint32 // what the fields may still take of max
	trailRemain uint32 // what "trailer" fields may still take of max
	sawRegular  bool
	invalid     bool // a field was invalid or misplaced: emitting stopped
	badPseudo   bool // a pseudo-header unknown, repeated, or mixing request and response
	truncated   bool // the fields went past max: emitting stopped
	size        int  // the kept fields' names and values, in bytes

	// What the kept fields say, for the request checks (h2CheckRequest).
	pseudo    uint8 // the pseudo-headers seen, by bit (pseudoBit)
	method    string
	path      string
	scheme    string
	authority string
	host      string // the last host field
	hosts     int    // host fields
	proto     string // :protocol
	reqBad    bool   // a field a request may not have (RFC 9113 §8.2.2), or a bad content-length
	clen      int64  // content-length; -1: none
	npseudo   int    // the kept pseudo-headers
}

// Pseudo-header bits in h2block.pseudo.
const (
	pseudoMethod = 1 << iota
	pseudoPath
	pseudoScheme
	pseudoAuthority
	pseudoProtocol
	pseudoStatus
)

// initBlock readies the connection's decoder; max is the header list
// accepted.
//
// A field longer than the whole list is past it like any other: emit
// drops it, the stream is answered 431 and the connection goes on. The
// decoder's own bound on a string could only be answered with the
// connection (ErrStringLength leaves its table out of step: a
// COMPRESSION_ERROR), so it is set past the longest string that a block
// split lets through can decode to (a Huffman code takes 5 bits at
// least): a backstop, never reached. x/net's Framer sets it to the list,
// so that there a field longer than the list ends the connection (its
// list is 1 MiB by default; ours is Config.MaxHeadBytes, 16 KiB). The
// cost: the field that goes past the list is decoded before emit drops
// it (as, past it, the fields the table takes are), garbage at once and
// at most 8/5 of the block's bytes, which are bounded (h2BlockMax) and
// held already; b.fields keeps no more than max.
func (h *h2conn) initBlock(max uint32) {
	b := &h.blk
	b.max = max
	b.dec = hpack.NewDecoder(4096, b.emit)
	b.dec.SetMaxStringLength(h.h2BlockMax() * 8 / 5)
}

// begin starts reading the block of f.
func (b *h2block) begin(f *http2.HeadersFrame) {
	*b = h2block{dec: b.dec, fields: b.fields[:0], max: b.max,
		id: f.StreamID, endStream: f.StreamEnded(), selfDep: f.HasPriority() && f.Priority.StreamDep == f.StreamID,
		headRemain: b.max, trailRemain: b.max, clen: -1}
	b.dec.SetEmitEnabled(true)
}

// emit takes a decoded field: readMetaFrame's checks, then the request's.
func (b *h2block) emit(hf hpack.HeaderField) {
	if !httpguts.ValidHeaderFieldValue(hf.Value) {
		b.invalid = true
	}
	isPseudo := strings.HasPrefix(hf.Name, ":")
	if isPseudo {
		if b.sawRegular {
			b.invalid = true
		}
	} else {
		b.sawRegular = true
		if !validWireName(hf.Name) {
			b.invalid = true
		}
	}
	if b.invalid {
		b.dec.SetEmitEnabled(false)
		return
	}
	remain := &b.headRemain
	var size uint32
	if hf.Name == "trailer" {
		remain = &b.trailRemain
		n := strings.Count(hf.Value, ",") + 1
		size = uint32(len(hf.Value)-n+1) + uint32(n)*hpack.HeaderField{}.Size()
	} else {
		size = hf.Size()
	}
	if size > *remain {
		b.dec.SetEmitEnabled(false)
		b.truncated = true
		b.headRemain, b.trailRemain = 0, 0
		return
	}
	*remain -= size
	b.fields = append(b.fields, hf)
	b.size += len(hf.Name) + len(hf.Value)
	if isPseudo {
		b.npseudo++
		b.notePseudo(hf)
	} else {
		b.noteRegular(hf)
	}
}

// notePseudo records a kept pseudo-header (checkPseudos's checks).
func (b *h2block) notePseudo(hf hpack.HeaderField) {
	var bit uint8
	switch hf.Name {
	case ":method":
		bit, b.method = pseudoMethod, hf.Value
	case ":path":
		bit, b.path = pseudoPath, hf.Value
	case ":scheme":
		bit, b.scheme = pseudoScheme, hf.Value
	case ":authority":
		bit, b.authority = pseudoAuthority, hf.Value
	case ":protocol":
		bit, b.proto = pseudoProtocol, hf.Value
	case ":status":
		bit = pseudoStatus
	default:
		b.badPseudo = true
		return
	}
	if b.pseudo&bit != 0 {
		b.badPseudo = true
	}
	b.pseudo |= bit
	if b.pseudo&pseudoStatus != 0 && b.pseudo != pseudoStatus {
		b.badPseudo = true // a request's and a response's
	}
}

// connectionField reports whether lower, a lowercase field name, is one
// of a connection's, which an HTTP/2 message may not carry (RFC 9113
// §8.2.2) and an interim response neither (Request.Inform).
func connectionField(lower string) bool {
	switch lower {
	case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
		return true
	}
	return false
}

// noteRegular checks a kept regular field as a request's (RFC 9113
// §8.2.2, §8.6).
func (b *h2block) noteRegular(hf hpack.HeaderField) {
	if connectionField(hf.Name) {
		b.reqBad = true
		return
	}
	switch hf.Name {
	case "host":
		b.host = hf.Value
		b.hosts++
	case "te":
		if hf.Value != "trailers" {
			b.reqBad = true
		}
	case "content-length":
		n, err := strconv.ParseInt(hf.Value, 10, 64)
		if err != nil || n < 0 || b.clen >= 0 && n != b.clen {
			b.reqBad = true
		}
		b.clen = n
	}
}

// validWireName is x/net/http2's validWireHeaderFieldName: a token, in
// lowercase.
func validWireName(v string) bool {
	if len(v) == 0 {
		return false
	}
	for _, r := range v {
		if !httpguts.IsTokenRune(r) || 'A' <= r && r <= 'Z' {
			return false
		}
	}
	return true
}

// onHeadersFrame begins a header block.
func (h *h2conn) onHeadersFrame(f *http2.HeadersFrame) {
	h.untimeHead() // split delivers a block whole
	h.blk.begin(f)
	h.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// timeHead puts a connection whose header block split holds, waiting for
// its CONTINUATION frames, under HeaderTimeout, as an HTTP/1.1 head is: a
// block left unfinished holds the connection (and every stream, which
// cannot send meanwhile) that long at most, not IdleTimeout. Only from
// the idle timeout or none (restQ's HeaderTimeout already bounds the
// block; the split after the SETTINGS comes back here): a connection
// being ended keeps its own bound.
func (h *h2conn) timeHead() {
	hc := h.hc
	if h.headTimed || h.goaway || h.dead || h.closed {
		return
	}
	if in := hc.links[linkTime].in; in == nil || in == &h.ls.idleQ {
		h.headTimed = true
		hc.setTimeout(&h.ls.headQ)
	}
}

// untimeHead ends timeHead's bound once the block is whole (untimeRest).
func (h *h2conn) untimeHead() {
	if !h.headTimed {
		return
	}
	h.headTimed = false
	h.untimeRest()
}

// untimeSettings ends restQ's HeaderTimeout once the client's first
// SETTINGS have arrived, unless a header block still holds it (then
// untimeHead ends it).
func (h *h2conn) untimeSettings() {
	if !h.headTimed {
		h.untimeRest()
	}
}

// untimeRest ends a HeaderTimeout that bounded the connection: back to
// restQ if it has no stream or a stalled one, else none (as onHeaders
// leaves it for a new stream).
func (h *h2conn) untimeRest() {
	if h.hc.links[linkTime].in != &h.ls.headQ || h.dead || h.closed {
		return // (after a final GOAWAY with streams open, none is right: they finish)
	}
	if len(h.streams) == 0 || h.lim.stalled {
		h.hc.setTimeout(h.restQ())
	} else {
		h.hc.setTimeout(nil)
	}
}

// onContinuation goes on with the block (the Framer has checked that one
// is open, and on this stream).
func (h *h2conn) onContinuation(f *http2.ContinuationFrame) {
	h.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// fragment decodes a fragment of the block; at its end (ended), the
// block goes to onHeaders.
func (h *h2conn) fragment(frag []byte, ended bool) {
	b := &h.blk
	b.open = !ended
	// A truncated block is still decoded to its end, to keep the table in
	// step (its 431 is the stream's, not the connection's): its raw bytes
	// are bounded by split (h2BlockMax), and the decoder emits nothing more.
	if !b.truncated && int64(len(frag)) > 2*int64(b.headRemain+b.trailRemain) || b.invalid {
		b.open = false
		h.fail(http2.ErrCodeProtocol) // far past the list we accept, or more after an invalid field
		return
	}
	if _, err := b.dec.Write(frag); err != nil {
		b.open = false
		h.fail(http2.ErrCodeCompression)
		return
	}
	if !ended {
		return
	}
	defer b.done()
	if err := b.dec.Close(); err != nil {
		h.fail(http2.ErrCodeCompression) // the block ended within a field
		return
	}
	if b.invalid || b.badPseudo {
		h.readError(http2.StreamError{StreamID: b.id, Code: http2.ErrCodeProtocol})
		return
	}
	h.onHeaders(b)
}

// done lets go of the block's strings: an idle connection pins none.
func (b *h2block) done() {
	clear(b.fields)
	b.fields = b.fields[:0]
	b.method, b.path, b.scheme, b.authority, b.host, b.proto = "", "", "", "", "", ""
}

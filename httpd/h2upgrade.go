package httpd

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"

	"github.com/valkyria/aio/httpd/internal/h1"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
)

// Upgrade: h2c (RFC 7540 §3.2; RFC 9113 dropped it, but curl --http2 and
// others still use it), when Config.H2CUpgrade allows it. An HTTP/1.1
// request that asks for it, with its
// body (if any) whole in its arena, is answered "101 Switching Protocols"
// and becomes stream 1 (half-closed remote) of a new HTTP/2 connection:
// the server's SETTINGS follow the 101 at once, the request's handler
// runs, and the client's preface is expected next on the wire.
//
// What is not upgraded is served as plain HTTP/1.1, as RFC 9110 §7.8
// allows (a server may ignore Upgrade): a request whose HTTP2-Settings is
// missing, repeated or invalid, one that does not list both "Upgrade" and
// "HTTP2-Settings" in Connection, an HTTP/1.0 one, one with a body larger
// than its arena buffers (net/http's h2c refuses one it cannot buffer; we
// answer it in HTTP/1.1 instead), one behind pipelined requests, and any
// on a connection that is closing. The upgraded Request keeps the head it
// came with (Proto "HTTP/1.1").

// h2UpgradeResponse is the whole 101 response.
const h2UpgradeResponse = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"

// errBadPreface: after a 101 to h2c, or over TLS after ALPN chose h2,
// the client did not send the HTTP/2 preface first.
var errBadPreface = errors.New("httpd: no HTTP/2 client preface")

// upgradeH2 upgrades the connection if r, just read and the only request
// in the queue, asks for h2c and can have it, and serves r as stream 1;
// false leaves r to HTTP/1.1. On the loop, from dispatch.
func (hc *h1conn) upgradeH2(r *Request) bool {
	if !r.upgrade {
		return false // the common case, decided at once (dispatch looked)
	}
	if _, ok := r.head.Get("Upgrade"); !ok {
		return false // a CONNECT
	}
	if _, tls := hc.tlsState(); tls || !hc.ls.cfg.H2CUpgrade { // h2c is for cleartext (RFC 7540 §3.2)
		return false
	}
	if hc.h2 != nil || hc.nq != 1 || hc.qhead != r || hc.cur != nil || !r.body.buffered ||
		hc.closeAft || r.closeAf || hc.ls.draining || r.head.Minor == 0 {
		return false
	}
	settings, ok := h2UpgradeSettings(&r.head)
	if !ok {
		return false
	}
	hc.qhead, hc.qtail, hc.nq = nil, nil, 0 // r is HTTP/2's now
	_, _ = hc.c.WriteString(h2UpgradeResponse)
	h := hc.startH2()
	h.preface = true
	_ = h.applySettings(func(apply func(http2.Setting) error) error { // valid: checked above
		for _, s := range settings {
			_ = apply(s)
		}
		return nil
	})
	h.openUpgraded(r)
	return true
}

// h2UpgradeSettings returns the settings of an h2c upgrade request: false
// when head does not ask for one, or asks for it wrongly.
func h2UpgradeSettings(head *h1.Head) ([]http2.Setting, bool) {
	if !headHasToken(head, "Upgrade", "h2c") || !headHasToken(head, "Connection", "upgrade") ||
		!headHasToken(head, "Connection", "http2-settings") {
		return nil, false
	}
	var enc []byte
	n := 0
	for v := range head.Values("HTTP2-Settings") {
		enc = v
		n++
	}
	if n != 1 {
		return nil, false
	}
	// token68 in base64url; padding is not expected, but tolerated.
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(bytesStr(enc), "="))
	if err != nil || len(payload)%6 != 0 {
		return nil, false
	}
	settings := make([]http2.Setting, 0, len(payload)/6)
	for p := payload; len(p) > 0; p = p[6:] {
		s := http2.Setting{ID: http2.SettingID(binary.BigEndian.Uint16(p)), Val: binary.BigEndian.Uint32(p[2:])}
		if s.Valid() != nil {
			return nil, false
		}
		settings = append(settings, s)
	}
	return settings, true
}

// headHasToken reports whether a comma-separated field called name of head
// lists token (ASCII case-insensitive).
func headHasToken(head *h1.Head, name, token string) bool {
	for v := range head.Values(name) {
		if httpguts.HeaderValuesContainsToken([]string{bytesStr(v)}, token) {
			return true
		}
	}
	return false
}

// openUpgraded makes r, the upgraded request, stream 1, half-closed
// (remote): its body, if any, is in its arena. Its handler runs at once.
func (h *h2conn) openUpgraded(r *Request) {
	r.eng = h
	st := h.ls.newH2Stream() // from the loop's pool, as onHeaders takes one
	*st = h2stream{id: 1, r: r, clen: -1, sendWin: h.peerInit, recvWin: h2StreamWindow, remoteDone: true}
	h.lastID = 1
	h.streams[1] = st
	h.open++
	r.h2s = st
	h.hc.setTimeout(nil)
	h.dispatch(st)
	h.flush()
}

package h1

import (
	"bytes"
	"net/netip"
)

// target is where the parts of a checked request-target lie, as offsets
// from the start of the buffer.
type target struct {
	form           TargetForm
	pathLo, pathHi int
	queryLo        int // the byte after '?'; -1 when there is none
	hostLo, hostHi int // the authority; hostLo is -1 when there is none
}

// checkTarget classifies the request-target t, which starts at offset off,
// and checks it (RFC 9112 §3.2). It takes every origin-form target that
// net/url.ParseRequestURI takes (any byte but controls and space, and
// well-formed %-escapes in the path), and of the other forms only those a
// server has a use for, written plainly:
//
//   - asterisk-form only with OPTIONS;
//   - authority-form only with CONNECT, with a port;
//   - absolute-form only with the http and https schemes, a non-empty
//     host, no userinfo, and no %-escape in the host (RFC 9110 §4.2.1
//     and §4.2.4 deprecate or forbid the rest).
//
// The host of the last two is what Head.Host reports, as net/http's
// Request.Host does, so it must need no unescaping.
func checkTarget(method, t []byte, off int) (target, Reason) {
	tg := target{queryLo: -1, hostLo: -1}
	switch {
	case t[0] == '/':
		tg.form = FormOrigin
		return tg, tg.pathQuery(t, off, 0)
	case len(t) == 1 && t[0] == '*':
		if string(method) != "OPTIONS" {
			return tg, ReasonTargetForm
		}
		tg.form, tg.pathLo, tg.pathHi = FormAsterisk, off, off+1
		return tg, 0
	case string(method) == "CONNECT":
		if !validAuthority(t, true) {
			return tg, ReasonTargetForm
		}
		tg.form, tg.hostLo, tg.hostHi = FormAuthority, off, off+len(t)
		tg.pathLo, tg.pathHi = off, off
		return tg, 0
	}
	var i int
	switch {
	case hasPrefixFold(t, "http://"):
		i = len("http://")
	case hasPrefixFold(t, "https://"):
		i = len("https://")
	default:
		return tg, ReasonTargetForm
	}
	j := i
	for j < len(t) && t[j] != '/' && t[j] != '?' {
		j++
	}
	if !validAuthority(t[i:j], false) {
		return tg, ReasonTargetForm
	}
	tg.form, tg.hostLo, tg.hostHi = FormAbsolute, off+i, off+j
	return tg, tg.pathQuery(t, off, j)
}

// CheckPath checks an HTTP/2 :path (RFC 9113 §8.3.1) as checkTarget
// checks an HTTP/1.1 request-target, in the forms HTTP/2 has for it: an
// origin-form target, or "*" with OPTIONS. Its bytes are those a request
// line carries (no control byte, no space) and its %-escapes are well
// formed, so that the same target is taken or refused over both
// protocols. It returns 0 when path is taken.
func CheckPath(method, path []byte) Reason {
	switch {
	case len(path) == 1 && path[0] == '*':
		if string(method) != "OPTIONS" {
			return ReasonTargetForm
		}
		return 0
	case len(path) == 0 || path[0] != '/':
		return ReasonTargetForm
	}
	for _, c := range path {
		if c <= ' ' || c == 0x7f {
			return ReasonTarget
		}
	}
	var tg target
	return tg.pathQuery(path, 0, 0)
}

// CheckAuthority checks an HTTP/2 CONNECT's :authority (RFC 9113 §8.5) as
// checkTarget checks an HTTP/1.1 CONNECT's authority-form target: host and
// port, the host a reg-name without %-escapes or an IPv6 literal, no
// userinfo. It returns 0 when a is taken.
func CheckAuthority(a []byte) Reason {
	if !validAuthority(a, true) {
		return ReasonTargetForm
	}
	return 0
}

// pathQuery records the path, t[from:] up to the first '?', and the query
// after it; the path's %-escapes must be well formed, as net/url wants.
//
// One pass finds the '?' and checks the escapes before it: '?' is not a
// hex digit, so an escape cut by it is refused as one cut by the end.
func (tg *target) pathQuery(t []byte, off, from int) Reason {
	p := t[from:]
	n := len(p)
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return ReasonTarget
			}
			i += 2
		case '?':
			tg.queryLo = off + from + i + 1
			n = i
			i = len(p) // the query is not the path's
		}
	}
	tg.pathLo, tg.pathHi = off+from, off+from+n
	return 0
}

// validAuthority reports whether a is host [":" port] with host a
// reg-name without %-escapes or an IPv6 literal (RFC 3986 §3.2.2), and
// port digits (one at least if needPort).
func validAuthority(a []byte, needPort bool) bool {
	var port []byte
	if len(a) > 0 && a[0] == '[' {
		k := bytes.IndexByte(a, ']')
		if k < 2 {
			return false
		}
		ip := a[1:k]
		for _, c := range ip {
			if !isHex(c) && c != ':' && c != '.' {
				return false // no zone: it would need %25
			}
		}
		addr, err := netip.ParseAddr(str(ip))
		if err != nil || addr.Is4() {
			return false
		}
		port = a[k+1:]
	} else {
		k := bytes.IndexByte(a, ':')
		if k < 0 {
			k = len(a)
		}
		if k == 0 {
			return false
		}
		for _, c := range a[:k] {
			if !regName[c] {
				return false
			}
		}
		port = a[k:]
	}
	if len(port) == 0 {
		return !needPort
	}
	if port[0] != ':' || needPort && len(port) == 1 {
		return false
	}
	for _, c := range port[1:] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// regName holds the bytes of a reg-name without pct-encoded: unreserved
// and sub-delims (RFC 3986 §3.2.2).
var regName = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=") {
		t[c] = true
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && EqualFold(b[:len(prefix)], prefix)
}

package route

import "bytes"

// The byte-level helpers of matching: net/url's escaping as net/http
// applies it to a request's path, path cleaning, and the host's port. Each
// appends to a caller's buffer or returns a sub-slice, so that a request
// that needs no rewriting costs no copy.

// Byte classes, from net/url (encoding_table.go and validEncoded).
const (
	// keepInPath: escape with net/url's encodePath mode (URL.EscapedPath)
	// leaves the byte as it is.
	keepInPath = 1 << iota
	// rawInPath: validEncoded accepts the byte in a raw path, so that
	// URL.EscapedPath returns the raw path as sent.
	rawInPath
	// hexDigit: 0-9, a-f, A-F.
	hexDigit
)

var byteClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] |= keepInPath | rawInPath | hexDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] |= keepInPath | rawInPath
		t[c-'a'+'A'] |= keepInPath | rawInPath
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= hexDigit
		t[c-'a'+'A'] |= hexDigit
	}
	for _, c := range []byte("-_.~$&+,/:;=@") {
		t[c] |= keepInPath | rawInPath
	}
	for _, c := range []byte("!'()*[]%") {
		t[c] |= rawInPath
	}
	return t
}()

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// validEscapes reports whether every '%' in b starts a %XX escape, as
// url.PathUnescape wants.
func validEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] == '%' {
			if i+2 >= len(b) || byteClass[b[i+1]]&hexDigit == 0 || byteClass[b[i+2]]&hexDigit == 0 {
				return false
			}
			i += 2
		}
	}
	return true
}

// appendUnescaped appends b to dst with its %XX escapes decoded; b's
// escapes must be valid.
func appendUnescaped(dst, b []byte) []byte {
	for i := 0; i < len(b); i++ {
		if c := b[i]; c != '%' {
			dst = append(dst, c)
		} else {
			dst = append(dst, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
		}
	}
	return dst
}

// appendEscaped appends b to dst escaped as URL.EscapedPath escapes a
// path it must write itself: every byte but the unreserved ones,
// "$&+,/:;=@", as %XX in upper case.
func appendEscaped(dst, b []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range b {
		if byteClass[c]&keepInPath != 0 {
			dst = append(dst, c)
		} else {
			dst = append(dst, '%', hex[c>>4], hex[c&15])
		}
	}
	return dst
}

// scanPath looks at a request's path once and tells:
//
//   - canonical: whether it is what net/http matches for it, the path of
//     URL.EscapedPath: true when it has only the bytes validEncoded
//     accepts raw, or when its escapes are invalid (a request net/url
//     refuses; matched as it is). Otherwise EscapedPath is the path
//     unescaped and escaped again, which appendCanonical writes;
//   - escapes: whether it has a '%', so that segments may need unescaping;
//   - clean: whether cleanPath would return it unchanged: it starts with
//     '/' and has no empty, "." or ".." segment but for an empty last one
//     (a trailing slash).
func scanPath(p []byte) (canonical, escapes, clean bool) {
	canonical, clean = true, len(p) > 0 && p[0] == '/'
	seg := 1 // where the current segment starts
	for i := 1; i < len(p); i++ {
		c := p[i]
		if byteClass[c]&rawInPath == 0 {
			canonical = false
		}
		switch c {
		case '%':
			escapes = true
		case '/':
			if s := p[seg:i]; len(s) == 0 || isDots(s) {
				clean = false
			}
			seg = i + 1
		}
	}
	if len(p) > 0 {
		if byteClass[p[0]]&rawInPath == 0 {
			canonical = false
		}
		escapes = escapes || p[0] == '%'
		if seg < len(p) && isDots(p[seg:]) {
			clean = false
		}
	}
	if !canonical && escapes && !validEscapes(p) {
		canonical = true
	}
	return canonical, escapes, clean
}

// isDots reports whether s is "." or "..".
func isDots(s []byte) bool {
	return len(s) == 1 && s[0] == '.' || len(s) == 2 && s[0] == '.' && s[1] == '.'
}

// unescapable reports whether s has %-escapes, all of them valid: whether
// net/http unescapes it.
func unescapable(s []byte) bool {
	i := bytes.IndexByte(s, '%')
	return i >= 0 && validEscapes(s[i:])
}

// appendCanonical appends URL.EscapedPath of path, for a path that is not
// canonical. This decodes escapes the raw path had ("%2F" becomes a
// separator), as net/http does.
func appendCanonical(dst, path []byte) []byte {
	start := len(dst)
	dst = appendUnescaped(dst, path)
	n := len(dst)
	dst = appendEscaped(dst, dst[start:n])
	return append(dst[:start], dst[n:]...)
}

// cleanPath appends net/http's cleanPath of p to dst: p rooted, then
// path.Clean'ed (no empty, "." or ".." segment), keeping a trailing slash.
func cleanPath(dst, p []byte) []byte {
	start := len(dst)
	dst = append(dst, '/')
	for i := 0; i < len(p); {
		j := bytes.IndexByte(p[i:], '/')
		if j < 0 {
			j = len(p) - i
		}
		seg := p[i : i+j]
		i += j + 1
		switch {
		case len(seg) == 0 || len(seg) == 1 && seg[0] == '.':
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			k := bytes.LastIndexByte(dst[start:], '/')
			dst = dst[:start+max(k, 1)]
		default:
			if len(dst) > start+1 {
				dst = append(dst, '/')
			}
			dst = append(dst, seg...)
		}
	}
	if len(p) > 0 && p[len(p)-1] == '/' && len(dst) > start+1 {
		dst = append(dst, '/')
	}
	return dst
}

// stripHostPort returns host without a ":port", as net/http's
// stripHostPort does with net.SplitHostPort: unchanged when that fails
// (no port, too many colons, stray brackets), the address without its
// brackets for "[v6]:port".
func stripHostPort(h []byte) []byte {
	i := bytes.LastIndexByte(h, ':')
	if i < 0 {
		return h
	}
	var host []byte
	j, k := 0, 0
	if h[0] == '[' {
		end := bytes.IndexByte(h, ']')
		if end+1 != i { // no ']', or not just before the last ':'
			return h
		}
		host, j, k = h[1:end], 1, end+1
	} else {
		host = h[:i]
		if bytes.IndexByte(host, ':') >= 0 {
			return h
		}
	}
	if bytes.IndexByte(h[j:], '[') >= 0 || bytes.IndexByte(h[k:], ']') >= 0 {
		return h
	}
	return host
}

package route

// inlineParams is how many wildcard values a Params holds without a slice
// of its own.
const inlineParams = 8

// Params is what Match found beside the handler: the pattern, the values
// of its wildcards, or the target of a redirect, or the Allow list of a
// 405. The caller owns it and passes the same one to Match again and
// again (one per connection or per loop, say): each Match resets it.
//
// A value is a sub-slice of the path given to Match when it needed no
// rewriting, else it lies in the Params' own buffer (see Match). Either
// way it is valid until the next Match with this Params, and while the
// path's bytes are unchanged. Copy what must live longer.
//
// A Params allocates only to grow: its buffer, when a request needs more
// room than any before it, and its value list beyond 8 wildcards. A
// Params reused across requests soon allocates nothing. The zero Params
// is ready for use. One goroutine at a time.
type Params struct {
	pattern string
	names   []string // the matched pattern's wildcard names, shared with it
	n       int      // values held: inline first, then more
	inline  [inlineParams][]byte
	more    [][]byte

	redirect []byte // Redirect: the target path, in buf
	allow    []byte // MethodNotAllowed: the Allow list, in buf

	buf []byte // unescaped values, rewritten paths, redirect, allow
}

func (p *Params) reset() {
	p.pattern, p.names, p.n = "", nil, 0
	p.redirect, p.allow = nil, nil
	p.buf = p.buf[:0]
}

func (p *Params) push(v []byte) {
	switch i := p.n - inlineParams; {
	case i < 0:
		p.inline[p.n] = v
	case i < len(p.more):
		p.more[i] = v
	default:
		p.more = append(p.more, v)
	}
	p.n++
}

// Pattern returns the pattern that matched, as registered, when Match
// answered Found, else "".
func (p *Params) Pattern() string { return p.pattern }

// Len returns the number of wildcard values: those of the pattern's named
// wildcards (a trailing slash is anonymous), 0 unless Match answered
// Found.
func (p *Params) Len() int {
	if p.pattern == "" {
		return 0
	}
	return p.n
}

// Name returns the name of the i-th wildcard of the pattern, in the
// order they appear in it, 0 <= i < Len().
func (p *Params) Name(i int) string { return p.names[i] }

// Value returns the value of the i-th wildcard, 0 <= i < Len(): the
// unescaped path segment a {name} matched, or the unescaped rest of the
// path (without its first '/', maybe empty) a {name...} matched.
func (p *Params) Value(i int) []byte {
	if i >= p.Len() {
		panic("route: Params.Value: index out of range")
	}
	if i < inlineParams {
		return p.inline[i]
	}
	return p.more[i-inlineParams]
}

// Get returns the value of the wildcard called name, and whether the
// pattern has one (net/http's Request.PathValue).
func (p *Params) Get(name string) ([]byte, bool) {
	for i := 0; i < p.Len(); i++ {
		if p.names[i] == name {
			return p.Value(i), true
		}
	}
	return nil, false
}

// Redirect returns, when Match answered Redirect, the path to redirect to
// (Location, with the request's query appended after a '?' if it had
// one), %-escaped as the request's path was; else nil.
func (p *Params) Redirect() []byte { return p.redirect }

// Allow returns, when Match answered MethodNotAllowed, the methods the
// path allows, sorted and comma-separated ("GET, HEAD, POST"), for the
// Allow field of the 405; else nil.
func (p *Params) Allow() []byte { return p.allow }

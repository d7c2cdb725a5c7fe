package route

import (
	"errors"
	"fmt"
	"slices"
)

// Kind is the outcome of Match.
type Kind uint8

const (
	// Found: a pattern matched; the handler is returned, the pattern and
	// its wildcard values are in the Params.
	Found Kind = iota
	// NotFound: no pattern matches the path (404).
	NotFound
	// MethodNotAllowed: patterns match the path but not the method (405);
	// Params.Allow lists the methods they take.
	MethodNotAllowed
	// Redirect: the request is to be sent elsewhere (307, ServeMux's
	// status since Go 1.26, which keeps the method and body; it was 301
	// before, golang/go#77741); Params.Redirect is the
	// target. Either the path was not clean ("//a/../b" goes to "/b"), or
	// only a subtree pattern matches it with a slash added ("/images" goes
	// to "/images/" when "/images/" is registered and "/images" is not).
	Redirect
	// BadRequest: the target "*" (400), which net/http's ServeMux refuses;
	// a server answers "OPTIONS *" itself, before routing.
	BadRequest
)

var kindNames = [...]string{"Found", "NotFound", "MethodNotAllowed", "Redirect", "BadRequest"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Status returns the status net/http's ServeMux answers with for k: 404,
// 405, 307, 400; 0 for Found, where the handler answers.
func (k Kind) Status() int {
	switch k {
	case NotFound:
		return 404
	case MethodNotAllowed:
		return 405
	case Redirect:
		return 307
	case BadRequest:
		return 400
	}
	return 0
}

// Router maps requests to handlers of type H by Go 1.22 ServeMux
// patterns (see the package documentation).
//
// Handle registers; Match looks up. All Handle calls must happen before
// the Router is shared: Match may then be called from any goroutines at
// once (it only reads), Handle not at all. The zero Router is empty and
// ready for use.
type Router[H any] struct {
	table
	handlers []H // by leaf.h
}

// Handle registers h for pattern. It returns an error, and registers
// nothing, where ServeMux.Handle panics: when pattern is not valid
// ("parsing ...: at offset N: ...") or when it conflicts with a pattern
// already registered ("pattern ... conflicts with pattern ...", and why):
// some request would match both and neither is more specific, nor has a
// host where the other has none.
//
// Before the Router is shared, from one goroutine.
func (r *Router[H]) Handle(pattern string, h H) error {
	if err := r.table.add(pattern, len(r.handlers)); err != nil {
		return err
	}
	r.handlers = append(r.handlers, h)
	return nil
}

// Match looks up the handler for a request: method as sent (matched
// case-sensitively), host the Host field or the target's authority (a
// port is ignored, as ServeMux ignores it, except with CONNECT), path the
// request's path still %-escaped (h1.Head.Path, ":path" without its
// query). It fills p and returns the handler and Found, or the zero H and
// why not: see Kind.
//
// Match allocates nothing unless p's buffer must grow (see Params). It
// uses the buffer for the wildcard values that need unescaping (a segment
// with %-escapes), for the path when it must be rewritten to be matched
// (bytes that net/url would escape, like '{', '"' or UTF-8; an unclean
// path; see the package documentation), and for the Redirect target and
// the Allow list.
//
// Any goroutine, once the patterns are registered; p is the caller's.
func (r *Router[H]) Match(method, host, path []byte, p *Params) (h H, kind Kind) {
	l, kind := r.table.match(method, host, path, p)
	if l != nil {
		h = r.handlers[l.h]
	}
	return h, kind
}

// table is the Router without its handlers, so that matching is not
// generic code.
type table struct {
	hosts  keyed[*methods] // patterns with a host, by host
	noHost methods         // patterns without a host
	idx    index           // for the conflict check
	// allowed are the methods named by some pattern, sorted, with HEAD
	// if GET is one: the candidates of an Allow list.
	allowed []string
}

func (t *table) add(s string, h int) error {
	if s == "" {
		return errors.New("parsing \"\": empty pattern")
	}
	pat, err := parsePattern(s)
	if err != nil {
		return fmt.Errorf("parsing %q: %w", s, err)
	}
	if err := t.idx.candidates(pat, func(q *pattern) error {
		if pat.conflictsWith(q) {
			return fmt.Errorf("pattern %q conflicts with pattern %q:\n%s", pat, q, describeConflict(pat, q))
		}
		return nil
	}); err != nil {
		return err
	}
	ms := &t.noHost
	if pat.host != "" {
		ms = t.hosts.make(pat.host, func() *methods { return &methods{} })
	}
	root, l := ms.root(pat.method), newLeaf(pat, h)
	root.add(pat.segments, l)
	if path, ok := exactPath(pat.segments); ok && pat.host == "" && pat.method != "" {
		if root.exact == nil {
			root.exact = &exactTable{}
		}
		root.exact.add(path, l)
	}
	t.idx.add(pat)
	if pat.method != "" {
		t.addAllowed(pat.method)
	}
	if pat.method == "GET" {
		t.addAllowed("HEAD")
	}
	return nil
}

func (t *table) addAllowed(m string) {
	if !slices.Contains(t.allowed, m) {
		t.allowed = append(t.allowed, m)
		slices.Sort(t.allowed)
	}
}

// lookup matches host, method and path (path+"/" with slash): the host's
// patterns first, then those without a host (net/http's routingNode.match).
func (t *table) lookup(w *walk, host, method, path []byte, slash bool) *leaf {
	if len(host) > 0 {
		if l := w.inHost(t.hosts.get(host), method, path, slash); l != nil {
			return l
		}
	}
	return w.inHost(&t.noHost, method, path, slash)
}

// match is Match, net/http's ServeMux.findHandler step by step.
func (t *table) match(method, host, path []byte, p *Params) (*leaf, Kind) {
	p.reset()
	if len(path) == 1 && path[0] == '*' {
		return nil, BadRequest
	}
	// ServeMux matches URL.EscapedPath, which is the path as sent unless
	// it has bytes to escape.
	canon, escapes, clean := scanPath(path)
	if !canon {
		p.buf = appendCanonical(p.buf, path)
		path = p.buf
		_, escapes, clean = scanPath(path)
	}
	if string(method) == "CONNECT" {
		return t.matchConnect(method, host, path, escapes, p)
	}
	if len(t.hosts.keys) > 0 { // else no host is looked at
		host = stripHostPort(host)
	}
	if canon && clean && !escapes && t.hostMethods(host) == nil {
		if l := t.exactMatch(method, path); l != nil {
			p.pattern, p.names = l.pat.str, l.pat.names
			return l, Found
		}
	}
	if !clean {
		start := len(p.buf)
		p.buf = cleanPath(p.buf, path)
		path = p.buf[start:]
	}
	w := walk{p: p, escapes: escapes, collect: clean}
	l := t.lookup(&w, host, method, path, false)
	// No exact match: if the path with a slash added matches exactly, the
	// subtree root without its slash was asked for.
	if !exact(l, path, false) && path[len(path)-1] != '/' {
		probe := walk{p: p, escapes: escapes}
		if exact(t.lookup(&probe, host, method, path, true), path, true) {
			return nil, p.setRedirect(path, true)
		}
	}
	if !clean {
		return nil, p.setRedirect(path, false)
	}
	if l == nil {
		return nil, t.notMatched(host, path, escapes, p)
	}
	p.pattern, p.names = l.pat.str, l.pat.names
	return l, Found
}

// exactMatch is the answer of lookup, without a walk, for a request
// whose host has no patterns and whose path is canonical, clean and has
// no '%': the pattern of method made of literal segments only whose path
// is path, if there is one. The walk tries literal children first at
// every level, so it would reach that pattern's leaf before anything
// else, and an exact match is neither redirected nor refused.
func (t *table) exactMatch(method, path []byte) *leaf {
	root := t.noHost.named.get(method)
	if root == nil || root.exact == nil {
		return nil
	}
	return root.exact.get(path)
}

// matchConnect is match for CONNECT, whose path net/http neither cleans
// nor redirects when unclean, and whose host keeps its port. Only the
// trailing-slash redirect applies. It and the Allow list are looked up
// with the host of the target (URL.Host), not the request's: an
// authority-form target is its host (and has no path), an origin-form
// one has none.
func (t *table) matchConnect(method, host, path []byte, escapes bool, p *Params) (*leaf, Kind) {
	var urlHost []byte
	if len(path) == 0 {
		urlHost = host
	}
	if len(path) > 0 && path[len(path)-1] != '/' {
		probe := walk{p: p, escapes: escapes}
		if !exact(t.lookup(&probe, urlHost, method, path, false), path, false) &&
			exact(t.lookup(&probe, urlHost, method, path, true), path, true) {
			// The target is cleaned, as net/http's Redirect cleans it.
			start := len(p.buf)
			p.buf = cleanPath(p.buf, path)
			return nil, p.setRedirect(p.buf[start:], p.buf[len(p.buf)-1] != '/')
		}
	}
	w := walk{p: p, escapes: escapes, collect: true}
	l := t.lookup(&w, host, method, path, false)
	if l == nil {
		return nil, t.notMatched(urlHost, path, escapes, p)
	}
	p.pattern, p.names = l.pat.str, l.pat.names
	return l, Found
}

// setRedirect records target (plus a slash) as the Redirect target.
func (p *Params) setRedirect(target []byte, slash bool) Kind {
	start := len(p.buf)
	p.buf = append(p.buf, target...)
	if slash {
		p.buf = append(p.buf, '/')
	}
	p.redirect = p.buf[start:]
	p.n = 0
	return Redirect
}

// notMatched tells a 405 from a 404: the methods with a pattern matching
// the path, or the path with a slash added as the redirect would (net/
// http's matchingMethods). A pattern without a method would have matched,
// so only named methods count.
func (t *table) notMatched(host, path []byte, escapes bool, p *Params) Kind {
	start := len(p.buf)
	probe := walk{p: p, escapes: escapes}
	get := false
	for _, m := range t.allowed {
		ok := m == "HEAD" && get
		mark := len(p.buf)
		for _, ms := range [2]*methods{t.hostMethods(host), &t.noHost} {
			if ok || ms == nil {
				continue
			}
			n := ms.named.get([]byte(m))
			ok = probe.path(n, path, false) != nil ||
				(len(path) == 0 || path[len(path)-1] != '/') && probe.path(n, path, true) != nil
		}
		p.buf = p.buf[:mark] // what a match unescaped into it
		if !ok {
			continue
		}
		get = get || m == "GET"
		if len(p.buf) > start {
			p.buf = append(p.buf, ", "...)
		}
		p.buf = append(p.buf, m...)
	}
	if len(p.buf) == start {
		return NotFound
	}
	p.allow = p.buf[start:]
	return MethodNotAllowed
}

func (t *table) hostMethods(host []byte) *methods {
	if len(host) == 0 {
		return nil
	}
	return t.hosts.get(host)
}

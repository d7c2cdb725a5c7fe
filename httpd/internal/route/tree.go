package route

import (
	"bytes"
	"strings"
)

// The decision tree, net/http's routingNode made to walk byte slices
// without allocating: hosts, then methods, then one level per path
// segment. A request tries the literal child of a segment first, then the
// single wildcard, then the multi wildcard, backtracking when a branch
// fails deeper down: with no conflicting patterns registered, the first
// pattern reached this way is the most specific one that matches.

// node is one level of the path part of the tree. Immutable while
// requests are matched.
type node struct {
	leaf  *leaf        // the pattern whose last segment ends here, or nil
	lits  keyed[*node] // literal children, by unescaped segment; "/" is the trailing slash of "{$}"
	wild  *node        // the child through a single wildcard
	multi *leaf        // the pattern ending in a multi wildcard here
	// exact, on a method's root, are the patterns of literal segments
	// only under it, by their path (exactPath).
	exact *exactTable
}

// exactTable holds leaves by the path their literal segments match, in
// buckets by a cheap hash of the path, its length and last byte: a
// server's paths are short, and a map's hash of one costs more than the
// walk it would save.
type exactTable struct {
	buckets [64][]exactEntry
}

type exactEntry struct {
	path string
	l    *leaf
}

func exactBucket(path []byte) int {
	return (len(path)*7 + int(path[len(path)-1])) & 63
}

func (t *exactTable) add(path string, l *leaf) {
	b := &t.buckets[exactBucket([]byte(path))]
	*b = append(*b, exactEntry{path, l})
}

// get returns the leaf of path, nil if none; path is not empty.
func (t *exactTable) get(path []byte) *leaf {
	for _, e := range t.buckets[exactBucket(path)] {
		if e.path == string(path) {
			return e.l
		}
	}
	return nil
}

// leaf is a registered pattern and its handler's index in the Router.
type leaf struct {
	pat   *pattern
	h     int
	multi bool // pat ends in a multi wildcard (or a trailing slash)
	named bool // ... which has a name
	segs  int  // len(pat.segments)
}

func newLeaf(p *pattern, h int) *leaf {
	last := p.lastSegment()
	return &leaf{pat: p, h: h, multi: last.multi, named: last.multi && last.s != "", segs: len(p.segments)}
}

// add puts p's segments under n, making nodes as needed. The caller has
// checked that p conflicts with nothing, so its leaf is free.
func (n *node) add(segs []segment, l *leaf) {
	for _, seg := range segs {
		switch {
		case seg.multi:
			n.multi = l
			return
		case seg.wild:
			if n.wild == nil {
				n.wild = &node{}
			}
			n = n.wild
		default:
			n = n.lits.make(seg.s, func() *node { return &node{} })
		}
	}
	n.leaf = l
}

// exactPath returns the path of a request that the segments segs match
// through their literals alone, and whether there is one: not when a
// segment is a wildcard, or has a '/' in it but for the trailing slash
// of "{$}" (a "%2F" in the pattern).
func exactPath(segs []segment) (string, bool) {
	b := make([]byte, 0, 64)
	for i, seg := range segs {
		switch {
		case seg.wild:
			return "", false
		case seg.s == "/" && i == len(segs)-1:
			b = append(b, '/')
		case strings.IndexByte(seg.s, '/') >= 0:
			return "", false
		default:
			b = append(b, '/')
			b = append(b, seg.s...)
		}
	}
	return string(b), true
}

// keyed is a level of the tree: hosts, methods or literal segments, each
// leading to the next level.
type keyed[V comparable] struct {
	keys []string
	vals []V
	m    map[string]V // the same, once there are more than scanMax
}

// scanMax is how many keys a level scans before it keeps a map too:
// comparing a few short strings beats hashing.
const scanMax = 8

// get returns the value for key, the zero V if none.
func (k *keyed[V]) get(key []byte) V {
	if k.m != nil {
		return k.m[string(key)]
	}
	for i, s := range k.keys {
		if s == string(key) {
			return k.vals[i]
		}
	}
	var zero V
	return zero
}

// make returns the value for key, made by mk if there is none.
func (k *keyed[V]) make(key string, mk func() V) V {
	var zero V
	if v := k.get([]byte(key)); v != zero {
		return v
	}
	v := mk()
	k.keys, k.vals = append(k.keys, key), append(k.vals, v)
	switch {
	case k.m != nil:
		k.m[key] = v
	case len(k.keys) > scanMax:
		k.m = make(map[string]V, len(k.keys))
		for i, s := range k.keys {
			k.m[s] = k.vals[i]
		}
	}
	return v
}

// methods is the method level under one host (or none): the tree of each
// method named by some pattern, and that of the patterns without one.
type methods struct {
	named keyed[*node]
	any   *node
}

// root returns the tree for method ("" for any), making it if need be.
func (ms *methods) root(method string) *node {
	if method == "" {
		if ms.any == nil {
			ms.any = &node{}
		}
		return ms.any
	}
	return ms.named.make(method, func() *node { return &node{} })
}

// walk is one match in progress: where wildcard values go, when they are
// wanted. A walk lives on its caller's stack.
type walk struct {
	p       *Params
	escapes bool // the path has a '%': segments may need unescaping
	collect bool // record wildcard values (the real match, not a probe)
}

// inHost matches method and path under a host's method level: the method's
// own patterns, then GET's for a HEAD, then those without a method.
func (w *walk) inHost(ms *methods, method, path []byte, slash bool) *leaf {
	if ms == nil {
		return nil
	}
	if l := w.path(ms.named.get(method), path, slash); l != nil {
		return l
	}
	if string(method) == "HEAD" {
		if l := w.path(ms.named.get([]byte("GET")), path, slash); l != nil {
			return l
		}
	}
	return w.path(ms.any, path, slash)
}

// path matches the path under n. The path is path followed by a '/' when
// slash is set: the probe for a trailing-slash redirect, which collects no
// values. On failure the Params are as they were on entry.
//
// It recurses once per segment, as deep as the tree (the longest pattern),
// whatever the request.
func (w *walk) path(n *node, path []byte, slash bool) *leaf {
	if n == nil {
		return nil
	}
	if len(path) == 0 && !slash {
		return n.leaf
	}
	// The first segment and the rest, as net/http's firstSegment splits
	// path+"/" when slash is set: a lone "/" is the trailing-slash
	// segment "/".
	var seg, rest []byte
	restSlash := slash
	switch {
	case len(path) == 0 || len(path) == 1 && path[0] == '/' && !slash:
		seg, restSlash = trailingSlash, false
	default:
		// Segments are short: a loop beats IndexByte's call.
		seg = path[1:]
		for i, c := range seg {
			if c == '/' {
				seg, rest = seg[:i], seg[i:]
				break
			}
		}
	}
	// The segment unescaped, in the Params' buffer if it has escapes; a
	// wildcard keeps it there as its value.
	mark := len(w.p.buf)
	if w.escapes && unescapable(seg) {
		w.p.buf = appendUnescaped(w.p.buf, seg)
		seg = w.p.buf[mark:]
	}
	if l := w.path(n.lits.get(seg), rest, restSlash); l != nil {
		return l
	}
	// The literal branch failed, leaving the Params as they were: seg, if
	// unescaped, is still at mark.
	if n.wild != nil && string(seg) != "/" { // a single wildcard never matches the trailing slash
		w.push(seg)
		if l := w.path(n.wild, rest, restSlash); l != nil {
			return l
		}
		w.pop()
	}
	w.p.buf = w.p.buf[:mark]
	if n.multi == nil {
		return nil
	}
	if w.collect && n.multi.named {
		// The rest of the path after its first '/', unescaped. Only the
		// real match collects, and its path has no slash added.
		v := path[1:]
		if w.escapes && unescapable(v) {
			w.p.buf = appendUnescaped(w.p.buf, v)
			v = w.p.buf[mark:]
		}
		w.push(v)
	}
	return n.multi
}

var trailingSlash = []byte("/")

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (w *walk) push(v []byte) {
	if w.collect {
		w.p.push(v)
	}
}

func (w *walk) pop() {
	if w.collect {
		w.p.n--
	}
}

// exact reports whether l matched path exactly: with its multi wildcard,
// if it ends in one, matching nothing (net/http's exactMatch). path is
// path+"/" when slash is set.
func exact(l *leaf, path []byte, slash bool) bool {
	if l == nil {
		return false
	}
	if !l.multi {
		return true
	}
	if !slash && (len(path) == 0 || path[len(path)-1] != '/') {
		return false
	}
	return l.segs == bytes.Count(path, trailingSlash)+boolInt(slash)
}

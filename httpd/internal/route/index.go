package route

import "math"

// index narrows the patterns a new one must be checked against for
// conflicts to those that can share a request with it, so that registering
// n patterns costs less than n² comparisons. It is net/http's routingIndex:
// a pattern with a literal at some position can only conflict with patterns
// having the same literal or a wildcard there, or ending in a multi. It may
// offer patterns that cannot conflict (the check decides), never omit one
// that can.
type index struct {
	// segments maps a position and a literal ("" for a wildcard) to the
	// patterns, not ending in a multi, with that segment there.
	segments map[indexKey][]*pattern
	// multis are the patterns ending in a multi (or a trailing slash),
	// always offered: few tables have many.
	multis []*pattern
}

type indexKey struct {
	pos int
	s   string // the literal, or "" for a wildcard
}

func (idx *index) add(p *pattern) {
	if p.lastSegment().multi {
		idx.multis = append(idx.multis, p)
		return
	}
	if idx.segments == nil {
		idx.segments = map[indexKey][]*pattern{}
	}
	for pos, seg := range p.segments {
		key := indexKey{pos: pos}
		if !seg.wild {
			key.s = seg.s
		}
		idx.segments[key] = append(idx.segments[key], p)
	}
}

// candidates calls f on every pattern that may conflict with p, until f
// returns an error, which it returns.
//
// A literal "" and a wildcard share a key here, as in net/http: that
// offers more candidates, never fewer.
func (idx *index) candidates(p *pattern, f func(*pattern) error) error {
	each := func(ps []*pattern) error {
		for _, q := range ps {
			if err := f(q); err != nil {
				return err
			}
		}
		return nil
	}
	if err := each(idx.multis); err != nil {
		return err
	}
	if p.lastSegment().s == "/" {
		// Every path a "{$}" pattern matches ends in a slash, which no
		// ordinary pattern's does: only "{$}" patterns with the "{$}" at
		// the same position (and multis) can conflict with it.
		return each(idx.segments[indexKey{pos: len(p.segments) - 1, s: "/"}])
	}
	// The literal position with the fewest patterns, literal or wildcard
	// there, narrows most.
	var lmin, wmin []*pattern
	least := math.MaxInt
	hasLit := false
	for pos, seg := range p.segments {
		if seg.multi {
			break
		}
		if !seg.wild {
			hasLit = true
			l := idx.segments[indexKey{pos: pos, s: seg.s}]
			w := idx.segments[indexKey{pos: pos}]
			if n := len(l) + len(w); n < least {
				lmin, wmin, least = l, w, n
			}
		}
	}
	if hasLit {
		if err := each(lmin); err != nil {
			return err
		}
		return each(wmin)
	}
	// All wildcards: anything may conflict.
	for _, ps := range idx.segments {
		if err := each(ps); err != nil {
			return err
		}
	}
	return nil
}

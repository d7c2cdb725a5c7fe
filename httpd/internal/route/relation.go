package route

import (
	"fmt"
	"strings"
)

// The precedence of patterns and their conflicts, as net/http defines them
// (pattern.go, Copyright The Go Authors, BSD-style license): the same
// relationships computed the same way, so that a set of patterns is
// accepted here exactly when ServeMux accepts it, and the same pattern
// wins a request.

// relationship is how the requests two patterns match compare.
type relationship string

const (
	equivalent   relationship = "equivalent"   // both match the same requests
	moreGeneral  relationship = "moreGeneral"  // p1 matches everything p2 does & more
	moreSpecific relationship = "moreSpecific" // p2 matches everything p1 does & more
	disjoint     relationship = "disjoint"     // no request matches both
	overlaps     relationship = "overlaps"     // some request matches both, neither is more specific
)

// conflictsWith reports whether some request matches both p1 and p2 and
// neither has precedence: a pattern with a host wins over one without
// (rule 1), else the more specific method and path wins (rule 2).
func (p1 *pattern) conflictsWith(p2 *pattern) bool {
	if p1.host != p2.host {
		// One host is empty (rule 1 decides) or they differ (disjoint).
		return false
	}
	rel := p1.comparePathsAndMethods(p2)
	return rel == equivalent || rel == overlaps
}

func (p1 *pattern) comparePathsAndMethods(p2 *pattern) relationship {
	mrel := p1.compareMethods(p2)
	if mrel == disjoint {
		return disjoint
	}
	return combineRelationships(mrel, p1.comparePaths(p2))
}

// compareMethods: "" matches every method, GET matches GET and HEAD, any
// other only itself.
func (p1 *pattern) compareMethods(p2 *pattern) relationship {
	switch {
	case p1.method == p2.method:
		return equivalent
	case p1.method == "":
		return moreGeneral
	case p2.method == "":
		return moreSpecific
	case p1.method == "GET" && p2.method == "HEAD":
		return moreGeneral
	case p2.method == "GET" && p1.method == "HEAD":
		return moreSpecific
	}
	return disjoint
}

func (p1 *pattern) comparePaths(p2 *pattern) relationship {
	// Without a multi at the end, a pattern matches only paths of its
	// own number of segments.
	if len(p1.segments) != len(p2.segments) && !p1.lastSegment().multi && !p2.lastSegment().multi {
		return disjoint
	}
	var segs1, segs2 []segment
	rel := equivalent
	for segs1, segs2 = p1.segments, p2.segments; len(segs1) > 0 && len(segs2) > 0; segs1, segs2 = segs1[1:], segs2[1:] {
		rel = combineRelationships(rel, compareSegments(segs1[0], segs2[0]))
		if rel == disjoint {
			return rel
		}
	}
	if len(segs1) == 0 && len(segs2) == 0 {
		return rel
	}
	// The shorter one must end in a multi, more general than the rest of
	// the longer one.
	if len(segs1) < len(segs2) && p1.lastSegment().multi {
		return combineRelationships(rel, moreGeneral)
	}
	if len(segs2) < len(segs1) && p2.lastSegment().multi {
		return combineRelationships(rel, moreSpecific)
	}
	return disjoint
}

func compareSegments(s1, s2 segment) relationship {
	switch {
	case s1.multi && s2.multi:
		return equivalent
	case s1.multi:
		return moreGeneral
	case s2.multi:
		return moreSpecific
	case s1.wild && s2.wild:
		return equivalent
	case s1.wild:
		if s2.s == "/" { // a single wildcard does not match a trailing slash
			return disjoint
		}
		return moreGeneral
	case s2.wild:
		if s1.s == "/" {
			return disjoint
		}
		return moreSpecific
	case s1.s == s2.s:
		return equivalent
	}
	return disjoint
}

// combineRelationships is the relationship of two patterns given those of
// the two parts of a partition of them.
func combineRelationships(r1, r2 relationship) relationship {
	switch r1 {
	case equivalent:
		return r2
	case disjoint:
		return disjoint
	case overlaps:
		if r2 == disjoint {
			return disjoint
		}
		return overlaps
	default: // moreGeneral, moreSpecific
		switch r2 {
		case equivalent:
			return r1
		case inverseRelationship(r1):
			return overlaps
		default:
			return r2
		}
	}
}

func inverseRelationship(r relationship) relationship {
	switch r {
	case moreSpecific:
		return moreGeneral
	case moreGeneral:
		return moreSpecific
	}
	return r
}

// describeConflict explains why p1 and p2, which conflict, do, in
// net/http's words.
func describeConflict(p1, p2 *pattern) string {
	mrel := p1.compareMethods(p2)
	prel := p1.comparePaths(p2)
	rel := combineRelationships(mrel, prel)
	if rel == equivalent {
		return fmt.Sprintf("%s matches the same requests as %s", p1, p2)
	}
	switch {
	case prel == overlaps:
		return fmt.Sprintf(`%[1]s and %[2]s both match some paths, like %[3]q.
But neither is more specific than the other.
%[1]s matches %[4]q, but %[2]s doesn't.
%[2]s matches %[5]q, but %[1]s doesn't.`,
			p1, p2, commonPath(p1, p2), differencePath(p1, p2), differencePath(p2, p1))
	case mrel == moreGeneral && prel == moreSpecific:
		return fmt.Sprintf("%s matches more methods than %s, but has a more specific path pattern", p1, p2)
	case mrel == moreSpecific && prel == moreGeneral:
		return fmt.Sprintf("%s matches fewer methods than %s, but has a more general path pattern", p1, p2)
	}
	return fmt.Sprintf("unexpected way for two patterns %s and %s to conflict: methods %s, paths %s", p1, p2, mrel, prel)
}

func writeMatchingPath(b *strings.Builder, segs []segment) {
	for _, s := range segs {
		writeSegment(b, s)
	}
}

func writeSegment(b *strings.Builder, s segment) {
	b.WriteByte('/')
	if !s.multi && s.s != "/" {
		b.WriteString(s.s)
	}
}

// commonPath returns a path that both p1 and p2 match; there must be one.
func commonPath(p1, p2 *pattern) string {
	var b strings.Builder
	var segs1, segs2 []segment
	for segs1, segs2 = p1.segments, p2.segments; len(segs1) > 0 && len(segs2) > 0; segs1, segs2 = segs1[1:], segs2[1:] {
		if s1 := segs1[0]; s1.wild {
			writeSegment(&b, segs2[0])
		} else {
			writeSegment(&b, s1)
		}
	}
	return writeRest(&b, segs1, segs2)
}

// writeRest writes the segments the longer of two patterns has beyond the
// other's (a path they match), and returns the path written.
func writeRest(b *strings.Builder, segs1, segs2 []segment) string {
	if len(segs1) == 0 {
		segs1 = segs2
	}
	writeMatchingPath(b, segs1)
	return b.String()
}

// differencePath returns a path that p1 matches and p2 does not; there
// must be one.
func differencePath(p1, p2 *pattern) string {
	var b strings.Builder
	var segs1, segs2 []segment
	for segs1, segs2 = p1.segments, p2.segments; len(segs1) > 0 && len(segs2) > 0; segs1, segs2 = segs1[1:], segs2[1:] {
		s1, s2 := segs1[0], segs2[0]
		switch {
		case s1.multi && s2.multi:
			// From here on both match the same: the difference was before.
			b.WriteByte('/')
			return b.String()
		case s1.multi:
			// A trailing slash tells them apart, unless s2 is "{$}": then
			// any segment does, the wildcard's name preferably.
			b.WriteByte('/')
			if s2.s == "/" {
				if s1.s != "" {
					b.WriteString(s1.s)
				} else {
					b.WriteString("x")
				}
			}
			return b.String()
		case s2.multi:
			writeSegment(&b, s1)
		case s1.wild && s2.wild:
			writeSegment(&b, s1)
		case s1.wild:
			// Anything but s2's literal: the wildcard's name, or the
			// literal changed.
			if s1.s != s2.s {
				writeSegment(&b, s1)
			} else {
				b.WriteByte('/')
				b.WriteString(s2.s + "x")
			}
		default:
			// s1 a literal, and so s2 the same literal or a wildcard.
			writeSegment(&b, s1)
		}
	}
	return writeRest(&b, segs1, segs2)
}

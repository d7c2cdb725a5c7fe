package route

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/http/httpguts"
)

// pattern is a parsed pattern. Its representation is net/http's
// (pattern.go), because the precedence rules, the conflict check and the
// quirks of matching are all defined on it:
//
//   - a path ending in '/' ends in an anonymous multi segment: "/a/" is
//     the literal "a" then {multi, s: ""};
//   - a path ending in "{$}" ends in the literal segment "/": "/a/{$}" is
//     "a" then "/";
//   - literal segments are stored unescaped ("%61" is "a"), so a literal
//     "%2F" is the segment "/" too, like a "{$}", as in net/http.
//
// Immutable once parsed.
type pattern struct {
	str      string // as registered
	method   string // "" for any method
	host     string // "" for any host
	segments []segment
	names    []string // the named wildcards in order, for Params
}

// segment is one piece of a pattern's path: a literal (wild false; "/" for
// a trailing "{$}"), a single-segment wildcard (wild), or the last segment
// matching the rest of the path (wild and multi; s is "" when anonymous,
// from a trailing slash).
type segment struct {
	s     string
	wild  bool
	multi bool
}

func (p *pattern) String() string { return p.str }

func (p *pattern) lastSegment() segment { return p.segments[len(p.segments)-1] }

// parsePattern parses s, with net/http's syntax and its error messages:
//
//	[METHOD] [HOST]/[PATH]
//
// METHOD is a token followed by spaces or tabs; HOST is anything up to the
// first '/' without a '{'; PATH is '/'-separated literals and wildcards
// {name}, {name...} (last only) and {$} (last only), names being distinct
// Go identifiers. A pattern with a method other than CONNECT must have a
// clean path (requests' paths are cleaned before matching).
func parsePattern(s string) (_ *pattern, err error) {
	if len(s) == 0 {
		return nil, errors.New("empty pattern")
	}
	off := 0 // where the error is, for the message
	defer func() {
		if err != nil {
			err = fmt.Errorf("at offset %d: %w", off, err)
		}
	}()

	method, rest, found := s, "", false
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		method, rest, found = s[:i], strings.TrimLeft(s[i+1:], " \t"), true
	}
	if !found {
		rest = method
		method = ""
	}
	if method != "" && !httpguts.ValidHeaderFieldName(method) {
		return nil, fmt.Errorf("invalid method %q", method)
	}
	p := &pattern{str: s, method: method}

	if found {
		off = len(method) + 1
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return nil, errors.New("host/path missing /")
	}
	p.host = rest[:i]
	rest = rest[i:]
	if j := strings.IndexByte(p.host, '{'); j >= 0 {
		off += j
		return nil, errors.New("host contains '{' (missing initial '/'?)")
	}
	off += i

	// An unclean path can never match a request with a method other than
	// CONNECT, since their paths are cleaned (or redirected) first.
	if method != "" && method != "CONNECT" && rest != string(cleanPath(nil, []byte(rest))) {
		return nil, errors.New("non-CONNECT pattern with unclean path can never match")
	}

	seen := map[string]bool{}
	for len(rest) > 0 {
		rest = rest[1:] // rest[0] == '/'
		off = len(s) - len(rest)
		if len(rest) == 0 {
			p.segments = append(p.segments, segment{wild: true, multi: true})
			break
		}
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			i = len(rest)
		}
		var seg string
		seg, rest = rest[:i], rest[i:]
		if j := strings.IndexByte(seg, '{'); j < 0 {
			p.segments = append(p.segments, segment{s: unescapeString(seg)})
			continue
		} else if j != 0 {
			return nil, errors.New("bad wildcard segment (must start with '{')")
		}
		if seg[len(seg)-1] != '}' {
			return nil, errors.New("bad wildcard segment (must end with '}')")
		}
		name := seg[1 : len(seg)-1]
		if name == "$" {
			if len(rest) != 0 {
				return nil, errors.New("{$} not at end")
			}
			p.segments = append(p.segments, segment{s: "/"})
			break
		}
		name, multi := strings.CutSuffix(name, "...")
		if multi && len(rest) != 0 {
			return nil, errors.New("{...} wildcard not at end")
		}
		if name == "" {
			return nil, errors.New("empty wildcard")
		}
		if !isValidWildcardName(name) {
			return nil, fmt.Errorf("bad wildcard name %q", name)
		}
		if seen[name] {
			return nil, fmt.Errorf("duplicate wildcard name %q", name)
		}
		seen[name] = true
		p.segments = append(p.segments, segment{s: name, wild: true, multi: multi})
		p.names = append(p.names, name)
	}
	return p, nil
}

// isValidWildcardName reports whether s is a Go identifier.
func isValidWildcardName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !unicode.IsLetter(c) && c != '_' && (i == 0 || !unicode.IsDigit(c)) {
			return false
		}
	}
	return true
}

// unescapeString is url.PathUnescape, s itself when that fails (net/http's
// pathUnescape).
func unescapeString(s string) string {
	if u, err := url.PathUnescape(s); err == nil {
		return u
	}
	return s
}

package route

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// FuzzRouteMatch routes a fuzzed request (method, Host, target) with each
// pattern set of patternSets, through the Router and through ServeMux:
// the outcomes must agree (pair.check says how exactly). Requests that
// either http.ReadRequest or the h1 parser refuses are skipped.
func FuzzRouteMatch(f *testing.F) {
	for i, target := range targets {
		f.Add(methodsToTry[i%len(methodsToTry)], hostsToTry[i%len(hostsToTry)], target)
	}
	f.Add("GET", "example.com", "/a/b/../%2e%2E/c%2F%2F/./d?q")
	f.Add("CONNECT", "a.com", "/c//d/")
	pairs := make([]*pair, len(patternSets))
	for i, set := range patternSets {
		pairs[i] = newPair(f, set...)
	}
	f.Fuzz(func(t *testing.T, method, host, target string) {
		rq := readRequest(method, host, target)
		if rq == nil {
			return
		}
		for _, pr := range pairs {
			pr.check(t, rq)
		}
	})
}

// FuzzRoutePatterns registers three fuzzed patterns with the Router and
// with ServeMux: each must be refused by both (ServeMux panics) or by
// neither, with the same message. Then it routes a fuzzed request, and one
// made from each pattern taken, through both.
//
// Inputs with a pattern having an empty literal segment ("/a//b") are
// skipped: there ServeMux's tree takes the literal for a wildcard, and may
// panic on registering or matching (see the package documentation).
func FuzzRoutePatterns(f *testing.F) {
	for _, set := range patternSets {
		for i := 0; i+2 < len(set); i += 3 {
			f.Add(set[i], set[i+1], set[i+2], "GET", "/a/b")
		}
	}
	for _, c := range conflictCases {
		f.Add(c.p1, c.p2, "/", "POST", "/x/y")
	}
	for _, c := range parseErrorCases {
		f.Add(c.in, "/", "GET /a", "HEAD", c.in)
	}
	f.Fuzz(func(t *testing.T, p1, p2, p3, method, target string) {
		for _, p := range []string{p1, p2, p3} {
			if hasEmptyLiteral(p) {
				return
			}
		}
		pr := &pair{}
		for _, p := range []string{p1, p2, p3} {
			err, muxErr := pr.register(p)
			switch {
			case err == nil && muxErr == nil:
			case err == nil || muxErr == nil:
				t.Fatalf("registering %q after %q: router: %v; ServeMux: %v", p, pr.patterns, err, muxErr)
			case p == "":
				// ServeMux says "http: invalid pattern".
			case err.Error() != muxErrorText(muxErr):
				checkOtherConflict(t, p, pr.patterns, err, muxErr)
			}
		}
		var reqs []*request
		if rq := readRequest(method, "example.com", target); rq != nil {
			reqs = append(reqs, rq)
		}
		for _, p := range pr.patterns {
			if rq := requestFor(p); rq != nil {
				reqs = append(reqs, rq)
			}
		}
		for _, rq := range reqs {
			pr.check(t, rq)
		}
	})
}

// checkOtherConflict accepts a conflict error that names another
// registered pattern than ServeMux's does (both look through a map): each
// must name one that conflicts with p.
func checkOtherConflict(t *testing.T, p string, registered []string, err, muxErr error) {
	t.Helper()
	pat, perr := parsePattern(p)
	ok := perr == nil
	for _, msg := range []string{err.Error(), muxErrorText(muxErr)} {
		named := ""
		for _, q := range registered {
			// Both quote the patterns with %q: a control byte is escaped.
			if strings.HasPrefix(msg, fmt.Sprintf("pattern %q conflicts with pattern %q:", p, q)) {
				named = q
			}
		}
		if q, qerr := parsePattern(named); !ok || named == "" || qerr != nil || !pat.conflictsWith(q) {
			t.Fatalf("registering %q after %q:\nrouter: %v\nServeMux: %v", p, registered, err, muxErr)
		}
	}
}

// requestFor makes a request that pattern matches: its method (GET if
// none), host and path, with "v" for each wildcard.
func requestFor(pattern string) *request {
	p, err := parsePattern(pattern)
	if err != nil {
		return nil
	}
	var b strings.Builder
	for _, s := range p.segments {
		b.WriteByte('/')
		switch {
		case s.multi:
			b.WriteString("v/w")
		case s.wild:
			b.WriteString("v")
		case s.s != "/":
			b.WriteString(url.PathEscape(s.s))
		}
	}
	method := p.method
	if method == "" {
		method = "GET"
	}
	host := p.host
	if host == "" {
		host = "example.com"
	}
	return readRequest(method, host, b.String())
}

// hasEmptyLiteral reports whether pattern has an empty literal segment
// ("/a//b"), which ServeMux's tree mistakes for a wildcard: the Router and
// ServeMux differ there on purpose (see the package documentation).
func hasEmptyLiteral(pattern string) bool {
	p, err := parsePattern(pattern)
	if err != nil {
		return false
	}
	for _, s := range p.segments {
		if !s.wild && s.s == "" {
			return true
		}
	}
	return false
}

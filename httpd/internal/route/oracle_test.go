package route

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/valkyria/aio/httpd/internal/h1"
)

// The oracle: net/http's ServeMux given the same patterns and the same
// request bytes. A request is read by http.ReadRequest for ServeMux and by
// the h1 parser for the Router (Method, Host, Path: what the server will
// pass), so the two sides see the same request as the server will.

// outcome is what a request came to, on either side.
type outcome struct {
	status   int
	pattern  string   // Found; for a redirect, the pattern it leads to
	values   []string // name=value for each wildcard, in the pattern's order
	location string   // Redirect: Location (with the query)
	allow    string   // MethodNotAllowed
}

func (o outcome) String() string {
	return fmt.Sprintf("%d pattern=%q values=%q location=%q allow=%q", o.status, o.pattern, o.values, o.location, o.allow)
}

// pair is a Router and a ServeMux with the same patterns registered.
type pair struct {
	patterns []string
	router   Router[string]
	mux      *http.ServeMux
}

// register adds pattern to both sides and returns their errors: err the
// Router's, muxErr the ServeMux's panic (nil if none).
func (pr *pair) register(pattern string) (err, muxPanic error) {
	if pr.mux == nil {
		pr.mux = http.NewServeMux()
	}
	err = pr.router.Handle(pattern, pattern)
	func() {
		defer func() {
			if v := recover(); v != nil {
				if e, ok := v.(error); ok {
					muxPanic = e
				} else {
					muxPanic = fmt.Errorf("panic: %v", v)
				}
			}
		}()
		pr.mux.HandleFunc(pattern, recordMatch)
	}()
	if err == nil {
		pr.patterns = append(pr.patterns, pattern)
	}
	return err, muxPanic
}

// newPair registers patterns on both sides, which must take them all.
func newPair(t testing.TB, patterns ...string) *pair {
	t.Helper()
	pr := &pair{}
	for _, p := range patterns {
		err, muxErr := pr.register(p)
		if err != nil || muxErr != nil {
			t.Fatalf("registering %q: router: %v, ServeMux: %v", p, err, muxErr)
		}
	}
	return pr
}

// recordMatch is every pattern's ServeMux handler: it reports the pattern
// and the wildcards' values in headers.
func recordMatch(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Pattern", r.Pattern)
	pat, err := parsePattern(r.Pattern)
	if err != nil {
		panic(err)
	}
	for _, name := range pat.names {
		w.Header().Add("X-Value", name+"="+pathValue(r, name))
	}
}

// pathValue is r.PathValue, which panics in one of ServeMux's quirks (an
// empty segment of a CONNECT path matched by a wildcard).
func pathValue(r *http.Request, name string) (v string) {
	defer func() {
		if recover() != nil {
			v = "<panic>"
		}
	}()
	return r.PathValue(name)
}

// request is a request as both sides read it.
type request struct {
	raw  string
	req  *http.Request
	head h1.Head
}

// readRequest reads "method target" with host (none if empty) with both
// parsers; it returns nil if either refuses it.
func readRequest(method, host, target string) *request {
	raw := method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	if host == "" {
		raw = method + " " + target + " HTTP/1.0\r\n\r\n"
	}
	rq := &request{raw: raw}
	var p h1.Parser
	if n, err := p.Parse([]byte(raw), &rq.head); n == 0 || err != nil {
		return nil
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		return nil
	}
	rq.req = req
	return rq
}

// muxOutcome serves rq with the ServeMux.
func (pr *pair) muxOutcome(rq *request) outcome {
	rec := httptest.NewRecorder()
	pr.mux.ServeHTTP(rec, rq.req)
	o := outcome{
		status:   rec.Code,
		location: rec.Header().Get("Location"),
		allow:    rec.Header().Get("Allow"),
		values:   rec.Header().Values("X-Value"),
	}
	if o.status == 200 {
		o.pattern = rec.Header().Get("X-Pattern")
	}
	if o.status == 307 && rq.req.Method != "CONNECT" {
		// The pattern the redirect leads to; for CONNECT ServeMux
		// gives the target's path instead.
		_, o.pattern = pr.mux.Handler(rq.req)
	}
	return o
}

// routerOutcome matches rq with the Router, and follows a redirect once
// to find the pattern it leads to.
func (pr *pair) routerOutcome(t testing.TB, rq *request) outcome {
	var p Params
	h, kind := pr.router.Match(rq.head.Method, rq.head.Host, rq.head.Path, &p)
	o := outcome{status: kind.Status(), allow: string(p.Allow())}
	switch kind {
	case Found:
		o.status = 200
		o.pattern = p.Pattern()
		if h != p.Pattern() {
			t.Fatalf("%q: handler %q for pattern %q", rq.raw, h, p.Pattern())
		}
		for i := 0; i < p.Len(); i++ {
			o.values = append(o.values, p.Name(i)+"="+string(p.Value(i)))
		}
	case Redirect:
		o.location = string(p.Redirect())
		if len(rq.head.Query) > 0 {
			o.location += "?" + string(rq.head.Query)
		}
		if string(rq.head.Method) != "CONNECT" {
			var p2 Params
			if _, k2 := pr.router.Match(rq.head.Method, rq.head.Host, p.Redirect(), &p2); k2 == Found {
				o.pattern = p2.Pattern()
			}
		}
	}
	return o
}

// plainPath matches a path that net/url's escaping leaves alone: for
// such a request ServeMux's Location and the Router's must be the same.
var plainPath = regexp.MustCompile(`^[A-Za-z0-9\-_.~$&+,/:;=@]*$`)

// check compares the outcomes of rq on both sides. They must agree on
// everything but where ServeMux is known to be wrong (the package
// documentation lists it):
//
//   - its redirect Location escapes the path again ("%7e" becomes
//     "%257e") or decodes it ("%2F" becomes "/"): the Router's target is
//     the request's path, cleaned or with a slash added. For a path that
//     escaping leaves alone the two must be equal; for any path the
//     Router's target must lead to the pattern ServeMux says the redirect
//     leads to;
//   - the values of wildcards that match an empty segment of a CONNECT
//     path, which ServeMux misplaces (and PathValue may panic).
func (pr *pair) check(t testing.TB, rq *request) {
	t.Helper()
	want := pr.muxOutcome(rq)
	got := pr.routerOutcome(t, rq)
	method := rq.req.Method
	if method == "CONNECT" && strings.Contains(rq.req.URL.EscapedPath(), "//") {
		want.values, got.values = nil, nil
	}
	if want.status == 307 {
		wantPath, wantQuery, _ := strings.Cut(want.location, "?")
		gotPath, gotQuery, _ := strings.Cut(got.location, "?")
		if plainPath.MatchString(rq.req.URL.EscapedPath()) {
			want.location, got.location = wantPath, gotPath
		} else {
			want.location, got.location = "", ""
		}
		if !isASCII(gotQuery) {
			wantQuery, gotQuery = "", ""
		}
		if wantQuery != gotQuery {
			want.location += "?" + wantQuery
			got.location += "?" + gotQuery
		}
		if method == "CONNECT" {
			want.pattern, got.pattern = "", ""
		}
	}
	if !equalOutcomes(want, got) {
		t.Fatalf("patterns %q\nrequest %q\nServeMux: %v\nRouter:   %v", pr.patterns, rq.raw, want, got)
	}
}

func equalOutcomes(a, b outcome) bool {
	return a.status == b.status && a.pattern == b.pattern && slices.Equal(a.values, b.values) &&
		a.location == b.location && a.allow == b.allow
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// muxErrorText is a ServeMux registration panic without the registering
// locations, which the Router does not know.
func muxErrorText(err error) string {
	return registeredAt.ReplaceAllString(err.Error(), "")
}

var registeredAt = regexp.MustCompile(` \(registered at [^)]*\)`)

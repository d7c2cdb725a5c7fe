// Package route is httpd's router: net/http's ServeMux routing (Go 1.22
// patterns) over a request's method, host and path as byte slices, with
// no allocation per request. It knows nothing of connections or loops; the
// httpd package wraps it.
//
// # Patterns
//
// A pattern is what ServeMux takes, with the same meaning:
//
//	[METHOD ][HOST]/[PATH]
//
// where all three parts are optional ("/" is a pattern):
//
//   - METHOD, a token followed by spaces or tabs, matches that method
//     exactly (case-sensitively); GET matches HEAD too; no method matches
//     every method.
//   - HOST matches the request's host exactly, without its port (except
//     for CONNECT, whose host keeps it); no host matches every host.
//   - PATH is segments between slashes. A literal segment matches the
//     request's segment equal to it, both unescaped ("/%61" and "/a" are
//     the same pattern and match "/a" and "/%61"; "%2F" in a segment is
//     part of it, not a separator). {name} matches any one segment (but
//     not an empty last one: "/a/{x}" does not match "/a/"); {name...},
//     last only, matches the rest of the path, possibly empty; a trailing
//     slash ("/images/") is an anonymous {...}: a subtree; {$}, last only,
//     matches the end of a path ending in a slash ("/{$}" matches "/"
//     only). Names are distinct Go identifiers.
//   - A pattern with a method other than CONNECT must have a clean path
//     (no ".", ".." or empty segments): requests are cleaned first.
//
// # Precedence and conflicts
//
// When several patterns match a request, the most specific wins: the one
// whose set of (method, path) pairs is a subset of the others'. A literal
// beats a wildcard in the same place, a {name} beats a {name...}, a method
// beats none, HEAD beats GET for a HEAD. A pattern with a host beats any
// without one. Two patterns with the same host (or none) that some request
// matches, neither more specific, conflict: Handle refuses the second with
// an error that says why (ServeMux panics with the same words), as in
//
//	pattern "GET /" conflicts with pattern "/index.html":
//	GET / matches fewer methods than /index.html, but has a more general path pattern
//
// # Outcomes
//
// Match answers what ServeMux would do, as a Kind rather than a response:
// Found and the handler, with the pattern and its wildcards' values;
// NotFound (404); MethodNotAllowed (405) when patterns match the path but
// not the method, with the Allow list; BadRequest (400) for the target
// "*"; Redirect (307, ServeMux's status since Go 1.26, which keeps the
// method; 301 before) with a target path, when
//
//   - the path is not clean: "//a/./b/../c" goes to "/a/c";
//   - the path matches no pattern exactly but does with a slash added:
//     "/images" goes to "/images/" when "/images/" is registered and
//     "/images" is not (CONNECT included, whose path is not cleaned).
//
// The server appends the request's query to the target for the Location.
//
// Before matching, the path is made what ServeMux matches, URL.EscapedPath:
// the path as sent, unless it has bytes net/url escapes (like '{', '|',
// '"' or UTF-8), in which case it is unescaped and escaped again, which
// turns a "%2F" or "%2E" it had into '/' or '.'.
//
// # No allocation
//
// Match allocates nothing once the caller's Params has grown to the
// largest request it serves (its buffer and, past 8 wildcards, its value
// list; a Params kept per connection or loop grows a few times at most).
// A wildcard's value is a sub-slice of the path given to Match, except
// where it must be a copy, kept in the Params' buffer: when the segment
// (or, for {name...}, the rest of the path) has %-escapes to decode, or
// when the path itself had to be rewritten (escaped again, or cleaned on
// the way to a redirect). The redirect target and the Allow list are in
// the buffer too. Lookups walk a tree of hosts, methods and segments,
// scanning a few literals at each level (a map past 8).
//
// # Differences from ServeMux
//
// The tests route the pattern tables of net/http's own tests, and fuzzed
// requests and patterns, through both this package and ServeMux, and
// require the same outcome: status, pattern, wildcard values, Location,
// Allow, and registration errors. They differ only where ServeMux is
// wrong, on purpose:
//
//   - An empty literal segment in a pattern ("/a//b", which only
//     CONNECT requests can reach) matches an empty segment. ServeMux's
//     tree files it as a wildcard: "/a//b" matches "/a/x/b" there, and
//     registering both "/a//b" and "/a/{x}/b" panics. The values of
//     wildcards matching an empty segment of a CONNECT path are right
//     here; ServeMux misplaces them (PathValue may panic).
//   - A redirect's target is the request's path, cleaned or with a slash
//     added, escaped as it was. ServeMux escapes it once more in the
//     Location ("/a/./%7e" goes to "/a/%257e", a different path) and, for
//     the slash redirect, decodes it ("/a%2Fb" goes to "/a/b/"). Where
//     escaping changes nothing, the targets are the same.
//
// And by design: Handle returns errors instead of panicking, without the
// registering code's location in them; patterns are registered before
// the Router is shared, not while it serves.
package route

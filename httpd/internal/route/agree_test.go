package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// patternSets are the pattern tables of net/http's own tests of ServeMux
// (routing_tree_test.go, server_test.go, serve_test.go, request_test.go),
// and a few more for the corners: each is registered alone.
var patternSets = [][]string{
	// routing_tree_test.go: getTestTree.
	{"/a", "/a/b", "/a/{x}", "/g/h/i", "/g/{x}/j", "/a/b/{x...}", "/a/b/{y}", "/a/b/{$}"},
	// TestRoutingNodeMatch.
	{"/item/", "POST /item/{user}", "GET /item/{user}", "/item/{user}", "/item/{user}/{id}",
		"/item/{user}/new", "/item/{$}", "POST alt.com/item/{user}", "GET /headwins", "HEAD /headwins",
		"/path/{p...}"},
	{"/a/b/{$}"},
	{"/a/b/{w}"},
	{"/a/b/{w...}"},
	{"/a/b/{$}", "/a/b/{w}", "/a/b/{w...}"},
	// TestMatchingMethods.
	{"GET a.com/", "PUT b.com/", "POST /foo/{x}"},
	{"POST /"},
	{"GET /"},
	// serve_test.go: serveMuxRegister, handlers of TestHostHandlers.
	{"/dir/", "/search", "codesearch.google.com/search", "codesearch.google.com/", "example.com/"},
	{"/", "/someDir/", "/#/", "someHost.com/someDir/"},
	// TestServeWithSlashRedirectKeepsQueryString, ...ForHostPatterns.
	{"/testOne", "/testTwo/", "/testThree", "/testThree/"},
	{"example.com/pkg/foo/", "example.com/pkg/bar", "example.com/pkg/bar/",
		"example.com:3000/pkg/connect/", "example.com:9000/", "/pkg/baz/"},
	// TestMuxNoSlashRedirectWithTrailingSlash, TestMuxNoSlash405WithTrailingSlash.
	{"/{x}/"},
	{"GET /{x}/"},
	// server_test.go: TestFindHandler (without "//foo": see TestEmptyLiteralDiffers).
	{"/", "/foo/", "/foo", "/bar/"},
	// TestEscapedPathsAndPatterns.
	{"/a", "/%62", "/%7B/%7D", "/%x"},
	// request_test.go: TestPathValueAndPattern, TestStatus.
	{"/{a}/is/{b}/{c...}"},
	{"/names/{name}/{other...}"},
	{"GET /g", "POST /p", "PATCH /p", "PUT /r", "GET /r/"},
	// Corners: a literal "%2F" is the "{$}" segment; CONNECT patterns;
	// methods beside hostless ones; many literals at one level (the map).
	{"/lit/%2F", "/lit/{x}", "/lit/{x}/y/", "CONNECT /c/", "CONNECT /c/{x}", "DELETE /x/{y}", "/x/{y}/z/{w...}",
		"OPTIONS /{$}", "GET /get", "HEAD /head/{x}", "/%7Bq%7D/{v...}"},
	{"/k/a", "/k/b", "/k/c", "/k/d", "/k/e", "/k/f", "/k/g", "/k/h", "/k/i", "/k/j", "/k/%41", "/k/{x}/",
		"GET h.com/k/b", "h.com/k/{z}", "h.com:8080/"},
}

// targets are the request targets of those tests, and more.
var targets = []string{
	"/", "/a", "/a/", "/a/b", "/a/b/", "/a/b/c", "/a/b/c/d", "/a/c", "/g/h/i", "/g/h/j", "/b",
	"/item", "/item/", "/item/jba", "/item/jba/17", "/item/jba/new", "/item/jba/17/line2",
	"/headwins", "/path/to/file", "/path/*", "/foo", "/foo/", "/foo/bar", "/foo/x", "/bar", "/bar/x",
	"/dir", "/dir/", "/dir/file", "/search", "/search/", "/search/foo", "/../search", "/dir/..",
	"/dir/./file", "//", "//foo", "///foo.txt", "/../../foo.txt", "/foo/../bar/./..//baz",
	"/%61", "/%62", "/{/}", "/%7b/}", "/{/%7d", "/%7B/%7D", "/%25x", "/%23/apage", "/%23",
	"/someDir", "/someDir/apage", "/otherDir/apage",
	"/g", "/p", "/./p", "/r", "/r/", "/x", "/pkg/foo", "/pkg/bar", "/pkg/bar/", "/pkg/baz",
	"/pkg/connect", "/now/is/the/time/for/all", "/names/%2fjohn/address",
	"/names/john%2Fdoe/there/is%2F/more", "/names/n/*",
	"/testOne?this=that", "/testTwo?foo=bar", "/testTwo?a=1&b=2&a=3", "/testTwo?", "/testThree?foo",
	"/testThree/?foo", "/testOne/foo/..?foo", "/test/?example.com/test/",
	"/lit/%2F", "/lit/%2f/y", "/lit/", "/lit/a", "/lit/a/y", "/lit/a/y/", "/lit/a/y/z", "/c", "/c/", "/c/d",
	"/c/d/", "/c//d", "/x/1", "/x/1/z", "/x/1/z/", "/x/%41/z/a%2Fb", "/get", "/head/1", "/{q}/a/b",
	"/k", "/k/", "/k/a", "/k/A", "/k/b", "/k/j", "/k/z", "/k/z/", "/k/z/y", "/k/%61",
	"/a%2Fb", "/a/%2F", "/é/x", "/a{b}", "/a|b/", "/x/%2e%2e/y", "/é/%2e%2e/x", "/é//", "/a/./%7e",
	"/a%2F..//", "/a/b/..%2F", "/q%3F",
	"*", "http://example.com", "http://example.com/pkg/foo", "http://example.com:3000/pkg/foo",
	"http://h.com/k/b", "https://a.com/", "example.com:443", "example.com:9000", "h.com:8080",
}

var methodsToTry = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "get"}

var hostsToTry = []string{"", "example.com:80", "example.com", "a.com", "b.com", "alt.com", "h.com", "h.com:8080",
	"codesearch.google.com", "codesearch.google.com:443", "someHost.com", "example.com:3000",
	"example.com:9000", "[::1]:80"}

// TestAgreesWithServeMux: every pattern set, every request of targets ×
// methods × hosts that both parsers take, the same outcome. A set without
// host patterns gets the first hosts only (none, and one with a port).
func TestAgreesWithServeMux(t *testing.T) {
	var reqs, noHostReqs []*request
	for _, target := range targets {
		for _, m := range methodsToTry {
			for i, h := range hostsToTry {
				if rq := readRequest(m, h, target); rq != nil {
					reqs = append(reqs, rq)
					if i < 2 {
						noHostReqs = append(noHostReqs, rq)
					}
				}
			}
		}
	}
	require.Greater(t, len(reqs), len(targets)*len(methodsToTry)*len(hostsToTry)/2)
	for _, set := range patternSets {
		pr := newPair(t, set...)
		rqs := noHostReqs
		for _, p := range set {
			if mustParse(t, p).host != "" {
				rqs = reqs
			}
		}
		for _, rq := range rqs {
			pr.check(t, rq)
		}
	}
}

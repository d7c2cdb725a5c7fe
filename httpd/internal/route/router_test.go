package route

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// apiRoutes is a table of 20 routes like a service's: the benchmarks'
// and the allocation test's.
var apiRoutes = []string{
	"GET /health",
	"GET /metrics",
	"GET /{$}",
	"GET /static/",
	"GET /favicon.ico",
	"GET /api/v1/users",
	"POST /api/v1/users",
	"GET /api/v1/users/{id}",
	"PUT /api/v1/users/{id}",
	"DELETE /api/v1/users/{id}",
	"GET /api/v1/users/{id}/posts",
	"GET /api/v1/users/{id}/posts/{post}",
	"POST /api/v1/users/{id}/posts",
	"GET /api/v1/search",
	"GET /api/v1/files/{path...}",
	"POST /api/v1/login",
	"POST /api/v1/logout",
	"GET /api/v2/",
	"GET admin.example.com/",
	"/debug/pprof/",
}

func newRouter(t testing.TB, patterns ...string) *Router[string] {
	t.Helper()
	var r Router[string]
	for _, p := range patterns {
		require.NoError(t, r.Handle(p, p))
	}
	return &r
}

func match(r *Router[string], p *Params, method, host, path string) (string, Kind) {
	return r.Match([]byte(method), []byte(host), []byte(path), p)
}

// TestMatchNoAllocs: with a Params that has served a request like it,
// every kind of outcome costs no allocation, the rewritten paths and
// escaped values included.
func TestMatchNoAllocs(t *testing.T) {
	r := newRouter(t, apiRoutes...)
	for _, c := range []struct {
		method, path string
		kind         Kind
	}{
		{"GET", "/health", Found},
		{"HEAD", "/health", Found},
		{"GET", "/api/v1/users/42/posts/7", Found},
		{"GET", "/api/v1/users/%34%32/posts/a%2Fb", Found},
		{"GET", "/api/v1/files/a/b%20c/d", Found},
		{"GET", "/api/v1/users/{42}", Found}, // rewritten as net/url escapes it
		{"GET", "/nope", NotFound},
		{"PATCH", "/api/v1/users/42", MethodNotAllowed},
		{"GET", "/api/v2", Redirect},
		{"GET", "//api/./v1/../v1/users", Redirect},
		{"OPTIONS", "*", BadRequest},
	} {
		var p Params
		method, host, path := []byte(c.method), []byte("api.example.com:8080"), []byte(c.path)
		_, kind := r.Match(method, host, path, &p)
		require.Equal(t, c.kind, kind, c.path)
		assert.Zero(t, testing.AllocsPerRun(100, func() { r.Match(method, host, path, &p) }), c.path)
	}
}

func TestMatchOutcomes(t *testing.T) {
	r := newRouter(t, apiRoutes...)
	var p Params

	h, kind := match(r, &p, "GET", "api.example.com", "/api/v1/users/42/posts/7")
	require.Equal(t, Found, kind)
	assert.Equal(t, "GET /api/v1/users/{id}/posts/{post}", h)
	assert.Equal(t, h, p.Pattern())
	require.Equal(t, 2, p.Len())
	assert.Equal(t, "id", p.Name(0))
	assert.Equal(t, "42", string(p.Value(0)))
	assert.Equal(t, "post", p.Name(1))
	v, ok := p.Get("post")
	assert.True(t, ok)
	assert.Equal(t, "7", string(v))
	_, ok = p.Get("nope")
	assert.False(t, ok)

	h, kind = match(r, &p, "GET", "", "/api/v1/files/a/b%2Fc/%7E")
	require.Equal(t, Found, kind)
	assert.Equal(t, "GET /api/v1/files/{path...}", h)
	assert.Equal(t, "a/b/c/~", string(p.Value(0)))

	h, kind = match(r, &p, "GET", "admin.example.com:443", "/health")
	require.Equal(t, Found, kind)
	assert.Equal(t, "GET admin.example.com/", h, "a host's patterns come first")

	_, kind = match(r, &p, "DELETE", "", "/api/v1/users")
	require.Equal(t, MethodNotAllowed, kind)
	assert.Equal(t, "GET, HEAD, POST", string(p.Allow()))
	assert.Zero(t, p.Len())
	assert.Empty(t, p.Pattern())

	_, kind = match(r, &p, "GET", "", "/static")
	require.Equal(t, Redirect, kind)
	assert.Equal(t, "/static/", string(p.Redirect()))
	assert.Nil(t, p.Allow())

	_, kind = match(r, &p, "GET", "", "/static/a/../../health/.")
	require.Equal(t, Redirect, kind)
	assert.Equal(t, "/health", string(p.Redirect()))

	_, kind = match(r, &p, "GET", "", "/nope")
	assert.Equal(t, NotFound, kind)
	assert.Nil(t, p.Redirect())
	assert.Nil(t, p.Allow())

	// A Value past Len is a bug in the caller, not a stale value.
	assert.Panics(t, func() { p.Value(0) })
}

// TestValuesShareThePath: a value that needs no unescaping is the path's
// own bytes, not a copy.
func TestValuesShareThePath(t *testing.T) {
	r := newRouter(t, "/f/{a}/{b...}")
	var p Params
	path := []byte("/f/x/y/z")
	_, kind := r.Match([]byte("GET"), nil, path, &p)
	require.Equal(t, Found, kind)
	assert.Equal(t, unsafe.SliceData(path[3:]), unsafe.SliceData(p.Value(0)))
	assert.Equal(t, unsafe.SliceData(path[5:]), unsafe.SliceData(p.Value(1)))
	assert.Equal(t, "y/z", string(p.Value(1)))
}

// TestManyWildcards: more wildcards than a Params holds inline, matched
// after a backtrack that drops as many.
func TestManyWildcards(t *testing.T) {
	wilds := func(prefix string, from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			fmt.Fprintf(&b, "/{%s%d}", prefix, i)
		}
		return b.String()
	}
	// A request for /0/1/.../10/x goes down the first pattern's literal
	// "0" and 10 wildcards, fails on "end", and comes back up to match the
	// second through its 11 wildcards.
	first, second := "/0"+wilds("a", 1, 10)+"/end", wilds("b", 0, 10)+"/x"
	r := newRouter(t, first, second)
	path := "/0/1/2/3/4/5/6/7/8/9/10"
	var p Params
	for range 2 { // the second time with the Params' slice grown
		h, kind := match(r, &p, "GET", "", path+"/x")
		require.Equal(t, Found, kind)
		assert.Equal(t, second, h)
		require.Equal(t, 11, p.Len())
		for i := range 11 {
			assert.Equal(t, fmt.Sprintf("b%d", i), p.Name(i))
			assert.Equal(t, fmt.Sprint(i), string(p.Value(i)))
		}
	}
	h, kind := match(r, &p, "GET", "", path+"/end")
	require.Equal(t, Found, kind)
	assert.Equal(t, first, h)
	require.Equal(t, 10, p.Len())
	v, ok := p.Get("a10")
	assert.True(t, ok)
	assert.Equal(t, "10", string(v))
}

// TestEmptyLiteralDiffers: an empty literal segment matches only an empty
// segment here. ServeMux's tree takes it for a wildcard: "/a//b" matches
// "/a/x/b" there, with a value for a wildcard the pattern does not have.
func TestEmptyLiteralDiffers(t *testing.T) {
	pr := newPair(t, "/", "/a//b", "/c/{x}/d")
	rq := readRequest("GET", "h", "/a/x/b")
	require.NotNil(t, rq)
	assert.Equal(t, "/a//b", pr.muxOutcome(rq).pattern)
	assert.Equal(t, "/", pr.routerOutcome(t, rq).pattern)

	for _, c := range []struct{ path, pattern, values string }{
		{"/a//b", "/a//b", ""},
		{"/c//d", "/c/{x}/d", "x="}, // ServeMux: no value, PathValue panics
		{"/c/y/d", "/c/{x}/d", "x=y"},
	} {
		rq := readRequest("CONNECT", "h", c.path)
		require.NotNil(t, rq)
		got := pr.routerOutcome(t, rq)
		assert.Equal(t, c.pattern, got.pattern, c.path)
		assert.Equal(t, c.values, strings.Join(got.values, ","), c.path)
	}
}

// TestRedirectTargetsDiffer: the redirect target is the request's path
// cleaned or with a slash added, escaped as it was. ServeMux escapes it
// again, or unescapes it, which leads elsewhere.
func TestRedirectTargetsDiffer(t *testing.T) {
	pr := newPair(t, "/a/{x}", "/a%2Fb/")
	for _, c := range []struct{ target, mux, router string }{
		{"/a/./%7e", "/a/%257e", "/a/%7e"},
		{"/a%2Fb", "/a/b/", "/a%2Fb/"},
		{"/x/../a/%2F", "/a/%252F", "/a/%2F"},
	} {
		rq := readRequest("GET", "h", c.target)
		require.NotNil(t, rq)
		assert.Equal(t, c.mux, pr.muxOutcome(rq).location, c.target)
		got := pr.routerOutcome(t, rq)
		assert.Equal(t, c.router, got.location, c.target)
		pr.check(t, rq) // the Router's target leads where ServeMux says
	}
}

func TestKind(t *testing.T) {
	for k, want := range map[Kind]struct {
		s      string
		status int
	}{
		Found: {"Found", 0}, NotFound: {"NotFound", 404}, MethodNotAllowed: {"MethodNotAllowed", 405},
		Redirect: {"Redirect", 307}, BadRequest: {"BadRequest", 400}, 9: {"Kind(9)", 0},
	} {
		assert.Equal(t, want.s, k.String())
		assert.Equal(t, want.status, k.Status())
	}
}

// TestManyLiterals: past scanMax literal children a node looks them up in
// a map; both ways find the same.
func TestManyLiterals(t *testing.T) {
	var pats []string
	for i := range 3 * scanMax {
		pats = append(pats, fmt.Sprintf("/l/%d", i), fmt.Sprintf("/l/%d/{x}", i))
	}
	r := newRouter(t, pats...)
	var p Params
	for i := range 3 * scanMax {
		h, kind := match(r, &p, "GET", "", fmt.Sprintf("/l/%d", i))
		require.Equal(t, Found, kind)
		assert.Equal(t, fmt.Sprintf("/l/%d", i), h)
		h, _ = match(r, &p, "GET", "", fmt.Sprintf("/l/%%%X/v", '0'+i%10))
		assert.Equal(t, fmt.Sprintf("/l/%d/{x}", i%10), h)
	}
	_, kind := match(r, &p, "GET", "", "/l/x")
	assert.Equal(t, NotFound, kind)
}

// TestConcurrentMatch: Match only reads the Router; the race detector
// checks it.
func TestConcurrentMatch(t *testing.T) {
	r := newRouter(t, apiRoutes...)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var p Params
			for range 200 {
				h, kind := match(r, &p, "GET", "", "/api/v1/users/%41/posts")
				if kind != Found || h != "GET /api/v1/users/{id}/posts" || string(p.Value(0)) != "A" {
					t.Errorf("%v %q %q", kind, h, p.Value(0))
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestEmptyRouter: nothing registered, nothing found, nothing allowed.
func TestEmptyRouter(t *testing.T) {
	var r Router[int]
	var p Params
	for _, path := range []string{"/", "/a", "", "//"} {
		h, kind := r.Match([]byte("GET"), []byte("h"), []byte(path), &p)
		assert.Zero(t, h)
		if path == "" || path == "//" {
			assert.Equal(t, Redirect, kind, path)
			assert.Equal(t, "/", string(p.Redirect()))
		} else {
			assert.Equal(t, NotFound, kind, path)
		}
	}
	_, kind := r.Match([]byte("CONNECT"), []byte("h:443"), nil, &p)
	assert.Equal(t, NotFound, kind)
}

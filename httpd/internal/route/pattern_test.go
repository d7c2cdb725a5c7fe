package route

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cases of net/http's pattern_test.go, on this package's port of it.

func TestParsePattern(t *testing.T) {
	lit := func(s string) segment { return segment{s: s} }
	wild := func(s string) segment { return segment{s: s, wild: true} }
	multi := func(s string) segment { return segment{s: s, wild: true, multi: true} }
	for _, c := range []struct {
		in     string
		method string
		host   string
		segs   []segment
	}{
		{"/", "", "", []segment{multi("")}},
		{"/a", "", "", []segment{lit("a")}},
		{"/a/", "", "", []segment{lit("a"), multi("")}},
		{"/path/to/something", "", "", []segment{lit("path"), lit("to"), lit("something")}},
		{"/{w1}/lit/{w2}", "", "", []segment{wild("w1"), lit("lit"), wild("w2")}},
		{"/{w1}/lit/{w2}/", "", "", []segment{wild("w1"), lit("lit"), wild("w2"), multi("")}},
		{"example.com/", "", "example.com", []segment{multi("")}},
		{"GET /", "GET", "", []segment{multi("")}},
		{"POST example.com/foo/{w}", "POST", "example.com", []segment{lit("foo"), wild("w")}},
		{"/{$}", "", "", []segment{lit("/")}},
		{"DELETE example.com/a/{foo12}/{$}", "DELETE", "example.com", []segment{lit("a"), wild("foo12"), lit("/")}},
		{"/foo/{$}", "", "", []segment{lit("foo"), lit("/")}},
		{"/{a}/foo/{rest...}", "", "", []segment{wild("a"), lit("foo"), multi("rest")}},
		{"//", "", "", []segment{lit(""), multi("")}},
		{"/foo///./../bar", "", "", []segment{lit("foo"), lit(""), lit(""), lit("."), lit(".."), lit("bar")}},
		{"a.com/foo//", "", "a.com", []segment{lit("foo"), lit(""), multi("")}},
		{"/%61%62/%7b/%", "", "", []segment{lit("ab"), lit("{"), lit("%")}},
		{"GET\t  /", "GET", "", []segment{multi("")}},
		{"POST \t  example.com/foo/{w}", "POST", "example.com", []segment{lit("foo"), wild("w")}},
		{"DELETE    \texample.com/a/{foo12}/{$}", "DELETE", "example.com", []segment{lit("a"), wild("foo12"), lit("/")}},
	} {
		p, err := parsePattern(c.in)
		require.NoError(t, err, c.in)
		assert.Equal(t, c.method, p.method, c.in)
		assert.Equal(t, c.host, p.host, c.in)
		assert.Equal(t, c.segs, p.segments, c.in)
	}
}

var parseErrorCases = []struct{ in, contains string }{
	{"", "empty pattern"},
	{"A=B /", "at offset 0: invalid method"},
	{" ", "at offset 1: host/path missing /"},
	{"/{w}x", "at offset 1: bad wildcard segment"},
	{"/x{w}", "at offset 1: bad wildcard segment"},
	{"/{wx", "at offset 1: bad wildcard segment"},
	{"/a/{/}/c", "at offset 3: bad wildcard segment"},
	{"/a/{%61}/c", "at offset 3: bad wildcard name"}, // wildcard names aren't unescaped
	{"/{a$}", "at offset 1: bad wildcard name"},
	{"/{}", "at offset 1: empty wildcard"},
	{"POST a.com/x/{}/y", "at offset 13: empty wildcard"},
	{"/{...}", "at offset 1: empty wildcard"},
	{"/{$...}", "at offset 1: bad wildcard"},
	{"/{$}/", "at offset 1: {$} not at end"},
	{"/{$}/x", "at offset 1: {$} not at end"},
	{"/abc/{$}/x", "at offset 5: {$} not at end"},
	{"/{a...}/", "at offset 1: {...} wildcard not at end"},
	{"/{a...}/x", "at offset 1: {...} wildcard not at end"},
	{"{a}/b", "at offset 0: host contains '{' (missing initial '/'?)"},
	{"/a/{x}/b/{x...}", "at offset 9: duplicate wildcard name"},
	{"GET //", "at offset 4: non-CONNECT pattern with unclean path"},
}

// TestParsePatternError: the same errors as net/http's, and Handle
// returns them as ServeMux panics with them.
func TestParsePatternError(t *testing.T) {
	for _, c := range parseErrorCases {
		_, err := parsePattern(c.in)
		require.Error(t, err, c.in)
		assert.Contains(t, err.Error(), c.contains, c.in)

		var r Router[int]
		err = r.Handle(c.in, 1)
		require.Error(t, err, c.in)
		if c.in == "" {
			continue // ServeMux: "http: invalid pattern"
		}
		assert.Equal(t, `parsing "`+c.in+`": `, err.Error()[:len(c.in)+12])
		assert.PanicsWithError(t, err.Error(), func() {
			http.NewServeMux().HandleFunc(c.in, func(http.ResponseWriter, *http.Request) {})
		}, c.in)
	}
}

func mustParse(t *testing.T, s string) *pattern {
	t.Helper()
	p, err := parsePattern(s)
	require.NoError(t, err, s)
	return p
}

// relationCase is a pair of patterns and how the first relates to the
// second.
type relationCase struct {
	p1, p2 string
	want   relationship
}

// checkRelation checks rel on each case both ways (the second pattern
// relates to the first inversely), and that the first is equivalent to
// itself.
func checkRelation(t *testing.T, cases []relationCase, rel func(p1, p2 *pattern) relationship) {
	t.Helper()
	for _, c := range cases {
		p1, p2 := mustParse(t, c.p1), mustParse(t, c.p2)
		assert.Equal(t, equivalent, rel(p1, p1), c.p1)
		assert.Equal(t, c.want, rel(p1, p2), "%s vs %s", c.p1, c.p2)
		assert.Equal(t, inverseRelationship(c.want), rel(p2, p1), "%s vs %s", c.p2, c.p1)
	}
}

func TestCompareMethods(t *testing.T) {
	checkRelation(t, []relationCase{
		{"/", "/", equivalent},
		{"GET /", "GET /", equivalent},
		{"HEAD /", "HEAD /", equivalent},
		{"POST /", "POST /", equivalent},
		{"GET /", "POST /", disjoint},
		{"GET /", "/", moreSpecific},
		{"HEAD /", "/", moreSpecific},
		{"GET /", "HEAD /", moreGeneral},
	}, (*pattern).compareMethods)
}

func TestComparePaths(t *testing.T) {
	checkRelation(t, []relationCase{
		{"/a", "/a", equivalent},
		{"/a", "/b", disjoint},
		{"/a", "/", moreSpecific},
		{"/a", "/{$}", disjoint},
		{"/a", "/{x}", moreSpecific},
		{"/a", "/{x...}", moreSpecific},
		{"/b/a", "/b/a", equivalent},
		{"/b/a", "/b/b", disjoint},
		{"/b/a", "/b/", moreSpecific},
		{"/b/a", "/b/{$}", disjoint},
		{"/b/a", "/b/{x}", moreSpecific},
		{"/b/a", "/b/{x...}", moreSpecific},
		{"/{z}/a", "/{z}/a", equivalent},
		{"/{z}/a", "/{z}/b", disjoint},
		{"/{z}/a", "/{z}/", moreSpecific},
		{"/{z}/a", "/{z}/{$}", disjoint},
		{"/{z}/a", "/{z}/{x}", moreSpecific},
		{"/{z}/a", "/{z}/{x...}", moreSpecific},
		{"/{z}", "/a", moreGeneral},
		{"/{z}", "/a/b", disjoint},
		{"/{z}", "/{$}", disjoint},
		{"/{z}", "/{x}", equivalent},
		{"/{z}", "/", moreSpecific},
		{"/{z}", "/{x...}", moreSpecific},
		{"/b/{z}", "/b/a", moreGeneral},
		{"/b/{z}", "/b/a/b", disjoint},
		{"/b/{z}", "/b/{$}", disjoint},
		{"/b/{z}", "/b/{x}", equivalent},
		{"/b/{z}", "/b/", moreSpecific},
		{"/b/{z}", "/b/{x...}", moreSpecific},
		{"/", "/a", moreGeneral},
		{"/", "/a/b", moreGeneral},
		{"/", "/{$}", moreGeneral},
		{"/", "/{x}", moreGeneral},
		{"/", "/", equivalent},
		{"/", "/{x...}", equivalent},
		{"/b/", "/b/a", moreGeneral},
		{"/b/", "/b/a/b", moreGeneral},
		{"/b/", "/b/{$}", moreGeneral},
		{"/b/", "/b/{x}", moreGeneral},
		{"/b/", "/b/", equivalent},
		{"/b/", "/b/{x...}", equivalent},
		{"/{z}/", "/{z}/a", moreGeneral},
		{"/{z}/", "/{z}/a/b", moreGeneral},
		{"/{z}/", "/{z}/{$}", moreGeneral},
		{"/{z}/", "/{z}/{x}", moreGeneral},
		{"/{z}/", "/{z}/", equivalent},
		{"/{z}/", "/a/", moreGeneral},
		{"/{z}/", "/{z}/{x...}", equivalent},
		{"/{z}/", "/a/{x...}", moreGeneral},
		{"/a/{z}/", "/{z}/a/", overlaps},
		{"/a/{z}/b/", "/{x}/c/{y...}", overlaps},
		{"/{m...}", "/a", moreGeneral},
		{"/{m...}", "/a/b", moreGeneral},
		{"/{m...}", "/{$}", moreGeneral},
		{"/{m...}", "/{x}", moreGeneral},
		{"/{m...}", "/", equivalent},
		{"/{m...}", "/{x...}", equivalent},
		{"/b/{m...}", "/b/a", moreGeneral},
		{"/b/{m...}", "/b/a/b", moreGeneral},
		{"/b/{m...}", "/b/{$}", moreGeneral},
		{"/b/{m...}", "/b/{x}", moreGeneral},
		{"/b/{m...}", "/b/", equivalent},
		{"/b/{m...}", "/b/{x...}", equivalent},
		{"/b/{m...}", "/a/{x...}", disjoint},
		{"/{z}/{m...}", "/{z}/a", moreGeneral},
		{"/{z}/{m...}", "/{z}/a/b", moreGeneral},
		{"/{z}/{m...}", "/{z}/{$}", moreGeneral},
		{"/{z}/{m...}", "/{z}/{x}", moreGeneral},
		{"/{z}/{m...}", "/{w}/", equivalent},
		{"/{z}/{m...}", "/a/", moreGeneral},
		{"/{z}/{m...}", "/{z}/{x...}", equivalent},
		{"/{z}/{m...}", "/a/{x...}", moreGeneral},
		{"/a/{m...}", "/a/b/{y...}", moreGeneral},
		{"/a/{m...}", "/a/{x}/{y...}", moreGeneral},
		{"/a/{z}/{m...}", "/a/b/{y...}", moreGeneral},
		{"/a/{z}/{m...}", "/{z}/a/", overlaps},
		{"/a/{z}/{m...}", "/{z}/b/{y...}", overlaps},
		{"/a/{z}/b/{m...}", "/{x}/c/{y...}", overlaps},
		{"/a/{z}/a/{m...}", "/{x}/b", disjoint},
		{"/{$}", "/a", disjoint},
		{"/{$}", "/a/b", disjoint},
		{"/{$}", "/{$}", equivalent},
		{"/{$}", "/{x}", disjoint},
		{"/{$}", "/", moreSpecific},
		{"/{$}", "/{x...}", moreSpecific},
		{"/b/{$}", "/b", disjoint},
		{"/b/{$}", "/b/a", disjoint},
		{"/b/{$}", "/b/a/b", disjoint},
		{"/b/{$}", "/b/{$}", equivalent},
		{"/b/{$}", "/b/{x}", disjoint},
		{"/b/{$}", "/b/", moreSpecific},
		{"/b/{$}", "/b/{x...}", moreSpecific},
		{"/b/{$}", "/b/c/{x...}", disjoint},
		{"/b/{x}/a/{$}", "/{x}/c/{y...}", overlaps},
		{"/{x}/b/{$}", "/a/{x}/{y}", disjoint},
		{"/{x}/b/{$}", "/a/{x}/c", disjoint},
		{"/{z}/{$}", "/{z}/a", disjoint},
		{"/{z}/{$}", "/{z}/a/b", disjoint},
		{"/{z}/{$}", "/{z}/{$}", equivalent},
		{"/{z}/{$}", "/{z}/{x}", disjoint},
		{"/{z}/{$}", "/{z}/", moreSpecific},
		{"/{z}/{$}", "/a/", overlaps},
		{"/{z}/{$}", "/a/{x...}", overlaps},
		{"/{z}/{$}", "/{z}/{x...}", moreSpecific},
		{"/a/{z}/{$}", "/{z}/a/", overlaps},
	}, (*pattern).comparePaths)
}

var conflictCases = []struct {
	p1, p2 string
	want   bool
}{
	{"/a", "/a", true},
	{"/a", "/ab", false},
	{"/a/b/cd", "/a/b/cd", true},
	{"/a/b/cd", "/a/b/c", false},
	{"/a/b/c", "/a/c/c", false},
	{"/{x}", "/{y}", true},
	{"/{x}", "/a", false},
	{"/{x}/{y}", "/{x}/a", false},
	{"/{x}/{y}", "/{x}/a/b", false},
	{"/{x}", "/a/{y}", false},
	{"/{x}/{y}", "/{x}/a/", false},
	{"/{x}", "/a/{y...}", false},
	{"/{x}/a/{y}", "/{x}/a/{y...}", false},
	{"/{x}/{y}", "/{x}/a/{$}", false},
	{"/{x}/{y}/{$}", "/{x}/a/{$}", false},
	{"/a/{x}", "/{x}/b", true},
	{"/", "GET /", false},
	{"/", "GET /foo", false},
	{"GET /", "GET /foo", false},
	{"GET /", "/foo", true},
	{"GET /foo", "HEAD /", true},
	// Not in net/http's table: hosts.
	{"a.com/x", "/x", false},
	{"a.com/x", "a.com/x", true},
	{"a.com/x", "b.com/x", false},
	{"a.com/x", "a.com:80/x", false},
}

// TestConflicts: conflictsWith both ways, and Handle refuses the second
// pattern of a conflicting pair with ServeMux's message.
func TestConflicts(t *testing.T) {
	for _, c := range conflictCases {
		p1, p2 := mustParse(t, c.p1), mustParse(t, c.p2)
		assert.Equal(t, c.want, p1.conflictsWith(p2), "%s vs %s", c.p1, c.p2)
		assert.Equal(t, c.want, p2.conflictsWith(p1), "%s vs %s", c.p2, c.p1)

		pr := newPair(t, c.p1)
		err, muxErr := pr.register(c.p2)
		if !c.want {
			assert.NoError(t, err)
			assert.NoError(t, muxErr)
			continue
		}
		require.Error(t, err, "%s then %s", c.p1, c.p2)
		require.Error(t, muxErr)
		assert.Equal(t, muxErrorText(muxErr), err.Error())
	}
}

func TestRegisterConflict(t *testing.T) {
	var r Router[int]
	require.NoError(t, r.Handle("/a/{x}/", 1))
	err := r.Handle("/a/{y}/{z...}", 2)
	require.Error(t, err)
	assert.Equal(t, "pattern \"/a/{y}/{z...}\" conflicts with pattern \"/a/{x}/\":\n"+
		"/a/{y}/{z...} matches the same requests as /a/{x}/", err.Error())
	// Nothing of the refused pattern is left.
	var p Params
	h, kind := r.Match([]byte("GET"), nil, []byte("/a/b/c"), &p)
	assert.Equal(t, Found, kind)
	assert.Equal(t, 1, h)
	assert.Equal(t, "/a/{x}/", p.Pattern())
}

func TestDescribeConflict(t *testing.T) {
	for _, c := range []struct{ p1, p2, want string }{
		{"/a/{x}", "/a/{y}", "the same requests"},
		{"/", "/{m...}", "the same requests"},
		{"/a/{x}", "/{y}/b", "both match some paths"},
		{"/a", "GET /{x}", "matches more methods than GET /{x}, but has a more specific path pattern"},
		{"GET /a", "HEAD /", "matches more methods than HEAD /, but has a more specific path pattern"},
		{"POST /", "/a", "matches fewer methods than /a, but has a more general path pattern"},
	} {
		assert.Contains(t, describeConflict(mustParse(t, c.p1), mustParse(t, c.p2)), c.want)
	}
}

func TestCommonPath(t *testing.T) {
	for _, c := range []struct{ p1, p2, want string }{
		{"/a/{x}", "/{x}/a", "/a/a"},
		{"/a/{z}/", "/{z}/a/", "/a/a/"},
		{"/a/{z}/{m...}", "/{z}/a/", "/a/a/"},
		{"/{z}/{$}", "/a/", "/a/"},
		{"/{z}/{$}", "/a/{x...}", "/a/"},
		{"/a/{z}/{$}", "/{z}/a/", "/a/a/"},
		{"/a/{x}/b/{y...}", "/{x}/c/{y...}", "/a/c/b/"},
		{"/a/{x}/b/", "/{x}/c/{y...}", "/a/c/b/"},
		{"/a/{x}/b/{$}", "/{x}/c/{y...}", "/a/c/b/"},
		{"/a/{z}/{x...}", "/{z}/b/{y...}", "/a/b/"},
	} {
		p1, p2 := mustParse(t, c.p1), mustParse(t, c.p2)
		require.Equal(t, overlaps, p1.comparePaths(p2))
		assert.Equal(t, c.want, commonPath(p1, p2), "%s vs %s", c.p1, c.p2)
	}
}

func TestDifferencePath(t *testing.T) {
	for _, c := range []struct{ p1, p2, want string }{
		{"/a/{x}", "/{x}/a", "/a/x"},
		{"/{x}/a", "/a/{x}", "/x/a"},
		{"/a/{z}/", "/{z}/a/", "/a/z/"},
		{"/{z}/a/", "/a/{z}/", "/z/a/"},
		{"/{a}/a/", "/a/{z}/", "/ax/a/"},
		{"/a/{z}/{x...}", "/{z}/b/{y...}", "/a/z/"},
		{"/{z}/b/{y...}", "/a/{z}/{x...}", "/z/b/"},
		{"/a/b/", "/a/b/c", "/a/b/"},
		{"/a/b/{x...}", "/a/b/c", "/a/b/"},
		{"/a/b/{x...}", "/a/b/c/d", "/a/b/"},
		{"/a/b/{x...}", "/a/b/c/d/", "/a/b/"},
		{"/a/{z}/{m...}", "/{z}/a/", "/a/z/"},
		{"/{z}/a/", "/a/{z}/{m...}", "/z/a/"},
		{"/{z}/{$}", "/a/", "/z/"},
		{"/a/", "/{z}/{$}", "/a/x"},
		{"/{z}/{$}", "/a/{x...}", "/z/"},
		{"/a/{foo...}", "/{z}/{$}", "/a/foo"},
		{"/a/{z}/{$}", "/{z}/a/", "/a/z/"},
		{"/{z}/a/", "/a/{z}/{$}", "/z/a/x"},
		{"/a/{x}/b/{y...}", "/{x}/c/{y...}", "/a/x/b/"},
		{"/{x}/c/{y...}", "/a/{x}/b/{y...}", "/x/c/"},
		{"/a/{c}/b/", "/{x}/c/{y...}", "/a/cx/b/"},
		{"/{x}/c/{y...}", "/a/{c}/b/", "/x/c/"},
		{"/a/{x}/b/{$}", "/{x}/c/{y...}", "/a/x/b/"},
		{"/{x}/c/{y...}", "/a/{x}/b/{$}", "/x/c/"},
	} {
		p1, p2 := mustParse(t, c.p1), mustParse(t, c.p2)
		rel := p1.comparePaths(p2)
		require.True(t, rel == overlaps || rel == moreGeneral, "%s vs %s: %s", c.p1, c.p2, rel)
		assert.Equal(t, c.want, differencePath(p1, p2), "%s vs %s", c.p1, c.p2)
	}
}

// TestOverlapMessage: the long form of a conflict message, word for word
// ServeMux's.
func TestOverlapMessage(t *testing.T) {
	pr := newPair(t, "/a/{x}")
	err, muxErr := pr.register("/{y}/b")
	require.Error(t, err)
	require.Error(t, muxErr)
	assert.Equal(t, muxErrorText(muxErr), err.Error())
	assert.True(t, strings.HasPrefix(err.Error(), `pattern "/{y}/b" conflicts with pattern "/a/{x}":`), err.Error())
}

package route

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExactPath(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		ok            bool
	}{
		{"GET /health", "/health", true},
		{"GET /a/b/c", "/a/b/c", true},
		{"GET /{$}", "/", true},
		{"GET /a/{$}", "/a/", true},
		{"GET /a/%2F", "/a/", true}, // the same segments as "/a/{$}", in the tree too
		{"GET /a%2Fb/c", "", false},
		{"GET /a/{x}", "", false},
		{"GET /a/", "", false},
		{"GET /a/{x...}", "", false},
	} {
		pat, err := parsePattern(c.pattern)
		require.NoError(t, err, c.pattern)
		path, ok := exactPath(pat.segments)
		assert.Equal(t, c.ok, ok, c.pattern)
		assert.Equal(t, c.path, path, c.pattern)
	}
}

// TestExactMatchAgrees: where exactMatch answers, the walk answers the
// same, for every pattern set and request of the agreement tests.
func TestExactMatchAgrees(t *testing.T) {
	hits := 0
	for _, set := range append(patternSets, apiRoutes) {
		r := newRouter(t, set...)
		for _, target := range targets {
			canon, escapes, clean := scanPath([]byte(target))
			if !canon || escapes || !clean {
				continue
			}
			for _, m := range methodsToTry {
				l := r.table.exactMatch([]byte(m), []byte(target))
				if l == nil {
					continue
				}
				hits++
				var p Params
				w := walk{p: &p, collect: true}
				assert.Same(t, r.table.lookup(&w, nil, []byte(m), []byte(target), false), l, "%v: %s %s", set, m, target)
			}
		}
	}
	assert.NotZero(t, hits)
}

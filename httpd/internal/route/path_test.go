package route

import (
	"net"
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// netHTTPCleanPath is net/http's cleanPath (server.go), the reference.
func netHTTPCleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

var pathsToClean = []string{
	"", "/", "//", "/x", "//x", "x//", "a//b/////c", "/foo/../bar/./..//baz", "/.", "/..", "/./", "/../",
	"/a/.", "/a/..", "/a/./", "/a/../", "/a/b/../..", "/a/b/../../..", "/...", "/.../", "/.a", "/a./",
	"/..a/", "a", ".", "..", "../a", "/a/%2e%2e/b", "/a//", "///", "/a/b/c/./../../d/",
}

func TestCleanPath(t *testing.T) {
	for _, p := range append(pathsToClean, targets...) {
		want := netHTTPCleanPath(p)
		assert.Equal(t, want, string(cleanPath([]byte("junk"), []byte(p))[4:]), p)
		_, _, clean := scanPath([]byte(p))
		assert.Equal(t, want == p, clean, p)
	}
}

func TestStripHostPort(t *testing.T) {
	for _, h := range []string{
		"", "a.com", "a.com:80", "a.com:", ":80", "a:b:c", "[::1]", "[::1]:80", "[::1]80", "[::1]:80:90",
		"[a]b]:80", "x[y]:80", "[::1:80", "::1", "[]:80", "[:]:", "]:80", "a]:80", "[a:80",
	} {
		want := h
		if strings.Contains(h, ":") {
			if host, _, err := net.SplitHostPort(h); err == nil {
				want = host
			}
		}
		assert.Equal(t, want, string(stripHostPort([]byte(h))), h)
	}
}

// TestEscaping: the byte classes and rewriting agree with net/url, for
// every byte.
func TestEscaping(t *testing.T) {
	for c := 0; c < 256; c++ {
		s := "/a" + string([]byte{byte(c)}) + "b"
		assert.Equal(t, (&url.URL{Path: s}).EscapedPath(), string(appendEscaped(nil, []byte(s))), "byte %#x", c)
		u, err := url.ParseRequestURI(s)
		if err != nil || c == '?' {
			continue // a byte net/url refuses in a target, or the query's start
		}
		got := s
		if canon, _, _ := scanPath([]byte(s)); !canon {
			got = string(appendCanonical([]byte("junk"), []byte(s))[4:])
		}
		assert.Equal(t, u.EscapedPath(), got, "byte %#x", c)
	}
	for _, s := range append(targets, "/a%2Fb{", "/é%2F%2e%2E/x", "/%41%zz", "/x%", "/%7b%7D") {
		u, err := url.ParseRequestURI(s)
		if err != nil || !strings.HasPrefix(s, "/") {
			continue
		}
		raw, _, _ := strings.Cut(s, "?")
		got := raw
		if canon, _, _ := scanPath([]byte(raw)); !canon {
			got = string(appendCanonical(nil, []byte(raw)))
		}
		assert.Equal(t, u.EscapedPath(), got, s)
	}
	require.True(t, validEscapes([]byte("/%41%7a")))
	require.False(t, validEscapes([]byte("/%4")))
	require.False(t, validEscapes([]byte("/%zz")))
	require.Equal(t, "/A{", string(appendUnescaped(nil, []byte("/%41%7b"))))
}

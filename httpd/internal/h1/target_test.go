package h1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// CheckPath takes an HTTP/2 :path exactly when the parser takes the same
// target in an HTTP/1.1 request line (for the forms HTTP/2 has), so that
// a target is served or refused alike over both protocols.
func TestCheckPathAsRequestLine(t *testing.T) {
	for _, c := range []struct {
		method, path string
		ok           bool
	}{
		{"GET", "/", true},
		{"GET", "/users/7?x=%zz&y", true}, // the query is not unescaped
		{"GET", "/a%20b/%E2%80%A8", true},
		{"GET", "/caf\xc3\xa9", true}, // bytes over 0x7f, as net/url takes them
		{"OPTIONS", "*", true},
		{"GET", "/users/%", false},
		{"GET", "/users/%u2028", false},
		{"GET", "/a%2", false},
		{"GET", "/a%2?x", false},
		{"GET", "*", false},
		{"GET", "users", false},
		{"GET", "http://x/y", false}, // absolute-form: not a :path
		{"GET", "", false},
		{"GET", "/a b", false},
		{"GET", "/a\x01", false},
		{"GET", "/a\x7f", false},
		{"GET", "/a\tb", false},
	} {
		got := CheckPath([]byte(c.method), []byte(c.path))
		assert.Equal(t, c.ok, got == 0, "%s %q: %v", c.method, c.path, got)
		if c.path == "" || c.path[0] != '/' && c.path != "*" {
			continue // a form HTTP/1.1 has and HTTP/2 has not, or no target
		}
		p := Parser{Limits: testLimits}
		var h Head
		_, err := p.Parse([]byte(c.method+" "+c.path+" HTTP/1.1\r\nHost: x\r\n\r\n"), &h)
		assert.Equal(t, c.ok, err == nil, "HTTP/1.1 %s %q: %v", c.method, c.path, err)
	}
}

// CheckAuthority takes an HTTP/2 CONNECT's :authority exactly when the
// parser takes it as an HTTP/1.1 CONNECT's target.
func TestCheckAuthorityAsRequestLine(t *testing.T) {
	for _, c := range []struct {
		a  string
		ok bool
	}{
		{"x:443", true},
		{"example.com:8080", true},
		{"[::1]:443", true},
		{"x", false}, // a CONNECT needs a port
		{"x:", false},
		{"user@x:443", false},
		{"x%41:443", false},
		{"[::1%25eth0]:443", false},
		{"", false},
	} {
		got := CheckAuthority([]byte(c.a))
		assert.Equal(t, c.ok, got == 0, "%q: %v", c.a, got)
		if c.a == "" {
			continue // no target at all: not a request line
		}
		p := Parser{Limits: testLimits}
		var h Head
		_, err := p.Parse([]byte("CONNECT "+c.a+" HTTP/1.1\r\nHost: x\r\n\r\n"), &h)
		assert.Equal(t, c.ok, err == nil, "HTTP/1.1 CONNECT %q: %v", c.a, err)
	}
}

package httpd

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A FromHTTP handler finds in its context what net/http puts there: the
// *http.Server under ServerContextKey and the local address under
// LocalAddrContextKey. httputil.ReverseProxy depends on the first: without
// it, a backend that breaks off mid-body left the client a response that
// ended as if whole.
func TestFromHTTPContextValuesAndReverseProxyAbort(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("a", 100))
		w.(http.Flusher).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = c.Close() // the backend dies mid-body
		}
	}))
	defer backend.Close()
	u, err := url.Parse(backend.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ErrorLog = log.New(io.Discard, "", 0)

	m := NewMux()
	m.Handle("GET /proxy", FromHTTP(proxy))
	m.Handle("GET /ctx", FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
		addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		if srv == nil || addr == nil {
			http.Error(w, fmt.Sprintf("server %v, local address %v", srv, addr), 500)
			return
		}
		fmt.Fprintf(w, "%s %s %s", srv.Addr, addr.Network(), addr)
	})))
	ts := serveTest(t, &Server{Handler: m, ErrorLog: log.New(io.Discard, "", 0)})

	for name, c := range map[string]*http.Client{"HTTP/1.1": client(t), "HTTP/2": h2Client(t)} {
		st, body := get(t, c, ts.url+"/ctx")
		require.Equal(t, 200, st, "%s: %s", name, body)
		assert.Equal(t, ts.addr+" tcp "+ts.addr, body, name)

		require.Error(t, getCut(c, ts.url+"/proxy"), "%s: the proxied response must be cut, not end as if whole", name)
	}
	ts.atRest(t)
}

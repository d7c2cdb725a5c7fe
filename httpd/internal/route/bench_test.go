package route

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchRequests: the server's target (/health in a table of 20 routes), a
// route with two wildcards, a 404.
var benchRequests = []struct{ name, method, path string }{
	{"health", "GET", "/health"},
	{"two-wildcards", "GET", "/api/v1/users/42/posts/7"},
	{"404", "GET", "/api/v3/nothing"},
}

// BenchmarkMatch routes each of benchRequests in apiRoutes with the Router
// and, in the same run, with net/http's ServeMux: ServeHTTP on a request
// read once, writing to a ResponseWriter that keeps nothing (the mux's
// own cost, its 404 page included), and to an httptest recorder made per
// request.
func BenchmarkMatch(b *testing.B) {
	r := newRouter(b, apiRoutes...)
	mux := http.NewServeMux()
	for _, p := range apiRoutes {
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	for _, c := range benchRequests {
		b.Run(c.name+"/Router", func(b *testing.B) {
			method, host, path := []byte(c.method), []byte("example.com"), []byte(c.path)
			var p Params
			b.ReportAllocs()
			for b.Loop() {
				r.Match(method, host, path, &p)
			}
		})
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(
			c.method + " " + c.path + " HTTP/1.1\r\nHost: example.com\r\n\r\n")))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/ServeMux", func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				mux.ServeHTTP(w, req)
			}
		})
		b.Run(c.name+"/ServeMux+recorder", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mux.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing but its header map.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

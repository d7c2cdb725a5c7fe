package httpd_test

import (
	"fmt"
	"net/http"

	"github.com/valkyria/aio/httpd"
)

// FromHTTP serves a net/http handler (which may block) on the loop's Work
// pool, next to native handlers: here a ServeMux of its own under a
// subtree, with its path values and http.Error.
func ExampleFromHTTP() {
	legacy := http.NewServeMux()
	legacy.HandleFunc("GET /old/hello/{name}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "hello %s over %s", r.PathValue("name"), r.Proto)
	})
	legacy.HandleFunc("GET /old/broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no database", http.StatusServiceUnavailable)
	})

	mux := httpd.NewMux()
	mux.Handle("/old/", httpd.FromHTTP(legacy))
	mux.HandleFunc("GET /new", func(r *httpd.Request) httpd.Reply {
		return httpd.Text(200, "native")
	})
	url, stop := serve(mux)
	defer stop()
	fetch(url+"/old/hello/gopher", "")
	fetch(url+"/old/broken", "")
	fetch(url+"/new", "")
	// Output:
	// 200 hello gopher over HTTP/1.1
	// 503 no database
	// 200 native
}

package route_test

import (
	"fmt"

	"github.com/valkyria/aio/httpd/internal/route"
)

// A Router of handler names: each kind of outcome, with one Params reused
// for every request as a server would.
func ExampleRouter() {
	var r route.Router[string]
	for _, pattern := range []string{
		"GET /health",
		"GET /users/{id}/files/{path...}",
		"POST /users",
		"/static/",
		"admin.example.com/",
	} {
		if err := r.Handle(pattern, "handler for "+pattern); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(r.Handle("GET /", "conflicts"))

	var p route.Params
	for _, req := range []struct{ method, host, path string }{
		{"GET", "example.com", "/health"},
		{"HEAD", "example.com:8080", "/users/7/files/a/b%20c"},
		{"GET", "admin.example.com", "/health"},
		{"GET", "example.com", "/users"},
		{"GET", "example.com", "/static"},
		{"GET", "example.com", "/static/../health"},
		{"GET", "example.com", "/nothing"},
	} {
		h, kind := r.Match([]byte(req.method), []byte(req.host), []byte(req.path), &p)
		switch kind {
		case route.Found:
			fmt.Printf("%s %s: %s", req.method, req.path, h)
			for i := 0; i < p.Len(); i++ {
				fmt.Printf(" %s=%q", p.Name(i), p.Value(i))
			}
			fmt.Println()
		case route.MethodNotAllowed:
			fmt.Printf("%s %s: %d, Allow: %s\n", req.method, req.path, kind.Status(), p.Allow())
		case route.Redirect:
			fmt.Printf("%s %s: %d, Location: %s\n", req.method, req.path, kind.Status(), p.Redirect())
		default:
			fmt.Printf("%s %s: %d\n", req.method, req.path, kind.Status())
		}
	}
	// Output:
	// pattern "GET /" conflicts with pattern "/static/":
	// GET / matches fewer methods than /static/, but has a more general path pattern
	// GET /health: handler for GET /health
	// HEAD /users/7/files/a/b%20c: handler for GET /users/{id}/files/{path...} id="7" path="a/b c"
	// GET /health: handler for admin.example.com/
	// GET /users: 405, Allow: POST
	// GET /static: 307, Location: /static/
	// GET /static/../health: 307, Location: /health
	// GET /nothing: 404
}

package httpd_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// State shared by the loops of a server: one loop owns it, and handlers
// on any loop reach it with aio.New on the owner, which runs the access
// there and settles a handle the handler replies with (a reply may be a
// handle of another loop). No lock: the owner loop is the only one that
// touches the map. Copy what crosses loops (strings.Clone: a request's
// strings are views into its arena) and build the Response from the
// value alone, never from the Request, which belongs to its own loop.
func Example_sharedState() {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	loops := make([]*aio.Loop, 2)
	for i := range loops {
		l, err := rt.Start(aio.Config{})
		if err != nil {
			panic(err)
		}
		loops[i] = l
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer rt.Shutdown(ctx)

	owner := loops[0]
	counts := map[string]int{} // owned by owner's loop
	mux := httpd.NewMux()
	mux.HandleFunc("POST /hits/{name}", func(r *httpd.Request) httpd.Reply {
		name := strings.Clone(r.PathValue("name"))
		n := aio.New(owner, func(resolve func(int), _ func(error)) {
			counts[name]++ // on owner's loop
			resolve(counts[name])
		})
		return httpd.Later(aio.Then(n, func(n int) (httpd.Response, error) {
			return httpd.TextResponse(200, fmt.Sprintf("%s: %d", name, n)), nil
		}))
	})
	srv := &httpd.Server{Handler: mux, Config: httpd.Config{Arenas: 64}}
	if err := srv.Serve(rt, "127.0.0.1:0"); err != nil {
		panic(err)
	}
	url := "http://" + srv.Addr().String()
	for range 3 { // each on a new connection: the kernel spreads them over the loops
		fetch(url+"/hits/home", "x")
	}
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 200 home: 1
	// 200 home: 2
	// 200 home: 3
}

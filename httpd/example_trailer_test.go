package httpd_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// A stream that sends the checksum of its body after it, as a trailer:
// declared in the header, so that HTTP/1.1 chunks the body for it, and
// set once the body is written.
func ExampleStream_SetTrailer() {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	if _, err := rt.Start(aio.Config{}); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer rt.Shutdown(ctx)

	mux := httpd.NewMux()
	mux.HandleFunc("GET /data", func(r *httpd.Request) httpd.Reply {
		s := r.Stream(200, []httpd.Field{{Name: "Content-Type", Value: "text/plain"}, {Name: "Trailer", Value: "X-Crc32"}})
		sum := crc32.NewIEEE()
		for _, part := range []string{"hello, ", "world"} {
			_, _ = s.WriteString(part)
			_, _ = io.WriteString(sum, part)
		}
		crc := strconv.FormatUint(uint64(sum.Sum32()), 16)
		if err := s.SetTrailer([]httpd.Field{{Name: "X-Crc32", Value: crc}}); err != nil {
			panic(err) // a field a trailer may not carry
		}
		fmt.Println(s.SetTrailer([]httpd.Field{{Name: "Content-Length", Value: "12"}}))
		s.End()
		return s.Reply()
	})
	srv := &httpd.Server{Handler: mux, Config: httpd.Config{Arenas: 16}}
	if err := srv.Serve(rt, "127.0.0.1:0"); err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + srv.Addr().String() + "/data")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body) // the trailer is known at the body's end
	fmt.Printf("%s %v crc32 %s\n", body, resp.TransferEncoding, resp.Trailer.Get("X-Crc32"))
	// Output:
	// httpd: field not allowed in a trailer: "Content-Length"
	// hello, world [chunked] crc32 ffab723a
}

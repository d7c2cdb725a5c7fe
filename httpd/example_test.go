package httpd_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// fetch GETs (or POSTs, with a body) url and prints the status and body.
func fetch(url, body string) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var resp *http.Response
	var err error
	if body == "" {
		resp, err = c.Get(url)
	} else {
		resp, err = c.Post(url, "text/plain", strings.NewReader(body))
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, strings.TrimSpace(string(b)))
}

// A server on two loops of a runtime: /health answers at once, /slow
// later from a loop timer, /users/{id} from Work (a blocking call off the
// loop) continued on the loop.
func ExampleServer() {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	for range 2 {
		if _, err := rt.Start(aio.Config{}); err != nil {
			panic(err)
		}
	}
	// The loops stop last, with a context of their own: one that the
	// server's Shutdown has used up would not wait for them.
	defer rt.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	mux := httpd.NewMux()
	mux.HandleFunc("GET /health", func(r *httpd.Request) httpd.Reply {
		return httpd.Text(200, "ok") // at once: no handle
	})
	mux.HandleFunc("GET /slow", func(r *httpd.Request) httpd.Reply {
		return httpd.Later(aio.Delay(r.Loop(), 10*time.Millisecond, func() (httpd.Response, error) {
			return httpd.TextResponse(200, "waited 10 ms"), nil
		}))
	})
	mux.HandleFunc("GET /users/{id}", func(r *httpd.Request) httpd.Reply {
		id := strings.Clone(r.PathValue("id")) // the Work runs off the loop: keep a copy
		user := aio.Work(r.Loop(), func(ctx context.Context) (string, error) {
			return "user " + id, nil // a database query, say; ctx ends if the client goes
		})
		return httpd.Later(aio.Then(user, func(name string) (httpd.Response, error) {
			return httpd.TextResponse(200, name), nil
		}))
	})
	srv := &httpd.Server{Handler: mux, Config: httpd.Config{Arenas: 64}}
	if err := srv.Serve(rt, "127.0.0.1:0"); err != nil {
		panic(err)
	}
	url := "http://" + srv.Addr().String()
	fetch(url+"/health", "")
	fetch(url+"/slow", "")
	fetch(url+"/users/7", "")
	fetch(url+"/nothing", "")
	if err := srv.Shutdown(ctx); err != nil {
		fmt.Println(err)
	}
	fmt.Println(srv.Stats().Requests, "requests")
	// Output:
	// 200 ok
	// 200 waited 10 ms
	// 200 user 7
	// 404 404 page not found
	// 4 requests
}

// serve runs mux on a loop of its own for an example, and returns the URL
// and a function that stops everything.
func serve(mux *httpd.Mux) (string, func()) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{})
	if err != nil {
		panic(err)
	}
	srv := &httpd.Server{Handler: mux, Config: httpd.Config{Arenas: 16}}
	if err := srv.ServeLoops("127.0.0.1:0", l); err != nil {
		panic(err)
	}
	return "http://" + srv.Addr().String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = rt.Shutdown(context.Background()) // a context of its own (see the package doc)
	}
}

// Patterns are net/http's ServeMux patterns: methods, wildcards, subtrees,
// with ServeMux's 404, 405 and redirects.
func ExampleMux() {
	mux := httpd.NewMux()
	mux.HandleFunc("GET /files/{path...}", func(r *httpd.Request) httpd.Reply {
		return httpd.Text(200, "file "+r.PathValue("path"))
	})
	mux.HandleFunc("POST /files/", func(r *httpd.Request) httpd.Reply {
		return httpd.Text(201, "stored")
	})
	url, stop := serve(mux)
	defer stop()
	fetch(url+"/files/a/b.txt", "")
	fetch(url+"/files/new", "data")
	fetch(url+"/other", "")
	// Output:
	// 200 file a/b.txt
	// 201 stored
	// 404 404 page not found
}

// A Reply is a Response at once, or a handle of one: a failed handle
// answers 500, a Race gives a timeout.
func ExampleReply() {
	mux := httpd.NewMux()
	mux.HandleFunc("GET /now", func(r *httpd.Request) httpd.Reply {
		b := r.Arena().Buffer() // the response is built in the request's arena
		b = append(b, `{"answer":42}`...)
		return httpd.JSON(200, b)
	})
	mux.HandleFunc("GET /race", func(r *httpd.Request) httpd.Reply {
		fetchData := aio.Delay(r.Loop(), time.Hour, func() (httpd.Response, error) {
			return httpd.TextResponse(200, "data"), nil
		})
		timeout := aio.Delay(r.Loop(), 5*time.Millisecond, func() (httpd.Response, error) {
			return httpd.TextResponse(504, "timeout"), nil
		})
		return httpd.Later(aio.Race(fetchData, timeout)) // the loser's timer is disarmed
	})
	mux.HandleFunc("GET /broken", func(r *httpd.Request) httpd.Reply {
		return httpd.Later(aio.Fail[httpd.Response](r.Loop(), fmt.Errorf("no database")))
	})
	url, stop := serve(mux)
	defer stop()
	fetch(url+"/now", "")
	fetch(url+"/race", "")
	fetch(url+"/broken", "")
	// Output:
	// 200 {"answer":42}
	// 504 timeout
	// 500 500 Internal Server Error
}

// A Stream writes its body as it is made; here it echoes a request body
// that streams in, with the connection's flow control in between.
func ExampleStream() {
	mux := httpd.NewMux()
	mux.HandleFunc("POST /upper", func(r *httpd.Request) httpd.Reply {
		s := r.Stream(200, []httpd.Field{{Name: "Content-Type", Value: "text/plain"}})
		r.Body().OnData(func(p []byte, end bool) {
			_, _ = s.Write([]byte(strings.ToUpper(string(p))))
			if end {
				s.End()
			}
		})
		return s.Reply()
	})
	url, stop := serve(mux)
	defer stop()
	fetch(url+"/upper", "hello, stream")
	// Output:
	// 200 HELLO, STREAM
}

// CopyTo stores an upload of any size in a file: the writes run on the
// Work pool, off the loop, and a disk slower than the client holds the
// client back (the connection stops reading) instead of filling memory.
// A client that goes away cancels the copy.
func ExampleBody_CopyTo() {
	mux := httpd.NewMux()
	mux.HandleFunc("POST /upload", func(r *httpd.Request) httpd.Reply {
		f, err := os.CreateTemp("", "upload-*")
		if err != nil {
			return httpd.Text(500, err.Error())
		}
		stored := aio.Finally(r.Body().CopyTo(f), func() {
			f.Close()
			os.Remove(f.Name()) // an example keeps nothing
		})
		return httpd.Later(aio.Then(stored, func(n int64) (httpd.Response, error) {
			return httpd.TextResponse(200, fmt.Sprintf("stored %d bytes", n)), nil
		}))
	})
	url, stop := serve(mux)
	defer stop()
	fetch(url+"/upload", "hello, upload")
	// Output:
	// 200 stored 13 bytes
}

// A chunked request body may end with trailer fields, here a checksum the
// client computed while sending: the handler reads them once the body has
// ended.
func ExampleRequest_Trailer() {
	mux := httpd.NewMux()
	mux.HandleFunc("POST /upload", func(r *httpd.Request) httpd.Reply {
		p := aio.NewPromise[httpd.Response](r.Loop())
		n := 0
		r.Body().OnData(func(b []byte, end bool) {
			n += len(b)
			if end {
				p.Resolve(httpd.TextResponse(200, fmt.Sprintf("%d bytes, sum %s", n, r.Trailer("X-Sum"))))
			}
		})
		return httpd.Later(p.Handle())
	})
	url, stop := serve(mux)
	defer stop()

	req, _ := http.NewRequest("POST", url+"/upload", io.MultiReader(strings.NewReader("hello")))
	req.Trailer = http.Header{"X-Sum": {"532"}} // sent after the body: chunked
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Println(string(b))
	// Output: 5 bytes, sum 532
}

// A Duplex handler starts at its request's head, so a client can stream
// both ways: here it waits for each line's echo before it
// sends the next. (A handler that is not Duplex would wait for this small
// body to arrive whole, and the client for the first echo.)
func ExampleDuplex() {
	mux := httpd.NewMux()
	mux.Handle("POST /echo", httpd.Duplex(httpd.HandlerFunc(func(r *httpd.Request) httpd.Reply {
		s := r.Stream(200, nil)
		r.Body().OnData(func(p []byte, end bool) {
			_, _ = s.Write(p)
			if end {
				s.End()
			}
		})
		return s.Reply()
	})))
	url, stop := serve(mux)
	defer stop()

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true) // h2c, by prior knowledge
	defer tr.CloseIdleConnections()
	body, send := io.Pipe()
	go io.WriteString(send, "ping 1\n")
	resp, err := (&http.Client{Transport: tr}).Post(url+"/echo", "text/plain", body)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	echoes := bufio.NewReader(resp.Body)
	for i := 1; i <= 3; i++ {
		line, _ := echoes.ReadString('\n')
		fmt.Print(resp.Proto, " ", line)
		if i < 3 {
			go fmt.Fprintf(send, "ping %d\n", i+1)
		}
	}
	send.Close()
	// Output:
	// HTTP/2.0 ping 1
	// HTTP/2.0 ping 2
	// HTTP/2.0 ping 3
}

// context.Cause of a request's context tells the work it started why it
// ended: here the client gives up after 50 ms, and the computation learns
// that its client went away (not that the server is shutting down, nor
// that the request simply ended).
func ExampleRequest_Context() {
	why := make(chan error, 1)
	mux := httpd.NewMux()
	mux.HandleFunc("GET /report", func(r *httpd.Request) httpd.Reply {
		ctx := r.Context()
		return httpd.Later(aio.Work(r.Loop(), func(context.Context) (httpd.Response, error) {
			<-ctx.Done() // a long computation, cut short
			why <- context.Cause(ctx)
			return httpd.Response{}, ctx.Err()
		}))
	})
	url, stop := serve(mux)
	defer stop()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	if _, err := (&http.Client{Transport: tr, Timeout: 50 * time.Millisecond}).Get(url + "/report"); err != nil {
		fmt.Println("the client gave up")
	}
	fmt.Println("client gone:", errors.Is(<-why, httpd.ErrClientGone))
	// Output:
	// the client gave up
	// client gone: true
}

// MaxBytesHandler gives one route a lower body limit than the server's:
// a JSON API that takes small bodies beside routes that take more.
func ExampleMaxBytesHandler() {
	mux := httpd.NewMux()
	mux.Handle("POST /api/notes", httpd.MaxBytesHandler(httpd.HandlerFunc(func(r *httpd.Request) httpd.Reply {
		// ReadAll, not Bytes: a body larger than half the arena streams,
		// and Bytes has nothing for it.
		return httpd.Later(aio.Then(r.Body().ReadAll(), func(b []byte) (httpd.Response, error) {
			return httpd.TextResponse(201, fmt.Sprintf("%d bytes stored", len(b))), nil
		}))
	}), 16))
	url, stop := serve(mux)
	defer stop()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for _, note := range []string{"buy milk", "write the whole novel tonight"} {
		resp, err := c.Post(url+"/api/notes", "text/plain", strings.NewReader(note))
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s", resp.StatusCode, b)
		if resp.StatusCode == 201 {
			fmt.Println()
		}
	}
	// Output:
	// 201 8 bytes stored
	// 413 413 Request Entity Too Large
}

package httpd_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// Server-sent events to every subscriber from one timer of the loop. The
// set of streams is the loop's own (no lock): a stream leaves it when it
// ends, whichever way (its handle's cleanup). A subscriber that does not
// read is skipped while its stream is Full, so it neither blocks the
// others nor fills memory, and cut (its handle cancelled) once it has
// missed too many. Shutdown ends each stream with a last event, posted to
// the loop from RegisterOnShutdown; a server on several loops keeps a set
// per loop, and posts the tick to each.
func Example_serverSentEvents() {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Shutdown(context.Background())

	missed := map[*httpd.Stream]int{} // the subscribers, owned by l's loop
	mux := httpd.NewMux()
	mux.HandleFunc("GET /events", func(r *httpd.Request) httpd.Reply {
		s := r.Stream(200, []httpd.Field{{Name: "Content-Type", Value: "text/event-stream"}})
		missed[s] = 0
		s.Handle().OnCleanup(func() { delete(missed, s) }) // End, the client gone, or cut
		return s.Reply()
	})
	tick := aio.Every(l, 10*time.Millisecond, func() {
		for s := range missed {
			if s.Full() {
				if missed[s]++; missed[s] > 100 {
					s.Handle().Cancel() // too slow to keep: cut
				}
				continue
			}
			missed[s] = 0
			_, _ = s.WriteString("data: tick\n\n")
		}
	})
	srv := &httpd.Server{Handler: mux, Config: httpd.Config{Arenas: 64}}
	srv.RegisterOnShutdown(func() {
		_ = l.Post(func() {
			tick.Cancel()
			for s := range missed {
				_, _ = s.WriteString("event: bye\ndata: shutting down\n\n")
				s.End()
			}
		})
	})
	if err := srv.ServeLoops("127.0.0.1:0", l); err != nil {
		panic(err)
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get("http://" + srv.Addr().String() + "/events")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for ticks := 0; ticks < 3 && lines.Scan(); {
		if line := lines.Text(); line != "" {
			fmt.Println(line)
			ticks++
		}
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(ctx)
	}()
	for lines.Scan() { // the ticks sent meanwhile, then the last event
		if line := lines.Text(); strings.HasPrefix(line, "event:") {
			fmt.Println(line)
		}
	}
	fmt.Println("stream ended:", lines.Err(), <-shut)
	// Output:
	// data: tick
	// data: tick
	// data: tick
	// event: bye
	// stream ended: <nil> <nil>
}

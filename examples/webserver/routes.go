package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/httpd"
)

// Bounds of the query values (see the package doc). A value outside them is
// a 400: a timer of a year, or a million events, is a mistake or an attack,
// not a request to serve.
const (
	maxMillis = 60_000
	maxEvents = 10_000
)

// queryTime is how long a simulated database query (Work) takes.
const queryTime = 2 * time.Millisecond

// Headers shared by every response that uses them: a package variable
// costs nothing per response (httpd.Field).
var (
	textHeader  = []httpd.Field{{Name: "Content-Type", Value: "text/plain; charset=utf-8"}}
	sseHeader   = []httpd.Field{{Name: "Content-Type", Value: "text/event-stream"}, {Name: "Cache-Control", Value: "no-cache"}}
	octetHeader = httpd.Field{Name: "Content-Type", Value: "application/octet-stream"}
)

// The dashboard's "tables": what its two queries return.
var (
	postsRows = []byte(`[{"id":1,"title":"Hello from the loop"},{"id":2,"title":"Handles all the way down"}]`)
	statsRows = []byte(`{"users":2,"posts":2}`)
)

// routes are the server's handlers and what they need.
type routes struct {
	rt         *aio.Runtime  // for /metrics' loop counters
	srv        *httpd.Server // for /stats and /metrics
	apiTimeout time.Duration // /api/slow's timer
}

// newRoutes returns the server's Mux.
func newRoutes(rt *aio.Runtime, srv *httpd.Server, apiTimeout time.Duration) *httpd.Mux {
	rs := &routes{rt: rt, srv: srv, apiTimeout: apiTimeout}
	m := httpd.NewMux()
	m.HandleFunc("GET /health", health)
	m.HandleFunc("GET /slow", slow)
	m.HandleFunc("GET /users/{id}", user)
	m.HandleFunc("GET /dashboard", dashboard)
	m.HandleFunc("GET /api/slow", rs.apiSlow)
	m.HandleFunc("POST /echo", echo)
	m.HandleFunc("GET /events", events)
	m.HandleFunc("GET /stats", rs.stats)
	m.HandleFunc("GET /metrics", rs.metrics)
	// Anything else is a 404, a known path with a method its route does
	// not take included: a pattern without a method matches every
	// method, and a more specific one wins, so "/" catches exactly what
	// the routes above leave (ServeMux would answer those 405).
	m.HandleFunc("/", notFound)
	return m
}

// notFound answers every request no route above takes.
func notFound(*httpd.Request) httpd.Reply { return httpd.Text(404, "404 page not found\n") }

// health answers at once: an immediate Reply makes no handle and, with a
// constant body, allocates nothing.
func health(*httpd.Request) httpd.Reply { return httpd.Text(200, "ok") }

// slow answers after ms milliseconds, from a timer of the request's loop.
// A client that goes away cancels the handle, which disarms the timer.
func slow(r *httpd.Request) httpd.Reply {
	ms, bad, ok := intParam(r, "ms", 2000, 0, maxMillis)
	if !ok {
		return bad
	}
	return httpd.Later(aio.Delay(r.Loop(), millis(ms), func() (httpd.Response, error) {
		return textInArena(r, "waited ", ms, " ms"), nil
	}))
}

// user is a query (Work, off the loop) and a Then that makes its row the
// response, back on the loop.
func user(r *httpd.Request) httpd.Reply {
	// The id is in the arena, which goes back when the request ends; a
	// query that a client going away has cancelled may still be running
	// then. The query gets a copy.
	id := strings.Clone(r.PathValue("id"))
	row := query(r.Loop(), func() userRow { return userRow{ID: id, Name: "user " + id} })
	return httpd.Later(aio.Then(row, func(u userRow) (httpd.Response, error) {
		b, err := json.Marshal(u) // escapes whatever the id holds
		if err != nil {
			return httpd.Response{}, err // a 500
		}
		return httpd.JSONResponse(200, b), nil
	}))
}

// userRow is a row of the simulated users table.
type userRow struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// dashboard runs two queries at once and answers when both are done (All);
// a client that goes away cancels both.
func dashboard(r *httpd.Request) httpd.Reply {
	l := r.Loop()
	both := aio.All(
		query(l, func() []byte { return postsRows }),
		query(l, func() []byte { return statsRows }),
	)
	return httpd.Later(aio.Then(both, func(parts [][]byte) (httpd.Response, error) {
		b := r.Arena().Buffer()
		b = append(b, `{"posts":`...)
		b = append(b, parts[0]...)
		b = append(b, `,"stats":`...)
		b = append(b, parts[1]...)
		b = append(b, '}')
		return httpd.JSONResponse(200, b), nil
	}))
}

// query runs fn as a simulated database query: on the loop's Work pool,
// after queryTime, or not at all when the handle is cancelled first.
func query[T any](l *aio.Loop, fn func() T) *aio.Handle[T] {
	return aio.Work(l, func(ctx context.Context) (T, error) {
		t := time.NewTimer(queryTime)
		defer t.Stop()
		select {
		case <-t.C:
			return fn(), nil
		case <-ctx.Done():
			var zero T
			return zero, ctx.Err()
		}
	})
}

// apiSlow races a fetch of ms milliseconds against -api-timeout: the first
// to end answers, and the loser's timer is disarmed (Race withdraws from it).
func (rs *routes) apiSlow(r *httpd.Request) httpd.Reply {
	ms, bad, ok := intParam(r, "ms", 100, 0, maxMillis)
	if !ok {
		return bad
	}
	l := r.Loop()
	fetch := aio.Delay(l, millis(ms), func() (httpd.Response, error) {
		return textInArena(r, "data after ", ms, " ms"), nil
	})
	timeout := aio.Delay(l, rs.apiTimeout, func() (httpd.Response, error) {
		return httpd.TextResponse(504, "timeout"), nil
	})
	return httpd.Later(aio.Race(fetch, timeout))
}

// echo sends the request body back. One that arrived with the request
// (it fit in the arena) goes back at once; a larger one streams, each piece
// written as it comes, with flow control: while the response's write queue
// is full the body is paused, so the connection stops reading and TCP holds
// the client back. The body is never held whole.
func echo(r *httpd.Request) httpd.Reply {
	body := r.Body()
	if b, ok := body.Bytes(); ok {
		return httpd.Bytes(200, b)
	}
	header := []httpd.Field{octetHeader}
	if n := body.Length(); n >= 0 {
		header = append(header, httpd.Field{Name: "Content-Length", Value: strconv.FormatInt(n, 10)})
	}
	s := r.Stream(200, header)
	s.OnDrain(body.Resume)
	body.OnData(func(p []byte, end bool) {
		if _, err := s.Write(p); err != nil {
			return // the client has gone: the stream's handle is cancelled
		}
		if end {
			s.End()
		} else if s.Full() {
			body.Pause()
		}
	})
	return s.Reply()
}

// events streams n server-sent events, one every ms milliseconds, from a
// ticker adopted into the request's scope: a client that goes away cancels
// the stream's handle, and with it the scope and the ticker.
func events(r *httpd.Request) httpd.Reply {
	n, bad, ok := intParam(r, "n", 10, 0, maxEvents)
	if !ok {
		return bad
	}
	ms, bad, ok := intParam(r, "ms", 1000, 1, maxMillis)
	if !ok {
		return bad
	}
	if n == 0 {
		return httpd.Respond(httpd.Response{Status: 200, Header: sseHeader})
	}
	s := r.Stream(200, sseHeader)
	var buf []byte // one event; Write copies it
	i := 0
	var tick *aio.Handle[struct{}]
	tick = aio.Adopt(r.Scope(), aio.Every(r.Loop(), millis(ms), func() {
		if s.Full() {
			// The client is behind (or the stream waits for its turn):
			// event i goes at a later tick, so what is queued for a
			// client that does not read stays bounded.
			return
		}
		buf = append(buf[:0], "data: "...)
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, "\n\n"...)
		if _, err := s.Write(buf); err != nil {
			tick.Cancel() // the client has gone (the scope cancels it too)
			return
		}
		if i++; i == n {
			s.End()
			tick.Cancel()
		}
	}))
	return s.Reply()
}

// stats answers the server's counters as JSON, summed over the loops.
func (rs *routes) stats(r *httpd.Request) httpd.Reply {
	b, err := json.Marshal(rs.srv.Stats())
	if err != nil {
		return httpd.Text(500, err.Error())
	}
	return httpd.JSON(200, b)
}

// metrics answers the server's counters and the loops' in the Prometheus
// text format. The counters are read now; the formatting runs on the Work
// pool, off the loop.
func (rs *routes) metrics(r *httpd.Request) httpd.Reply {
	st := rs.srv.Stats()
	return httpd.Later(aio.Work(r.Loop(), func(context.Context) (httpd.Response, error) {
		return prometheusResponse(st, rs.rt)
	}))
}

// intParam reads the integer query parameter name of r: def when it is
// absent (or empty), else an integer in [lo, hi]. Anything else gives
// ok false and a 400 Reply saying what is wanted.
func intParam(r *httpd.Request, name string, def, lo, hi int) (v int, bad httpd.Reply, ok bool) {
	q := r.Query(name)
	if q == "" {
		return def, bad, true
	}
	v, err := strconv.Atoi(q)
	if err != nil || v < lo || v > hi {
		return 0, httpd.Text(400, fmt.Sprintf("bad %s=%q: want an integer from %d to %d", name, q, lo, hi)), false
	}
	return v, bad, true
}

// millis is ms milliseconds.
func millis(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// textInArena is the text/plain response prefix+n+suffix, built in r's
// arena. On the loop, while r's handle runs.
func textInArena(r *httpd.Request, prefix string, n int, suffix string) httpd.Response {
	b := r.Arena().Buffer()
	b = append(b, prefix...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, suffix...)
	return httpd.Response{Status: 200, Header: textHeader, Body: b}
}

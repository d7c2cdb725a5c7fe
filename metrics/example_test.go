package metrics_test

import (
	"context"
	"encoding/json"
	"expvar"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/valkyria/aio"
	"github.com/valkyria/aio/metrics"
)

// A runtime with one loop, which has fired one timer.
func startRuntime() *aio.Runtime {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "api"})
	if err != nil {
		panic(err)
	}
	if _, err := aio.Sleep(l, 0).Wait(context.Background()); err != nil {
		panic(err)
	}
	// The timer's handle completes before the loop publishes the timer
	// for other goroutines (as it goes to sleep next, at the latest).
	for deadline := time.Now().Add(time.Minute); l.Stats().TimerLag.Count == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			panic("the loop never published its timer")
		}
	}
	return rt
}

// Print the lines of one metric family of the exposition.
func printFamily(text, name string) {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, "# HELP "+name+" ") || strings.HasPrefix(line, "# TYPE "+name+" ") {
			fmt.Println(line)
		}
	}
}

func ExampleWritePrometheus() {
	rt := startRuntime()
	defer rt.Shutdown(context.Background())

	var b strings.Builder
	if err := metrics.WritePrometheus(&b, rt); err != nil {
		fmt.Println(err)
		return
	}
	printFamily(b.String(), "aio_tcp_accepted_total")
	// Output:
	// # HELP aio_tcp_accepted_total TCP connections accepted.
	// # TYPE aio_tcp_accepted_total counter
	// aio_tcp_accepted_total{loop="api",slot="0"} 0
}

func ExampleHandler() {
	rt := startRuntime()
	defer rt.Shutdown(context.Background())

	// In a service: http.Handle("/metrics", metrics.Handler(rt)).
	srv := httptest.NewServer(metrics.Handler(rt))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Header.Get("Content-Type"))
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "aio_loop_timer_lag_seconds_count") {
			fmt.Println(line)
		}
	}
	// Output:
	// text/plain; version=0.0.4; charset=utf-8
	// aio_loop_timer_lag_seconds_count{loop="api",slot="0"} 1
}

func ExamplePublish() {
	rt := startRuntime()
	defer rt.Shutdown(context.Background())

	// expvar's handler (/debug/vars, on http.DefaultServeMux) serves it.
	if err := metrics.Publish("aio", rt); err != nil {
		fmt.Println(err)
		return
	}
	var loops map[string]aio.Stats
	if err := json.Unmarshal([]byte(expvar.Get("aio").String()), &loops); err != nil {
		fmt.Println(err)
		return
	}
	// Keyed by name and slot: "api#0" for the runtime's first loop.
	fmt.Println(loops["api#0"].Name, loops["api#0"].TimerLag.Count)
	fmt.Println(metrics.Publish("aio", rt))
	// Output:
	// api 1
	// metrics: expvar "aio" is already published
}

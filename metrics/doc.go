// Package metrics exports the Stats of every loop of an aio.Runtime for a
// service's monitoring: in the Prometheus text exposition format
// ([WritePrometheus], [Handler]) and through expvar ([Publish]).
//
//	http.Handle("/metrics", metrics.Handler(rt))
//	metrics.Publish("aio", rt) // under /debug/vars, with expvar's handler
//
// # Why no client library
//
// The Prometheus client (github.com/prometheus/client_golang) would bring a
// registry, protobuf and a dozen modules into every program that imports aio,
// whose dependencies are kept to golang.org/x/sys and x/net. What an exporter
// of a few counters needs from it is the text format (version 0.0.4): a
// "# HELP" and a "# TYPE" line per metric family, then one line per series,
// name{label="value"} value. That is written here in a page of code, and a
// test parses it back by the format's grammar. Any scraper that reads the
// text format (Prometheus, VictoriaMetrics, the OpenTelemetry collector's
// prometheus receiver) reads it. A program that already uses client_golang
// can instead wrap [WritePrometheus]'s families in a prometheus.Collector, or
// read aio.Stats itself.
//
// # What is exported
//
// One series per running loop, labelled loop="<name>" (Config.Name) and
// slot="<slot>" (Loop.Slot, which no other running loop has). Two loops may
// share a name, and the slot tells them apart; neither label changes while
// the loop runs, whatever other loops start or stop, so a series is one loop
// from its first scrape to its last (sum by (loop) for a name's total). A
// slot freed by a stopped loop is reused by a later one, whose counters start
// from zero: a counter reset, which rate() sees when a scrape finds a value
// below the last one (a loop of the same name that replaces another between
// two scrapes and counts past it by the second shows as too small an
// increase; scrape faster than loops are replaced). Names follow
// Prometheus' conventions: the aio_ prefix, counters end in _total, times
// are in seconds, sizes in bytes. The loop
// health of aio.Stats becomes:
//
//   - aio_loop_busy_seconds_total and aio_loop_idle_seconds_total: the rate
//     of the first is the loop's utilisation (1 is a saturated loop);
//   - aio_loop_phase_seconds_total{phase="timers|posted|io|closing|other"}:
//     where the busy time goes;
//   - aio_loop_post_lag_seconds and aio_loop_timer_lag_seconds: histograms
//     of how long posted callbacks waited for the loop and how late timers
//     fired (see aio.Stats.PostLag), with their maxima as gauges.
//
// The rest of aio.Stats (iterations, the post queue's backlog, handles,
// timers, Work jobs, TCP, TLS handshakes) comes as counters and gauges
// named after its fields in snake case, under aio_loop_ (aio_loop_timers,
// aio_loop_posted_total, …), aio_work_ (aio_work_queued, …), aio_tcp_
// (aio_tcp_open, …; TCPBytesIn and TCPBytesOut as aio_tcp_read_bytes_total
// and aio_tcp_written_bytes_total) and aio_tls_; aio_runtime_loops, without
// labels, counts the loops running. Off the loop, the health counters are
// published by the loop between iterations, a millisecond apart at most
// while it is busy, so a scrape sees them that much and the iteration in
// progress behind; a loop stuck in one callback publishes nothing until it
// returns, and aio_loop_running_seconds (aio.Stats.Running) is what shows
// it.
package metrics

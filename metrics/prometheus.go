package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valkyria/aio"
)

// ErrNilRuntime is returned for a nil *aio.Runtime.
var ErrNilRuntime = errors.New("metrics: nil runtime")

// ContentType is the media type of the Prometheus text format, version 0.0.4.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// loopStats is one running loop's snapshot and what names it: its name
// and its slot, which no other running loop has. Both stay the same for the
// loop's life, whatever other loops start or stop, so that a series (and an
// expvar key) is one loop from its first scrape to its last.
type loopStats struct {
	name string
	slot string
	s    aio.Stats
}

// key is the loop's expvar key, "<name>#<slot>": unique, since the slot
// after the last '#' is.
func (ls *loopStats) key() string { return ls.name + "#" + ls.slot }

// snapshot reads the Stats of every loop running on rt.
func snapshot(rt *aio.Runtime) []loopStats {
	loops := rt.Loops()
	out := make([]loopStats, len(loops))
	for i, l := range loops {
		out[i] = loopStats{name: l.Name(), slot: strconv.Itoa(l.Slot()), s: l.Stats()}
	}
	return out
}

// family is one metric family of a plain type: a value per loop.
type family struct {
	name, typ, help string
	value           func(s *aio.Stats) float64
}

func seconds(d time.Duration) float64 { return d.Seconds() }

var families = []family{
	{"aio_loop_iterations_total", "counter", "Loop iterations.", func(s *aio.Stats) float64 { return float64(s.Iterations) }},
	{"aio_loop_posted_total", "counter", "Callbacks run from the post queue.", func(s *aio.Stats) float64 { return float64(s.Posted) }},
	{"aio_loop_busy_seconds_total", "counter", "Time the loop spent running: every phase but idle.", func(s *aio.Stats) float64 { return seconds(s.Time.Busy()) }},
	{"aio_loop_idle_seconds_total", "counter", "Time the loop spent waiting for work in the poller, or spinning for it.", func(s *aio.Stats) float64 { return seconds(s.Time.Idle) }},
	{"aio_loop_running_seconds", "gauge", "How long the loop has been at work since its last clock reading (0 asleep): a loop stuck in a callback shows here before its busy time moves.", func(s *aio.Stats) float64 { return seconds(s.Running) }},
	{"aio_loop_post_queued", "gauge", "Callbacks posted to the loop and not yet run: its backlog.", func(s *aio.Stats) float64 { return float64(s.PostQueued) }},
	{"aio_loop_post_lag_max_seconds", "gauge", "The longest a batch of posted callbacks waited for the loop.", func(s *aio.Stats) float64 { return seconds(s.PostLag.Max) }},
	{"aio_loop_timer_lag_max_seconds", "gauge", "The latest a timer fired after its deadline.", func(s *aio.Stats) float64 { return seconds(s.TimerLag.Max) }},
	{"aio_loop_timers", "gauge", "Timers armed.", func(s *aio.Stats) float64 { return float64(s.Timers) }},
	{"aio_loop_handles", "gauge", "Handles pinned to the loop, from creation until their cleanups have run.", func(s *aio.Stats) float64 { return float64(s.Handles) }},
	{"aio_loop_abandoned_total", "counter", "Handles collected without reaching a terminal state.", func(s *aio.Stats) float64 { return float64(s.Abandoned) }},
	{"aio_loop_panics_total", "counter", "Panics recovered from callbacks.", func(s *aio.Stats) float64 { return float64(s.Panics) }},
	{"aio_work_queued", "gauge", "Work jobs waiting for a goroutine of the loop's pool.", func(s *aio.Stats) float64 { return float64(s.WorkQueued) }},
	{"aio_work_running", "gauge", "Work functions running.", func(s *aio.Stats) float64 { return float64(s.WorkRunning) }},
	{"aio_work_cancelled_total", "counter", "Work jobs cancelled, before or while they ran.", func(s *aio.Stats) float64 { return float64(s.WorkCancelled) }},
	{"aio_tcp_listeners", "gauge", "TCP listeners open.", func(s *aio.Stats) float64 { return float64(s.TCPListeners) }},
	{"aio_tcp_open", "gauge", "TCP connections open.", func(s *aio.Stats) float64 { return float64(s.TCPOpen) }},
	{"aio_tcp_accepted_total", "counter", "TCP connections accepted.", func(s *aio.Stats) float64 { return float64(s.TCPAccepted) }},
	{"aio_tcp_dialed_total", "counter", "TCP connections established by Dial.", func(s *aio.Stats) float64 { return float64(s.TCPDialed) }},
	{"aio_tcp_adopted_total", "counter", "Connected sockets taken over by AdoptConn.", func(s *aio.Stats) float64 { return float64(s.TCPAdopted) }},
	{"aio_tcp_closed_total", "counter", "Established TCP connections closed.", func(s *aio.Stats) float64 { return float64(s.TCPClosed) }},
	{"aio_tcp_dropped_total", "counter", "TCP connections given up on at accept.", func(s *aio.Stats) float64 { return float64(s.TCPDropped) }},
	{"aio_tcp_read_bytes_total", "counter", "Bytes read from TCP connections.", func(s *aio.Stats) float64 { return float64(s.TCPBytesIn) }},
	{"aio_tcp_written_bytes_total", "counter", "Bytes written to the kernel by TCP connections.", func(s *aio.Stats) float64 { return float64(s.TCPBytesOut) }},
	{"aio_tcp_write_queued_bytes", "gauge", "Bytes written by the program and not yet taken by the kernel.", func(s *aio.Stats) float64 { return float64(s.TCPWriteQueued) }},
	{"aio_tls_handshakes_total", "counter", "TLS handshakes that ended well.", func(s *aio.Stats) float64 { return float64(s.TLSHandshakes) }},
	{"aio_tls_handshake_errors_total", "counter", "TLS handshakes that failed, timed out, or were cut short by a close or Stop.", func(s *aio.Stats) float64 { return float64(s.TLSHandshakeErrors) }},
}

// phases are the values of aio_loop_phase_seconds_total's phase label.
var phases = []struct {
	name string
	of   func(t *aio.LoopTime) time.Duration
}{
	{"timers", func(t *aio.LoopTime) time.Duration { return t.Timers }},
	{"posted", func(t *aio.LoopTime) time.Duration { return t.Posted }},
	{"io", func(t *aio.LoopTime) time.Duration { return t.IO }},
	{"closing", func(t *aio.LoopTime) time.Duration { return t.Closing }},
	{"other", func(t *aio.LoopTime) time.Duration { return t.Other }},
}

// histograms are the lag histograms.
var histograms = []struct {
	name, help string
	of         func(s *aio.Stats) *aio.Lag
}{
	{"aio_loop_post_lag_seconds", "How long posted callbacks waited for the loop: the oldest of each batch it took.", func(s *aio.Stats) *aio.Lag { return &s.PostLag }},
	{"aio_loop_timer_lag_seconds", "How late timers fired after their deadline.", func(s *aio.Stats) *aio.Lag { return &s.TimerLag }},
}

// WritePrometheus writes the Stats of every loop running on rt to w in the
// Prometheus text exposition format, version 0.0.4 (see the package
// documentation for the metrics). It writes once, and returns w's error, or
// ErrNilRuntime. Any goroutine but one of rt's loops' own would do; on a
// loop it works too, but formatting is not a callback's business.
func WritePrometheus(w io.Writer, rt *aio.Runtime) error {
	if rt == nil {
		return ErrNilRuntime
	}
	var b bytes.Buffer
	writeFamilies(&b, snapshot(rt))
	_, err := w.Write(b.Bytes())
	return err
}

func writeFamilies(b *bytes.Buffer, ls []loopStats) {
	header(b, "aio_runtime_loops", "gauge", "Loops running on the runtime.")
	fmt.Fprintf(b, "aio_runtime_loops %d\n", len(ls))
	for _, f := range families {
		header(b, f.name, f.typ, f.help)
		for i := range ls {
			sample(b, f.name, &ls[i], "", "", f.value(&ls[i].s))
		}
	}
	header(b, "aio_loop_phase_seconds_total", "counter", "Busy time of the loop by phase.")
	for i := range ls {
		for _, p := range phases {
			sample(b, "aio_loop_phase_seconds_total", &ls[i], "phase", p.name, seconds(p.of(&ls[i].s.Time)))
		}
	}
	for _, h := range histograms {
		header(b, h.name, "histogram", h.help)
		for i := range ls {
			g := h.of(&ls[i].s)
			var cum uint64
			for k, n := range g.Buckets {
				cum += n
				le := "+Inf"
				if k < aio.LagBuckets-1 {
					le = formatFloat(seconds(aio.LagBound(k)))
				}
				sample(b, h.name+"_bucket", &ls[i], "le", le, float64(cum))
			}
			sample(b, h.name+"_sum", &ls[i], "", "", seconds(g.Sum))
			sample(b, h.name+"_count", &ls[i], "", "", float64(g.Count))
		}
	}
}

func header(b *bytes.Buffer, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, escapeHelp(help), name, typ)
}

// sample writes name{loop="<name>",slot="<slot>",key="val"} v (no key
// when key is "").
func sample(b *bytes.Buffer, name string, l *loopStats, key, val string, v float64) {
	b.WriteString(name)
	b.WriteString(`{loop="`)
	b.WriteString(escapeLabel(l.name))
	b.WriteString(`",slot="`)
	b.WriteString(l.slot)
	if key != "" {
		b.WriteString(`",`)
		b.WriteString(key)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(val))
	}
	b.WriteString(`"} `)
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

// formatFloat writes v as the format wants it: the shortest decimal that
// reads back as v, without an exponent, or +Inf, -Inf, NaN.
func formatFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// escapeLabel escapes a label value: backslash, double quote and line feed
// (the format's only escapes), in valid UTF-8.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD")) }

// escapeHelp escapes a HELP text: backslash and line feed.
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeHelp(s string) string { return helpEscaper.Replace(s) }

// Handler returns an http.Handler that answers GET and HEAD with
// WritePrometheus for rt, for a Prometheus scrape; other methods get 405. A
// nil rt answers 500. Any goroutine.
func Handler(rt *aio.Runtime) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "metrics: method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if rt == nil {
			http.Error(w, ErrNilRuntime.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", ContentType)
		if r.Method == http.MethodHead {
			return
		}
		_ = WritePrometheus(w, rt) // a scraper that went away: nothing to tell
	})
}

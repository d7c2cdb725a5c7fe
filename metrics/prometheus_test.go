package metrics

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/valkyria/aio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitTimeout = 60 * time.Second

// startLoops starts a runtime with loops of these names, each of which has
// run a posted callback and a timer, and shuts it down when the test ends.
func startLoops(t *testing.T, names ...string) *aio.Runtime {
	t.Helper()
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	for _, name := range names {
		l, err := rt.Start(aio.Config{Name: name})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		_, err = aio.Sleep(l, 0).Wait(ctx)
		cancel()
		require.NoError(t, err)
		// The timer's handle completes before the loop publishes the
		// timer for other goroutines (as it goes to sleep next, at the
		// latest): wait until a scrape sees it.
		for deadline := time.Now().Add(waitTimeout); l.Stats().TimerLag.Count == 0; time.Sleep(time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "loop %q never published its timer", name)
		}
	}
	return rt
}

// The grammar of the text format, version 0.0.4.
const metricName = `[a-zA-Z_:][a-zA-Z0-9_:]*`

var (
	helpLine   = regexp.MustCompile(`^# HELP (` + metricName + `) ((?:[^\\\n]|\\[\\n])*)$`)
	typeLine   = regexp.MustCompile(`^# TYPE (` + metricName + `) (counter|gauge|histogram|summary|untyped)$`)
	labelPair  = `[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"`
	sampleLine = regexp.MustCompile(`^(` + metricName + `)(?:\{(` + labelPair + `(?:,` + labelPair + `)*)?\})? (\S+)$`)
	labelRE    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"`)
)

type parsedSample struct {
	name   string
	labels map[string]string
	value  float64
}

type parsedFamily struct {
	typ, help string
	samples   []parsedSample
}

// seriesOf names the loop of a sample: its labels loop and slot.
func seriesOf(s parsedSample) string { return s.labels["loop"] + "#" + s.labels["slot"] }

func unescapeLabel(s string) string {
	return strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\n`, "\n").Replace(s)
}

// parse reads an exposition by the grammar, failing the test on any line
// out of it, and checks what the format requires across lines: HELP and
// TYPE before a family's samples, each family in one block, every sample
// of its family, no series twice.
func parse(t *testing.T, text string) map[string]*parsedFamily {
	t.Helper()
	require.True(t, strings.HasSuffix(text, "\n"), "the last line ends with a line feed")
	fams := map[string]*parsedFamily{}
	series := map[string]bool{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if m := helpLine.FindStringSubmatch(line); m != nil {
			require.NotContains(t, fams, m[1], "family %s in two blocks", m[1])
			fams[m[1]] = &parsedFamily{help: m[2]}
			cur = m[1]
			continue
		}
		if m := typeLine.FindStringSubmatch(line); m != nil {
			require.Equal(t, cur, m[1], "TYPE right after HELP")
			require.Empty(t, fams[cur].typ)
			require.Empty(t, fams[cur].samples, "TYPE before the samples")
			fams[cur].typ = m[2]
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		require.NotNil(t, m, "not a line of the format: %q", line)
		require.NotEmpty(t, cur, "a sample before any HELP: %q", line)
		f := fams[cur]
		switch f.typ {
		case "histogram":
			require.Contains(t, []string{cur + "_bucket", cur + "_sum", cur + "_count"}, m[1])
		default:
			require.Equal(t, cur, m[1], "sample of another family")
		}
		s := parsedSample{name: m[1], labels: map[string]string{}}
		var keys []string
		for _, lm := range labelRE.FindAllStringSubmatch(m[2], -1) {
			require.NotContains(t, s.labels, lm[1], "label %s twice", lm[1])
			s.labels[lm[1]] = unescapeLabel(lm[2])
			keys = append(keys, lm[1]+"="+lm[2])
		}
		sort.Strings(keys)
		id := m[1] + "{" + strings.Join(keys, ",") + "}"
		require.False(t, series[id], "series %s twice", id)
		series[id] = true
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, "value of %q", line)
		s.value = v
		f.samples = append(f.samples, s)
	}
	require.NoError(t, sc.Err())
	return fams
}

func TestWritePrometheusParses(t *testing.T) {
	start := time.Now()
	weird := "we\"ird\\name\nnext\xff"
	rt := startLoops(t, "api", "same", "same", weird, "")
	var b strings.Builder
	require.NoError(t, WritePrometheus(&b, rt))
	fams := parse(t, b.String())
	age := time.Since(start).Seconds()

	for name, f := range fams {
		assert.NotEmpty(t, f.help, name)
		assert.NotEmpty(t, f.samples, name)
		assert.True(t, strings.HasPrefix(name, "aio_"), name)
		if f.typ == "counter" {
			assert.True(t, strings.HasSuffix(name, "_total"), "counter %s ends in _total", name)
		} else {
			assert.False(t, strings.HasSuffix(name, "_total"), "%s %s ends in _total", f.typ, name)
		}
		for _, s := range f.samples {
			assert.False(t, math.IsNaN(s.value) || s.value < 0, "%s %v", s.name, s.value)
			if strings.Contains(name, "_seconds") && !strings.HasSuffix(s.name, "_count") && !strings.HasSuffix(s.name, "_bucket") {
				assert.LessOrEqual(t, s.value, age, "%s in seconds: %v", s.name, s.value)
			}
		}
	}

	// One series per loop, named as the loop is, told apart by slot.
	var got, want [][2]string
	for _, s := range fams["aio_loop_iterations_total"].samples {
		got = append(got, [2]string{s.labels["loop"], s.labels["slot"]})
		assert.Positive(t, s.value)
	}
	for i, name := range []string{"api", "same", "same", "we\"ird\\name\nnext\uFFFD", ""} {
		want = append(want, [2]string{name, strconv.Itoa(rt.Loops()[i].Slot())})
	}
	assert.Equal(t, want, got)
	require.Equal(t, "gauge", fams["aio_loop_post_queued"].typ, "Stats.PostQueued")
	require.Len(t, fams["aio_loop_post_queued"].samples, 5)
	require.Len(t, fams["aio_runtime_loops"].samples, 1)
	assert.Equal(t, 5.0, fams["aio_runtime_loops"].samples[0].value)

	// Phases: five per loop, adding up to the busy time.
	busy := map[string]float64{}
	for _, s := range fams["aio_loop_busy_seconds_total"].samples {
		busy[seriesOf(s)] = s.value
	}
	sum := map[string]float64{}
	for _, s := range fams["aio_loop_phase_seconds_total"].samples {
		sum[seriesOf(s)] += s.value
	}
	require.Len(t, sum, 5)
	for loop, v := range sum {
		assert.InDelta(t, busy[loop], v, 1e-6, loop)
	}

	// Histograms: cumulative buckets by growing le, ending with +Inf,
	// which equals the count; the timer of each loop is in it.
	for _, name := range []string{"aio_loop_post_lag_seconds", "aio_loop_timer_lag_seconds"} {
		f := fams[name]
		require.Equal(t, "histogram", f.typ, name)
		count := map[string]float64{}
		for _, s := range f.samples {
			if s.name == name+"_count" {
				count[seriesOf(s)] = s.value
			}
		}
		last := map[string]float64{}
		lastLE := map[string]float64{}
		for _, s := range f.samples {
			if s.name != name+"_bucket" {
				continue
			}
			loop := seriesOf(s)
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			require.NoError(t, err)
			if prev, ok := lastLE[loop]; ok {
				assert.Greater(t, le, prev, "%s le grows", name)
			}
			assert.GreaterOrEqual(t, s.value, last[loop], "%s buckets are cumulative", name)
			lastLE[loop], last[loop] = le, s.value
		}
		for loop, le := range lastLE {
			assert.True(t, math.IsInf(le, 1), "%s ends with +Inf", name)
			assert.Equal(t, count[loop], last[loop], "%s: +Inf bucket is the count", name)
			if name == "aio_loop_timer_lag_seconds" {
				assert.Equal(t, 1.0, count[loop], "%s: the loop's one timer", loop)
			}
		}
	}
}

func TestWritePrometheusErrors(t *testing.T) {
	require.ErrorIs(t, WritePrometheus(io.Discard, nil), ErrNilRuntime)
	rt := startLoops(t, "a")
	boom := errors.New("boom")
	require.ErrorIs(t, WritePrometheus(failingWriter{boom}, rt), boom)

	// No loops: still a valid exposition.
	var b strings.Builder
	require.NoError(t, WritePrometheus(&b, aio.NewRuntime(aio.RuntimeConfig{})))
	fams := parse(t, b.String())
	assert.Equal(t, 0.0, fams["aio_runtime_loops"].samples[0].value)
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestEscaping(t *testing.T) {
	assert.Equal(t, `a\\b\"c\nd`, escapeLabel("a\\b\"c\nd"))
	assert.Equal(t, "\uFFFD", escapeLabel("\xff"))
	assert.Equal(t, `a\\b"c\nd`, escapeHelp("a\\b\"c\nd"))
	assert.Equal(t, "+Inf", formatFloat(math.Inf(1)))
	assert.Equal(t, "-Inf", formatFloat(math.Inf(-1)))
	assert.Equal(t, "NaN", formatFloat(math.NaN()))
	assert.Equal(t, "0.000001", formatFloat(1e-6))
	assert.Equal(t, "12345678901", formatFloat(12345678901))
}

func TestHandler(t *testing.T) {
	rt := startLoops(t, "api")
	srv := httptest.NewServer(Handler(rt))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, ContentType, resp.Header.Get("Content-Type"))
	fams := parse(t, string(body))
	require.Equal(t, "api", fams["aio_loop_iterations_total"].samples[0].labels["loop"])
	require.Equal(t, strconv.Itoa(rt.Loops()[0].Slot()), fams["aio_loop_iterations_total"].samples[0].labels["slot"])

	resp, err = http.Head(srv.URL)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = http.Post(srv.URL, "text/plain", nil)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))

	rec := httptest.NewRecorder()
	Handler(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
}

// Keys are unique whatever the names: a loop named as another's expvar key
// ("x#<slot>") or holding a '#' does not clash with it.
func TestLabelsAreUnique(t *testing.T) {
	rt := startLoops(t, "x", "x", "a#b")
	second := rt.Loops()[1]
	l, err := rt.Start(aio.Config{Name: "x#" + strconv.Itoa(second.Slot())})
	require.NoError(t, err)
	_, err = aio.Sleep(l, 0).Wait(context.Background())
	require.NoError(t, err)
	requireALabelPerLoop(t, rt, 4)
}

// requireALabelPerLoop checks that rt's n loops have n series and n keys
// in expvar's object: parse fails on a series written twice.
func requireALabelPerLoop(t *testing.T, rt *aio.Runtime, n int) {
	t.Helper()
	var b strings.Builder
	require.NoError(t, WritePrometheus(&b, rt))
	fams := parse(t, b.String())
	require.Len(t, fams["aio_loop_iterations_total"].samples, n)
	require.Len(t, statsByKey(rt), n, "expvar's object has a key per loop")
}

// Two names that differ only in bytes that are not UTF-8 are one label
// value once escaped (U+FFFD): the slot tells them apart.
func TestLabelsAreUniqueInvalidUTF8(t *testing.T) {
	requireALabelPerLoop(t, startLoops(t, "api\xff", "api\xfe"), 2)
}

// Every field of aio.Stats is exported: a new field must be given a family
// here (or be one of those written apart).
func TestEveryStatIsExported(t *testing.T) {
	apart := map[string]bool{"Name": true, "Time": true, "PostLag": true, "TimerLag": true}
	byField := map[string]string{
		"Iterations": "aio_loop_iterations_total", "Posted": "aio_loop_posted_total",
		"PostQueued": "aio_loop_post_queued", "Running": "aio_loop_running_seconds", "Timers": "aio_loop_timers", "Handles": "aio_loop_handles",
		"Abandoned": "aio_loop_abandoned_total", "Panics": "aio_loop_panics_total",
		"WorkQueued": "aio_work_queued", "WorkRunning": "aio_work_running",
		"WorkCancelled": "aio_work_cancelled_total", "TCPListeners": "aio_tcp_listeners",
		"TCPOpen": "aio_tcp_open", "TCPAccepted": "aio_tcp_accepted_total",
		"TCPDialed":  "aio_tcp_dialed_total",
		"TCPAdopted": "aio_tcp_adopted_total", "TCPClosed": "aio_tcp_closed_total",
		"TCPDropped": "aio_tcp_dropped_total", "TCPBytesIn": "aio_tcp_read_bytes_total",
		"TCPBytesOut": "aio_tcp_written_bytes_total", "TCPWriteQueued": "aio_tcp_write_queued_bytes",
		"TLSHandshakes": "aio_tls_handshakes_total", "TLSHandshakeErrors": "aio_tls_handshake_errors_total",
	}
	rt := startLoops(t, "m")
	var b strings.Builder
	require.NoError(t, WritePrometheus(&b, rt))
	fams := parse(t, b.String())
	st := reflect.TypeFor[aio.Stats]()
	for i := range st.NumField() {
		f := st.Field(i).Name
		if apart[f] {
			continue
		}
		name, ok := byField[f]
		if assert.True(t, ok, "Stats.%s has no family", f) {
			assert.Contains(t, fams, name, "Stats.%s", f)
		}
	}
}

// A loop's labels and key stay the same while it runs: a second loop of
// the same name starting, then stopping, leaves the first one's series as
// they were (they used to move from "api" to "api#<slot>" and back, a new
// series each time for a scraper).
func TestLabelsStayWhileTheLoopRuns(t *testing.T) {
	rt := startLoops(t, "api")
	first := rt.Loops()[0]
	want := map[string]bool{"api#" + strconv.Itoa(first.Slot()): true}
	seen := func() map[string]bool {
		t.Helper()
		var b strings.Builder
		require.NoError(t, WritePrometheus(&b, rt))
		got := map[string]bool{}
		for _, s := range parse(t, b.String())["aio_loop_iterations_total"].samples {
			got[seriesOf(s)] = true
		}
		keys := map[string]bool{}
		for k := range statsByKey(rt) {
			keys[k] = true
		}
		require.Equal(t, got, keys, "expvar's keys are the series' loop#slot")
		return got
	}
	require.Equal(t, want, seen())

	second, err := rt.Start(aio.Config{Name: "api"})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"api#" + strconv.Itoa(first.Slot()): true,
		"api#" + strconv.Itoa(second.Slot()): true}, seen())

	_, err = second.Stop().Wait(context.Background())
	require.NoError(t, err)
	require.Equal(t, want, seen())
}

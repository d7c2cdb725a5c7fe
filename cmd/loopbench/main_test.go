package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkyria/aio"
	"go.uber.org/goleak"
)

// TestMain checks that no workload leaves a goroutine behind: every loop is
// stopped, every producer, drainer and ping-pong partner has exited.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// tiny is a configuration small enough for the race detector: every section
// takes tens of milliseconds.
func tiny() options {
	o := defaultOptions()
	o.Duration = 20 * time.Millisecond
	o.Timers = 2000 // two 1 ms buckets: 1 ms and 2 ms
	o.Handles = 1000
	o.Batch = 100 // ten batches, so the batch-to-batch Post is exercised
	o.Chain = 2500
	o.Awaits = 500
	o.Timeout = 20 * time.Second
	o.TCPConns = 500
	o.TCPIdle = 100
	o.TLSIdle = 20
	return o
}

// wantRows is every (workload, impl) row a full run must produce.
var wantRows = []string{
	"timers/aio", "timers/gostd",
	"post/aio", "post/gostd",
	"pingpong-loops/aio", "pingpong-loops-spin/aio", "pingpong-loops/gostd",
	"handles/aio", "handles-new/aio", "handles/gostd",
	"loop-iter/aio", "loop-iter-fd/aio",
	"chain/aio", "chain/gostd",
	"cancel-tree-small/aio", "cancel-tree-small/gostd", "cancel-tree/aio", "cancel-tree/gostd", "cancel-tree-aged/aio",
	"do-await/aio", "do-await/gostd",
	"tcp-pingpong/aio", "tcp-pingpong-2loops/aio", "tcp-pingpong-2loops-spin/aio", "tcp-pingpong/gostd",
	"tcp-pound/aio", "tcp-pound/gostd", "tcp-pound-2loops/aio", "tcp-pound-percore/aio",
	"tcp-echo/aio", "tcp-echo-2loops/aio", "tcp-echo-percore/aio", "tcp-echo/gostd",
	"tcp-proxy/aio", "tcp-proxy-percore/aio", "tcp-proxy/gostd",
	"tcp-idle/aio", "tcp-idle/gostd",
	"tls-handshake/aio", "tls-handshake-percore/aio", "tls-handshake/gostd", "tls-echo/aio", "tls-echo-percore/aio", "tls-echo/gostd",
	"tls-idle/aio", "tls-idle/gostd",
	"tls-storm-quiet/aio", "tls-storm/aio",
}

func TestWorkloadsTiny(t *testing.T) {
	o := tiny()
	var all []result
	for _, w := range workloads {
		t.Run(w.name, func(t *testing.T) {
			rs, err := w.run(o)
			require.NoError(t, err)
			require.NotEmpty(t, rs)
			annotate(rs)
			for _, r := range rs {
				require.Positive(t, r.Ops, "%s/%s", r.Workload, r.Impl)
				require.Positive(t, r.Seconds, "%s/%s", r.Workload, r.Impl)
				require.Positive(t, r.OpsPerSec, "%s/%s", r.Workload, r.Impl)
				require.Positive(t, r.NsPerOp, "%s/%s", r.Workload, r.Impl)
				require.GreaterOrEqual(t, r.AllocsPerOp, 0.0)
				require.GreaterOrEqual(t, r.CPUSeconds, 0.0)
				require.Contains(t, []string{"aio", "gostd"}, r.Impl)
			}
			all = append(all, rs...)
		})
	}
	var got []string
	byRow := map[string]result{}
	for _, r := range all {
		got = append(got, r.Workload+"/"+r.Impl)
		byRow[r.Workload+"/"+r.Impl] = r
	}
	require.ElementsMatch(t, wantRows, got)

	// Count-based workloads do exactly what was asked.
	require.EqualValues(t, o.Timers, byRow["timers/aio"].Ops)
	require.EqualValues(t, o.Timers, byRow["timers/gostd"].Ops)
	for _, k := range []string{"handles/aio", "handles-new/aio", "handles/gostd"} {
		require.EqualValues(t, o.Handles, byRow[k].Ops, k)
	}
	for _, k := range []string{"tcp-pound/aio", "tcp-pound/gostd", "tcp-pound-2loops/aio", "tcp-pound-percore/aio"} {
		require.EqualValues(t, o.TCPConns, byRow[k].Ops, k)
	}
	for _, k := range []string{"tcp-idle/aio", "tcp-idle/gostd"} {
		require.EqualValues(t, o.TCPIdle, byRow[k].Ops, k)
		require.Contains(t, byRow[k].Config, "B/conn in use", k)
	}
	// Every timer is due at least 1 ms after creation started.
	require.GreaterOrEqual(t, byRow["timers/aio"].Seconds, 0.001)

	// Ratios: aio rows with a baseline have both, the others neither.
	for _, r := range all {
		hasBase := r.Impl == "aio" && !contains([]string{"loop-iter", "loop-iter-fd", "tls-storm", "tls-storm-quiet"}, r.Workload)
		require.Equal(t, hasBase, r.Ratio != nil, "%s/%s ratio", r.Workload, r.Impl)
		if !hasBase {
			require.Nil(t, r.CPURatio, "%s/%s CPU ratio", r.Workload, r.Impl)
		} else if strings.HasPrefix(r.Workload, "tcp-") {
			// Busy sections (a short idle one may measure no CPU at all).
			require.NotNil(t, r.CPURatio, "%s/%s CPU ratio", r.Workload, r.Impl)
		}
		if r.CPUSeconds > 0 {
			require.InDelta(t, float64(r.Ops)/r.CPUSeconds, r.OpsPerCPUSec, 1e-6*r.OpsPerCPUSec,
				"%s/%s ops per CPU-second", r.Workload, r.Impl)
		}
	}
	// The rows made in rounds list their per-round ratios to gostd, wall
	// clock and per CPU-second, and their ratios are the medians of those.
	perRound := regexp.MustCompile(`(\d+) rounds, ratios = medians of aio/gostd per round \(([^;]*); per cpu_s ([^)]*)\)`)
	for k, rounds := range map[string]int{
		"tcp-pound/aio": 4, "tcp-pound-2loops/aio": 4, "tcp-pound-percore/aio": 4,
		"tls-handshake/aio": 3, "tls-handshake-percore/aio": 3, "tls-echo/aio": 3, "tls-echo-percore/aio": 3,
	} {
		r := byRow[k]
		m := perRound.FindStringSubmatch(r.Config)
		require.NotNil(t, m, "%s: no per-round ratios in %q", k, r.Config)
		require.Equal(t, strconv.Itoa(rounds), m[1], k)
		wall := parseRatios(t, m[2])
		require.Len(t, wall, rounds, k)
		require.InDelta(t, *median(wall), *r.Ratio, 0.006, "%s: ratio is not the median of %v", k, wall)
		if m[3] == "-" { // a round too short to measure its CPU
			require.Nil(t, r.CPURatio, k)
			continue
		}
		cpu := parseRatios(t, m[3])
		require.Len(t, cpu, rounds, k)
		require.NotNil(t, r.CPURatio, k)
		require.InDelta(t, *median(cpu), *r.CPURatio, 0.006, "%s: CPU ratio is not the median of %v", k, cpu)
	}
	require.Contains(t, byRow["tls-echo/gostd"].Config, "from the round of tls-echo/aio")
	// The storm rows give /health's p99, the stormy one the handshakes
	// that ran meanwhile.
	require.Contains(t, byRow["tls-storm-quiet/aio"].Config, "p99", "tls-storm-quiet")
	require.Regexp(t, `p99 .* while 16 clients storm full TLS handshakes on it: [1-9][0-9]* handshakes`,
		byRow["tls-storm/aio"].Config, "tls-storm")
	// The proxy rows' CPU is the proxy's alone, the peer's in the config.
	for _, k := range []string{"tcp-proxy/aio", "tcp-proxy-percore/aio", "tcp-proxy/gostd"} {
		require.Contains(t, byRow[k].Config, "clients + upstream", k)
	}
}

// parseRatios reads formatRatios' list.
func parseRatios(t *testing.T, s string) []float64 {
	var xs []float64
	for _, f := range strings.Fields(s) {
		x, err := strconv.ParseFloat(f, 64)
		require.NoError(t, err, s)
		xs = append(xs, x)
	}
	return xs
}

// TestWilliams: every variant takes every place once; for an even count
// every variant also comes right after each other one once.
func TestWilliams(t *testing.T) {
	for n := 1; n <= 6; n++ {
		rounds := williams(n)
		require.Len(t, rounds, n)
		after := map[[2]int]int{}
		for place := range n {
			seen := map[int]bool{}
			for _, order := range rounds {
				require.Len(t, order, n)
				seen[order[place]] = true
				if place > 0 {
					after[[2]int{order[place-1], order[place]}]++
				}
			}
			require.Len(t, seen, n, "n=%d place %d: %v", n, place, rounds)
		}
		if n%2 == 0 {
			require.Len(t, after, n*(n-1), "n=%d: %v", n, rounds)
		}
	}
	require.Equal(t, [][]int{{0, 1, 3, 2}, {1, 2, 0, 3}, {2, 3, 1, 0}, {3, 0, 2, 1}}, williams(4)) // tcp-pound's
}

func TestPostFixedCount(t *testing.T) {
	o := tiny()
	o.Posts = 8000
	rs, err := runPost(o)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	for _, r := range rs {
		require.EqualValues(t, 8000, r.Ops, r.Impl)
	}
}

// TestRunJSON goes through the command's entry point, as go run would, and
// checks that every line of -json output is an object with the required keys.
func TestRunJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-json", "-duration", "20ms", "-timers", "1000", "-handles", "1000",
		"-workload", "timers,handles-new,loop-iter"}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())

	required := []string{"workload", "impl", "ops", "seconds", "ops_per_sec", "ns_per_op",
		"allocs_per_op", "bytes_per_op", "cpu_seconds"}
	sc := bufio.NewScanner(&out)
	lines := 0
	for sc.Scan() {
		lines++
		var obj map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &obj), "line %q", sc.Text())
		for _, k := range required {
			require.Contains(t, obj, k, "line %q", sc.Text())
		}
		require.Contains(t, []any{"aio", "gostd"}, obj["impl"])
		require.Greater(t, obj["ops"], 0.0)
		require.Greater(t, obj["seconds"], 0.0)
	}
	require.NoError(t, sc.Err())
	// timers aio+gostd, handles aio+new+gostd, loop-iter aio and -fd.
	require.Equal(t, 7, lines, out.String())
}

func TestRunTable(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-duration", "20ms", "-workload", "loop-iter"}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	require.Contains(t, out.String(), "ops/s")
	require.Contains(t, out.String(), "loop-iter")
}

func TestFlags(t *testing.T) {
	var errOut bytes.Buffer
	require.Equal(t, 2, run([]string{"-workload", "nope"}, &bytes.Buffer{}, &errOut))
	require.Contains(t, errOut.String(), "unknown workload")

	_, sel, _, err := parseFlags([]string{"-workload", "handles-new,timers,handles"}, &errOut)
	require.NoError(t, err)
	require.Len(t, sel, 2)
	require.Equal(t, "timers", sel[0].name) // menu order, each once
	require.Equal(t, "handles", sel[1].name)

	_, sel, _, err = parseFlags(nil, &errOut)
	require.NoError(t, err)
	require.Len(t, sel, len(workloads))

	// A list naming nothing, or a count out of range, is a usage error
	// before anything runs (2, nothing on stdout), not a workload failing
	// after the others ran (1).
	for _, args := range [][]string{
		{"-workload", ""}, {"-workload", ","},
		{"-workload", "timers", "-timers", "0"}, {"-workload", "timers,post", "-posts", "-1"},
		{"-producers", "0"}, {"-handles", "0"}, {"-batch", "-1"}, {"-chain", "0"}, {"-awaits", "0"},
		{"-spin", "-1ms"},
	} {
		var out, errOut bytes.Buffer
		assert.Equal(t, 2, run(args, &out, &errOut), "%q", args)
		assert.Empty(t, out.String(), "%q", args)
		assert.Contains(t, errOut.String(), "loopbench: -", "%q", args)
	}
}

func TestGroup(t *testing.T) {
	require.Equal(t, "0", group(0))
	require.Equal(t, "999", group(999))
	require.Equal(t, "1,000", group(1000))
	require.Equal(t, "3,447,867", group(3447866.6))
	require.Equal(t, "-12,345", group(-12345))
}

// TestAwaitReportsHang checks the watchdog that turns an aio hang into an
// error naming the loop's state instead of a stuck run.
func TestAwaitReportsHang(t *testing.T) {
	rt, ls, err := startLoops(aio.Config{Name: "hang-probe"})
	require.NoError(t, err)
	never := make(chan struct{})
	err = await(never, 10*time.Millisecond, "probe", ls...)
	require.ErrorContains(t, err, "probe: not finished after 10ms")
	require.ErrorContains(t, err, "hang-probe")
	require.NoError(t, stopLoops(rt, ls...))
}

// TestCPUProfile: -cpuprofile writes a profile (gzipped protocol buffers,
// which go tool pprof reads).
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	var out, errOut bytes.Buffer
	code := run([]string{"-duration", "20ms", "-workload", "loop-iter", "-cpuprofile", path}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	b, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NotEmpty(t, b)

	require.Equal(t, 2, run([]string{"-cpuprofile", filepath.Join(path, "no", "such", "dir")}, &out, &errOut))
}

// Every row's name selects the workload that produces it.
func TestEveryRowNameSelectsItsWorkload(t *testing.T) {
	for _, row := range wantRows {
		name, _, _ := strings.Cut(row, "/")
		ws, err := selectWorkloads(name)
		require.NoError(t, err, row)
		require.Len(t, ws, 1, row)
	}
}

// -rows runs the workloads of the rows it names and prints only those rows;
// the tls workload runs no other section.
func TestRows(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-json", "-duration", "20ms", "-rows", "tls-handshake-percore/aio, loop-iter-fd/aio"}, &out, &errOut)
	require.Equal(t, 0, code, "stderr: %s", errOut.String())
	var got []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r result
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
		got = append(got, r.Workload+"/"+r.Impl)
	}
	require.NoError(t, sc.Err())
	require.Equal(t, []string{"loop-iter-fd/aio", "tls-handshake-percore/aio"}, got) // menu order

	o := tiny()
	o.Rows = map[string]bool{"tls-idle/gostd": true}
	rs, err := runTLS(o)
	require.NoError(t, err)
	require.Len(t, rs, 1, "sections of other rows ran")
	require.Equal(t, "tls-idle/gostd", rs[0].Workload+"/"+rs[0].Impl)

	// An aio row and gostd take turns in two rounds.
	o.Rows = map[string]bool{"tls-echo-percore/aio": true, "tls-echo/gostd": true}
	rs, err = runTLS(o)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	require.Equal(t, "tls-echo-percore/aio", rs[0].Workload+"/"+rs[0].Impl)
	require.Contains(t, rs[0].Config, "2 rounds, ratios = medians")
	require.NotNil(t, rs[0].Ratio)
	require.Contains(t, rs[1].Config, "from the round of tls-echo-percore/aio")

	for _, bad := range [][]string{
		{"-rows", "tls-handshake"},
		{"-rows", "tls-handshake/libuv"},
		{"-rows", "nope/aio"},
		{"-rows", ","},
		{"-rows", "timers/aio", "-workload", "timers"},
	} {
		errOut.Reset()
		require.Equal(t, 2, run(bad, &bytes.Buffer{}, &errOut), "%q", bad)
		require.NotEmpty(t, errOut.String(), "%q", bad)
	}
}

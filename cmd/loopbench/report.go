package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// result is one row of the report: one implementation of one workload.
type result struct {
	Workload    string  `json:"workload"`
	Impl        string  `json:"impl"` // "aio" or "gostd"
	Ops         int64   `json:"ops"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
	// CPUSeconds is the CPU the whole process (every thread, user+system)
	// burned during the section. It tells a spinning implementation from a
	// sleeping one at equal throughput.
	CPUSeconds float64 `json:"cpu_seconds"`
	// OpsPerCPUSec is ops over CPUSeconds: the work one CPU-second buys,
	// which tells how much of a machine an implementation needs for a
	// load, whatever the throughput it reached (0 without CPU figures).
	OpsPerCPUSec float64 `json:"ops_per_cpu_sec"`
	// Ratio is this row's ops/s over its gostd baseline's; nil when the
	// workload has no baseline (or for the baseline itself).
	Ratio *float64 `json:"ratio_vs_gostd,omitempty"`
	// CPURatio is this row's OpsPerCPUSec over its gostd baseline's; nil
	// as Ratio is.
	CPURatio *float64 `json:"cpu_ratio_vs_gostd,omitempty"`
	// SetupSeconds is, for timers, the part of Seconds spent creating them.
	SetupSeconds float64 `json:"setup_seconds,omitempty"`
	Config       string  `json:"config,omitempty"`
	GOMAXPROCS   int     `json:"gomaxprocs"`
	Reference    string  `json:"reference,omitempty"` // an anchor figure to compare with by hand
}

// meter brackets one measured section: it collects garbage first, so that a
// previous section's leftovers are not charged to this one, then snapshots the
// allocation counters and the process CPU clock.
type meter struct {
	start   time.Time
	cpu     time.Duration
	mallocs uint64
	bytes   uint64
}

func startMeter() meter {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := meter{mallocs: ms.Mallocs, bytes: ms.TotalAlloc, cpu: cpuTime()}
	m.start = time.Now() // last, so the snapshots above are not timed
	return m
}

// finish closes the section. ops were done between start and end; the CPU and
// allocation figures cover from startMeter to now, which includes the moment
// it took the waiting goroutine to notice the end.
func (m meter) finish(workload, impl string, ops int64, start, end time.Time) result {
	cpu := cpuTime()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := result{
		Workload:   workload,
		Impl:       impl,
		Ops:        ops,
		Seconds:    end.Sub(start).Seconds(),
		CPUSeconds: (cpu - m.cpu).Seconds(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
	}
	// Per-op figures of an empty section would be NaN or Inf, which JSON
	// cannot carry; leave them 0 (the caller reports the section as failed).
	if ops > 0 && r.Seconds > 0 {
		r.OpsPerSec = float64(ops) / r.Seconds
		r.NsPerOp = r.Seconds * 1e9 / float64(ops)
		r.AllocsPerOp = float64(ms.Mallocs-m.mallocs) / float64(ops)
		r.BytesPerOp = float64(ms.TotalAlloc-m.bytes) / float64(ops)
	}
	r.setOpsPerCPU()
	return r
}

// setOpsPerCPU derives OpsPerCPUSec from Ops and CPUSeconds, for a row whose
// CPU figure was measured (or corrected) after finish.
func (r *result) setOpsPerCPU() {
	r.OpsPerCPUSec = 0
	if r.Ops > 0 && r.CPUSeconds > 0 {
		r.OpsPerCPUSec = float64(r.Ops) / r.CPUSeconds
	}
}

// cpuTime returns the CPU time of the whole process, user plus system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// baselineOf names the workload whose gostd row an aio row is compared with:
// variants of a workload share their parent's baseline rather than run it
// again.
func baselineOf(workload string) string {
	switch workload {
	case "pingpong-loops-spin":
		return "pingpong-loops"
	case "handles-new":
		return "handles"
	case "tcp-pingpong-2loops", "tcp-pingpong-2loops-spin":
		return "tcp-pingpong"
	case "tcp-pound-2loops", "tcp-pound-percore":
		return "tcp-pound"
	case "tcp-echo-2loops", "tcp-echo-percore":
		return "tcp-echo"
	case "tls-echo-percore":
		return "tls-echo"
	case "tls-handshake-percore":
		return "tls-handshake"
	case "tcp-proxy-percore":
		return "tcp-proxy"
	case "cancel-tree-aged":
		return "cancel-tree"
	}
	return workload
}

// annotate fills in the ratios of every aio row that has a gostd baseline
// in rs: throughput and ops per CPU-second.
func annotate(rs []result) {
	base := map[string]result{}
	for _, r := range rs {
		if r.Impl == "gostd" {
			base[r.Workload] = r
		}
	}
	for i := range rs {
		r := &rs[i]
		b, ok := base[baselineOf(r.Workload)]
		if r.Impl != "aio" || !ok {
			continue
		}
		// A workload may have set them itself (the medians of tcp-pound and tls).
		if r.Ratio == nil && b.OpsPerSec > 0 {
			ratio := r.OpsPerSec / b.OpsPerSec
			r.Ratio = &ratio
		}
		if r.CPURatio == nil && b.OpsPerCPUSec > 0 && r.OpsPerCPUSec > 0 {
			ratio := r.OpsPerCPUSec / b.OpsPerCPUSec
			r.CPURatio = &ratio
		}
	}
}

// writeJSON prints one JSON object per line.
func writeJSON(w io.Writer, rs []result) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// writeTable prints the rows as an aligned table, then the reference figures
// the rows carry.
func writeTable(w io.Writer, rs []result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\timpl\tops\tseconds\tops/s\tns/op\tallocs/op\tbytes/op\tcpu_s\tops/cpu_s\taio/gostd\taio/gostd ops/cpu_s\t")
	var refs []string
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%s\t%.1f\t%.2f\t%.1f\t%.2f\t%s\t%s\t%s\t\n",
			r.Workload, r.Impl, group(float64(r.Ops)), r.Seconds, group(r.OpsPerSec),
			r.NsPerOp, r.AllocsPerOp, r.BytesPerOp, r.CPUSeconds, group(r.OpsPerCPUSec),
			formatRatio(r.Ratio), formatRatio(r.CPURatio))
		if r.Reference != "" {
			refs = append(refs, fmt.Sprintf("%s: %s", r.Workload, r.Reference))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range refs {
		if _, err := fmt.Fprintln(w, "  reference", s); err != nil {
			return err
		}
	}
	return nil
}

// formatRatio prints a ratio with two decimals, or "-" for none.
func formatRatio(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *r)
}

// group formats v rounded to an integer with thousands separators: ops/s
// figures span six orders of magnitude and are unreadable without them.
func group(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// median returns the median of xs (the mean of the two middle values of an
// even count), or nil for none.
func median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + m) / 2
	}
	return &m
}

// nearest returns the index of the value of xs nearest to m.
func nearest(xs []float64, m float64) int {
	best := 0
	for i, x := range xs {
		if math.Abs(x-m) < math.Abs(xs[best]-m) {
			best = i
		}
	}
	return best
}

// williams returns n rounds of n variants (0 to n-1) in which each variant
// takes each place once. For an even n it is a Williams square: each
// variant also comes right after each other one once, so that what a
// section leaves behind (tcp-pound's TIME_WAIT table) weighs on every
// variant alike. For an odd n that takes 2n rounds (these and their
// mirror images); the first n are a Latin square.
func williams(n int) [][]int {
	first := make([]int, n) // 0, 1, n-1, 2, n-2, ...
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			first[j] = (j + 1) / 2
		} else {
			first[j] = n - j/2
		}
	}
	rounds := make([][]int, n)
	for i := range rounds {
		rounds[i] = make([]int, n)
		for j, v := range first {
			rounds[i][j] = (v + i) % n
		}
	}
	return rounds
}

// inRounds runs variants in rounds, each round every variant (run(round,
// v)) in the order orders[round] gives, and returns each variant's results,
// one per round.
func inRounds(orders [][]int, run func(round, v int) (result, error)) ([][]result, error) {
	runs := make([][]result, len(orders[0]))
	for round, order := range orders {
		for _, v := range order {
			r, err := run(round, v)
			if err != nil {
				return nil, err
			}
			runs[v] = append(runs[v], r)
		}
	}
	return runs, nil
}

// medianRow makes the row of an aio variant that ran in rounds against its
// gostd baseline (runs and base: one result per round, the same rounds):
// its Ratio and CPURatio are the medians of its per-round ratios to base,
// and its figures those of the round whose ratio is nearest that median,
// which it returns with the per-round ratios for the row's config.
func medianRow(runs, base []result) (result, int, string) {
	ratios := ratiosTo(runs, base, opsPerSec)
	m := *median(ratios)
	round := nearest(ratios, m)
	r := runs[round]
	r.Ratio = &m
	cpu := ratiosTo(runs, base, opsPerCPU)
	perCPU := formatRatios(cpu)
	if slices.ContainsFunc(cpu, func(x float64) bool { return !(x > 0) || math.IsInf(x, 0) }) {
		perCPU = "-" // a section too short to measure its CPU
	} else {
		r.CPURatio = median(cpu)
	}
	return r, round, fmt.Sprintf("%d rounds, ratios = medians of aio/gostd per round (%s; per cpu_s %s)",
		len(ratios), formatRatios(ratios), perCPU)
}

// ratiosTo returns of(a[i])/of(b[i]), round by round.
func ratiosTo(a, b []result, of func(result) float64) []float64 {
	rs := make([]float64, len(a))
	for i := range a {
		rs[i] = of(a[i]) / of(b[i])
	}
	return rs
}

// opsPerSec and opsPerCPU are the figures ratiosTo compares.
func opsPerSec(r result) float64 { return r.OpsPerSec }
func opsPerCPU(r result) float64 { return r.OpsPerCPUSec }

// formatRatios prints ratios with two decimals, space separated.
func formatRatios(rs []float64) string {
	s := make([]string, len(rs))
	for i, x := range rs {
		s[i] = fmt.Sprintf("%.2f", x)
	}
	return strings.Join(s, " ")
}

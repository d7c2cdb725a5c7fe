package goid

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ids is an identity function under test: Get, and the runtime.Stack parse
// that is Get on architectures without assembly (tested on all of them).
var ids = []struct {
	name string
	get  func() uintptr
}{
	{"Get", Get},
	{"stackID", stackID},
}

// grow recurses deep enough to make the runtime move the goroutine's stack,
// and returns get's answer from the bottom.
func grow(depth int, get func() uintptr) uintptr {
	var pad [256]byte
	if depth == 0 {
		return get() + uintptr(pad[0])
	}
	return grow(depth-1, get) + uintptr(pad[depth%len(pad)])
}

func TestGetNonZero(t *testing.T) {
	for _, id := range ids {
		t.Run(id.name, func(t *testing.T) {
			assert.NotZero(t, id.get())
		})
	}
}

// An identity survives what a goroutine lives through: rescheduling, a
// collection, and its stack being moved (the g, unlike the stack, stays).
func TestGetStable(t *testing.T) {
	for _, id := range ids {
		t.Run(id.name, func(t *testing.T) {
			first := id.get()
			for range 10 {
				runtime.Gosched()
				require.Equal(t, first, id.get())
			}
			runtime.GC()
			require.Equal(t, first, id.get())
			require.Equal(t, first, grow(1000, id.get), "after the stack grew")
			require.Equal(t, first, id.get())
		})
	}
}

// Goroutines alive at the same time have different identities, and each
// keeps its own while the others run.
func TestGetDiffers(t *testing.T) {
	const n = 16
	for _, id := range ids {
		t.Run(id.name, func(t *testing.T) {
			got := make([][2]uintptr, n) // each goroutine's id before and after the barrier
			var reported, wg sync.WaitGroup
			release := make(chan struct{})
			reported.Add(n)
			for i := range n {
				wg.Go(func() {
					got[i][0] = id.get()
					reported.Done()
					<-release // all n alive until every one has reported
					got[i][1] = id.get()
				})
			}
			reported.Wait()
			close(release)
			wg.Wait()

			mine := id.get()
			seen := map[uintptr]int{}
			for i, g := range got {
				require.NotZero(t, g[0])
				require.Equal(t, g[0], g[1], "goroutine %d changed identity", i)
				require.NotEqual(t, mine, g[0], "goroutine %d has the test's identity", i)
				if j, ok := seen[g[0]]; ok {
					t.Fatalf("goroutines %d and %d, both alive, share identity %#x", j, i, g[0])
				}
				seen[g[0]] = i
			}
		})
	}
}

// stackID is the goroutine id runtime.Stack prints, read here independently.
func TestStackIDMatchesRuntimeStack(t *testing.T) {
	buf := make([]byte, 1024)
	var want uint64
	_, err := fmt.Sscanf(string(buf[:runtime.Stack(buf, false)]), "goroutine %d ", &want)
	require.NoError(t, err)
	assert.Equal(t, uintptr(want), stackID())
}

func TestParseStackID(t *testing.T) {
	maxID := strconv.FormatUint(uint64(^uintptr(0)), 10)
	for _, tc := range []struct {
		in   string
		want uintptr
	}{
		{"goroutine 1 [running]:\nmain.main()\n", 1},
		{"goroutine 18 [running]:\n", 18},
		{"goroutine 123456 [chan receive, 5 minutes]:\n", 123456},
		{"goroutine " + maxID + " [running]:\n", ^uintptr(0)},
		{"goroutine 42", 42}, // cut short by the fixed buffer after the id
		{"goroutine 7 ", 7},
		// Anything else is no id.
		{"", 0},
		{"goroutine ", 0},
		{"goroutine [running]:\n", 0},
		{"goroutine  7 [running]:\n", 0},
		{"goroutine x7 [running]:\n", 0},
		{"goroutine -7 [running]:\n", 0},
		{"thread 7 [running]:\n", 0},
	} {
		assert.Equal(t, tc.want, parseStackID([]byte(tc.in)), "%q", tc.in)
	}
}

// Where Get is assembly it is two instructions: no allocation, no call into
// the runtime.
func TestGetAllocatesNothing(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" && runtime.GOARCH != "386" {
		t.Skipf("Get is the runtime.Stack parse on %s", runtime.GOARCH)
	}
	var sink uintptr
	assert.Zero(t, testing.AllocsPerRun(100, func() { sink += Get() }))
	assert.NotZero(t, sink)
}

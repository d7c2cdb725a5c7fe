package httpd

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A loop makes a Request, and its arena, when a request first needs one,
// and keeps it for the next: its memory follows the peak of requests in
// progress, not Config.Arenas.
func TestArenasMadeOnFirstUse(t *testing.T) {
	ts := startServer(t, HandlerFunc(func(*Request) Reply { return Text(200, "ok") }),
		Config{Arenas: 4096, ArenaSize: 1 << 16})
	made := func() (n int) {
		ts.onLoop(t, func() { // at rest: take every slot, look, give them back
			for _, ls := range ts.loopStates() {
				var taken []int
				for {
					idx, r, ok := ls.slab.Acquire()
					if !ok {
						break
					}
					taken = append(taken, idx)
					if *r != nil {
						n++
					}
				}
				assert.Len(t, taken, ls.slab.Cap())
				// Given back last first, the free list is as it was: the
				// slots holding a Request stay on top, for the next take.
				for _, idx := range slices.Backward(taken) {
					assert.NoError(t, ls.slab.Release(idx))
				}
			}
		})
		return n
	}
	require.Zero(t, made(), "no Request before the first request")

	c := client(t)
	for range 10 {
		code, body := get(t, c, ts.url+"/")
		require.Equal(t, 200, code)
		require.Equal(t, "ok", body)
	}
	ts.atRest(t)
	assert.Equal(t, 1, made(), "one request at a time needs one Request")
	code, _ := get(t, c, ts.url+"/")
	require.Equal(t, 200, code)
	ts.atRest(t)
	assert.Equal(t, 1, made(), "the next request takes the Request made, after a look")

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			c := client(t)
			for range 5 {
				code, _ := get(t, c, ts.url+"/")
				assert.Equal(t, 200, code)
			}
		})
	}
	wg.Wait()
	ts.atRest(t)
	n := made()
	assert.GreaterOrEqual(t, n, 1)
	assert.LessOrEqual(t, n, 8, "at most the requests that were in progress at once")
}

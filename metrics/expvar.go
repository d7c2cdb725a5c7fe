package metrics

import (
	"expvar"
	"fmt"
	"sync"

	"github.com/valkyria/aio"
)

// publishMu makes Publish's look-up and publication one step for callers of
// Publish (expvar.Publish panics on a name already taken).
var publishMu sync.Mutex

// Publish exports the Stats of every loop running on rt as the expvar
// variable name: a JSON object from each loop's "<name>#<slot>" (its
// Prometheus labels loop and slot, joined) to its aio.Stats, read at each
// request of expvar's handler (/debug/vars), durations in nanoseconds. It returns an error, and
// publishes nothing, for a nil rt, an empty name (wrapping
// aio.ErrInvalidArgument) or a name already published (expvar offers no
// way to take a name back, so call it once per name, at start-up). Any
// goroutine.
func Publish(name string, rt *aio.Runtime) error {
	if rt == nil {
		return ErrNilRuntime
	}
	if name == "" {
		return fmt.Errorf("metrics: Publish with an empty name: %w", aio.ErrInvalidArgument)
	}
	publishMu.Lock()
	defer publishMu.Unlock()
	if expvar.Get(name) != nil {
		return fmt.Errorf("metrics: expvar %q is already published", name)
	}
	expvar.Publish(name, expvar.Func(func() any { return statsByKey(rt) }))
	return nil
}

// statsByKey maps each running loop's key to its Stats.
func statsByKey(rt *aio.Runtime) map[string]aio.Stats {
	ls := snapshot(rt)
	m := make(map[string]aio.Stats, len(ls))
	for i := range ls {
		m[ls[i].key()] = ls[i].s
	}
	return m
}

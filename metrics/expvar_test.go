package metrics

import (
	"encoding/json"
	"expvar"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/valkyria/aio"
)

// publishRuns makes each run's expvar names its own: expvar has no way to
// unpublish, and go test -count=N runs TestPublish N times in one process.
var publishRuns atomic.Int64

func TestPublish(t *testing.T) {
	run := publishRuns.Add(1)
	name, nilName := fmt.Sprintf("aio_test_publish_%d", run), fmt.Sprintf("aio_test_nil_%d", run)
	rt := startLoops(t, "api", "db")
	require.NoError(t, Publish(name, rt))
	require.Error(t, Publish(name, rt), "a name is published once")
	require.ErrorIs(t, Publish(nilName, nil), ErrNilRuntime)
	require.Nil(t, expvar.Get(nilName))

	var got map[string]aio.Stats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &got))
	require.Len(t, got, 2)
	require.Equal(t, "api", got["api"].Name)
	require.Positive(t, got["db"].Iterations)
	require.Equal(t, uint64(1), got["db"].TimerLag.Count)
}

package metrics

import (
	"encoding/json"
	"expvar"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/valkyria/aio"
)

// publishRuns gives each run of TestPublish a name of its own: expvar has
// no way to unpublish, and go test -count=N runs the test N times in one
// process, one after another.
var publishRuns int

func TestPublish(t *testing.T) {
	publishRuns++
	name := fmt.Sprintf("aio_test_publish_%d", publishRuns)
	rt := startLoops(t, "api", "db")
	require.NoError(t, Publish(name, rt))
	require.Error(t, Publish(name, rt), "a name is published once")
	require.ErrorIs(t, Publish("aio_test_nil", nil), ErrNilRuntime)
	require.Nil(t, expvar.Get("aio_test_nil"), "a refused name is not published")
	require.ErrorIs(t, Publish("", rt), aio.ErrInvalidArgument)
	require.Nil(t, expvar.Get(""), "an empty name is not published")

	var got map[string]aio.Stats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get(name).String()), &got))
	require.Len(t, got, 2)
	api, db := rt.Loops()[0], rt.Loops()[1]
	require.Equal(t, "api", got["api#"+strconv.Itoa(api.Slot())].Name)
	require.Positive(t, got["db#"+strconv.Itoa(db.Slot())].Iterations)
	require.Equal(t, uint64(1), got["db#"+strconv.Itoa(db.Slot())].TimerLag.Count)
}

package metrics

import (
	"encoding/json"
	"expvar"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/valkyria/aio"
)

func TestPublish(t *testing.T) {
	rt := startLoops(t, "api", "db")
	require.NoError(t, Publish("aio_test_publish", rt))
	require.Error(t, Publish("aio_test_publish", rt), "a name is published once")
	require.ErrorIs(t, Publish("aio_test_nil", nil), ErrNilRuntime)
	require.Nil(t, expvar.Get("aio_test_nil"))

	var got map[string]aio.Stats
	require.NoError(t, json.Unmarshal([]byte(expvar.Get("aio_test_publish").String()), &got))
	require.Len(t, got, 2)
	require.Equal(t, "api", got["api"].Name)
	require.Positive(t, got["db"].Iterations)
	require.Equal(t, uint64(1), got["db"].TimerLag.Count)
}

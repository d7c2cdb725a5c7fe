package aio

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Loops lists the running loops in slot order, and a stopped one leaves.
func TestRuntimeLoops(t *testing.T) {
	rt := newRuntime(t, RuntimeConfig{MaxSystems: 4})
	require.Empty(t, rt.Loops())
	a := startLoopOn(t, rt, Config{Name: "same"})
	b := startLoopOn(t, rt, Config{Name: "same"})
	c := startLoopOn(t, rt)
	require.Equal(t, []*Loop{a, b, c}, rt.Loops())
	require.NotEqual(t, a.Slot(), b.Slot(), "loops of one name have different slots")
	_, err := wait(t, b.Stop())
	require.NoError(t, err)
	require.Equal(t, []*Loop{a, c}, rt.Loops())
	d := startLoopOn(t, rt)
	require.Equal(t, b.Slot(), d.Slot(), "the slot is reused")
	require.Equal(t, []*Loop{a, d, c}, rt.Loops())
}

// MaxSystems beyond MaxSystemsLimit is the limit: math.MaxInt would have
// the slab allocate tens of GiB of slots up front, a fatal error.
func TestRuntimeMaxSystemsLimit(t *testing.T) {
	rt := NewRuntime(RuntimeConfig{MaxSystems: math.MaxInt})
	require.Equal(t, MaxSystemsLimit, rt.slab.Cap())
	l, err := rt.Start(Config{})
	require.NoError(t, err)
	_, err = l.Stop().Wait(t.Context())
	require.NoError(t, err)
}

// The zero Runtime is ready to use, with NewRuntime's default slots.
func TestZeroRuntime(t *testing.T) {
	var rt Runtime
	require.Zero(t, rt.Running())
	require.Empty(t, rt.Loops())
	l, err := rt.Start(Config{Name: "zero"})
	require.NoError(t, err)
	require.Equal(t, []*Loop{l}, rt.Loops())
	require.Equal(t, 1, rt.Running())
	require.Equal(t, 16, rt.slots().Cap())
	require.NoError(t, rt.Shutdown(t.Context()))
	require.Zero(t, rt.Running())
}

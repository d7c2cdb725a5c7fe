package aio

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReserveProcsRaisesToOneMoreThanLoops(t *testing.T) {
	orig := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })

	require.Equal(t, 1, ReserveProcs(2), "the previous value")
	require.Equal(t, 3, runtime.GOMAXPROCS(0), "a P per loop and one to spare")
}

func TestReserveProcsNeverLowers(t *testing.T) {
	orig := runtime.GOMAXPROCS(5)
	t.Cleanup(func() { runtime.GOMAXPROCS(orig) })

	require.Equal(t, 5, ReserveProcs(2))
	require.Equal(t, 5, runtime.GOMAXPROCS(0), "already more than loops+1")
	require.Equal(t, 5, ReserveProcs(4))
	require.Equal(t, 5, runtime.GOMAXPROCS(0), "exactly loops+1")
}

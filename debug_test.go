//go:build aiodebug

package aio

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Built with aiodebug, the loop-only methods panic off their loop instead
// of racing with it, and work on it.
func TestLoopOnlyMethodsAssertTheirLoop(t *testing.T) {
	l := startLoop(t)
	scopes := make(chan *Scope, 1)
	end := NewPromise[int](l)
	h := WithScope(l, func(s *Scope) *Handle[int] { scopes <- s; return end.Handle() })
	s := recv(t, scopes)
	require.PanicsWithValue(t, `aio: loop "`+l.Name()+`": loop-only code running off the loop`, func() { s.Len() })
	var n int
	onLoop(t, l, func() { n = s.Len() })
	require.Zero(t, n)
	end.Resolve(1)
	_, err := wait(t, h)
	require.NoError(t, err)
}

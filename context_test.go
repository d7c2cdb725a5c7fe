package aio

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/require"
)

// watchers counts the dependents registered on c and not yet told. On the
// test goroutine: it reads them on c's loop.
func watchers(t testing.TB, c *core) int {
	t.Helper()
	n := 0
	onLoop(t, c.loop, func() {
		if c.dep0 != nil {
			n++
		}
		if c.rare != nil {
			n += len(c.rare.deps)
		}
	})
	return n
}

func TestHandleContext(t *testing.T) {
	for _, end := range []struct {
		name string
		end  func(p *Promise[int])
	}{
		{"completed", func(p *Promise[int]) { p.Resolve(1) }},
		{"failed", func(p *Promise[int]) { p.Reject(errBoom) }},
		{"cancelled", func(p *Promise[int]) { p.Handle().Cancel() }},
	} {
		t.Run("ends when the handle has "+end.name, func(t *testing.T) {
			l := startLoop(t)
			p := NewPromise[int](l)
			ctx := p.Handle().Context()
			require.Equal(t, ctx, p.Handle().Context(), "every call gives an equal context")
			require.NoError(t, ctx.Err())
			_, ok := ctx.Deadline()
			require.False(t, ok)
			require.Nil(t, ctx.Value("key"))
			end.end(p)
			recv(t, ctx.Done())
			require.ErrorIs(t, ctx.Err(), context.Canceled)
			require.ErrorIs(t, context.Cause(ctx), context.Canceled)
			requireHandlesBack(t, l)
		})
	}
	t.Run("Err of a finished handle that never made Done", func(t *testing.T) {
		l := startLoop(t)
		require.ErrorIs(t, Pure(l, 1).Context().Err(), context.Canceled)
		p := NewPromise[int](l)
		require.NoError(t, p.Handle().Context().Err())
		p.Resolve(1)
		onLoop(t, l, func() {})
		require.ErrorIs(t, p.Handle().Context().Err(), context.Canceled)
	})
	t.Run("derived contexts start no goroutine and end with the handle", func(t *testing.T) {
		l := startLoop(t)
		p := NewPromise[int](l)
		before := goleak.IgnoreCurrent()
		derived, cancel := context.WithTimeout(p.Handle().Context(), time.Hour)
		defer cancel()
		ran := make(chan struct{})
		context.AfterFunc(p.Handle().Context(), func() { close(ran) })
		require.NoError(t, goleak.Find(before), "nothing waits on the handle's Done")
		p.Handle().Cancel()
		recv(t, derived.Done())
		require.ErrorIs(t, derived.Err(), context.Canceled)
		recv(t, ran)
		requireHandlesBack(t, l)
	})
	t.Run("a derived context cancelled first is no longer told", func(t *testing.T) {
		l := startLoop(t)
		p := NewPromise[int](l)
		keep, cancelKeep := context.WithCancel(p.Handle().Context())
		defer cancelKeep()
		for i := 0; i < 100; i++ {
			_, cancel := context.WithCancel(p.Handle().Context())
			cancel()
		}
		require.Equal(t, 1, watchers(t, &p.Handle().core), "only keep's registration is left")
		p.Resolve(1)
		recv(t, keep.Done())
		requireHandlesBack(t, l)
	})
	t.Run("a handle with no loop", func(t *testing.T) {
		rt, stop, release := heldStop(t)
		ctx, cancel := context.WithCancel(stop.Context())
		defer cancel()
		require.NoError(t, ctx.Err())
		release()
		recv(t, ctx.Done())
		require.Equal(t, 0, rt.Running())
	})
}

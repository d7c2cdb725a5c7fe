package aio

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stretchr/testify/assert"
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

func TestCoContext(t *testing.T) {
	t.Run("cancelled with the Do handle, before Await returns", func(t *testing.T) {
		l := startLoop(t)
		var errAfter, causeAfter error
		suspended := make(chan context.Context, 1)
		d := Do(l, func(co *Co) (int, error) {
			ctx := co.Context()
			assert.Same(t, ctx, co.Context(), "made once")
			assert.NoError(t, ctx.Err())
			suspended <- ctx
			_, err := Await(co, NewPromise[int](l).Handle())
			errAfter, causeAfter = ctx.Err(), context.Cause(ctx)
			return 0, err
		})
		ctx := recv(t, suspended)
		onLoop(t, l, func() {})
		require.True(t, d.Cancel())
		_, err := wait(t, d)
		require.ErrorIs(t, err, ErrCancelled)
		require.ErrorIs(t, errAfter, context.Canceled, "the body sees it cancelled")
		require.ErrorIs(t, causeAfter, ErrCancelled)
		require.ErrorIs(t, ctx.Err(), context.Canceled)
		requireHandlesBack(t, l)
	})
	t.Run("cancelled when the body returns", func(t *testing.T) {
		l := startLoop(t)
		ctx, err := wait(t, Do(l, func(co *Co) (context.Context, error) { return co.Context(), nil }))
		require.NoError(t, err)
		recv(t, ctx.Done())
		require.ErrorIs(t, context.Cause(ctx), context.Canceled)
	})
	t.Run("asked for after the cancellation, already cancelled", func(t *testing.T) {
		l := startLoop(t)
		var cause atomic.Pointer[error]
		suspended := make(chan struct{})
		d := Do(l, func(co *Co) (int, error) {
			close(suspended)
			_, err := Await(co, NewPromise[int](l).Handle())
			c := context.Cause(co.Context())
			cause.Store(&c)
			return 0, err
		})
		recv(t, suspended)
		onLoop(t, l, func() {})
		d.Cancel()
		_, err := wait(t, d)
		require.ErrorIs(t, err, ErrCancelled)
		require.ErrorIs(t, *cause.Load(), ErrCancelled)
	})
	t.Run("a deadline over several Awaits", func(t *testing.T) {
		l := startLoop(t)
		var slow *Handle[int]
		var first atomic.Int64
		d := Do(l, func(co *Co) (int, error) {
			ctx, cancel := context.WithTimeout(co.Context(), 20*time.Millisecond)
			defer cancel()
			a, err := Await(co, Delay(l, time.Millisecond, func() (int, error) { return 1, nil }).Bind(ctx))
			if err != nil {
				return 0, err
			}
			first.Store(int64(a))
			slow = Delay(l, time.Hour, func() (int, error) { return 2, nil })
			b, err := Await(co, slow.Bind(ctx))
			if err != nil {
				assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
				return a, err
			}
			return a + b, nil
		})
		_, err := wait(t, d)
		require.ErrorIs(t, err, ErrCancelled, "the deadline cancelled what the body awaited")
		require.Equal(t, int64(1), first.Load(), "the first Await was within the deadline")
		require.Equal(t, Cancelled, slow.Status())
		requireHandlesBack(t, l)
		stopNoLeak(t, l, "the deadline's timer and ties are gone")
	})
	t.Run("outside its body, a context cancelled with ErrNotInBody", func(t *testing.T) {
		l := startLoop(t)
		var co *Co
		_, err := wait(t, Do(l, func(c *Co) (int, error) { co = c; return 0, nil }))
		require.NoError(t, err)
		for _, c := range []*Co{co, nil} {
			ctx := c.Context()
			require.ErrorIs(t, ctx.Err(), context.Canceled)
			require.ErrorIs(t, context.Cause(ctx), ErrNotInBody)
		}
	})
}

package aio

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// opaqueCtx is a context the context package does not know (no cancelCtx
// inside, no AfterFunc method): context.AfterFunc must start a goroutine to
// wait on it, which a Bind that forgot to stop would leak.
type opaqueCtx struct{ done chan struct{} }

func (c opaqueCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c opaqueCtx) Done() <-chan struct{}       { return c.done }
func (c opaqueCtx) Value(any) any               { return nil }
func (c opaqueCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

func TestBind(t *testing.T) {
	t.Run("the context ending cancels the handle", func(t *testing.T) {
		l := startLoop(t)
		ctx, cancel := context.WithCancel(context.Background())
		h := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		require.Same(t, h, h.Bind(ctx))
		cancel()
		_, err := wait(t, h)
		require.ErrorIs(t, err, ErrCancelled)
		requireHandlesBack(t, l)
	})
	t.Run("a context already done cancels it at once", func(t *testing.T) {
		l := startLoop(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		h := NewPromise[int](l).Handle().Bind(ctx)
		require.Equal(t, Cancelled, h.Status())
		requireHandlesBack(t, l)
	})
	t.Run("cancels outright, whatever other dependents want", func(t *testing.T) {
		l := startLoop(t)
		ctx, cancel := context.WithCancel(context.Background())
		p := NewPromise[int](l)
		other := Then(p.Handle(), func(v int) (int, error) { return v, nil })
		p.Handle().Bind(ctx)
		cancel()
		_, err := wait(t, other)
		require.ErrorIs(t, err, ErrCancelled)
	})
	t.Run("a handle that ends first undoes the tie", func(t *testing.T) {
		l := startLoop(t)
		ctx := opaqueCtx{done: make(chan struct{})}
		defer close(ctx.done) // on failure, lets the leaked goroutine go
		p := NewPromise[int](l)
		p.Handle().Bind(ctx)
		p.Resolve(1)
		_, err := wait(t, p.Handle())
		require.NoError(t, err)
		// AfterFunc waits on an opaque context with a goroutine: only a
		// stopped AfterFunc lets it go.
		stopNoLeak(t, l, "the AfterFunc of a finished handle was stopped")
	})
	t.Run("contexts that never end, and a nil handle, tie nothing", func(t *testing.T) {
		l := startLoop(t)
		h := NewPromise[int](l).Handle()
		require.Same(t, h, h.Bind(context.Background()))
		require.Same(t, h, h.Bind(nil)) // nil, on purpose
		require.Equal(t, 0, watchers(t, &h.core))
		var none *Handle[int]
		require.Nil(t, none.Bind(context.Background()))
		h.Cancel()
	})
	t.Run("a long-lived context keeps nothing of many handles", func(t *testing.T) {
		l := startLoop(t)
		owner := NewPromise[int](l).Handle()
		ctx := owner.Context() // the ties are watches on owner
		for i := 0; i < 100; i++ {
			h := NewPromise[int](l)
			h.Handle().Bind(ctx)
			h.Resolve(i)
			_, err := wait(t, h.Handle())
			require.NoError(t, err)
		}
		onLoop(t, l, func() {})
		require.Equal(t, 0, watchers(t, &owner.core), "each tie was taken off when its handle ended")
		owner.Cancel()
		requireHandlesBack(t, l)
	})
}

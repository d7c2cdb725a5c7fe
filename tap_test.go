package aio

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTap(t *testing.T) {
	t.Run("on success fn sees the value, which passes through", func(t *testing.T) {
		l := startLoop(t)
		var seen atomic.Int64
		v, err := wait(t, Tap(Delay(l, time.Millisecond, func() (int, error) { return 7, nil }), func(v int) {
			assert.True(t, l.OnLoop(), "fn runs on the input's loop")
			seen.Store(int64(v))
		}))
		require.NoError(t, err)
		require.Equal(t, 7, v)
		require.Equal(t, int64(7), seen.Load())
		requireHandlesBack(t, l)
	})
	t.Run("a failure passes through without calling fn", func(t *testing.T) {
		l := startLoop(t)
		var called atomic.Bool
		_, err := wait(t, Tap(Fail[int](l, errBoom), func(int) { called.Store(true) }))
		require.ErrorIs(t, err, errBoom)
		require.False(t, called.Load())
	})
	t.Run("a cancelled input cancels it without calling fn", func(t *testing.T) {
		l := startLoop(t)
		var called atomic.Bool
		p := NewPromise[int](l)
		tap := Tap(p.Handle(), func(int) { called.Store(true) })
		p.Handle().Cancel()
		_, err := wait(t, tap)
		require.ErrorIs(t, err, ErrCancelled)
		require.False(t, called.Load())
		requireHandlesBack(t, l)
	})
	t.Run("cancelling it withdraws from its input", func(t *testing.T) {
		l := startLoop(t)
		var called atomic.Bool
		lone := Delay(l, time.Hour, func() (int, error) { return 1, nil })
		require.True(t, Tap(lone, func(int) { called.Store(true) }).Cancel())
		_, err := wait(t, lone)
		require.ErrorIs(t, err, ErrCancelled, "its only dependent gave it up")
		shared, requireWanted := sharedInput(t, l)
		require.True(t, Tap(shared, func(int) { called.Store(true) }).Cancel())
		requireWanted()
		require.False(t, called.Load())
		requireHandlesBack(t, l)
	})
	t.Run("a panic in fn fails it with a PanicError", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, Tap(Pure(l, 1), func(int) { panic(errBoom) }))
		var pe *PanicError
		require.ErrorAs(t, err, &pe)
		require.ErrorIs(t, err, errBoom)
		requireHandlesBack(t, l)
	})
	t.Run("nil arguments give a failed handle", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, Tap(nil, func(int) {}))
		require.ErrorIs(t, err, ErrNilHandle)
		nilFn := Tap(Pure(l, 1), nil)
		_, err = wait(t, nilFn)
		require.ErrorIs(t, err, ErrNilFunc)
		require.Same(t, l, nilFn.Loop())
	})
}

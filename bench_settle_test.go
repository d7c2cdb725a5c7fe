package aio

import (
	"context"
	"testing"
)

// BenchmarkTapChain is BenchmarkThenChain with Tap links: a node of its
// own, which passes the input's value on instead of a value fn returns.
func BenchmarkTapChain(b *testing.B) {
	benchOnLoop(b, func(l *Loop, n int, done func()) {
		root := NewPromise[int](l)
		h := root.Handle()
		sum := 0
		add := func(v int) { sum += v } // one closure for all links, as ThenChain's
		for i := 0; i < n; i++ {
			h = Tap(h, add)
		}
		Finally(h, done)
		root.Resolve(1)
	})
}

// benchSink builds N sinks of 8 promises each with mk, resolves every
// promise, and waits for the last sink: the cost of one sink of 8.
func benchSink[R any](b *testing.B, mk func(hs ...*Handle[int]) *Handle[R]) {
	benchOnLoop(b, func(l *Loop, n int, done func()) {
		var last *Handle[R]
		for i := 0; i < n; i++ {
			ps, hs := promises(l, 8)
			last = mk(hs...)
			for _, p := range ps {
				p.Resolve(i)
			}
		}
		Finally(last, done)
	})
}

func BenchmarkAll8(b *testing.B) { benchSink(b, All[int]) }

func BenchmarkAllSettled8(b *testing.B) { benchSink(b, AllSettled[int]) }

// BenchmarkBind ties a handle to a cancellable context and unties it when
// the handle completes.
func BenchmarkBind(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchOnLoop(b, func(l *Loop, n int, done func()) {
		var last *Handle[int]
		for i := 0; i < n; i++ {
			p := NewPromise[int](l)
			last = p.Handle().Bind(ctx)
			p.Resolve(i)
		}
		Finally(last, done)
	})
}

// BenchmarkContextDerive derives a context from a long-lived handle's and
// cancels it: a registration on the handle, then its removal.
func BenchmarkContextDerive(b *testing.B) {
	l := startLoop(b)
	owner := NewPromise[int](l)
	parent := owner.Handle().Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, cancel := context.WithCancel(parent)
		cancel()
	}
	b.StopTimer()
	owner.Resolve(0)
}

// BenchmarkSettledAwait is a Do body taking 8 inputs in the order they end,
// each resolved by a posted callback while the body waits.
func BenchmarkSettledAwait(b *testing.B) {
	l := startLoop(b)
	b.ReportAllocs()
	b.ResetTimer()
	h := Do(l, func(co *Co) (int, error) {
		for i := 0; i < b.N; i++ {
			ps, hs := promises(l, 8)
			s := Settled(hs...)
			_ = l.Post(func() {
				for _, p := range ps {
					p.Resolve(i)
				}
			})
			for _, err := range s.Await(co) {
				if err != nil {
					return 0, err
				}
			}
		}
		return 0, nil
	})
	if _, err := wait(b, h); err != nil {
		b.Fatal(err)
	}
}

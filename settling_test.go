package aio

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// promises returns n pending promises on l and their handles.
func promises(l *Loop, n int) ([]*Promise[int], []*Handle[int]) {
	ps := make([]*Promise[int], n)
	hs := make([]*Handle[int], n)
	for i := range ps {
		ps[i] = NewPromise[int](l)
		hs[i] = ps[i].Handle()
	}
	return ps, hs
}

// stopNoLeak stops l and requires that no goroutine is left (the test's
// own loops must be the only ones running).
func stopNoLeak(t testing.TB, l *Loop, msg string) {
	t.Helper()
	_, err := wait(t, l.Stop())
	require.NoError(t, err)
	requireNoLeak(t, msg)
}

// drainSettled reads every input from s.C and returns them in order.
func drainSettled[T any](t testing.TB, s *Settling[T]) []*Handle[T] {
	t.Helper()
	var got []*Handle[T]
	for {
		select {
		case h, ok := <-s.C:
			if !ok {
				return got
			}
			got = append(got, h)
		case <-time.After(waitTimeout):
			t.Fatal("Settled did not close its channel in time")
		}
	}
}

func TestSettledFromGoroutine(t *testing.T) {
	t.Run("inputs come in the order they end, then the channel closes", func(t *testing.T) {
		l := startLoop(t)
		ps, hs := promises(l, 3)
		s := Settled(hs...)
		ps[2].Resolve(2)
		require.Same(t, hs[2], recv(t, s.C), "the first to end comes first")
		ps[0].Reject(errBoom)
		hs[1].Cancel()
		got := drainSettled(t, s)
		require.Equal(t, []*Handle[int]{hs[0], hs[1]}, got, "failures and cancellations come too")
		requireHandlesBack(t, l)
		stopNoLeak(t, l, "Settled starts no goroutine")
	})
	t.Run("taking one cancels none of the others", func(t *testing.T) {
		l := startLoop(t)
		ps, hs := promises(l, 2)
		s := Settled(hs...)
		ps[1].Resolve(1)
		require.Same(t, hs[1], recv(t, s.C))
		onLoop(t, l, func() {})
		require.Equal(t, Running, hs[0].Status())
		ps[0].Resolve(0)
		require.Equal(t, []*Handle[int]{hs[0]}, drainSettled(t, s))
	})
	t.Run("waiting is not interest", func(t *testing.T) {
		l := startLoop(t)
		in := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		th := Then(in, func(v int) (int, error) { return v, nil })
		s := Settled(in)
		require.True(t, th.Cancel())
		require.Same(t, in, recv(t, s.C), "its only consumer withdrew: cancelled, and delivered")
		require.Equal(t, Cancelled, in.Status())
		requireHandlesBack(t, l)
	})
	t.Run("nothing, nil inputs, a handle given twice, inputs on other loops", func(t *testing.T) {
		_, ok := <-Settled[int]().C
		require.False(t, ok, "no inputs: closed at once")

		a, b := startLoop(t), startLoop(t)
		pb := NewPromise[int](b)
		ready := Pure(a, 1)
		s := Settled(pb.Handle(), nil, ready, ready)
		first := recv(t, s.C)
		_, err := first.Result()
		require.ErrorIs(t, err, ErrNilHandle, "a nil input is delivered at once as a failure")
		require.Same(t, ready, recv(t, s.C))
		require.Same(t, ready, recv(t, s.C), "given twice, delivered twice")
		pb.Resolve(2)
		require.Equal(t, []*Handle[int]{pb.Handle()}, drainSettled(t, s))
	})
}

func TestSettledFromDoBody(t *testing.T) {
	t.Run("the body takes the inputs as they end, suspending between them", func(t *testing.T) {
		l := startLoop(t)
		ps, hs := promises(l, 3)
		s := Settled(hs...)
		suspended := make(chan int, 3)
		order := Do(l, func(co *Co) ([]int, error) {
			var got []int
			for h, err := range s.Await(co) {
				if err != nil {
					return got, err
				}
				v, _ := h.Result()
				got = append(got, v)
				suspended <- len(got)
			}
			return got, nil
		})
		// Resolve one at a time, each after the body took the one before:
		// the body was suspended on the loop in between.
		for i, p := range []int{1, 2, 0} {
			ps[p].Resolve(p * 10)
			require.Equal(t, i+1, recv(t, suspended))
		}
		v, err := wait(t, order)
		require.NoError(t, err)
		require.Equal(t, []int{10, 20, 0}, v)
		requireHandlesBack(t, l)
	})
	t.Run("cancelling the Do ends the range with ErrCancelled and cancels no input", func(t *testing.T) {
		l := startLoop(t)
		ps, hs := promises(l, 2)
		s := Settled(hs...)
		var rangeErr error
		suspended := make(chan struct{})
		d := Do(l, func(co *Co) (int, error) {
			close(suspended)
			for _, err := range s.Await(co) {
				if err != nil {
					rangeErr = err
					return 0, err
				}
			}
			return 1, nil
		})
		recv(t, suspended)
		onLoop(t, l, func() {}) // the body waits for the first input
		require.True(t, d.Cancel())
		_, err := wait(t, d)
		require.ErrorIs(t, err, ErrCancelled)
		require.ErrorIs(t, rangeErr, ErrCancelled)
		onLoop(t, l, func() {})
		require.Equal(t, Running, hs[0].Status(), "Settled cancels nothing")
		ps[0].Resolve(0)
		ps[1].Resolve(1)
		require.Equal(t, hs, drainSettled(t, s), "what the body left is still there")
		requireHandlesBack(t, l)
	})
	t.Run("bodies sharing one Settling each get different inputs", func(t *testing.T) {
		l := startLoop(t)
		const n = 50
		ps, hs := promises(l, n)
		s := Settled(hs...)
		body := func(co *Co) ([]*Handle[int], error) {
			var got []*Handle[int]
			for h, err := range s.Await(co) {
				if err != nil {
					return nil, err
				}
				got = append(got, h)
			}
			return got, nil
		}
		d1, d2 := Do(l, body), Do(l, body)
		go func() {
			for _, p := range ps {
				p.Resolve(0)
			}
		}()
		got1, err := wait(t, d1)
		require.NoError(t, err)
		got2, err := wait(t, d2)
		require.NoError(t, err)
		require.ElementsMatch(t, hs, append(got1, got2...), "every input once, to one body or the other")
		requireHandlesBack(t, l)
		stopNoLeak(t, l, "the waiters are handles, not goroutines")
	})
	t.Run("the range can stop early and be taken up again", func(t *testing.T) {
		l := startLoop(t)
		_, hs := promises(l, 2)
		hs[0].Cancel()
		hs[1].Cancel()
		s := Settled(hs...)
		d := Do(l, func(co *Co) (int, error) {
			n := 0
			for range s.Await(co) {
				n++
				break
			}
			for range s.Await(co) {
				n++
			}
			return n, nil
		})
		v, err := wait(t, d)
		require.NoError(t, err)
		require.Equal(t, 2, v)
		requireHandlesBack(t, l)
	})
	t.Run("outside its body Await yields ErrNotInBody", func(t *testing.T) {
		l := startLoop(t)
		s := Settled(Pure(l, 1))
		n := 0
		for h, err := range s.Await(nil) {
			n++
			require.Nil(t, h)
			require.ErrorIs(t, err, ErrNotInBody)
		}
		require.Equal(t, 1, n)
		var leaked *Co
		_, err := wait(t, Do(l, func(co *Co) (int, error) { leaked = co; return 0, nil }))
		require.NoError(t, err)
		n = 0
		for _, err := range s.Await(leaked) {
			n++
			require.ErrorIs(t, err, ErrNotInBody)
		}
		require.Equal(t, 1, n, "one error, then the sequence stops")
	})
}

// A Do body whose handle was cancelled while it ran gets ErrCancelled from
// Settling.Await, as from Await, even with an input ready. Bug: it was
// handed the input.
func TestSettlingAwaitAfterSelfCancel(t *testing.T) {
	l := startLoop(t)
	type seen struct {
		h   *Handle[int]
		err error
	}
	out := make(chan seen, 1)
	self := make(chan *Handle[int], 1)
	h := Do(l, func(co *Co) (int, error) {
		_, _ = Await(co, Sleep(l, 0))
		s := Settled(Pure(l, 42))
		_, _ = Await(co, Sleep(l, 0)) // the input is delivered by now
		if !(<-self).Cancel() {
			out <- seen{nil, errors.New("Cancel reported false")}
			return 0, nil
		}
		for g, err := range s.Await(co) {
			out <- seen{g, err}
			break
		}
		return 0, nil
	})
	self <- h
	s := recv(t, out)
	require.ErrorIs(t, s.err, ErrCancelled, "handed %v", s.h)
}

package aio

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// requireHandlesBack requires every handle and timer of l to be gone once
// the callbacks queued so far have run.
func requireHandlesBack(t testing.TB, l *Loop) {
	t.Helper()
	onLoop(t, l, func() {})
	s := l.Stats()
	require.Equal(t, 0, s.Handles, "every handle finished")
	require.Equal(t, 0, s.Timers, "no timer is left armed")
}

// sharedInput returns a running handle on l that another dependent (a
// Then) wants, and a check that it is still running for that dependent, and
// ends as it should, after a consumer gave it up.
func sharedInput(t testing.TB, l *Loop) (*Handle[int], func()) {
	p := NewPromise[int](l)
	other := Then(p.Handle(), func(v int) (int, error) { return v, nil })
	return p.Handle(), func() {
		t.Helper()
		onLoop(t, l, func() {})
		require.Equal(t, Running, p.Handle().Status(), "another dependent still wants it")
		p.Resolve(2)
		v, err := wait(t, other)
		require.NoError(t, err)
		require.Equal(t, 2, v)
	}
}

func TestAllSettled(t *testing.T) {
	t.Run("every outcome in input order, whatever it is", func(t *testing.T) {
		l := startLoop(t)
		cancelled := NewPromise[int](l)
		hs := []*Handle[int]{
			Delay(l, 2*time.Millisecond, func() (int, error) { return 1, nil }),
			Fail[int](l, errBoom),
			cancelled.Handle(),
			Pure(l, 4),
		}
		all := AllSettled(hs...)
		cancelled.Handle().Cancel()
		outs, err := wait(t, all)
		require.NoError(t, err, "AllSettled never fails because an input did")
		require.Len(t, outs, 4)
		require.Equal(t, Outcome[int]{Value: 1}, outs[0])
		require.ErrorIs(t, outs[1].Err, errBoom)
		require.ErrorIs(t, outs[2].Err, ErrCancelled)
		require.Equal(t, Outcome[int]{Value: 4}, outs[3])
		requireHandlesBack(t, l)
	})
	t.Run("AllSettled of nothing completes with an empty slice on no loop", func(t *testing.T) {
		empty := AllSettled[int]()
		require.Nil(t, empty.Loop())
		outs, err := wait(t, empty)
		require.NoError(t, err)
		require.NotNil(t, outs)
		require.Empty(t, outs)
	})
	t.Run("a nil input fails it with ErrNilHandle", func(t *testing.T) {
		l := startLoop(t)
		_, err := wait(t, AllSettled(Pure(l, 1), nil))
		require.ErrorIs(t, err, ErrNilHandle)
		_, err = wait(t, AllSettledWithin(time.Hour, nil, Pure(l, 1)))
		require.ErrorIs(t, err, ErrNilHandle)
	})
	t.Run("cancelling it withdraws from every running input", func(t *testing.T) {
		l := startLoop(t)
		lone := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		shared, requireWanted := sharedInput(t, l)
		all := AllSettled(lone, shared, Pure(l, 3))
		require.True(t, all.Cancel())
		_, err := wait(t, lone)
		require.ErrorIs(t, err, ErrCancelled, "nobody else wanted it")
		requireWanted()
		requireHandlesBack(t, l)
	})
	t.Run("built on the loop and cancelled in the same callback", func(t *testing.T) {
		l := startLoop(t)
		var in *Handle[int]
		var all *Handle[[]Outcome[int]]
		onLoop(t, l, func() {
			in = NewPromise[int](l).Handle()
			all = AllSettledWithin(time.Hour, in)
			all.Cancel()
		})
		_, err := wait(t, in)
		require.ErrorIs(t, err, ErrCancelled)
		_, err = wait(t, all)
		require.ErrorIs(t, err, ErrCancelled)
		requireHandlesBack(t, l)
	})
	t.Run("inputs on other loops", func(t *testing.T) {
		a, b := startLoop(t), startLoop(t)
		slow := Delay(b, time.Hour, func() (string, error) { return "", nil })
		all := AllSettled(Pure(a, "a"), Delay(b, time.Millisecond, func() (string, error) { return "b", nil }), slow)
		require.Same(t, a, all.Loop())
		onLoop(t, a, func() {}) // the links are registered
		onLoop(t, b, func() {})
		require.Equal(t, Pending, all.Status())
		require.True(t, slow.Cancel())
		outs, err := wait(t, all)
		require.NoError(t, err)
		require.Equal(t, []Outcome[string]{{Value: "a"}, {Value: "b"}, {Err: ErrCancelled}}, outs)
		requireHandlesBack(t, a)
		requireHandlesBack(t, b)
	})
}

func TestAllSettledWithin(t *testing.T) {
	t.Run("at the deadline the ended inputs give their outcomes", func(t *testing.T) {
		l := startLoop(t)
		slow := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		fast := Delay(l, time.Millisecond, func() (int, error) { return 1, nil })
		outs, err := wait(t, AllSettledWithin(20*time.Millisecond, fast, slow, Fail[int](l, errBoom)))
		require.NoError(t, err)
		require.Equal(t, Outcome[int]{Value: 1}, outs[0])
		require.ErrorIs(t, outs[1].Err, ErrTimeout, "still running at the deadline")
		require.ErrorIs(t, outs[2].Err, errBoom)
		_, err = wait(t, slow)
		require.ErrorIs(t, err, ErrCancelled, "the timed-out input was withdrawn from")
		requireHandlesBack(t, l)
	})
	t.Run("Within around AllSettled loses every outcome", func(t *testing.T) {
		l := startLoop(t)
		slow := Delay(l, time.Hour, func() (int, error) { return 0, nil })
		outs, err := wait(t, Within(AllSettled(Pure(l, 1), slow), time.Millisecond))
		require.ErrorIs(t, err, ErrTimeout)
		require.Nil(t, outs, "the reason AllSettledWithin exists")
	})
	t.Run("inputs that all end first disarm the deadline", func(t *testing.T) {
		l := startLoop(t)
		outs, err := wait(t, AllSettledWithin(time.Hour, Delay(l, time.Millisecond, func() (int, error) { return 1, nil }), Pure(l, 2)))
		require.NoError(t, err)
		require.Equal(t, []Outcome[int]{{Value: 1}, {Value: 2}}, outs)
		requireHandlesBack(t, l)
	})
	t.Run("a timed-out input another dependent wants keeps running", func(t *testing.T) {
		l := startLoop(t)
		shared, requireWanted := sharedInput(t, l)
		outs, err := wait(t, AllSettledWithin(time.Millisecond, shared))
		require.NoError(t, err)
		require.ErrorIs(t, outs[0].Err, ErrTimeout)
		requireWanted()
		requireHandlesBack(t, l)
	})
	t.Run("d <= 0 still reports the inputs already ended", func(t *testing.T) {
		l := startLoop(t)
		var all *Handle[[]Outcome[int]]
		in := NewPromise[int](l)
		onLoop(t, l, func() { all = AllSettledWithin(0, Pure(l, 1), in.Handle()) })
		outs, err := wait(t, all)
		require.NoError(t, err)
		require.Equal(t, Outcome[int]{Value: 1}, outs[0])
		require.ErrorIs(t, outs[1].Err, ErrTimeout)
		requireHandlesBack(t, l)
	})
}

// AllSettledWithin works on Stop's handle, which has no loop to run a timer
// on: it times out while teardown is held up.
func TestAllSettledWithinOnStopHandle(t *testing.T) {
	rt, stop, release := heldStop(t)
	outs, err := wait(t, AllSettledWithin(10*time.Millisecond, stop))
	require.NoError(t, err)
	require.ErrorIs(t, outs[0].Err, ErrTimeout)
	// A deadline that has passed already: the Go timer may fire before
	// arm has returned (the race detector saw fire read the timer that
	// arm was still storing).
	for range 100 {
		outs, err = wait(t, AllSettledWithin(0, stop))
		require.NoError(t, err)
		require.ErrorIs(t, outs[0].Err, ErrTimeout)
	}
	long := AllSettledWithin(time.Hour, stop)
	release()
	outs, err = wait(t, long)
	require.NoError(t, err)
	require.NoError(t, outs[0].Err, "teardown finished first")
	require.Equal(t, 0, rt.Running())
}

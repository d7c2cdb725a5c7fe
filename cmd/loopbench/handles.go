package main

import (
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// handlesCap bounds a handles section in wall time, so that a slow build of
// aio still lets the whole run finish: the section stops at the first batch
// boundary after it and reports the cycles it did.
func (o options) handlesCap() time.Duration {
	return max(5*o.Duration, time.Second)
}

// runHandles: create a handle, complete it, continue from it, one cycle at a
// time, Handles times. Continuations never run inside the callback that
// registers them, so the cycles go in batches: a posted callback creates
// Batch of them, the continuations run after it returns, and the last of them
// posts the next batch.
func runHandles(o options) ([]result, error) {
	if o.Handles <= 0 || o.Batch <= 0 {
		return nil, fmt.Errorf("need -handles > 0 and -batch > 0")
	}
	cfg := fmt.Sprintf("batch=%d", o.Batch)
	var rs []result
	r, err := handlesAIO(o, "handles", promiseCycle)
	if err != nil {
		return rs, fmt.Errorf("handles/aio: %w", err)
	}
	r.Config = cfg + " NewPromise+Then+Resolve"
	rs = append(rs, r)

	r, err = handlesAIO(o, "handles-new", newCycle)
	if err != nil {
		return rs, fmt.Errorf("handles-new/aio: %w", err)
	}
	r.Config = cfg + " New+Then"
	rs = append(rs, r)

	r, err = handlesGo(o)
	r.Config = cfg + " go func+chan(1) per op"
	rs = append(rs, r)
	if err != nil {
		return rs, fmt.Errorf("handles/gostd: %w", err)
	}
	return rs, nil
}

// A cycleFunc creates one handle with value v on l, continues it with cont
// and completes it, on the loop.
type cycleFunc func(l *aio.Loop, v int, cont func(int) (int, error))

// promiseCycle is the cycle as a state machine writes it: create, attach the
// continuation, complete.
func promiseCycle(l *aio.Loop, v int, cont func(int) (int, error)) {
	p := aio.NewPromise[int](l)
	aio.Then(p.Handle(), cont)
	p.Resolve(v)
}

// newCycle is the cycle with the executor form, which resolves inside New
// (start runs at once on the loop), before the continuation is attached.
func newCycle(l *aio.Loop, v int, cont func(int) (int, error)) {
	aio.Then(aio.New(l, func(resolve func(int), reject func(error)) { resolve(v) }), cont)
}

// handlesAIO runs Handles cycles on one loop and times them until the last
// continuation ran.
func handlesAIO(o options, name string, cycle cycleFunc) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: name})
	if err != nil {
		return result{}, err
	}
	l := ls[0]
	n := int64(o.Handles)
	f := newFinisher()
	var (
		start      time.Time // written before the first Post
		next       int64     // the value of the next cycle; on the loop
		target     int64     // cycles created so far; on the loop
		conts, sum int64     // continuations run and the values they saw; on the loop
		batch      func()
	)
	cont := func(v int) (int, error) {
		conts++
		sum += int64(v)
		if conts == target {
			if conts >= n || time.Since(start) >= o.handlesCap() {
				f.finish(nil)
			} else if err := l.Post(batch); err != nil {
				f.finish(fmt.Errorf("post next batch: %w", err))
			}
		}
		return v, nil
	}
	batch = func() {
		target += min(int64(o.Batch), n-target)
		for ; next < target; next++ {
			cycle(l, int(next), cont)
		}
	}

	m := startMeter()
	start = m.start
	if err := l.Post(batch); err != nil {
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(o.handlesCap()), name+": waiting for the continuations", l)
	var r result
	if err == nil {
		r = m.finish(name, "aio", conts, m.start, f.end)
		if want := conts * (conts - 1) / 2; sum != want {
			err = fmt.Errorf("continuations saw values summing to %d, want %d (0..%d)", sum, want, conts-1)
		}
	}
	if err == nil {
		err = checkNoHandles(o, l)
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, err
}

// checkNoHandles checks, after the section, that every handle it made has
// been through its terminal transition: a count left over means the loop
// lost track of a completion.
func checkNoHandles(o options, l *aio.Loop) error {
	done := make(chan struct{})
	var left int
	// Posted, so that it runs after the job queue of the last batch drained.
	if err := l.Post(func() { left = l.Stats().Handles; close(done) }); err != nil {
		return err
	}
	if err := await(done, o.Timeout, "handles: reading Stats", l); err != nil {
		return err
	}
	if left != 0 {
		return fmt.Errorf("Stats().Handles = %d after every continuation ran, want 0", left)
	}
	return nil
}

// handlesGo is the Go equivalent of create/complete/continue: a goroutine
// computes the value and sends it on a channel of its own (the promise), and
// the receiver continues with it. Batched like the aio version, so at most
// Batch goroutines are alive at once.
func handlesGo(o options) (result, error) {
	n := int64(o.Handles)
	chans := make([]chan int, o.Batch)
	var conts, next, sum int64
	cont := func(v int) { conts++; sum += int64(v) }
	m := startMeter()
	for conts < n && time.Since(m.start) < o.handlesCap() {
		k := min(int64(o.Batch), n-conts)
		for j := range chans[:k] {
			c := make(chan int, 1) // buffered: the producer finishes without waiting for us
			chans[j] = c
			go func(v int) { c <- v }(int(next))
			next++
		}
		for _, c := range chans[:k] {
			cont(<-c)
		}
	}
	r := m.finish("handles", "gostd", conts, m.start, time.Now())
	if want := conts * (conts - 1) / 2; sum != want {
		return r, fmt.Errorf("continuations saw values summing to %d, want %d", sum, want)
	}
	return r, nil
}

package aio

import (
	"fmt"
	"math"
	"time"
)

// expiry is the deadline of a sink that times out (Within,
// AllSettledWithin): a timer of the sink's loop or, for a sink with no loop
// to run a timer on (its first input is Stop's handle, or derived from it),
// a Go timer whose callback runs the owner's fire on the detached
// pseudo-loop. Set up before the sink is shared; then owned by its loop.
type expiry struct {
	t  timer
	gt *time.Timer
	d  time.Duration // as given to arm, for the error
}

// arm sets the deadline that makes owner's fire run once d has passed,
// counted as in Delay from now; c is the owner's handle. A loop timer is
// armed by start, once the owner has registered with its inputs. Before c is
// shared.
func (e *expiry) arm(c *core, owner timerOwner, d time.Duration) {
	e.d = d
	if c.loop == detached {
		// A loop-less handle still pending waits for a loop's teardown: no
		// loop timer to arm. The timer is stored before it is started:
		// made with a due time that never comes, then Reset. Started by
		// AfterFunc itself, it could fire (d <= 0) and its fire read e.gt
		// before the store, a data race.
		e.gt = time.AfterFunc(math.MaxInt64, func() { detached.runLater(owner.fire) })
		e.gt.Reset(max(d, 0))
		return
	}
	c.setTimer(&e.t, owner, d)
}

// start arms the loop timer of arm, after the owner has registered with its
// inputs, in the same job: an input that had ended has ended the owner, or
// queued the job that ends it, and its deadline, even one passed already
// (d <= 0), cannot win (the timers phase comes after the jobs). On c's
// loop, or where a dead loop's posts run (addTimerFor).
func (e *expiry) start(c *core) {
	if e.gt == nil {
		c.loop.addTimerFor(c, &e.t)
	}
}

// holds reports whether e is a loop timer, armed: it holds its owner's
// handle (see timerHeld). A Go timer does not: the detached pseudo-loop
// has no timer heap for Stop to search. On the sink's loop.
func (e *expiry) holds() bool { return e.t.owner != nil && e.t.index >= 0 }

// err is the error of what was still running when the deadline passed.
func (e *expiry) err() error { return fmt.Errorf("%w after %v", ErrTimeout, e.d) }

// disarm stops the deadline if it was armed and has not passed. On the
// sink's loop l.
func (e *expiry) disarm(l *Loop) {
	switch {
	case e.gt != nil:
		e.gt.Stop()
	case e.t.owner != nil:
		l.removeTimer(&e.t)
	}
}

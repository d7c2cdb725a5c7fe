package aio

import "errors"

// raceNode is the handle of Race and Any.
type raceNode[T any] struct {
	Handle[T]
	links     []link[T]
	anyMode   bool    // Any: only a completion wins
	errs      []error // Any: the failures so far, by input
	left      int     // inputs not yet ended
	cancelled int     // inputs that ended cancelled
}

// Race returns a handle that ends as the first of hs to complete or fail
// does; the others are withdrawn from (and so cancelled, unless another
// dependent wants them). An input cancelled does not decide the race; if all
// of them end cancelled, so does the result. Race of no inputs fails with
// ErrNoInputs and has no loop. The result is pinned to the first input's loop
// (or, if that loop has stopped, to that of the first input whose loop still
// runs or which has no loop), as All's.
func Race[T any](hs ...*Handle[T]) *Handle[T] { return race(hs, false) }

// Any returns a handle that completes with the value of the first of hs to
// complete; the others are then withdrawn from. If none completes, it fails
// with errors.Join of every input's error in input order (ErrCancelled for an
// input that was cancelled), or is cancelled if every input was. Any of no
// inputs fails with ErrNoInputs and has no loop.
func Any[T any](hs ...*Handle[T]) *Handle[T] { return race(hs, true) }

func race[T any](hs []*Handle[T], anyMode bool) *Handle[T] {
	if len(hs) == 0 {
		return Fail[T](nil, ErrNoInputs)
	}
	if err := checkInputs(hs); err != nil {
		return Fail[T](nil, err)
	}
	n := &raceNode[T]{links: make([]link[T], len(hs)), anyMode: anyMode, left: len(hs)}
	if anyMode {
		n.errs = make([]error, len(hs))
	}
	n.init(sinkLoop(hs))
	n.prod = n
	attachInputs(&n.core, n, n.links, hs)
	return &n.Handle
}

func (n *raceNode[T]) onInput(i int) {
	k := &n.links[i]
	if n.ended() || k.done {
		return
	}
	k.done = true
	in := k.in
	n.left--
	switch st := in.state.Load(); {
	case st == uint32(Completed) || (st == uint32(Failed) && !n.anyMode):
		withdrawAll(n.loop, n.links)
		forward(&n.Handle, in)
		k.letGo()
		return
	case st == uint32(Failed):
		n.errs[i] = in.err
	default:
		n.cancelled++
		if n.anyMode {
			n.errs[i] = ErrCancelled
		}
	}
	k.letGo()
	if n.left > 0 {
		return
	}
	if n.cancelled == len(n.links) {
		n.cancel()
		return
	}
	var zero T
	n.settle(zero, errors.Join(n.errs...))
}

func (n *raceNode[T]) stop() { withdrawAll(n.loop, n.links) }

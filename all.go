package aio

// allNode is the handle of All.
type allNode[T any] struct {
	Handle[[]T]
	links []link[T]
	vals  []T
	left  int
}

// All returns a handle that completes with the values of hs in input order
// once all of them completed. The first failure fails it with that error and
// withdraws its interest in the others (cancelling those nobody else wants); an
// input cancelled cancels it. Cancelling the result withdraws from every input
// still running. Values All collected but never delivers, as it fails or is
// cancelled, are declined: a connection no other dependent took is closed
// (see Dial). The result is pinned to the first input's loop (or, if that
// loop has stopped, to that of the first input whose loop still runs or
// which has no loop); inputs may live on any loop. All of no inputs is
// completed with an empty slice and has no loop; a nil input fails it with
// ErrNilHandle.
func All[T any](hs ...*Handle[T]) *Handle[[]T] {
	if len(hs) == 0 {
		return Pure[[]T](nil, []T{})
	}
	if err := checkInputs(hs); err != nil {
		return Fail[[]T](nil, err)
	}
	n := &allNode[T]{links: make([]link[T], len(hs)), vals: make([]T, len(hs)), left: len(hs)}
	n.init(sinkLoop(hs))
	n.prod = n
	attachInputs(&n.core, n, n.links, hs)
	return &n.Handle
}

func (n *allNode[T]) onInput(i int) {
	k := &n.links[i]
	if n.ended() || k.done {
		return
	}
	k.done = true
	in := k.in
	switch in.state.Load() {
	case uint32(Completed):
		n.vals[i] = in.val
		if n.left--; n.left == 0 {
			vals := n.vals
			n.vals = nil
			if n.settle(vals, nil) {
				letGoAll(n.links) // else stop declines them
			}
		}
	case uint32(Failed):
		n.vals = nil
		declineCollected(n.links)
		withdrawAll(n.loop, n.links)
		n.settle(nil, in.err)
	default:
		n.cancel()
	}
}

func (n *allNode[T]) stop() {
	declineCollected(n.links)
	withdrawAll(n.loop, n.links)
}

package aio

// sink is a node with inputs: a combinator whose logic runs on its own loop
// and is told, input by input, when each one finishes.
type sink interface {
	// onInput runs on the sink's loop once input idx is terminal.
	onInput(idx int)
}

// link is one input of a sink, registered as a dependent of the input. The
// input may live on another loop: then the notification crosses with a post
// to the sink's loop (and reading the input's outcome there is safe, since a
// terminal handle's value is published before its status).
type link[T any] struct {
	in       *Handle[T] // immutable once set
	node     sink       // immutable
	dst      *Loop      // the sink's loop; immutable
	idx      int        // immutable
	reported bool       // the sink has consumed or withdrawn from this input; sink's loop
}

func (k *link[T]) inputDone() {
	if k.dst == k.in.loop {
		k.node.onInput(k.idx)
		return
	}
	k.dst.exec(func() { k.node.onInput(k.idx) })
}

// attach points k at in and registers it. A sink whose input lives on another
// loop is a producer as far as its own loop is concerned (nothing on its loop
// will finish it), so it is tracked for Stop.
func (k *link[T]) attach(in *Handle[T], node sink, self *core, idx int) {
	k.in, k.node, k.dst, k.idx = in, node, self.loop, idx
	in.register(k)
	if in.loop != self.loop {
		self.adoptCrossLoop()
	}
}

// withdraw takes back the sink's interest in its input if it has not
// consumed it yet. On the sink's loop.
func (k *link[T]) withdraw() {
	if k.in == nil || k.reported {
		return
	}
	k.reported = true
	k.in.withdrawFrom()
}

// adoptCrossLoop tracks c as a producer of its loop, once.
func (c *core) adoptCrossLoop() {
	l := c.loop
	if l.OnLoop() {
		if !c.crossLoop {
			c.crossLoop = true
			l.adoptProducer(c)
		}
		return
	}
	l.exec(func() {
		if !c.crossLoop && !c.finished {
			c.crossLoop = true
			l.adoptProducer(c)
		}
	})
}

// forward settles h with the outcome of the terminal input in: the same value
// or error, or cancellation.
func forward[T any](h *Handle[T], in *Handle[T]) {
	switch in.state.Load() {
	case uint32(Completed):
		h.settle(in.val, nil)
	case uint32(Failed):
		var zero T
		h.settle(zero, in.err)
	default:
		h.cancel()
	}
}

// ended reports whether the handle's outcome is decided. Sinks ignore inputs
// that arrive after that.
func (c *core) ended() bool { return c.finished || c.state.Load() >= uint32(Completed) }

package aio

import "fmt"

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
	// in is the input, until the sink is done with it (see letGo): a
	// result the program keeps must not keep an input it no longer needs,
	// whose value (a Race's loser, a Within's input after the timeout,
	// completing later for another dependent) would stay reachable from
	// it. Set by init, cleared on the sink's loop only.
	in         *Handle[T]
	src        *Loop // the input's loop, for inputDone (which runs there); immutable
	node       sink  // immutable
	dst        *Loop // the sink's loop; immutable
	idx        int   // immutable
	done       bool  // the sink is done with this input: consumed its outcome or withdrew; sink's loop
	registered bool  // register ran; sink's loop
}

func (k *link[T]) inputDone() {
	if k.dst == k.src {
		k.node.onInput(k.idx)
		return
	}
	k.dst.runLater(func() { k.node.onInput(k.idx) })
}

// init points k at in. It may run on any goroutine, before the sink is
// shared; register then runs on the sink's loop. A sink does not take its
// input's waitLoop (see initAfter): Race, Any, Within, even All (failing
// fast) can end without that input, and Wait must not refuse to block on a
// handle that may end without the teardown.
func (k *link[T]) init(in *Handle[T], node sink, self *core, idx int) {
	k.in, k.src, k.node, k.dst, k.idx = in, in.loop, node, self.loop, idx
}

// letGo forgets the input of a link the sink is done with (it consumed
// the outcome, or withdrew). On the sink's loop.
func (k *link[T]) letGo() {
	if k.done {
		k.in = nil
	}
}

// letGoAll is letGo for every link of a sink. On the sink's loop.
func letGoAll[T any](links []link[T]) {
	for i := range links {
		links[i].letGo()
	}
}

// register enters k as an interested dependent of its input. It runs on the
// sink's loop, as does every withdraw, so the input sees a sink's register
// before its withdraw even across loops (posts from one goroutine keep their
// order). A sink whose input lives on another loop is a producer as far as
// its own loop is concerned (nothing on its loop will finish it), so it is
// tracked for Stop.
func (k *link[T]) register(self *core) {
	self.loop.checkOnLoop()
	k.registered = true
	k.in.register(k)
	if k.in.loop != self.loop {
		self.adoptCrossLoop()
	}
}

// registerLive registers k unless the sink already ended or gave k up. On the
// sink's loop.
func (k *link[T]) registerLive(self *core) {
	if !self.ended() && !k.done {
		k.register(self)
	}
}

// attach is init then register, for a sink already on its loop.
func (k *link[T]) attach(in *Handle[T], node sink, self *core, idx int) {
	k.init(in, node, self, idx)
	k.register(self)
}

// withdraw takes back the sink's interest in its input if it has not
// consumed it yet, and forgets the input: the sink ignores what it tells
// afterwards. On the sink's loop.
func (k *link[T]) withdraw() {
	k.giveUp(false)
	k.letGo()
}

// withdrawWatching is withdraw for a sink that still looks at the input's
// outcome when told (Bracket's use, whose end releases the resource): it
// keeps the input, for the sink to let go of. On the sink's loop.
func (k *link[T]) withdrawWatching() { k.giveUp(false) }

// withdrawTaking is withdraw for a sink that still takes the input's value
// if it completes (Bracket's acquire, see core.withdrawTaking). Given up
// before its registration ran, it leaves the withdrawal to the sink, which
// registers all the same and then withdraws. On the sink's loop.
func (k *link[T]) withdrawTaking() { k.giveUp(true) }

func (k *link[T]) giveUp(taking bool) {
	if k.in == nil || k.done {
		return
	}
	k.dst.checkOnLoop()
	k.done = true
	switch {
	case k.registered && taking:
		k.in.unregisterTaking(k)
	case k.registered:
		k.in.unregister(k)
	case !taking:
		// Given up before its registration ran (the sink was cancelled
		// right after it was built off its loop): as a register then a
		// withdraw would.
		k.in.dropIfUnwanted()
	}
}

// adoptCrossLoop tracks c as a producer of its loop, once. On c's loop (a
// sink registers its links there, a Do body runs as its loop).
func (c *core) adoptCrossLoop() {
	c.loop.checkOnLoop()
	if !c.crossLoop && !c.finished {
		c.crossLoop = true
		c.loop.adoptProducer(c)
	}
}

// forward settles h with the outcome of the terminal input in: the same value
// (passed on, see passOn) or error, or cancellation.
func forward[T any](h *Handle[T], in *Handle[T]) {
	switch in.state.Load() {
	case uint32(Completed):
		passOn(h, in)
	case uint32(Failed):
		var zero T
		h.settle(zero, in.err)
	default:
		h.cancel()
	}
}

// sinkLoop is the loop a combinator's result is pinned to: the first
// input's, or, when that loop has stopped (or is stopping), the loop of the
// first input whose loop still runs or who has none (detached). A result
// pinned to a stopped loop is cancelled at once (see adoptProducer), which
// made the outcome depend on the order of the inputs: Race(gone, ok) was
// cancelled where Race(ok, gone) completed. A detached result is cancelled
// by no Stop; its inputs' loops cancel their inputs when they stop. With
// every input on a stopped loop, the first input's.
func sinkLoop[T any](hs []*Handle[T]) *Loop {
	for _, h := range hs {
		if l := h.loop; l == detached || l.state.Load() == stateRunning {
			return l
		}
	}
	return hs[0].loop
}

// ended reports whether the handle's outcome is decided. Sinks ignore inputs
// that arrive after that.
func (c *core) ended() bool { return c.finished || c.state.Load() >= uint32(Completed) }

func checkInputs[T any](hs []*Handle[T]) error {
	for i, h := range hs {
		if h == nil {
			return fmt.Errorf("%w: input %d", ErrNilHandle, i)
		}
	}
	return nil
}

// attachInputs points links at hs and registers them on the sink's loop.
func attachInputs[T any](self *core, node sink, links []link[T], hs []*Handle[T]) {
	for i, h := range hs {
		links[i].init(h, node, self, i)
	}
	runInlineCall(self.loop, registerAll[T], self, links)
}

// registerAll registers every link of a sink, unless it already ended (then
// it wants none of its inputs). On the sink's loop.
func registerAll[T any](self *core, links []link[T]) {
	for i := range links {
		links[i].registerLive(self)
	}
}

// declineCollected gives back the values a sink collected and will never
// deliver, as it fails or is cancelled (All, AllSettled): it withdraws its
// interest in each input it collected, as if it had withdrawn before, so
// that a connection nobody else took is released (see releaseUnwanted).
// Call it before withdrawAll, while the links done are exactly those
// collected (and a failed input, which has no value). On the sink's loop.
func declineCollected[T any](links []link[T]) {
	for i := range links {
		k := &links[i]
		if k.done && k.registered && k.in != nil && k.in.state.Load() == uint32(Completed) {
			k.in.unregister(k)
		}
		k.letGo()
	}
}

// declines reports whether c, a one-input node told of its input in, has
// ended (cancelled, its stop still queued); if so it declines in's value as
// its stop would have (see releaseUnwanted). On c's loop.
func (c *core) declines(in *core) bool {
	if !c.ended() {
		return false
	}
	in.withdraw()
	return true
}

// withdrawBatch is how many inputs withdrawAll gives up at once; the rest
// wait in a job behind the finishes those queued (see withdrawAll).
const withdrawBatch = 32

// withdrawAll withdraws from every input of a sink on loop l not consumed
// yet, withdrawBatch of them now and the rest from a job queued behind the
// finishes that queued. Withdrawing from all at once would queue a finish
// for each, and a cancelled tree queues breadth first: a thousand Alls of
// a thousand inputs each would hold a million jobs in the ring at once (24
// MB of fresh memory, most of the cost of cancelling the tree). In batches
// the ring holds about withdrawBatch jobs per sink still withdrawing. The
// sink has ended (or is ending) when it withdraws, so an input that ends
// before its turn is ignored as one withdrawn would be, and its turn then
// only declines it. On l.
func withdrawAll[T any](l *Loop, links []link[T]) {
	if len(links) > withdrawBatch {
		(&withdrawRest[T]{links: links}).runTask(l)
		return
	}
	for i := range links {
		links[i].withdraw()
	}
}

// withdrawRest is the inputs withdrawAll has yet to withdraw from, as a job:
// each run withdraws from withdrawBatch of them, then queues itself again,
// behind the finishes they queued, while any are left.
type withdrawRest[T any] struct{ links []link[T] }

func (w *withdrawRest[T]) runTask(l *Loop) {
	links := w.links
	if len(links) > withdrawBatch {
		w.links = links[withdrawBatch:]
		links = links[:withdrawBatch]
		defer l.jobs.push(job{t: w})
	}
	for i := range links {
		links[i].withdraw()
	}
}

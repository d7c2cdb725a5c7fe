package aio

// A handle that completed with a value aio must release (the connection of
// a Dial) and whose every registered dependent declined that value (withdrew,
// or was cancelled without taking it) releases it, as a pending handle that
// no dependent wants is cancelled. A dependent that takes the value (a Then's
// function, All collecting it, Await, Bracket's acquire) never withdraws its
// interest afterwards, so a taken value is never released. Waiting on the
// handle (Wait, Result, Done, Settled, a Scope's Adopt) is not interest, as
// with cancellation. A node that passes its input's value on unchanged
// (Within, Race, Any, Catch, Finally, Retry, ThenAsync, WithScope) keeps its
// interest in the input and makes its own handle's value releasable: declining
// it there declines it in the input (relFrom).

// releaseUnwanted releases c's value if c completed with one aio must release
// and every dependent has declined it: it closes the connection c carries,
// or declines the input whose value c passed on, and so on down the chain, by
// iteration, not recursion. On c's loop.
func (c *core) releaseUnwanted() {
	for {
		x := c.rare
		if x == nil || x.kept || c.state.Load() != uint32(Completed) {
			return
		}
		conn, from := x.relConn, x.relFrom
		x.relConn, x.relFrom = nil, nil
		if conn != nil {
			conn.closeWith(ErrCancelled)
		}
		if from == nil {
			return
		}
		// c passed from's value on and kept its interest in from: c's
		// dependents declined it, so c declines it too. from is completed
		// (its value was passed on). On another loop the withdrawal is
		// posted there, and goes on down the chain from there.
		if from.loop != c.loop {
			from.unregister(nil)
			return
		}
		if from.interest--; from.interest > 0 {
			return
		}
		c = from
	}
}

// releaseLost closes the connection a producer marked as its value (see
// dialTLS) when the handle was decided otherwise before the value could
// settle it: nobody will get it. On c's loop.
func (c *core) releaseLost() {
	if x := c.rare; x != nil && x.relConn != nil {
		conn := x.relConn
		x.relConn = nil
		conn.closeWith(ErrCancelled)
	}
}

// withdrawTaking takes back the interest of a dependent that still takes c's
// value if c completes (Bracket's acquire, whose resource is released by the
// program's function, whenever it arrives): c is cancelled if it is still
// running and no dependent is left, as withdraw does, but a value c completed
// with is the dependent's, never released by aio. On c's loop.
func (c *core) withdrawTaking() {
	c.loop.checkOnLoop()
	c.interest--
	// Kept whether or not c has completed yet: a value it completes with
	// later is the dependent's as well, whoever else declines it.
	c.rareFields().kept = true
	if c.state.Load() != uint32(Completed) && c.interest <= 0 {
		c.cancel()
	}
}

// unregisterTaking is withdrawTaking from any goroutine: at once on c's loop,
// else posted (see unregister).
func (c *core) unregisterTaking(d dependent) {
	runInlineCall(c.loop, (*core).withdrawTakingFor, c, d)
}

func (c *core) withdrawTakingFor(dependent) { c.withdrawTaking() }

// passOn settles h with the value of in, completed, which h passes on
// unchanged, keeping its interest in in. If in's value is one aio must
// release, so is h's: declining it in h declines it in in. If h is decided
// already (cancelled from another goroutine, its stop still queued), the
// value is declined instead. On h's loop; in may live on another loop, where
// the decline is posted (see releaseUnwanted).
func passOn[T any](h, in *Handle[T]) {
	if !h.settle(in.val, nil) {
		in.unregister(nil)
		return
	}
	if h.loop != in.loop {
		// in's rare fields belong to its loop (a node sets relFrom after
		// its status is published): whether its value is one to release
		// is decided there, when a decline arrives. Only a connection
		// ever is, so other values cost no record and no post.
		if _, conn := any(in.val).(*Conn); conn {
			h.rareFields().relFrom = &in.core
		}
		return
	}
	if x := in.rare; x != nil && (x.relConn != nil || x.relFrom != nil) {
		h.rareFields().relFrom = &in.core
	}
}

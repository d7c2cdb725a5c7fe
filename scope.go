package aio

// Scope is a set of handles that must not outlive something: a WithScope
// body, a connection, a request. Handles are put in it with Adopt; when the
// scope closes, every adopted handle still running is cancelled. A handle
// leaves the scope by itself when it finishes, so a long-lived scope (a
// connection serving many requests) holds only what is still running.
type Scope struct {
	loop  *Loop // immutable
	owner *core // WithScope's handle, whose terminal transition waits for the children; nil for other scopes; immutable
	// onIdle, if set, runs on the loop each time the last running child
	// leaves an open scope (a connection waiting for the work its requests
	// started, see Conn.drain). Set before the scope is shared; immutable.
	onIdle func()
	// held: the loop holds the scope while it is open (a connection's: the
	// loop's fd table holds the connection, and its close closes the
	// scope). A child of the same loop cannot be abandoned while in it, and
	// leaves it only when it ends, so its cleanups are kept unarmed
	// (core.scopeHeld, see addCleanup) until the scope closes. Set before
	// the scope is shared; immutable.
	held bool
	// Owned by the loop.
	children []*adoption // running adopted handles; each knows its index
	closed   bool
	holding  bool // owner's terminal transition waits for the cancelled children to finish
}

// adoption is a scope's watch on one child: a non-interested dependent that
// removes the child from the scope when it finishes.
type adoption struct {
	s     *Scope
	child interface{ Cancel() bool } // immutable
	c     *core                      // the child's core; immutable
	idx   int                        // position in s.children; -1 once removed. Scope's loop.
}

// newScope returns an open scope on l (nil l: the detached pseudo-loop).
func newScope(l *Loop) *Scope { return &Scope{loop: loopOrDetached(l)} }

// Loop returns the scope's loop.
func (s *Scope) Loop() *Loop {
	if s.loop == detached {
		return nil
	}
	return s.loop
}

// Hold keeps s busy until release is called, as a running handle adopted
// into it does: a connection's drain (Listener.Drain, Runtime.Shutdown)
// waits for it. It is for work a program tracks itself, not as a handle
// in the scope: a queue of its own in front of the connection's write
// queue, or requests it would send again on a new connection if this one
// dropped (adopted, they would be cancelled with it). The scope's close
// releases the hold too. release may be called from any goroutine, and
// more than once. A nil s, or one without a loop, holds nothing.
func (s *Scope) Hold() (release func()) {
	if s == nil || s.loop == detached {
		return func() {}
	}
	p := NewPromise[struct{}](s.loop)
	Adopt(s, p.Handle())
	return func() { p.Resolve(struct{}{}) }
}

// Adopt makes h a child of s and returns h: when s closes, h is cancelled if
// it is still running. Adopting into a closed scope cancels h at once. h may
// live on any loop; a nil s or h is returned unchanged.
func Adopt[T any](s *Scope, h *Handle[T]) *Handle[T] {
	if s == nil || h == nil {
		return h
	}
	a := &adoption{s: s, child: h, c: &h.core, idx: -1}
	runInlineCall(s.loop, (*Scope).add, s, a)
	return h
}

// add enters a in the scope. On the scope's loop.
func (s *Scope) add(a *adoption) {
	s.loop.checkOnLoop()
	if s.closed {
		a.child.Cancel()
		return
	}
	if statusOf(a.c.state.Load()).Terminal() {
		return
	}
	a.idx = len(s.children)
	s.children = append(s.children, a)
	a.c.watch(a)
	if s.held && a.c.loop == s.loop {
		a.c.scopeHeld = true
	}
}

// inputDone runs on the child's loop when it finishes: leave the scope.
func (a *adoption) inputDone() {
	if a.s.loop == a.c.loop {
		a.s.remove(a)
		return
	}
	a.s.loop.runLater(func() { a.s.remove(a) })
}

// remove takes a out of the children by swapping the last one into its place.
// On the scope's loop.
func (s *Scope) remove(a *adoption) {
	s.loop.checkOnLoop()
	i := a.idx
	if i < 0 || i >= len(s.children) || s.children[i] != a {
		return
	}
	last := len(s.children) - 1
	s.children[i] = s.children[last]
	s.children[i].idx = i
	s.children[last] = nil
	s.children = s.children[:last]
	a.idx = -1
	if len(s.children) > 0 {
		return
	}
	switch {
	case s.closed && s.owner != nil:
		s.owner.unhold(&s.holding)
	case !s.closed && s.onIdle != nil:
		s.onIdle()
	}
}

// busy reports whether s is non-nil and holds a running child. On the
// scope's loop.
func (s *Scope) busy() bool { return s != nil && len(s.children) > 0 }

// close cancels every child still running and refuses new ones. The children
// leave the scope as they finish; WithScope's handle finishes only after the
// last of them (its cleanups included). On the scope's loop; idempotent.
func (s *Scope) close() {
	s.loop.checkOnLoop()
	if s.closed {
		return
	}
	s.closed = true
	if len(s.children) == 0 {
		return
	}
	if s.owner != nil {
		s.owner.hold(&s.holding)
	}
	s.cancelChildren()
}

// cancelChildren cancels every child still running and reports whether
// it cancelled one (a child cancelled before is ending already). On the
// scope's loop.
func (s *Scope) cancelChildren() bool {
	cancelled := false
	for _, a := range append([]*adoption(nil), s.children...) {
		if a.c.loop == s.loop && a.c.scopeHeld {
			// Nothing holds the child from here on (the connection may
			// be dropped before the child ends, and a runtime.Goexit in
			// an OnCancel may cut its end short): its cleanups are
			// tracked as any handle's.
			a.c.scopeHeld = false
			a.c.armRecord()
		}
		if a.child.Cancel() {
			cancelled = true
		}
	}
	return cancelled
}

// Len returns the number of adopted handles still running. On the scope's
// loop only: elsewhere it would race with the loop (the aiodebug build
// panics there).
func (s *Scope) Len() int {
	s.loop.checkOnLoop()
	return len(s.children)
}

// scopeNode is the handle of WithScope.
type scopeNode[T any] struct {
	Handle[T]
	s     *Scope
	inner link[T]
	fn    func(*Scope) *Handle[T]
}

// WithScope runs fn on the loop with a new scope and returns a handle that
// ends as fn's handle does. At its terminal transition (fn's handle finished,
// or the returned handle was cancelled) every handle adopted into the scope and
// still running is cancelled, and the returned handle's continuations,
// cleanups and Done wait until each of them has finished, cleanups included:
// nothing adopted outlives the scope. A deadline
// is Within(WithScope(...), d): the timeout cancels the scope and with it
// every child. fn returning nil fails the handle with ErrNilHandle; a panic in
// fn fails it with a *PanicError (and closes the scope).
func WithScope[T any](l *Loop, fn func(s *Scope) *Handle[T]) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	n := &scopeNode[T]{s: newScope(l), fn: fn}
	n.s.owner = &n.core
	n.init(l)
	n.prod = n
	n.loop.runInline(n.start)
	return &n.Handle
}

func (n *scopeNode[T]) start() {
	fn := n.fn
	n.fn = nil
	if n.ended() {
		return
	}
	n.state.CompareAndSwap(uint32(Pending), uint32(Running))
	h, err := callValue(func() (*Handle[T], error) { return fn(n.s), nil })
	switch {
	case err != nil:
		n.s.close()
		var zero T
		n.settle(zero, err)
	case h == nil:
		n.s.close()
		var zero T
		n.settle(zero, ErrNilHandle)
	default:
		n.inner.attach(h, n, &n.core, 0)
	}
}

func (n *scopeNode[T]) onInput(int) {
	if n.ended() || n.inner.done {
		return
	}
	n.inner.done = true
	n.s.close()
	forward(&n.Handle, n.inner.in)
	n.inner.letGo()
}

func (n *scopeNode[T]) stop() {
	n.inner.withdraw()
	n.s.close()
}

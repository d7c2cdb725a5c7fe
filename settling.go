package aio

import (
	"fmt"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
)

// Settling delivers the inputs of Settled in the order they end: through a
// channel to goroutines, and through Await to Do bodies.
type Settling[T any] struct {
	// C receives each input once it has ended (completed, failed or
	// cancelled), in the order they end, and is closed after the last. Its
	// buffer holds every input, so no input ever waits for a reader, and
	// leaving it unread leaks nothing. For goroutines: on a loop, a receive
	// would block the loop; a Do body uses Await.
	C <-chan *Handle[T]

	ch   chan *Handle[T] // C, to send on and close; any goroutine
	left atomic.Int64    // inputs not yet sent; any goroutine

	mu      sync.Mutex
	waiters []*Handle[struct{}] // Do bodies suspended until the next send; under mu
}

// settleWatch is Settled's watch on one input: a dependent that is not
// interest, as waiting is not.
type settleWatch[T any] struct {
	s  *Settling[T] // immutable
	in *Handle[T]   // immutable
}

func (w *settleWatch[T]) inputDone() { w.s.deliver(w.in) }

// Settled returns the inputs hs in the order they end, without cancelling
// any: from goroutines, range over the channel C; in a Do body, range over
// Await(co). Each input is delivered once (a handle given twice, twice), and
// the delivery ends after the last one has ended. Settled is waiting, not
// interest (like Done): it keeps no input from being cancelled when its
// other dependents withdraw, and it cancels nothing; to give up the rest,
// cancel them. It holds one slot per input and starts no goroutine, but for
// an input whose loop has stopped or which has no loop (Pure(nil, v), a
// Stop's handle): what reaches no running loop runs on a short-lived
// goroutine of its own, and watching that input does. A nil
// input is delivered at once as a handle failed with ErrNilHandle. Any
// goroutine.
func Settled[T any](hs ...*Handle[T]) *Settling[T] {
	ch := make(chan *Handle[T], len(hs))
	s := &Settling[T]{C: ch, ch: ch}
	s.left.Store(int64(len(hs)))
	if len(hs) == 0 {
		close(ch)
		return s
	}
	ws := make([]settleWatch[T], len(hs))
	for i, h := range hs {
		if h == nil {
			s.deliver(Fail[T](nil, fmt.Errorf("%w: input %d", ErrNilHandle, i)))
			continue
		}
		ws[i] = settleWatch[T]{s: s, in: h}
		h.watch(&ws[i])
	}
	return s
}

// deliver sends an input that has ended and wakes the bodies waiting for
// it. Any goroutine (each input's loop).
func (s *Settling[T]) deliver(h *Handle[T]) {
	s.ch <- h // never blocks: the buffer has a slot for every input
	if s.left.Add(-1) == 0 {
		close(s.ch)
	}
	s.mu.Lock()
	ws := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, w := range ws {
		w.settle(struct{}{}, nil)
	}
}

// Await returns the rest of the inputs in the order they end, for a Do
// body: each step takes the next input from C or, while none has ended
// yet, suspends the body until one does, without blocking the loop. Each is
// yielded with a nil error. If the Do handle is cancelled, the sequence
// yields (nil, ErrCancelled) once and stops; called anywhere but in co's
// body, it yields (nil, ErrNotInBody). Stopping the range early cancels
// nothing, and a later Await, or a goroutine reading C, carries on from
// there. Bodies of several Do handles may await the same Settling: each
// input goes to one of them. In co's body.
func (s *Settling[T]) Await(co *Co) iter.Seq2[*Handle[T], error] {
	return func(yield func(*Handle[T], error) bool) {
		for {
			h, ok, err := s.next(co)
			if !ok && err == nil {
				return // every input was delivered
			}
			if !yield(h, err) || err != nil {
				return
			}
		}
	}
}

// next takes the next input, suspending co's body until there is one. ok is
// false once C is closed and empty. In co's body.
func (s *Settling[T]) next(co *Co) (h *Handle[T], ok bool, err error) {
	if co == nil || co.g.Load() != getg() {
		return nil, false, ErrNotInBody
	}
	var w *Handle[struct{}] // listed in waiters: settled by the next deliver
	for {
		if co.noticeCancel() {
			s.drop(w)
			return nil, false, ErrCancelled
		}
		select {
		case h, ok = <-s.ch:
			s.drop(w)
			return h, ok, nil
		default:
		}
		if w == nil {
			// List a waiter, then look again: an input delivered before
			// it was listed woke nobody.
			w = runningHandle(co.l)
			s.mu.Lock()
			s.waiters = append(s.waiters, w)
			s.mu.Unlock()
			continue
		}
		if _, err = Await(co, w); err != nil {
			// The Do handle was cancelled: Await withdrew from w, which
			// is cancelled.
			s.drop(w)
			return nil, false, err
		}
		w = nil // woken, and taken off the list by deliver
	}
}

// drop takes a waiter that is no longer needed off the list, if deliver has
// not taken it yet, and ends it. A nil w is none.
func (s *Settling[T]) drop(w *Handle[struct{}]) {
	if w == nil {
		return
	}
	s.mu.Lock()
	if i := slices.Index(s.waiters, w); i >= 0 {
		s.waiters = slices.Delete(s.waiters, i, i+1)
	}
	s.mu.Unlock()
	w.cancel()
}

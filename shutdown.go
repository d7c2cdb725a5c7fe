package aio

import (
	"context"
	"fmt"
	"sync/atomic"
)

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	MaxSystems int // slab capacity; 0 means 16
}

// Runtime owns a fixed number of system slots in a lock-free slab. Start takes
// a slot, a stopped system gives it back; nothing else registers systems.
type Runtime struct {
	slab *Slab[loopSlot]
}

// loopSlot is what the slab holds for a running system. The Loop itself is a
// separate allocation: a *Loop handed to users stays valid (and answers
// ErrStopped) after its slot is reused by another system.
type loopSlot struct {
	l atomic.Pointer[Loop]
}

// NewRuntime returns a runtime with cfg.MaxSystems slots (16 if 0 or less).
func NewRuntime(cfg RuntimeConfig) *Runtime {
	n := cfg.MaxSystems
	if n <= 0 {
		n = 16
	}
	return &Runtime{slab: NewSlab[loopSlot](n)}
}

// Start takes a slab slot and starts a system: a loop goroutine locked to its
// OS thread. It returns ErrTooManySystems when every slot is taken, or the
// poller's error (wrapped) when the kernel refuses one.
func (rt *Runtime) Start(cfg Config) (*Loop, error) {
	idx, slot, ok := rt.slab.Acquire()
	if !ok {
		return nil, fmt.Errorf("%w: all %d slots in use", ErrTooManySystems, rt.slab.Cap())
	}
	l, err := newLoop(rt, idx, cfg)
	if err != nil {
		_ = rt.slab.Release(idx)
		return nil, err
	}
	slot.l.Store(l)
	go l.run()
	return l, nil
}

// Running returns the number of systems holding a slot: started, and not yet
// through the teardown of Stop.
func (rt *Runtime) Running() int { return rt.slab.InUse() }

// Shutdown stops every system still running and waits until each one's Stop
// handle completed, or ctx ends (then it returns ctx's error; the systems go
// on stopping). Called on one of the runtime's loops it would wait for itself:
// it stops the others, then returns ErrAwaitOnLoop.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	var (
		stops  []*Handle[struct{}]
		onLoop bool
	)
	for _, s := range rt.slab.All() {
		if l := s.l.Load(); l != nil {
			if l.OnLoop() {
				onLoop = true
			}
			stops = append(stops, l.Stop())
		}
	}
	if onLoop {
		return ErrAwaitOnLoop
	}
	for _, h := range stops {
		if _, err := h.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// teardown runs on the loop goroutine once Stop was called: it cancels what is
// pending until nothing is, closes the work pool and the poller, and turns the
// loop dead, running whatever was still queued.
func (l *Loop) teardown() {
	// Cancelling runs callbacks, and posted work (a producer adopted or a
	// timer armed from another goroutine just before Stop) can add pending
	// handles: repeat until a pass finds nothing to cancel and nothing to run.
	for {
		l.now.Store(int64(l.clock()))
		found := l.cancelPending()
		l.drain()
		for l.readyPos < len(l.ready) || l.qlen.Load() > 0 {
			found = true
			l.runPosted()
		}
		l.runClosing()
		if !found && !l.hasWork() {
			break
		}
	}
	l.closeFDs()
	_ = l.poller.Close()

	// Dead from here on: whatever still arrives (a producer created just
	// before Stop and adopted just after the last pass, a Work result) runs
	// on a goroutine of its own under deadMu, and a producer adopted now is
	// cancelled on the spot (adoptProducer).
	l.turnDead()

	// Last, the work pool: every Work job is cancelled by now (a late one by
	// the pass above), so its function sees its context done and returns.
	l.pool.close()
}

// turnDead makes the loop dead and runs what was still queued. deadMu is
// released by a deferred call, and the queue is consumed from l.rest: a
// callback that calls runtime.Goexit unwinds through here without leaving
// deadMu locked, and the teardown that the loop goroutine's guard then runs
// again (see goexited) takes up the callbacks still left.
func (l *Loop) turnDead() {
	l.deadMu.Lock()
	defer l.deadMu.Unlock()
	l.postMu.Lock()
	l.state.Store(stateDead)
	l.rest = append(l.rest, l.postQ...)
	l.postQ = nil
	l.qlen.Store(0)
	l.postMu.Unlock()
	for len(l.rest) > 0 {
		fn := l.rest[0]
		l.rest[0] = nil
		l.rest = l.rest[1:]
		l.call(fn)
		l.drain()
	}
	l.rest = nil
	// The loop goroutine gives up ownership while it still holds deadMu, so
	// a dead-loop runner can never save and restore its identity.
	l.threadG.Store(0)
	l.g.Store(0)
}

// closeFDs closes every fd still registered with the loop.
func (l *Loop) closeFDs() {
	for fd, h := range l.fds {
		if h == nil {
			continue
		}
		h.closeFD()
		if fd < len(l.fds) {
			l.fds[fd] = nil
		}
	}
}

// finishStop releases the slot and completes Stop's handle. It runs last on
// the loop goroutine, after the loop has left its thread.
func (l *Loop) finishStop() {
	if l.rt != nil {
		if s := l.rt.slab.Get(l.slot); s != nil {
			s.l.Store(nil)
		}
		_ = l.rt.slab.Release(l.slot)
	}
	l.stopH.settle(struct{}{}, nil)
}

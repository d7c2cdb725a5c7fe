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
// it stops every system, that loop's own included (which stops after the
// current callback), and returns ErrAwaitOnLoop without waiting.
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

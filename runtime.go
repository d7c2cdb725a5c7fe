package aio

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// RuntimeConfig configures a Runtime.
type RuntimeConfig struct {
	MaxSystems int // slab capacity; 0 means 16, at most MaxSystemsLimit
}

// MaxSystemsLimit bounds RuntimeConfig.MaxSystems: each system is an OS
// thread locked to its loop, with its poller. The Go runtime stops a
// process that passes 10,000 threads (runtime/debug.SetMaxThreads) with a
// fatal error, and a process with a P per loop (ReserveProcs) runs up to
// one more thread per P: 4096 systems take about 8,200 at most, before
// the threads of Work jobs blocked in system calls, one each, which a
// process with that many loops must keep few or raise the limit for.
// (The slab's slots are allocated up front too: math.MaxInt of them would
// ask for tens of GiB at NewRuntime.)
const MaxSystemsLimit = 1 << 12

// Runtime owns a fixed number of system slots in a lock-free slab. Start takes
// a slot, a stopped system gives it back; nothing else registers systems.
// The zero Runtime is ready to use, as NewRuntime(RuntimeConfig{}) makes one.
type Runtime struct {
	once sync.Once       // makes the slab of a zero Runtime (slots)
	slab *Slab[loopSlot] // made by NewRuntime, or once by slots; immutable after
}

// slots returns the runtime's slab, made on the first use of a zero Runtime
// as NewRuntime would make it. Any goroutine.
func (rt *Runtime) slots() *Slab[loopSlot] {
	rt.once.Do(func() {
		if rt.slab == nil {
			rt.slab = NewRuntime(RuntimeConfig{}).slab
		}
	})
	return rt.slab
}

// loopSlot is what the slab holds for a running system. The Loop itself is a
// separate allocation: a *Loop handed to users stays valid (and answers
// ErrStopped) after its slot is reused by another system.
type loopSlot struct {
	l atomic.Pointer[Loop]
}

// NewRuntime returns a runtime with cfg.MaxSystems slots (16 if 0 or less,
// MaxSystemsLimit if more).
//
// It also makes sure Go's own poller is up, which the Go runtime creates
// (an epoll or kqueue fd and a wakeup fd) at the first timer or network
// use of the process: once the systems have taken every fd the process
// may open, creating it would fail, and the Go runtime stops the whole
// process with a fatal error rather than returning one. Without this, a
// program whose Start failed with EMFILE and that then called Shutdown
// with a deadline (a timer) would die in it, its EMFILE unsaid.
func NewRuntime(cfg RuntimeConfig) *Runtime {
	goPollerOnce.Do(startGoPoller)
	n := cfg.MaxSystems
	if n <= 0 {
		n = 16
	}
	n = min(n, MaxSystemsLimit)
	return &Runtime{slab: NewSlab[loopSlot](n)}
}

var goPollerOnce sync.Once

// startGoPoller starts Go's poller: arming a timer does (runtime.addHeap
// calls netpollGenericInit), and the timer is stopped at once.
func startGoPoller() { time.AfterFunc(time.Hour, func() {}).Stop() }

// Start takes a slab slot and starts a system: a loop goroutine locked to its
// OS thread. It returns ErrTooManySystems when every slot is taken, or the
// poller's error (wrapped) when the kernel refuses one. Any goroutine.
func (rt *Runtime) Start(cfg Config) (*Loop, error) {
	idx, slot, ok := rt.slots().Acquire()
	if !ok {
		return nil, fmt.Errorf("%w: all %d slots in use", ErrTooManySystems, rt.slots().Cap())
	}
	l, err := newLoop(rt, idx, cfg)
	if err != nil {
		_ = rt.slots().Release(idx)
		return nil, err
	}
	slot.l.Store(l)
	go l.run()
	return l, nil
}

// Running returns the number of systems holding a slot: started, and not yet
// through the teardown of Stop. Any goroutine (an atomic count).
func (rt *Runtime) Running() int { return rt.slots().InUse() }

// Loops returns the systems holding a slot now (started, and not yet through
// the teardown of Stop), in slot order: for an exporter of their Stats, say.
// A system started or stopped during the call may or may not be in it. Any
// goroutine.
func (rt *Runtime) Loops() []*Loop {
	var ls []*Loop
	for _, s := range rt.slots().All() {
		if l := s.l.Load(); l != nil { // nil while Start or finishStop is at it
			ls = append(ls, l)
		}
	}
	return ls
}

// Shutdown drains every system still running, then stops it, in this
// order: every listener closes (new connections are refused); every
// connection open then, accepted or dialed, ends once it is idle, as
// Listener.Drain describes, while the loops go on running everything else
// (a connection dialed after that, by work that finishes a request, is
// not drained or waited for: Stop closes it). Idle means
// its scope holds no running handle: its work is done and its replies
// written. A dialed connection is drained too (its FIN goes out and what
// its peer still sends is dropped), so adopt into its Scope the handle
// that waits for a reply; a NetConn view holds its connection until the
// view's Close. Once none of those is open on any system, or when ctx
// ends, every system is stopped (Stop: what is still pending is cancelled;
// handles end with ErrCancelled, while a connection's error and the context
// cause of a Work function or Do body also match ErrStopped). Shutdown
// returns nil once every Stop handle completed, or ctx's error as soon as
// ctx ends (the systems go on stopping). To wait for their end then, as
// net/http's Close follows a Shutdown that timed out, call Shutdown again
// with a context of its own: the systems stopping already are waited for,
// as every Stop handle is. A context with no deadline waits for every connection to end
// by itself. Called on one of the runtime's loops (a callback, or a Do
// body, which runs as the loop) it would wait for
// itself: it stops every system at once, that loop's own included (which
// stops after the current callback), and returns ErrAwaitOnLoop without
// waiting. Called from a Work fn it waits for that fn too (see Work), so
// until ctx ends. It stops the systems running when it is called: one that
// another goroutine starts meanwhile may run on after it returns (a later
// Shutdown stops it). A nil ctx is an error wrapping ErrInvalidArgument,
// and nothing is stopped.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	if ctx == nil {
		return invalid("aio: Shutdown with a nil context")
	}
	loops := rt.Loops()
	for _, l := range loops {
		if l.OnLoop() {
			for _, l := range loops {
				l.Stop()
			}
			return ErrAwaitOnLoop
		}
	}
	// Every loop starts draining at once; then the drains are waited for.
	// A drain ends completed, or refused or cancelled because its loop is
	// stopping already: either way, what is left is to stop it.
	drains := make([]*Handle[struct{}], len(loops))
	for i, l := range loops {
		drains[i] = l.drainTCP()
	}
	for _, h := range drains {
		_, _ = h.Wait(ctx) // at once for each once ctx has ended
	}
	stops := make([]*Handle[struct{}], len(loops))
	for i, l := range loops {
		stops[i] = l.Stop()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, h := range stops {
		if _, err := h.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

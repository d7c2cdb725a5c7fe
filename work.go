package aio

import (
	"context"
	"sync"
	"sync/atomic"
)

// workPool runs blocking functions off the loop on a bounded set of
// goroutines, as libuv's threadpool does for uv_queue_work. Workers start on
// demand, up to size, and live until the loop stops.
type workPool struct {
	l    *Loop
	size int

	mu      sync.Mutex
	cond    sync.Cond
	queue   []workItem // under mu
	workers int        // under mu
	idle    int        // under mu
	closed  bool       // under mu
	wg      sync.WaitGroup

	running   atomic.Int64  // functions running now, for Stats; any goroutine
	cancelled atomic.Uint64 // jobs whose handle ended cancelled, for Stats; any goroutine
}

// workItem is a job as the pool sees it.
type workItem interface{ runWork() }

func newWorkPool(l *Loop, size int) *workPool {
	p := &workPool{l: l, size: size}
	p.cond.L = &p.mu
	return p
}

// submit queues it; false once the pool is closed.
func (p *workPool) submit(it workItem) bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	p.queue = append(p.queue, it)
	if p.idle > 0 {
		p.cond.Signal()
	} else if p.workers < p.size {
		p.workers++
		p.wg.Add(1)
		go p.worker()
	}
	p.mu.Unlock()
	return true
}

func (p *workPool) worker() {
	goexit := true // until the worker returns: a job's fn called runtime.Goexit
	defer func() {
		if goexit {
			// This goroutine is ending: another takes its place, for the
			// jobs queued (close waits for them too: Add before Done).
			p.mu.Lock()
			if len(p.queue) > 0 {
				p.wg.Add(1)
				go p.worker()
			} else {
				p.workers--
			}
			p.mu.Unlock()
		}
		p.wg.Done()
	}()
	p.mu.Lock()
	for {
		for len(p.queue) == 0 && !p.closed {
			p.idle++
			p.cond.Wait()
			p.idle--
		}
		if len(p.queue) == 0 { // closed and drained
			p.mu.Unlock()
			goexit = false
			return
		}
		it := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.mu.Unlock()
		it.runWork()
		p.mu.Lock()
	}
}

// queued returns how many jobs wait for a worker. Any goroutine.
func (p *workPool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// close stops accepting jobs and waits until every worker finished the queue
// (whose jobs are cancelled by then, so they return at once) and exited.
func (p *workPool) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

// workNode is the handle of Work.
type workNode[T any] struct {
	Handle[T]
	// fn is read and dropped by the worker that claims the job (runWork),
	// or dropped by whoever decides it never runs (stop, a refused
	// submit): the claim's CAS orders the two, so they never meet.
	fn        func(ctx context.Context) (T, error)
	ctx       context.Context         // immutable
	ctxCancel context.CancelCauseFunc // cancels ctx (not the handle: that is Cancel)
	over      fnOver                  // when fn is over; core.rare.over points here
}

// fnOver tells when a Work job's fn is over: it has returned, or it will
// never run. A Work handle cancelled while its fn runs ends at once, as
// every cancelled handle does, and the fn goes on until it sees its
// context; what must not happen while the fn may still use something
// (Bracket's release of the resource it was given) waits here instead.
type fnOver struct {
	// claim decides, once, whether fn runs: a worker that takes the job
	// sets fnClaimed (runWork), a stop before that sets fnDropped, and fn
	// never runs. Any goroutine, CAS.
	claim atomic.Int32

	mu      sync.Mutex
	over    bool         // under mu
	waiters []overWaiter // under mu: told once over
}

// The values of fnOver.claim.
const (
	fnFree    int32 = iota // queued: no worker has taken it
	fnClaimed              // a worker runs fn, or has run it
	fnDropped              // stopped before a worker took it: fn never runs
)

// overWaiter is a function to run on its loop once fn is over.
type overWaiter struct {
	l  *Loop
	fn func()
}

// after arranges for fn to run on l once the job's fn is over, and
// reports true; if it is over already it reports false and does nothing
// (the caller goes on at once). Any goroutine.
func (o *fnOver) after(l *Loop, fn func()) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.over {
		return false
	}
	o.waiters = append(o.waiters, overWaiter{l, fn})
	return true
}

// end marks the job's fn over and runs the waiters, each on its loop:
// queued there, or, if the loop is dead (its Stop waits for the work pool
// to close, which waits for this worker), at once under its deadMu, so
// that what they release is released before Stop's handle completes.
// Idempotent. Any goroutine.
func (o *fnOver) end() {
	o.mu.Lock()
	if o.over {
		o.mu.Unlock()
		return
	}
	o.over = true
	ws := o.waiters
	o.waiters = nil
	o.mu.Unlock()
	tellOver(ws)
}

// tellOver runs the waiters ws, each on its loop (see end). One run here
// for a dead loop that calls runtime.Goexit ends this goroutine, but only
// after the deferred call has told the rest, on this goroutine: a worker
// that ends that way is still counted by its pool, whose close (and so
// the dead loop's Stop handle) waits for every release. A goroutine of
// their own would be waited for by nobody.
func tellOver(ws []overWaiter) {
	defer func() {
		if len(ws) > 0 { // cut short by a Goexit (or a panic): go on
			tellOver(ws)
		}
	}()
	for len(ws) > 0 {
		w := ws[0]
		ws = ws[1:]
		if w.l.enqueue(w.fn, stateStopping) != nil {
			w.l.runDead(w.fn)
		}
	}
}

// Work runs fn on the loop's work pool (Config.WorkPool goroutines, 4 unless
// configured, as libuv's threadpool), off the loop, and completes the handle
// with its result on the loop. Jobs beyond the pool's size wait in a queue,
// first in first out, unbounded (bound what you submit); Stats.WorkQueued
// and Stats.WorkRunning show both, and Stats.WorkCancelled the jobs
// cancelled (work thrown away). ctx is cancelled when the handle is
// cancelled, with cause (context.Cause) ErrCancelled, or when the loop
// stops, with a cause matching both ErrCancelled and ErrStopped; fn should
// return soon after. A Within or a Race that gives the job up cancels it:
// the cause is ErrCancelled. The cause says whether the loop was stopping
// when the cancellation reached it (a Cancel made off the loop just before
// Stop may read as the stop's). ctx is also cancelled, context.Canceled,
// once fn has returned. A job cancelled before a worker picked it up never
// runs; one cancelled while fn runs ends cancelled at once, and what fn
// returns then is dropped: its OnCancel callbacks, dependents and cleanups
// do not wait for fn (a Bracket whose use is the Work does: see Bracket). A
// panic in fn fails the handle with a *PanicError, a runtime.Goexit with
// ErrGoexit. An fn that waits for another job of the same pool (Wait on a
// Work it submitted) holds a worker meanwhile: when every worker waits so,
// none is left to run what they wait for, and they wait until something
// cancels them (bound such waits, or keep nested jobs on another loop). Stop
// waits for running fns to return: so an fn that waits for its own loop's
// Stop (Stop().Wait, Runtime.Shutdown) waits for itself, until its context
// ends. Start the shutdown from elsewhere (post it to a goroutine of its
// own).
//
// The pool's goroutines share Go's Ps (GOMAXPROCS) with the loops: while
// CPU-bound fns hold every P, a loop whose events arrive waits for one, and
// that wait shows as lag (Stats.TimerLag, PostLag) rather than busy time.
// For CPU-bound work keep the pools' goroutines, over all loops, within
// the cores the loops leave (see ReserveProcs), or bound the work with a
// semaphore of its own; blocking calls (files, DNS, cgo) need no such care.
func Work[T any](l *Loop, fn func(ctx context.Context) (T, error)) *Handle[T] {
	if err := checkProducer(l, fn == nil); err != nil {
		return Fail[T](l, err)
	}
	n := &workNode[T]{fn: fn}
	n.init(l)
	n.prod = n
	n.ctx, n.ctxCancel = context.WithCancelCause(context.Background())
	n.lingers, n.rareFields().over = true, &n.over
	n.state.Store(uint32(Running))
	n.adoptSelf()
	if !l.pool.submit(n) {
		n.fn = nil // never to run: what it captured goes with it
		n.over.claim.Store(fnDropped)
		n.over.end()
		n.ctxCancel(errCancelledByStop)
		var zero T
		n.settle(zero, ErrStopped)
	}
	return &n.Handle
}

// runWork runs on a pool goroutine.
func (n *workNode[T]) runWork() {
	defer n.ctxCancel(nil) // release the context's resources in every path
	if !n.over.claim.CompareAndSwap(fnFree, fnClaimed) {
		n.over.end() // fn never runs (stop said so already, and dropped it)
		return
	}
	// Claimed: this goroutine alone reads fn from here. It runs once at
	// most: what it captured goes with it when it returns, or now.
	fn := n.fn
	n.fn = nil
	if n.state.Load() != uint32(Running) {
		n.over.end() // cancelled before it started: fn never runs
		return
	}
	running := &n.loop.pool.running
	running.Add(1)
	var v T
	err := ErrGoexit // what fn leaves if it calls runtime.Goexit: the job ends, the worker goes (see worker)
	defer func() {
		running.Add(-1) // before the result is published: a waiter sees it counted out
		n.settle(v, err)
		n.over.end()
	}()
	v, err = callCtx(fn, n.ctx)
}

// stop runs once, when the handle ends cancelled (a cancelled handle's
// producer is stopped, nothing else's): counted there, whether fn had
// started or not.
func (n *workNode[T]) stop() {
	n.loop.pool.cancelled.Add(1)
	n.ctxCancel(cancelCause(n.loop))
	if n.over.claim.CompareAndSwap(fnFree, fnDropped) {
		n.fn = nil   // never to run now: what it captured goes with it
		n.over.end() // no worker has taken it, and none will run fn now
	}
}

// callCtx calls fn(ctx), turning a panic into a *PanicError.
func callCtx[T any](fn func(context.Context) (T, error), ctx context.Context) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = newPanicError(p)
		}
	}()
	return fn(ctx)
}

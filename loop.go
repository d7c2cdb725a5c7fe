package aio

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio/internal/poll"
)

// Config configures one system (loop) started by Runtime.Start.
type Config struct {
	Name     string // shown in Stats and logs
	WorkPool int    // goroutines for Work; 0 or less means 4 (libuv's default)

	// Spin is how long a loop that has just done work (callbacks, I/O) keeps
	// looking for posted callbacks and ready fds before it blocks in the
	// poller, as Go's scheduler spins before it parks a thread. Waking a
	// sleeping thread costs tens of microseconds on a virtual machine; a
	// spinning loop picks a Post or a peer's bytes up in about a
	// microsecond, at the price of up to Spin of CPU after each burst of
	// work: worth it when each loop has a core of its own and the traffic
	// is a conversation, a loss when loops share cores with other work.
	// 0 (the default) never spins; negative is treated as 0.
	Spin time.Duration

	// PostBatch bounds how many posted callbacks one iteration runs before it
	// polls for I/O and runs timers again, so a flood of Posts cannot starve
	// them. 0 or less means 1024.
	PostBatch int

	// OnPanic receives the value of a panic in a callback that has no handle
	// to fail: a posted callback, or a connection's (the accept callback,
	// OnRead, OnFrame and its split function, OnEOF, OnDrain; the connection
	// also closes with a *PanicError). nil writes it to standard error. It
	// runs on the loop.
	OnPanic func(v any)
}

// loop states; written under postMu, read anywhere atomically.
const (
	stateRunning  int32 = iota // accepts Post and new work
	stateStopping              // Stop called: refuses user work, tears down
	stateDead                  // loop goroutine done: internal work runs inline under deadMu
)

// A Loop is one AIO system: a goroutine locked to its OS thread that owns a
// poller, a timer heap and every handle created on it. Its callbacks never run
// concurrently with each other, so user code on a loop needs no locks.
//
// Each iteration runs libuv's phases in order: update the cached time, run due
// timers, run posted callbacks (at most Config.PostBatch), poll for I/O
// (without waiting if work is queued, and then not at all when no fd is
// registered; until the next timer if one is armed, else until woken),
// dispatch I/O callbacks, resume queued TLS work (a few handshake steps, reads
// held back by the per-turn record budget), run closing callbacks. After every
// callback the loop drains its job queue: handle terminal transitions and
// continuations they trigger, iteratively, never recursively.
type Loop struct {
	name string
	cfg  Config
	rt   *Runtime // nil for the detached pseudo-loop
	slot int

	poller *poll.Poller // Wait/Add/Modify/Delete: loop goroutine; Wake: any goroutine

	// The post queue: a multi-producer single-consumer queue. Producers append
	// under postMu; the loop swaps the whole slice out under postMu.
	postMu    sync.Mutex
	postQ     []func()      // under postMu
	postSince time.Duration // when postQ last turned non-empty (Stats.PostLag); under postMu
	qlen      atomic.Int64  // len(postQ), for the lock-free emptiness checks
	state     atomic.Int32  // stateRunning..stateDead, stored under postMu
	awake     atomic.Bool   // false only while the loop blocks (or is about to) in the poller
	spinning  atomic.Bool   // the loop spins for posts and fds (Config.Spin)

	// ownerG is the goroutine OnLoop compares against: the one allowed to
	// run loop-owned code. That is the loop goroutine, or a Do body the loop
	// is running, or, after the loop died, whoever holds deadMu. Any
	// goroutine reads it; only the owner changes it.
	ownerG atomic.Uintptr
	deadMu sync.Mutex // serialises inline execution once the loop is dead
	rest   []func()   // posted callbacks still to run as the loop turns dead; loop goroutine, under deadMu

	// Teardown progress, for a teardown cut off by a callback's Goexit and
	// resumed by goexited. Owned by the loop goroutine.
	tornDown, stopped bool
	// loopG is the loop's own goroutine while it runs (0 before and after),
	// even while a Do body is the owner: the only goroutine that may create
	// and resume Do coroutines, which the runtime pins to the thread that
	// created them. Any goroutine reads it; the loop goroutine writes it.
	loopG atomic.Uintptr

	// Owned by the loop goroutine.
	ready      []func() // batch taken from postQ
	readyPos   int
	jobs       jobQueue
	timers     timerHeap
	timerSeq   uint64
	firing     *timer      // the periodic timer runTimers is firing, still counted in ntimers
	base       time.Time   // monotonic origin of Now
	young      []*core     // producers created this iteration, tracked lazily
	older      []*core     // producers created last iteration and still pending
	records    recordList  // handles tracked weakly for Stop and abandonment
	youngCap   int         // young's length that triggers a compaction
	fds        []ioHandler // by fd number
	fdClosedIn []uint64    // by fd number: the poll batch during which it was last closed (see clearFD)
	batch      uint64      // poll batches dispatched so far, this one included
	closing    []func()    // run after I/O dispatch
	evs        []poll.Event
	pool       *workPool
	tcp        tcpLoop // shared read buffer, write chunks and TCP counters
	busy       bool    // work ran since the last poll (decides whether to spin)
	pollFailed bool    // the poller returned an error once (reported once)

	// The posted batch runBatch is running, and its guard (see
	// recoverBatch): the callbacks of it still to start; inCall is true
	// while one of them runs, so that the guard recovers their panics and
	// no other (an internal panic stays fatal); resume says a callback's
	// panic cut the batch short, to be picked up after it.
	postLeft       int
	inCall, resume bool

	m loopMetrics // iterations, posted callbacks, time by phase, lag (loop_metrics.go)

	idleWorkers []*coWorker // coroutines ready to run a Do body (do_worker.go); loop goroutine

	now       atomic.Int64 // cached monotonic time in ns since base; written by the loop
	ntimers   atomic.Int64
	handles   atomic.Int64
	abandoned atomic.Uint64
	panics    atomic.Uint64
	wakeups   atomic.Uint64 // wakeup writes by producers (tests check they coalesce)

	stopOnce sync.Once
	stopH    *Handle[struct{}] // completed by the loop goroutine after teardown
	// stopWake: a post woke a teardown waiting for one (awaitPost). Buffer
	// of one; any goroutine sends, the loop receives. Kept off the cache
	// lines of the hot fields above, as passes is.
	stopWake chan struct{}
	passes   atomic.Int64 // teardown's passes so far; the loop writes, tests read
	// heldBare counts the handles whose terminal transition a holder
	// defers (a Bracket waiting for its use or a Work fn, a scope for a
	// child) and that have no record for teardown's passes to see: Stop
	// waits for them all the same (cancelPending). Owned by the loop.
	heldBare int
}

// Stats is a snapshot of a loop's counters.
//
// Iterations, Posted, Time, PostLag and TimerLag are kept by the loop in
// fields of its own, and published for other goroutines between iterations:
// at the start of one a millisecond or more after the last publication,
// whenever the loop goes to sleep in the poller, and when it stops. Off the
// loop they may be behind by that millisecond and the iteration in progress
// (Time.Idle includes a sleep in progress): a loop stuck in a callback, or in
// a long batch of them, publishes nothing until it returns, and Running is
// what shows it. On the loop they are exact up to the loop's last clock
// reading (Posted counts the callback running). Each of them only grows. The
// rest are read as they are.
type Stats struct {
	Name       string // the loop's Config.Name
	Iterations uint64 // loop iterations so far
	Posted     uint64 // callbacks run from Post, and posted internally (completions from other goroutines)
	// PostQueued: callbacks posted (as counted in Posted) and not yet run,
	// the loop's backlog. Post is unbounded: a program that posts to many
	// loops (a broadcast) can watch it to find a loop that falls behind.
	// On the loop it is exact. Off the loop, the post queue is counted as
	// it is, but the loop takes the whole queue at once and then runs at
	// most Config.PostBatch of those callbacks an iteration: what it took
	// counts as it was when it took it (less the first one, which it runs
	// at once), or as the loop last published its counters (between
	// iterations), whichever is later. So a loop stuck in a callback
	// shows its whole backlog.
	PostQueued int
	Timers     int    // armed timers
	Handles    int    // handles pinned to this loop from creation until their cleanups have run
	Abandoned  uint64 // handles collected without reaching a terminal state (their cleanups still ran)
	Panics     uint64 // panics recovered from user callbacks (their handles failed with a *PanicError)

	// Work (work.go): the loop's pool of Config.WorkPool goroutines.
	WorkQueued  int // Work jobs waiting for a free goroutine (a cancelled one leaves when a goroutine reaches it)
	WorkRunning int // Work functions running now
	// WorkCancelled: Work handles that ended cancelled, the jobs a
	// client that went away or a deadline threw away: before a goroutine
	// reached them (they never ran) or while their function ran (what it
	// returned was dropped).
	WorkCancelled uint64

	// TCP (tcp*.go): the loop's listeners and connections.
	TCPListeners   int    // listeners open
	TCPOpen        int    // connections open (accepted, dialed or adopted, established, not yet closed)
	TCPAccepted    uint64 // connections accepted so far
	TCPDialed      uint64 // connections established by Dial so far
	TCPAdopted     uint64 // connected sockets taken over so far (AdoptConn, AdoptConnFrom, AdoptTLSConn, AdoptTLSConnFrom)
	TCPClosed      uint64 // established connections closed so far
	TCPDropped     uint64 // connections given up on: closed at once after accept (out of fds, unusable), or failed by accept (ECONNABORTED, ECONNRESET, the network errors Listen lists)
	TCPBytesIn     uint64 // bytes read from connections
	TCPBytesOut    uint64 // bytes written to the kernel by connections
	TCPWriteQueued int    // bytes written by the program and not yet taken by the kernel, over all connections

	// TLS (tls*.go): handshakes of the loop's TLS connections, accepted and dialed.
	TLSHandshakes      uint64 // handshakes that ended well
	TLSHandshakeErrors uint64 // handshakes that failed, timed out, or were cut short by a close or Stop

	// Loop health (loop_metrics.go).
	Time LoopTime // where the loop's time went: busy by phase, and idle
	// Running: how long the loop has been at work since its last clock
	// reading, at the start of the iteration in progress or its wakeup in
	// the poller; 0 while it sleeps there or spins for work (Config.Spin),
	// and once it has stopped. It is the time Time has yet to
	// count: a loop stuck in a callback (or spinning through a long batch
	// of them) shows here, while its busy time stands still until the
	// callback returns. It falls back at every iteration, so it is a gauge
	// to alert on (a loop's iterations take microseconds), not a counter.
	Running time.Duration
	// PostLag: how long posted callbacks waited before the loop started on
	// them. One sample each time the loop starts running posted callbacks
	// (at most Config.PostBatch of them): the wait of the oldest, from its
	// Post (for the rest of a queue longer than PostBatch, from the Post
	// of the queue's first) to the start of the batch. A Post made while
	// the loop is awake (on the loop or not) counts from the loop's cached
	// time (Now), the start of the iteration in progress, so the wait may
	// be that iteration's length too long: Post reads no clock unless it
	// wakes the loop.
	PostLag Lag
	// TimerLag: how late timers fired. One sample per timer: the loop's
	// cached time (Now) in the timers phase minus the timer's deadline.
	TimerLag Lag
}

const defaultPostBatch = 1024

func newLoop(rt *Runtime, slot int, cfg Config) (*Loop, error) {
	p, err := poll.New()
	if err != nil {
		return nil, fmt.Errorf("aio: start %q: %w", cfg.Name, err)
	}
	if cfg.PostBatch <= 0 {
		cfg.PostBatch = defaultPostBatch
	}
	if cfg.WorkPool <= 0 {
		cfg.WorkPool = 4
	}
	if cfg.Spin < 0 {
		cfg.Spin = 0
	}
	l := &Loop{
		name:   cfg.Name,
		cfg:    cfg,
		rt:     rt,
		slot:   slot,
		poller: p,
		base:   time.Now(),
		evs:    make([]poll.Event, 128),

		stopWake: make(chan struct{}, 1),
	}
	l.awake.Store(true)
	l.pool = newWorkPool(l, cfg.WorkPool)
	l.stopH = newDetachedHandle[struct{}]()
	l.stopH.setWaitLoop(l)
	l.stopH.uncancellable = true
	return l, nil
}

// detached is the pseudo-loop of handles that belong to no loop (Loop() is
// nil): Stop's handle, All of no inputs, Pure(nil, …). It is dead from the
// start, so their callbacks run inline, serialised by its deadMu.
var detached = func() *Loop {
	l := &Loop{name: "detached"}
	l.state.Store(stateDead)
	return l
}()

// Post queues fn to run on the loop. It may be called from any goroutine,
// including the loop itself, where fn runs after the current callback
// returns (in a posted phase: this iteration's, or, behind more than
// Config.PostBatch callbacks, a later one's), never inside the call. Order
// is causal FIFO: a Post that happens before another (on any goroutines)
// runs before it. It returns ErrStopped once the loop is stopping,
// and ErrNilFunc for a nil fn. A panic in fn is recovered and reported through
// Config.OnPanic; the loop goes on.
func (l *Loop) Post(fn func()) error {
	if fn == nil {
		return ErrNilFunc
	}
	if l == nil {
		return ErrNilLoop
	}
	return l.enqueue(fn, stateRunning)
}

// enqueue appends fn to the post queue if the loop's state is at most max,
// then wakes the loop unless it is awake. Internal work (a remote completion, a
// cancellation) uses max = stateStopping so that teardown still receives it.
func (l *Loop) enqueue(fn func(), max int32) error {
	if l.qlen.Load() == 0 && l.OnLoop() {
		return l.enqueueOnLoop(fn, max)
	}
	l.postMu.Lock()
	if l.state.Load() > max {
		l.postMu.Unlock()
		return ErrStopped
	}
	if len(l.postQ) == 0 {
		l.postSince = l.postStamp() // for Stats.PostLag
	}
	l.postQ = append(l.postQ, fn)
	l.qlen.Add(1)
	l.postMu.Unlock()
	// Dekker pairing with the loop's sleep (see poll phase): the loop stores
	// awake=false and then reads qlen; we wrote qlen and now read awake. With
	// sequentially consistent atomics one of us sees the other, so a Post is
	// never left unseen by a sleeping loop. At most one wakeup write happens
	// per sleep: the CAS lets one producer through.
	if !l.awake.Load() && l.awake.CompareAndSwap(false, true) {
		l.wakeups.Add(1)
		_ = l.poller.Wake()
		if l.state.Load() == stateStopping {
			select { // a teardown may wait for this post (awaitPost)
			case l.stopWake <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// enqueueOnLoop is enqueue's path for a post made on the loop while the post
// queue is empty: fn joins the loop's own batch (ready) with no lock, no
// atomic write and no wakeup (the loop is awake, running the caller). Order
// stays causal FIFO: whatever was posted before fn is in ready already (the
// queue is empty), and whatever is posted after it goes to the queue (whose
// emptiness this call saw), which the loop takes only once ready is done.
// runPosted never runs fn in the batch that is running (see there). On the
// loop, which only the loop changes from running to dead.
func (l *Loop) enqueueOnLoop(fn func(), max int32) error {
	if l.state.Load() > max {
		return ErrStopped
	}
	if l.readyPos == len(l.ready) {
		// ready is done: start it over, and its wait for Stats.PostLag.
		l.ready, l.readyPos = l.ready[:0], 0
		l.m.readySince = l.Now()
	}
	l.ready = append(l.ready, fn)
	return nil
}

// Loop-owned code (handle state, timers, sockets, user callbacks) runs only on
// its loop. Code that may run elsewhere gets there with runInline, runLater,
// runInlineCall or runInlineHandle (or, on a few hot paths, an OnLoop test by
// hand); all of them post through post, so the rules for a stopping or dead
// loop live in one place:
//
//   - on the loop, runInline runs fn now, inside the call; runLater queues fn
//     as a job that runs after the current callback, before the loop polls
//     again (a Do body counts as on the loop);
//   - elsewhere, both post fn, and it runs on the loop in a later iteration;
//     the post is accepted while the loop is stopping (it is internal work,
//     unlike Post), so teardown still sees it;
//   - once the loop is dead (and always for handles with no loop, whose
//     pseudo-loop is dead from the start), both run fn on a goroutine of its
//     own, serialised with any other such work by deadMu: never inside the
//     caller's call, so a continuation registered on a finished loop-less
//     handle still runs after the call that registers it, as everywhere else.
//
// Use runInline where the caller's next steps on the loop must see fn's effect
// (registering a dependent before the caller settles anything), runLater
// where fn must not run inside the call (a notification, a user callback).

// runInline runs fn on l: now when called on the loop, else posted (see
// above). Off the loop fn may run before or after runInline returns.
func (l *Loop) runInline(fn func()) {
	if l.OnLoop() {
		fn()
		return
	}
	l.post(fn)
}

// runLater runs fn on l, never inside this call: as a job after the current
// callback when called on the loop, else posted (see above).
func (l *Loop) runLater(fn func()) {
	if l.OnLoop() {
		l.jobs.push(job{t: funcTask(fn)})
		return
	}
	l.post(fn)
}

// runInlineCall is l.runInline(func() { fn(r, a) }) for the hot paths: the
// closure that binds r and a is made only when the call has to be posted, so
// on the loop it allocates nothing (a closure passed to runInline escapes,
// and Go allocates it on every path). fn is a method expression or a function
// that captures nothing, such as (*core).addCleanup.
func runInlineCall[R, A any](l *Loop, fn func(R, A), r R, a A) {
	if l.OnLoop() {
		fn(r, a)
		return
	}
	l.post(func() { fn(r, a) })
}

// runInlineHandle is runInline for an operation that reports an error, and
// returns a handle with its outcome: born terminal when fn ran now, on the
// loop; completed when the posted fn has run otherwise. For the operations
// that return a handle only because they may be called from another
// goroutine (SetNoDelay, Listener.Close).
func (l *Loop) runInlineHandle(fn func() error) *Handle[struct{}] {
	if l.OnLoop() {
		if err := fn(); err != nil {
			return Fail[struct{}](l, err)
		}
		return Pure(l, struct{}{})
	}
	h := runningHandle(l)
	l.post(func() { h.settle(struct{}{}, fn()) })
	return h
}

// post is the off-loop half of runInline and runLater: queue fn for the loop,
// even a stopping one, or run it on a goroutine of its own once the loop is
// dead.
func (l *Loop) post(fn func()) {
	if l.enqueue(fn, stateStopping) == nil {
		return
	}
	go l.runDead(fn)
}

// OnLoop reports whether the caller runs on this loop: its goroutine, or a Do
// body it is running. It makes no syscall: one atomic load and a compare.
func (l *Loop) OnLoop() bool { return l != nil && l.ownerG.Load() == getg() }

// onLoopThread reports whether the caller is the loop goroutine itself (not a
// Do body, not an inline runner of a dead loop).
func (l *Loop) onLoopThread() bool { return l.loopG.Load() == getg() }

// Now returns the loop's cached monotonic time (libuv's uv_now): the time
// since the loop started, read once per iteration before timers run, and, as
// libuv does, again when the loop returns from a poll that waited or from a
// spin (Config.Spin) that found I/O. Meant for the loop; elsewhere it returns
// the last cached value.
func (l *Loop) Now() time.Duration { return time.Duration(l.now.Load()) }

// clock reads the monotonic clock relative to the loop's origin.
func (l *Loop) clock() time.Duration { return time.Since(l.base) }

// Name returns the Config.Name the loop was started with.
func (l *Loop) Name() string { return l.name }

// Slot returns the index of the runtime slot the loop holds while it runs,
// from 0 to the runtime's slot count less one (RuntimeConfig.MaxSystems, 16
// if 0, at most MaxSystemsLimit): loops of one runtime running at the
// same time have different slots, whatever their names, and a slot is given
// to a later loop once this one has stopped. Any goroutine.
func (l *Loop) Slot() int { return l.slot }

// Stats returns a snapshot of the loop's counters. Any goroutine.
func (l *Loop) Stats() Stats {
	s := Stats{
		Name:      l.name,
		Timers:    int(l.ntimers.Load()),
		Handles:   int(l.handles.Load()),
		Abandoned: l.abandoned.Load(),
		Panics:    l.panics.Load(),

		WorkQueued:    l.pool.queued(),
		WorkRunning:   int(l.pool.running.Load()),
		WorkCancelled: l.pool.cancelled.Load(),
	}
	tcpStats(l, &s)
	l.metrics(&s)
	return s
}

// call runs a user callback, turning a panic into a report instead of the
// death of the loop. Posted callbacks have a guard further up instead, not
// one each: see runBatch.
func (l *Loop) call(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			l.reportPanic(v)
		}
	}()
	fn()
}

func (l *Loop) reportPanic(v any) {
	l.panics.Add(1)
	if l.cfg.OnPanic != nil {
		func() {
			defer func() { _ = recover() }() // a panicking panic handler must not kill the loop
			l.cfg.OnPanic(v)
		}()
		return
	}
	fmt.Fprintf(os.Stderr, "aio: loop %q: recovered panic in a callback: %v\n", l.name, v)
}

// run is the loop goroutine.
func (l *Loop) run() {
	lockThread()
	l.ownerG.Store(getg())
	l.loopG.Store(getg())
	defer l.goexited()
	for l.state.Load() == stateRunning {
		l.iterateGuarded() // returns after a posted callback's panic
	}
	l.teardown()
	l.tornDown = true
	unlockThread()
	l.stopped = true
	l.finishStop()
}

// iterateGuarded runs iterations while the loop runs, under the guard of
// the posted callbacks (recoverBatch): one deferred call for as many
// iterations as run without a panic, instead of one per batch or per
// callback. After a panic it returns, and the next call resumes the
// iteration the panic cut short (iterate).
func (l *Loop) iterateGuarded() {
	defer l.recoverBatch()
	for l.state.Load() == stateRunning {
		l.iterate()
	}
}

// iterate runs one pass of the phases, or the rest of the one a posted
// callback's panic cut short (resume): from the rest of its batch on. Under
// iterateGuarded's guard.
//
// A phase with nothing to do costs a test here, not a call: an iteration
// of a busy loop is mostly empty phases around one system call.
func (l *Loop) iterate() {
	if l.resume {
		l.runBatch()
	} else {
		l.startIteration() // and Now
		if len(l.timers) > 0 {
			l.runTimers()
		}
		if l.readyPos < len(l.ready) || l.qlen.Load() > 0 {
			l.runBatch()
		}
	}
	if l.youngToTrack() {
		l.trackYoung()
	}
	l.pollIO(l.pollTimeout())
	if l.tcp.tlsStepsQueued() {
		l.runTLSSteps() // after the turn's I/O: see tls_turn.go
	}
	if len(l.closing) > 0 {
		l.runClosing()
	}
	l.m.iterations++
}

// runPosted is runBatch under a guard of its own, for teardown, which runs
// outside iterateGuarded.
func (l *Loop) runPosted() {
	for !l.runBatchGuarded() { // a callback panicked: the batch goes on after it
	}
}

// runBatchGuarded is runBatch under recoverBatch; it reports whether the
// batch is done, false after a callback's panic (the next call resumes it).
func (l *Loop) runBatchGuarded() (done bool) {
	defer l.recoverBatch()
	l.runBatch()
	return true
}

// runBatch runs at most cfg.PostBatch posted callbacks, oldest first, or
// the rest of the batch a callback's panic cut short (resume). Its callers
// guard it, with one deferred recover for many batches where they can
// (iterateGuarded): the guard of a callback costs about as much as an
// empty callback, and most batches of a busy loop are a callback or two.
// A callback's panic unwinds runBatch and its callers up to the guard
// (recoverBatch), which reports it and leaves the batch's progress in the
// loop (readyPos, postLeft, resume); runBatch, called again, drains the
// jobs the callback queued (as after any callback) and goes on with the
// next one.
func (l *Loop) runBatch() {
	if l.resume {
		l.resume = false
		l.drain()
	} else {
		if l.readyPos == len(l.ready) {
			if l.qlen.Load() == 0 {
				return
			}
			l.takeQueue()
		}
		l.enter(phasePosted)
		l.m.postLag.add(l.m.mark - l.m.readySince)
		// A count, not an end index: a callback that posts on the
		// loop appends to ready, or starts it over once this batch's
		// last callback is the one running (enqueueOnLoop), and
		// neither may run in this batch.
		l.postLeft = min(len(l.ready)-l.readyPos, l.cfg.PostBatch)
	}
	for l.postLeft > 0 {
		fn := l.ready[l.readyPos]
		l.ready[l.readyPos] = nil // let fn be collected
		l.readyPos++
		l.postLeft--
		l.m.posted++ // before fn: Stats on the loop counts the callback running
		l.inCall = true
		fn()
		l.inCall = false
		l.drain()
	}
	l.busy = true
}

// takeQueue swaps the post queue in as the loop's batch (ready), once
// ready is done.
func (l *Loop) takeQueue() {
	l.postMu.Lock()
	l.ready, l.postQ = l.postQ, l.ready[:0]
	l.readyPos = 0
	l.noteBatch(1) // with the swap, under postMu: Stats sees one or the other
	l.qlen.Store(0)
	l.m.readySince = l.postSince
	l.postMu.Unlock()
}

// recoverBatch is runBatch's guard, deferred by its callers. A panic of a
// callback of the batch (inCall) is recovered and reported, and the batch
// resumes after it; any other panic goes on (an internal one stays fatal,
// see goexited), and so does a runtime.Goexit, which recover does not
// stop: the teardown that goexited runs takes the batch up where it was
// cut off (resume, if the Goexit came from OnPanic).
func (l *Loop) recoverBatch() {
	if !l.inCall {
		return // the common case: no recover call at all
	}
	l.inCall = false
	if v := recover(); v != nil {
		l.resume = true
		l.reportPanic(v)
	}
}

// hasWork reports whether something is ready to run without waiting.
func (l *Loop) hasWork() bool {
	return l.readyPos < len(l.ready) || l.qlen.Load() > 0 || l.jobs.n > 0 || len(l.closing) > 0
}

// pollTimeout returns how long the poll phase may block: 0 with work queued,
// until the next timer when one is armed, else -1 (until woken); and no
// longer than youngAging while young producers are held (see trackYoung).
func (l *Loop) pollTimeout() time.Duration {
	if l.hasWork() || l.tcp.tlsStepsQueued() || l.state.Load() != stateRunning {
		return 0
	}
	d := time.Duration(-1)
	if t := l.timers.peek(); t != nil {
		if d = t.when - l.reading(); d <= 0 {
			return 0
		}
	}
	if (len(l.young) > 0 || len(l.older) > 0) && (d < 0 || d > youngAging) {
		d = youngAging
	}
	return d
}

// pollIO waits for I/O up to timeout and dispatches it.
func (l *Loop) pollIO(timeout time.Duration) {
	busy := l.busy // work ran since the last poll
	l.busy = false
	asleep := false // awake is false: the loop announced a sleep
	if timeout != 0 {
		if l.m.mark-l.m.lastYield >= yieldEvery {
			l.yieldP()
		}
		if busy && l.cfg.Spin > 0 {
			n, found := l.spin(timeout)
			switch {
			case n > 0:
				l.dispatch(n)
				return
			case found:
				timeout = 0
			case timeout > 0:
				timeout = l.pollTimeout() // what the spin left of it
			}
		}
		if timeout != 0 {
			// Announce the sleep, then look once more: see enqueue.
			l.awake.Store(false)
			asleep = true
			if l.qlen.Load() > 0 || l.state.Load() != stateRunning {
				timeout = 0
			}
		}
	}
	if timeout == 0 && l.poller.Registered() == 0 {
		// No fd to look at: a poll that cannot block would find nothing
		// (a Wake still pending is drained by the next blocking Wait,
		// which it makes return at once), so skip the system call, as
		// libuv's uv__io_poll does when no fd is open. An iteration
		// that only runs callbacks then costs no system call at all.
		if asleep {
			l.awake.Store(true)
		}
		return
	}
	// A poll that cannot block is not a segment of its own: it counts with
	// the phase before it, and what it finds with IO (dispatch). A clock
	// reading to set it apart costs as much as the system call when it
	// finds nothing, which is most of a busy loop's polls.
	if timeout != 0 {
		l.sleep()
	}
	n, err := l.poll(timeout)
	if timeout != 0 {
		l.wake()
	}
	if asleep {
		l.awake.Store(true)
	}
	if err == nil {
		l.dispatch(n)
	}
}

// yieldEvery is how often the loop goes through the Go scheduler
// (yieldP): under the 10 ms after which the scheduler's monitor (sysmon)
// preempts a goroutine that has held its P without being scheduled again.
const yieldEvery = 9 * time.Millisecond

// yieldP passes the loop goroutine through the Go scheduler, before a poll
// that may block. A loop never blocks in the scheduler: it waits in the
// poller, a system call, and switches to its Do bodies without the
// scheduler (coroutines), so its P's scheduling tick stays the same for as
// long as the loop lives. Every 10 ms, then, the monitor
// preempts it: with a signal while it runs (and, locked to its thread,
// the goroutine goes through the scheduler anyway, its P handed to
// another thread and back), or, while it waits, by taking its P, which
// puts the monitor itself into polling every 20 µs for a millisecond; the
// loop comes back on another P, whose stale tick can get it preempted
// again at once. A loop per core spends about half its time waiting, so
// most of these preemptions take its P. Yielding first, every yieldEvery,
// costs the same pass through the scheduler without the signal or the
// monitor's polling (docs/performance.md). A loop that never waits is
// left to the monitor: on a machine its work saturates, a yield hands the
// P to a thread that must wait for a CPU before it can hand it back, and
// yielding busy loops too cost pipelined HTTP/1.1 5-10% of its requests
// per second.
func (l *Loop) yieldP() {
	l.m.lastYield = l.m.mark
	l.m.yields++
	runtime.Gosched()
}

// poll is the poller's Wait into l.evs. A failure is a bug (a closed epoll
// fd) or resource exhaustion: it is said once rather than once per
// iteration.
func (l *Loop) poll(timeout time.Duration) (int, error) {
	n, _, err := l.poller.Wait(timeout, l.evs)
	if err != nil && !l.pollFailed {
		l.pollFailed = true
		fmt.Fprintf(os.Stderr, "aio: loop %q: poll: %v\n", l.name, err)
	}
	return n, err
}

// dispatch runs the handlers of the n events in l.evs.
func (l *Loop) dispatch(n int) {
	l.batch++
	for _, ev := range l.evs[:n] {
		// An fd closed earlier in this batch has left events of its old
		// socket behind (see clearFD).
		if ev.FD >= 0 && int(ev.FD) < len(l.fds) {
			if h := l.fds[ev.FD]; h != nil && l.fdClosedIn[ev.FD] != l.batch {
				l.enter(phaseIO)
				l.busy = true
				h.onIO(ev.Events)
				l.drain()
			}
		}
	}
	if n == len(l.evs) && n < 4096 {
		l.evs = make([]poll.Event, 2*n) // a full batch: take more next time
	}
}

// spinPollEvery is how many turns of spin pass between two looks at the
// fds (a non-blocking poll, about 0.3 µs) or at the clock.
const spinPollEvery = 64

// spin watches the post queue, and the fds if any are registered, for up to
// cfg.Spin (and no longer than timeout, if timeout > 0) while still counted
// as awake, so that producers skip the wakeup write and a peer's bytes are
// picked up without a sleep and a wakeup. It returns the number of I/O
// events it found (left in l.evs for dispatch), or whether posted work
// arrived or the loop is stopping.
func (l *Loop) spin(timeout time.Duration) (events int, found bool) {
	d := l.cfg.Spin
	if timeout > 0 && timeout < d {
		d = timeout
	}
	l.enter(phaseIdle)
	deadline := l.m.mark + d
	l.spinning.Store(true)
	for i := 1; ; i++ {
		if l.qlen.Load() > 0 || l.state.Load() != stateRunning {
			found = true
			break
		}
		if i%spinPollEvery == 0 {
			if l.poller.Registered() > 0 {
				if n, err := l.poll(0); n > 0 || err != nil {
					events, found = n, err != nil
					break
				}
			}
			if l.clock() >= deadline {
				break
			}
		}
	}
	l.spinWoke()
	l.spinning.Store(false)
	return events, found
}

// spinWoke ends a spin as wake ends a sleep: with a new reading cached as
// Now, which what runs next (the I/O it found, the posts it saw, the timers
// due) would otherwise see as old as the spin (up to cfg.Spin), and which
// the next iteration starts from. Before the loop stops counting as
// spinning, so that a post stamped with the cached time (postStamp) does
// not count the spin.
func (l *Loop) spinWoke() {
	l.cutNow()
	l.now.Store(int64(l.m.mark))
	l.m.cur = phaseWoke
}

// runClosing runs the callbacks queued for after I/O dispatch.
func (l *Loop) runClosing() {
	if len(l.closing) > 0 {
		l.enter(phaseClosing)
	}
	for len(l.closing) > 0 {
		fns := l.closing
		l.closing = nil
		for _, fn := range fns {
			l.call(fn)
			l.drain()
		}
	}
}

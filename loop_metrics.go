package aio

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// Loop health: where a loop's time goes and how long work waits for it, kept
// cheap enough to be always on.
//
// Time. The loop reads the clock once per iteration anyway (Now). Every
// reading ends a segment of time, which goes to the phase the loop was in
// (loopMetrics.cur), so the phases add up to the loop's whole life. A phase
// that runs something asks for a reading where it starts only if the segment
// before it was spent on something else; a segment of bare bookkeeping (the
// checks of empty phases) is simply given to the phase that comes next. An
// iteration that only runs posted callbacks therefore costs no reading beyond
// the one it already made, and a blocking poll costs one more, after it
// returns. Readings are also reused: the timeout of the poll counts from the
// last reading when nothing ran since, and the iteration after a wakeup
// starts from the reading taken at the wakeup when nothing ran since.
//
// Lag. A posted callback's wait is measured for the oldest one of each batch
// the loop takes: the post queue remembers when it last turned non-empty
// (postStamp: the loop's cached time, or a reading if the loop sleeps), and
// the loop subtracts that from its reading when it starts on the batch. A
// timer's lag is the cached time of the timers phase minus its deadline.
// Neither reads the clock on the loop, nor, unless it wakes the loop, in
// Post.
//
// Publishing. The loop accumulates in plain fields of its own and copies them
// to atomics (pub) under a sequence counter: at the start of an iteration
// publishEvery or more after the last publication, before it blocks in the
// poller, and at Stop. Nothing is published within an iteration, which
// would cost a clock reading per callback; what the iteration in progress
// has run so far shows as Stats.Running, from the reading cached as Now.
// Stats off the loop reads a consistent copy, and adds the sleep in progress
// to Idle, so that the counters of a sleeping loop still move and never go
// back. Stats on the loop reads the loop's own fields.

// phase is what a segment of a loop's time was spent on. The last three are
// all reported as LoopTime.Other; they differ in what the next phase does
// with the segment in progress.
type phase uint8

const (
	phaseTimers  phase = iota // due timers' callbacks and their jobs
	phasePosted               // posted callbacks and their jobs
	phaseIO                   // I/O callbacks and their jobs (a poll that did not wait counts with the phase before it)
	phaseClosing              // closing callbacks and their jobs
	phaseIdle                 // blocked in the poller, or spinning for posts (Config.Spin)
	phaseBook                 // bookkeeping worth a segment of its own (tracking producers, aging many: trackYoung)
	phaseOther                // bare bookkeeping since the last reading: the next phase takes it over
	phaseWoke                 // nothing since the reading at a wakeup: the next iteration starts from it
	numPhases
)

// publishEvery is how stale the counters that Stats reads off the loop may
// get, besides the iteration in progress, while the loop is busy.
const publishEvery = time.Millisecond

// LagBuckets is the number of buckets of a Lag histogram.
const LagBuckets = 8

// lagBounds are the inclusive upper bounds of the first LagBuckets-1
// buckets: decades from 1µs to 1s.
var lagBounds = [LagBuckets - 1]time.Duration{
	time.Microsecond, 10 * time.Microsecond, 100 * time.Microsecond,
	time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second,
}

// LagBound returns the inclusive upper bound of Lag.Buckets[i]: 1µs for
// bucket 0, ten times more for each next one, up to 1s for bucket
// LagBuckets-2. The last bucket has no bound: LagBound returns
// math.MaxInt64 for it, and for an i out of range.
func LagBound(i int) time.Duration {
	if i < 0 || i >= len(lagBounds) {
		return math.MaxInt64
	}
	return lagBounds[i]
}

// Lag is a histogram of how long work waited for a loop.
type Lag struct {
	Count   uint64             // samples; the sum of Buckets
	Sum     time.Duration      // their total: Sum/Count is the mean (see Mean)
	Max     time.Duration      // the longest since the loop started
	Buckets [LagBuckets]uint64 // Buckets[i]: samples above LagBound(i-1) and at most LagBound(i)
}

// Mean returns Sum/Count, or 0 without samples.
func (g Lag) Mean() time.Duration {
	if g.Count == 0 {
		return 0
	}
	return g.Sum / time.Duration(g.Count)
}

// LoopTime is where a loop's time went since it started: the fields add up
// to its whole life so far. Each phase includes the jobs its callbacks
// queued (handle transitions, continuations).
type LoopTime struct {
	Timers  time.Duration // running due timers
	Posted  time.Duration // running posted callbacks
	IO      time.Duration // I/O callbacks (a poll that did not wait counts with the phase before it, to save a clock reading)
	Closing time.Duration // closing callbacks
	Other   time.Duration // the loop's bookkeeping between phases (aging producers, computing the poll timeout)
	Idle    time.Duration // blocked in the poller waiting for work, or spinning for it (Config.Spin)
}

// Busy returns the time the loop was not idle: the sum of the other fields.
func (t LoopTime) Busy() time.Duration {
	return t.Timers + t.Posted + t.IO + t.Closing + t.Other
}

// lagAcc is a Lag being accumulated by the loop. Owned by the loop.
type lagAcc struct {
	sum, max time.Duration
	buckets  [LagBuckets]uint64
	changed  bool // since the last publication
}

func (a *lagAcc) add(d time.Duration) {
	if d < 0 {
		d = 0 // a reading by another thread a hair ahead of the loop's
	}
	i := 0
	for i < len(lagBounds) && d > lagBounds[i] {
		i++
	}
	a.buckets[i]++
	a.sum += d
	a.max = max(a.max, d)
	a.changed = true
}

func (a *lagAcc) lag() Lag {
	g := Lag{Sum: a.sum, Max: a.max, Buckets: a.buckets}
	for _, n := range a.buckets {
		g.Count += n
	}
	return g
}

// lagPub is a lagAcc as published for other goroutines.
type lagPub struct {
	sum, max atomic.Int64
	buckets  [LagBuckets]atomic.Uint64
}

func (p *lagPub) store(a *lagAcc) {
	if !a.changed {
		return
	}
	a.changed = false
	p.sum.Store(int64(a.sum))
	p.max.Store(int64(a.max))
	for i := range a.buckets {
		p.buckets[i].Store(a.buckets[i])
	}
}

func (p *lagPub) load() Lag {
	var a lagAcc
	a.sum = time.Duration(p.sum.Load())
	a.max = time.Duration(p.max.Load())
	for i := range a.buckets {
		a.buckets[i] = p.buckets[i].Load()
	}
	return a.lag()
}

// loopMetrics is a loop's health counters. The plain fields are owned by the
// loop; pub is what other goroutines read.
type loopMetrics struct {
	mark     time.Duration // the last clock reading, relative to the loop's base
	cur      phase         // what the time since mark is spent on
	times    [numPhases]time.Duration
	pubTimes [numPhases]time.Duration // times as last published
	pubAt    time.Duration            // mark at the last publication

	iterations uint64
	posted     uint64
	sleeps     uint64        // polls that could block (tests read it on the loop)
	yields     uint64        // passes through the Go scheduler (yieldP; tests read it on the loop)
	lastYield  time.Duration // mark at the last yieldP
	postLag    lagAcc
	timerLag   lagAcc

	readySince time.Duration // when the batch in Loop.ready was first posted
	// batchLeft is the callbacks of the loop's batch (Loop.ready) not yet
	// run, as of the last swap that emptied the queue into the batch (less
	// the first, about to run; stored under postMu with the swap) or the
	// last publication, whichever is later: Stats.PostQueued off the loop.
	// Not stored per batch run, which would put two atomic stores on every
	// iteration that runs a posted callback (loop-iter's whole work).
	batchLeft atomic.Int64

	pub struct {
		seq        atomic.Uint64 // odd while the loop writes
		iterations atomic.Uint64
		posted     atomic.Uint64
		times      [numPhases]atomic.Int64
		sleepSince atomic.Int64 // start of the idle segment in progress, +1; 0 while awake
		postLag    lagPub
		timerLag   lagPub
	}
}

// cut ends the segment since the last reading at t, giving it to the phase
// it was spent on. On the loop.
func (m *loopMetrics) cut(t time.Duration) {
	m.times[m.cur] += t - m.mark
	m.mark = t
}

// enter starts phase p, about to run something: the segment before it is
// cut with a new reading unless it was p already, or bare bookkeeping, which
// p takes over. On the loop.
func (l *Loop) enter(p phase) {
	if c := l.m.cur; c != p && c < phaseOther {
		l.cutNow()
	}
	l.m.cur = p
}

// cutNow cuts the segment with a new reading: enter's slow path, out of
// line so that enter inlines. On the loop.
func (l *Loop) cutNow() { l.m.cut(l.clock()) }

// reading returns a current reading of the clock: the last one if nothing
// but bookkeeping ran since, else a new one, which cuts the segment. On the
// loop.
func (l *Loop) reading() time.Duration {
	if m := &l.m; m.cur < phaseOther {
		l.cutNow()
		m.cur = phaseOther
	}
	return l.m.mark
}

// startIteration reads the clock for a new iteration, cuts the segment and
// caches the reading as Now, or reuses the reading of the wakeup just
// before it, which wake cached already; and it publishes if the last
// publication is publishEvery old. On the loop.
func (l *Loop) startIteration() {
	m := &l.m
	if m.cur != phaseWoke {
		l.cutNow()
		l.now.Store(int64(m.mark))
	}
	m.cur = phaseOther
	if m.mark-m.pubAt >= publishEvery {
		l.publish()
	}
}

// sleep marks the start of an idle segment in the poller and publishes
// everything, so that Stats sees a sleeping loop exactly. On the loop,
// before a poll that may block.
func (l *Loop) sleep() {
	l.enter(phaseIdle)
	m := &l.m
	m.sleeps++
	m.pub.seq.Add(1)
	l.publishLocked()
	m.pub.sleepSince.Store(int64(m.mark) + 1)
	m.pub.seq.Add(1)
}

// wake ends the idle segment with a new reading, after a poll that may have
// blocked. The reading is read inside the sequence window, so that a Stats
// that saw the loop asleep never reports more idle time than a later one
// that saw it awake. On the loop.
func (l *Loop) wake() {
	m := &l.m
	m.pub.seq.Add(1)
	m.cut(l.clock())
	// Before the loop is awake again, so that a post stamped with the
	// cached time (postStamp) does not count the sleep.
	l.now.Store(int64(m.mark))
	m.pubTimes[phaseIdle] = m.times[phaseIdle]
	m.pub.times[phaseIdle].Store(int64(m.times[phaseIdle]))
	m.pub.sleepSince.Store(0)
	m.pub.seq.Add(1)
	m.cur = phaseWoke
}

// publish copies the loop's counters for Stats off the loop. On the loop.
func (l *Loop) publish() {
	l.m.pub.seq.Add(1)
	l.publishLocked()
	l.m.pub.seq.Add(1)
}

// publishLocked is publish inside a sequence window the caller opened.
func (l *Loop) publishLocked() {
	m := &l.m
	m.pubAt = m.mark
	m.pub.iterations.Store(m.iterations)
	m.pub.posted.Store(m.posted)
	// Only what changed: a loop that sleeps after every iteration
	// publishes every time, and most of it stays the same.
	for i, t := range m.times {
		if t != m.pubTimes[i] {
			m.pubTimes[i] = t
			m.pub.times[i].Store(int64(t))
		}
	}
	m.pub.postLag.store(&m.postLag)
	m.pub.timerLag.store(&m.timerLag)
	l.noteBatch(0)
}

// noteBatch records how much of the loop's batch is left to run, less
// running (1 as runPosted takes a new batch and starts on it, 0 when the
// loop publishes), for Stats.PostQueued off the loop. On the loop.
func (l *Loop) noteBatch(running int) {
	l.m.batchLeft.Store(int64(max(0, len(l.ready)-l.readyPos-running)))
}

// finalMetrics cuts the last segment and publishes, as the loop stops. On
// the loop goroutine, after teardown.
func (l *Loop) finalMetrics() {
	l.cutNow()
	l.m.cur = phaseOther
	l.publish()
}

// metrics fills in the health counters of s: the loop's own fields on the
// loop, a consistent published copy elsewhere. Any goroutine.
func (l *Loop) metrics(s *Stats) {
	m := &l.m
	if l.OnLoop() {
		// Published first, so that a read off the loop after this one
		// sees no less: the counters only grow, whoever reads them (a
		// scrape in a handler on one loop reads the others off theirs).
		l.publish()
		s.PostQueued = int(l.qlen.Load()) + len(l.ready) - l.readyPos
		s.Iterations, s.Posted = m.iterations, m.posted
		s.Time = loopTime(func(p phase) time.Duration { return m.times[p] })
		s.PostLag, s.TimerLag = m.postLag.lag(), m.timerLag.lag()
		s.Running = max(0, l.clock()-l.Now())
		return
	}
	// Under postMu, so that a batch swapped out of the queue is counted
	// once: in the queue's length or in batchLeft.
	l.postMu.Lock()
	s.PostQueued = int(l.qlen.Load() + m.batchLeft.Load())
	l.postMu.Unlock()
	for {
		seq := m.pub.seq.Load()
		if seq&1 != 0 { // the loop is publishing: a few dozen stores
			runtime.Gosched()
			continue
		}
		s.Iterations, s.Posted = m.pub.iterations.Load(), m.pub.posted.Load()
		s.Time = loopTime(func(p phase) time.Duration { return time.Duration(m.pub.times[p].Load()) })
		s.PostLag, s.TimerLag = m.pub.postLag.load(), m.pub.timerLag.load()
		// A loop asleep in the poller: its idle time grows without it.
		since := m.pub.sleepSince.Load()
		var now time.Duration
		if since != 0 {
			now = l.clock()
		}
		if m.pub.seq.Load() != seq {
			continue
		}
		if since != 0 {
			s.Time.Idle += max(0, now-time.Duration(since-1))
		} else if !l.spinning.Load() && l.state.Load() != stateDead {
			s.Running = max(0, l.clock()-l.Now()) // awake: at work since its last reading
		}
		return
	}
}

func loopTime(at func(phase) time.Duration) LoopTime {
	return LoopTime{
		Timers:  at(phaseTimers),
		Posted:  at(phasePosted),
		IO:      at(phaseIO),
		Closing: at(phaseClosing),
		Other:   at(phaseBook) + at(phaseOther) + at(phaseWoke),
		Idle:    at(phaseIdle),
	}
}

// postStamp returns the time to record as the moment the post queue turns
// non-empty. While the loop is awake and not spinning, that is its cached
// time (Now): the start of the iteration in progress, so a callback's wait
// counts at most that iteration too much, and a Post reads no clock. A loop
// asleep or spinning will take the post as soon as it can, so its wait is
// measured from a reading taken here (the Post wakes the loop anyway, which
// costs more). Under postMu.
func (l *Loop) postStamp() time.Duration {
	if l.awake.Load() && !l.spinning.Load() {
		return time.Duration(l.now.Load())
	}
	return l.clock()
}

package aio

// job is one unit of loop-owned work queued during a callback, run by drain
// after the callback returns. Exactly one field is set:
//
//   - c: a handle's terminal transition (c.finish), the hottest job, or, for
//     a handle that had already finished, the telling of the dependents
//     registered since (c.tellDependents, see addDep);
//   - t: any other work (t.runTask): internal work of the loop, or a
//     function queued by runLater (a funcTask).
//
// Both hold pointers the caller already has, so queueing costs no
// allocation (a func is a pointer too: a funcTask in t costs none beyond
// the closure the caller made), and a job is three words: the ring of a
// million-handle cancellation is that much smaller.
type job struct {
	c *core
	t task
}

// task is loop work queued without an allocation: job{t: p} for a pointer p
// whose runTask does the work. runTask runs on loop l, after the callback
// that queued it; internal work must not panic (user code it calls goes
// through Loop.call or a guard of its own).
type task interface{ runTask(l *Loop) }

// funcTask is a function queued as a job. It runs like a callback: a panic
// in it is recovered and reported (Loop.call).
type funcTask func()

func (f funcTask) runTask(l *Loop) { l.call(f) }

// jobQueue is the loop's work queue: a growable ring, FIFO. Propagation through
// the handle graph pushes here instead of recursing, so a chain of a million
// handles completes or cancels with a constant stack and a queue whose length
// is the graph's width, not its depth. Owned by the loop goroutine.
type jobQueue struct {
	buf  []job
	head int // index of the oldest job
	n    int // jobs queued
}

func (q *jobQueue) push(j job) {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = j
	q.n++
}

func (q *jobQueue) pop() job {
	j := q.buf[q.head]
	q.buf[q.head] = job{} // drop references for the collector
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	return j
}

// grow doubles the ring (a power of two, so indexes wrap with a mask).
func (q *jobQueue) grow() {
	size := 2 * len(q.buf)
	if size == 0 {
		size = 64
	}
	buf := make([]job, size)
	for i := 0; i < q.n; i++ {
		buf[i] = q.buf[(q.head+i)&(len(q.buf)-1)]
	}
	q.buf, q.head = buf, 0
}

// drain runs queued jobs until none is left, including those pushed while
// draining. It is called after every top-level callback, and inlines to a
// test when no job is queued. On the loop only.
func (l *Loop) drain() {
	l.checkOnLoop()
	if l.jobs.n > 0 {
		l.drainJobs()
	}
}

// drainJobs is drain's loop, out of line.
func (l *Loop) drainJobs() {
	for l.jobs.n > 0 {
		j := l.jobs.pop()
		switch {
		case j.c != nil:
			if j.c.finished {
				j.c.tellDependents()
			} else {
				j.c.finish()
			}
		default:
			j.t.runTask(l)
		}
	}
}

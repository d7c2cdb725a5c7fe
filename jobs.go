package aio

// job is one unit of loop-owned work queued during a callback, run by drain
// after the callback returns. Exactly one field is set:
//
//   - c: the terminal transition of a handle (c.finish);
//   - d: the late notification of a dependent registered on a handle that
//     had already finished (d.inputDone);
//   - t: any other internal work (t.runTask);
//   - f: a function, run like a callback: a panic in it is recovered and
//     reported (runLater queues its fn here).
//
// c, d and t hold pointers the caller already has, so queueing them costs
// no allocation; f costs one when it is a method value or a closure made for
// the purpose.
type job struct {
	c *core
	d dependent
	t task
	f func()
}

// task is internal loop work queued without an allocation: job{t: p} for a
// pointer p whose runTask does the work. runTask runs on the loop, after the
// callback that queued it, and must not panic (user code it calls goes
// through Loop.call or a guard of its own).
type task interface{ runTask() }

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
// draining. It is called after every top-level callback. On the loop only.
func (l *Loop) drain() {
	l.checkOnLoop()
	for l.jobs.n > 0 {
		j := l.jobs.pop()
		switch {
		case j.c != nil:
			j.c.finish()
		case j.d != nil:
			j.d.inputDone()
		case j.t != nil:
			j.t.runTask()
		default:
			l.call(j.f)
		}
	}
}

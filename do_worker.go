package aio

import "iter"

// coWorker is a coroutine that runs Do bodies one after another. Creating a
// coroutine starts a goroutine whose stack starts small and grows, by
// copying, as the body goes deep: a TLS handshake (the body of every TLS
// connection's Do) spends about 6% of its CPU time creating its coroutine
// and growing its stack. A worker whose body returned goes back to its
// loop's idle list and runs the next Do's body on the stack it has grown.
//
// A worker is created, resumed and stopped on its loop's goroutine only (the
// runtime pins a coroutine to the thread that created it); its body runs as
// the loop (see Co.enter).
type coWorker struct {
	next func() (struct{}, bool) // resumes the worker; loop goroutine only
	stop func()                  // ends an idle worker; loop goroutine only
	// yield suspends the worker: in an Await (Co.suspend), or idle after its
	// body returned. Set once by the worker itself.
	yield func(struct{}) bool
	task  coTask // the body to run when next resumed idle; loop goroutine
}

// coTask is a Do body as its worker runs it (doNode.runBody).
type coTask interface{ runBody() }

// maxIdleWorkers bounds a loop's idle workers: what a burst of Do bodies
// left behind, each holding a goroutine and the stack its bodies grew
// (which the GC shrinks again while it is idle).
const maxIdleWorkers = 16

// newCoWorker makes a worker; its first resumption runs its first body. On
// the loop goroutine.
func newCoWorker() *coWorker {
	w := &coWorker{}
	w.next, w.stop = iter.Pull(w.run)
	return w
}

// run is the worker's coroutine: it runs the body set in w.task, then waits
// idle for the next one, until a stop makes the idle yield report false. A
// body that calls runtime.Goexit ends the worker (see doNode.runBody).
func (w *coWorker) run(yield func(struct{}) bool) {
	w.yield = yield
	for {
		t := w.task
		w.task = nil
		t.runBody()
		if !yield(struct{}{}) {
			return
		}
	}
}

// takeWorker returns an idle worker of l, or a new one. On the loop
// goroutine.
func (l *Loop) takeWorker() *coWorker {
	if n := len(l.idleWorkers); n > 0 {
		w := l.idleWorkers[n-1]
		l.idleWorkers[n-1] = nil
		l.idleWorkers = l.idleWorkers[:n-1]
		return w
	}
	return newCoWorker()
}

// putWorker takes back a worker whose body returned: idle for the next Do,
// or ended if l keeps enough idle ones or is stopping. On the loop
// goroutine.
func (l *Loop) putWorker(w *coWorker) {
	if len(l.idleWorkers) < maxIdleWorkers && l.state.Load() == stateRunning {
		l.idleWorkers = append(l.idleWorkers, w)
		return
	}
	w.stop()
}

// endGoexited ends a worker whose body called runtime.Goexit, held in the
// body's deferred call (see doNode.runBody): stop resumes it there, its
// Goexit goes on, and the panic it turns into to get past iter.Pull comes
// out of stop, which absorbs it. Any other panic goes on unrecovered. On
// the loop goroutine.
func (w *coWorker) endGoexited() {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(goexitInBody); !ok {
				panic(p)
			}
		}
	}()
	w.stop()
}

// stopIdleWorkers ends every idle worker: their goroutines exit. Teardown,
// once no Do body is left to run. On the loop goroutine.
func (l *Loop) stopIdleWorkers() {
	for i, w := range l.idleWorkers {
		l.idleWorkers[i] = nil
		w.stop()
	}
	l.idleWorkers = nil
}

package aio

// A handshake step (a signature, a key exchange: about 0.3 ms of CPU)
// runs in the coroutine of its connection's handshake when the bytes it
// awaits arrive. Run from the read path, a poll that finds many
// handshaking connections readable would run all their steps in one turn
// of the loop, and every other connection ready in that turn (a plaintext
// request on the same loop) would wait for all of them. So the read path
// only buffers a handshake's bytes and queues the handshake; the loop
// resumes at most tlsStepsPerTurn of them per turn, after the turn's I/O,
// and the rest in later turns, behind the I/O that is ready by then (as
// libuv bounds the work of each of its phases). A loop with handshakes
// queued polls without waiting.

// tlsStepsPerTurn bounds the handshake steps a loop runs per turn.
const tlsStepsPerTurn = 2

// After the handshake, what a record costs crypto/tls is not what it
// carries: a KeyUpdate, 27 bytes, costs a key derivation (two, and an
// answer, when it asks for one), some 10 µs; a record of one byte of data
// costs its decryption. A peer flooding such records (a data byte every 15
// KeyUpdates stays within crypto/tls's own bound on records without data)
// made one readiness event of 1 MiB a half-second turn, every other
// connection of the loop waiting. So a connection that read
// tlsRecordsPerTurn records in a loop iteration stops reading (throttled)
// until that iteration's I/O is done: its peer's bytes wait (in the
// kernel, or read already), and the other connections ready in the poll
// go first. Bulk data, in records of 16 KiB, reads 2 MiB in that many:
// more than a readiness event reads.
const tlsRecordsPerTurn = 128

// recordRead counts a record handed to crypto/tls after the handshake,
// and throttles the connection once it read tlsRecordsPerTurn of them in
// this loop iteration. On the loop, from Read within pump.
func (t *tlsConn) recordRead() {
	if it := t.c.l.m.iterations; t.turn != it {
		t.turn, t.records = it, 0
	}
	if t.records++; t.records < tlsRecordsPerTurn || t.throttled {
		return
	}
	t.throttled = true
	s := t.c.tl.tlsScratch()
	s.throttled = append(s.throttled, t)
	t.c.update()
}

// unthrottle lets the connections throttled read again, once this turn's
// poll has given every other connection ready its turn: what they read
// already is pumped at once (tlsResume, from the jobs runTLSSteps runs),
// their sockets wait for the next poll. On the loop, from runTLSSteps.
func (l *Loop) unthrottle() {
	s := l.tcp.tls
	list := s.throttled
	s.throttled = nil
	for _, t := range list {
		t.throttled, t.records = false, 0
		if t.c.state == connOpen {
			t.c.update() // reading resumes: pump, if it parked (resume)
		}
	}
}

// stepReady queues t's handshake, awaiting the bytes just buffered, to
// resume in this turn's handshake phase or a later one. On the loop.
func (t *tlsConn) stepReady() {
	if !t.waiting || t.queued {
		return // not awaiting bytes, or queued already
	}
	t.queued = true
	s := t.c.tl.tlsScratch()
	s.steps = append(s.steps, t)
}

// tlsStepsQueued reports whether handshakes, or throttled connections,
// wait for their turn.
func (t *tcpLoop) tlsStepsQueued() bool {
	return t.tls != nil && (len(t.tls.steps) > t.tls.stepHead || len(t.tls.throttled) > 0)
}

// runTLSSteps lets the throttled connections read again and resumes at
// most tlsStepsPerTurn queued handshakes, oldest first. On the loop, once
// per turn after I/O dispatch, when tlsStepsQueued (iterate tests it
// inline).
func (l *Loop) runTLSSteps() {
	l.enter(phaseIO)
	l.busy = true
	if len(l.tcp.tls.throttled) > 0 {
		l.unthrottle()
		l.drain() // their interest, and the pumps it resumes: up to tlsRecordsPerTurn records each again
	}
	for n := 0; n < tlsStepsPerTurn; {
		s := l.tcp.tls // a step that closed the last connection frees it
		if s == nil || s.stepHead == len(s.steps) {
			return
		}
		t := s.steps[s.stepHead]
		s.steps[s.stepHead] = nil
		if s.stepHead++; s.stepHead == len(s.steps) {
			s.steps, s.stepHead = s.steps[:0], 0
		}
		t.queued = false
		if !t.waiting {
			continue // closed or cancelled meanwhile
		}
		t.wake()
		l.drain() // what the step queued
		n++
	}
}

// await suspends the handshake's coroutine until wake (the bytes it
// needs may have arrived), or its Do handle is cancelled (ErrCancelled),
// or the connection closes (its cause, see closedErr). It is Await
// without a handle to settle and a link to it, two allocations per wait:
// t itself is what the coroutine waits on (Co.waiting), and withdraws
// when cancelled. In the handshake's Do body, from Read.
func (t *tlsConn) await() error {
	co := t.co
	if co.cancelled {
		return ErrCancelled
	}
	t.waiting = true
	co.waiting, co.wake = t, false
	if !co.suspend() || !co.wake {
		t.waiting = false
		co.waiting = nil
		return ErrCancelled
	}
	if t.c.state != connOpen {
		return t.closedErr()
	}
	return nil
}

// withdraw is the cancellation of the handshake's Do handle while the
// coroutine waits in await: it resumes with ErrCancelled.
func (t *tlsConn) withdraw() { t.waiting = false }

// wake resumes the handshake suspended in await, which runs until it
// waits again or ends. On the loop goroutine (a coroutine resumes only
// there): from runTLSSteps, or a job.
func (t *tlsConn) wake() {
	if !t.waiting {
		return
	}
	t.waiting = false
	co := t.co
	co.waiting, co.wake = nil, true
	co.node.resume()
}

// tlsWake is a tlsConn as the job that wakes its handshake, queued when
// the connection closes under it: a type of its own, so that queueing it
// allocates nothing.
type tlsWake tlsConn

func (w *tlsWake) runTask(*Loop) { (*tlsConn)(w).wake() }

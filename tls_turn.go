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

// stepReady queues t's handshake, awaiting the bytes just buffered, to
// resume in this turn's handshake phase or a later one. On the loop.
func (t *tlsConn) stepReady() {
	if t.wait == nil || t.queued {
		return // not awaiting bytes, or queued already
	}
	t.queued = true
	s := t.c.tl.tlsScratch()
	s.steps = append(s.steps, t)
}

// tlsStepsQueued reports whether handshakes wait for their turn.
func (t *tcpLoop) tlsStepsQueued() bool {
	return t.tls != nil && len(t.tls.steps) > t.tls.stepHead
}

// runTLSSteps resumes at most tlsStepsPerTurn queued handshakes, oldest
// first. On the loop, once per turn after I/O dispatch.
func (l *Loop) runTLSSteps() {
	if !l.tcp.tlsStepsQueued() {
		return
	}
	l.enter(phaseIO)
	l.busy = true
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
		if t.wait == nil {
			continue // closed meanwhile: closeHandshake woke it
		}
		t.wake()
		l.drain() // the step runs here
		n++
	}
}

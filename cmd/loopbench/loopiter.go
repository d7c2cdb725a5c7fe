package main

import (
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// runLoopIter: how many iterations an otherwise empty loop makes per second.
// One callback re-posts itself, which keeps exactly one callback queued: every
// iteration runs it and then polls with a zero timeout, like libuv's
// loop_count (an active uv_idle forces a zero-timeout epoll_wait per
// iteration). ops are loop iterations from Stats, not callbacks, so an
// implementation that ran several callbacks per iteration would not look
// faster than it is. Go has no loop to compare with.
//
// Two rows: loop-iter has no fd registered, so the loop skips the poll's
// system call as libuv does with no fd open (uv__io_poll returns at once when
// nfds is 0); loop-iter-fd keeps an idle listener registered, so every
// iteration makes the epoll_wait(0) or kevent that loop_count makes (libuv
// 1.44 always registers its signal pipe). loop-iter-fd is the one to put
// beside loop_count, with one correction: loop_count is single-threaded,
// and in a process with one thread the kernel looks up the epoll fd
// without taking a reference to it (fdget's light path). A Go process
// always has several threads, and so has a libuv program once its thread
// pool started. On a 2-vCPU AMD EPYC VM a bare epoll_wait(0) took 160 ns
// single-threaded and 215 ns with one idle thread more, and loop_count
// made 4.66 M iterations/s (214 ns) alone and 3.76 M (266 ns) with that
// one idle thread preloaded, in the same run as loop-iter-fd's 3.3 M.
func runLoopIter(o options) ([]result, error) {
	var rs []result
	for _, fd := range []bool{false, true} {
		r, err := loopIterAIO(o, fd)
		if err != nil {
			return rs, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func loopIterAIO(o options, withFD bool) (result, error) {
	name := "loop-iter"
	if withFD {
		name = "loop-iter-fd"
	}
	rt, ls, err := startLoops(aio.Config{Name: name})
	if err != nil {
		return result{}, fmt.Errorf("%s/aio: %w", name, err)
	}
	l := ls[0]
	if withFD {
		// An idle listener: its fd sits in the poller, and nothing
		// connects, so it only makes the poll a real system call.
		if _, err := aio.Listen(l, "127.0.0.1:0", aio.ListenConfig{}, func(c *aio.Conn) { c.Close() }); err != nil {
			_ = stopLoops(rt, l)
			return result{}, fmt.Errorf("%s/aio: listen: %w", name, err)
		}
	}
	f := newFinisher()
	var (
		started    bool          // on the loop only
		it0, iters uint64        // iteration counts, on the loop
		t0         time.Time     // first callback, on the loop
		endAt      time.Duration // loop time to stop at
		self       func()
	)
	self = func() {
		if !started {
			started = true
			it0 = l.Stats().Iterations
			t0 = time.Now()
			endAt = l.Now() + o.Duration
		}
		// Now is the loop's cached clock: an atomic load, cheap enough to
		// check every iteration without reading the real clock.
		if l.Now() >= endAt {
			iters = l.Stats().Iterations - it0
			f.finish(nil)
			return
		}
		if err := l.Post(self); err != nil {
			f.finish(fmt.Errorf("re-post: %w", err))
		}
	}

	m := startMeter()
	if err := l.Post(self); err != nil {
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(o.Duration), name+": waiting for the loop", l)
	var r result
	if err == nil {
		// Timed on the loop, from the first callback to the last, so that
		// waking the loop at the start is not counted as iteration time.
		r = m.finish(name, "aio", int64(iters), t0, f.end)
		r.Config = "self-re-posting callback, no fd"
		if withFD {
			r.Config = "self-re-posting callback, one idle listener registered"
		}
		r.Reference = "libuv loop_count 4.66M iter/s (214 ns) single-threaded, 3.76M (266 ns) with one more thread (2-vCPU EPYC)"
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	if err != nil {
		err = fmt.Errorf("%s/aio: %w", name, err)
	}
	return r, err
}

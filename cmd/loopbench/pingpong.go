package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/valkyria/aio"
)

// runPingPong: a message bounces between two threads for Duration; ops are
// round trips. With both sides asleep between hops, every hop is a
// cross-thread wakeup, whose cost on a VM is mostly the hypervisor waking a
// halted vCPU: that is what libuv's async_pingpong (block) measures too. The
// spin variant keeps both loops polling for Spin after each callback, which
// is libuv's async_pingpong (spin) and shows the runtime's own cost.
func runPingPong(o options) ([]result, error) {
	var rs []result
	r, err := pingPongAIO(o, "pingpong-loops", 0)
	if err != nil {
		return rs, fmt.Errorf("pingpong-loops/aio: %w", err)
	}
	r.Reference = "libuv async_pingpong block 8632 rt/s; spin 221597 rt/s"
	rs = append(rs, r)

	r, err = pingPongAIO(o, "pingpong-loops-spin", o.Spin)
	if err != nil {
		return rs, fmt.Errorf("pingpong-loops-spin/aio: %w", err)
	}
	r.Config = fmt.Sprintf("spin=%v", o.Spin)
	rs = append(rs, r)

	r = pingPongGo(o)
	r.Config = "LockOSThread, unbuffered chans"
	return append(rs, r), nil
}

// pingPongAIO runs loops A and B; A's callback posts to B, B's posts back to
// A. A counts the round trips and ends the section.
func pingPongAIO(o options, name string, spin time.Duration) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: "ping-a", Spin: spin}, aio.Config{Name: "pong-b", Spin: spin})
	if err != nil {
		return result{}, err
	}
	a, b := ls[0], ls[1]
	f := newFinisher()
	var (
		rounds int64     // on loop A only
		start  time.Time // written before the first Post, read on A
		ping   func()    // runs on A
		pong   func()    // runs on B
	)
	ping = func() {
		rounds++
		// A round trip takes microseconds at best: reading the clock every
		// 16 of them costs nothing measurable and stops within a few µs.
		if rounds&15 == 0 && time.Since(start) >= o.Duration {
			f.finish(nil)
			return
		}
		if err := b.Post(pong); err != nil {
			f.finish(fmt.Errorf("post to B: %w", err))
		}
	}
	pong = func() {
		if err := a.Post(ping); err != nil {
			f.finish(fmt.Errorf("post to A: %w", err))
		}
	}

	m := startMeter()
	start = m.start
	if err := b.Post(pong); err != nil { // the first serve; ping counts the trips that follow
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(o.Duration), name+": waiting for the rally to end", a, b)
	var r result
	if err == nil {
		r = m.finish(name, "aio", rounds, m.start, f.end)
	}
	if serr := stopLoops(rt, a, b); err == nil {
		err = serr
	}
	return r, err
}

// pingPongGo is the same rally between two goroutines locked to their OS
// threads: without the locks the scheduler would run both on one P and hand
// the token over without waking any thread, which is not what a loop-to-loop
// Post costs.
func pingPongGo(o options) result {
	ping, pong := make(chan struct{}), make(chan struct{})
	bDone := make(chan struct{})
	go func() { // B
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(bDone)
		for range ping {
			pong <- struct{}{}
		}
	}()
	var (
		rounds int64
		end    time.Time
	)
	aDone := make(chan struct{})
	m := startMeter()
	go func() { // A
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(aDone)
		for {
			ping <- struct{}{}
			<-pong
			rounds++
			if rounds&15 == 0 && time.Since(m.start) >= o.Duration {
				break
			}
		}
		end = time.Now()
		close(ping)
	}()
	<-aDone
	r := m.finish("pingpong-loops", "gostd", rounds, m.start, end)
	<-bDone // B has left before the next workload: no stray goroutine
	return r
}

package main

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
)

// timerDelay is timer i's delay: 1000 timers per millisecond bucket, 1 ms
// to n/1000 ms, the shape of libuv's million_timers anchor.
func timerDelay(i int) time.Duration {
	return time.Duration(i/1000+1) * time.Millisecond
}

// runTimers: n one-shot timers created in one go, run until all fired.
func runTimers(o options) ([]result, error) {
	if o.Timers <= 0 {
		return nil, fmt.Errorf("need -timers > 0")
	}
	cfg := fmt.Sprintf("n=%d spread=%v", o.Timers, timerDelay(o.Timers-1))
	var rs []result
	r, err := timersAIO(o)
	if err != nil {
		return rs, fmt.Errorf("timers/aio: %w", err)
	}
	r.Config = cfg
	r.Reference = "libuv million_timers total_ms 1037 (setup 193 ms), gostd anchor 2273 ms at GOMAXPROCS=2"
	rs = append(rs, r)
	r = timersGo(o)
	r.Config = cfg
	return append(rs, r), nil
}

// timersAIO creates every timer from one callback on the loop. Each delay
// counts from a clock reading at its creation (aio's deadline, as
// time.AfterFunc's), not from one cached loop time as uv_timer_start's:
// the last deadline is about 1 s after the last timer was made, so seconds
// is creation plus about 1 s, as for gostd, where libuv's creation hides
// under its 1 s spread (compare the reference's setup).
func timersAIO(o options) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: "timers"})
	if err != nil {
		return result{}, err
	}
	l := ls[0]
	n := o.Timers
	f := newFinisher()
	var (
		fired    int       // on the loop only
		setupEnd time.Time // written on the loop before f.done closes
	)
	fire := func() (struct{}, error) {
		fired++
		if fired == n {
			f.finish(nil)
		}
		return struct{}{}, nil
	}
	create := func() {
		for i := 0; i < n; i++ {
			h := aio.Delay(l, timerDelay(i), fire)
			if h.Status() == aio.Failed {
				_, err := h.Result()
				f.finish(fmt.Errorf("Delay %d: %w", i, err))
				return
			}
		}
		setupEnd = time.Now()
	}

	m := startMeter()
	if err := l.Post(create); err != nil {
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(timerDelay(n)), fmt.Sprintf("timers: waiting for %d timers", n), l)
	var r result
	if err == nil {
		r = m.finish("timers", "aio", int64(n), m.start, f.end)
		r.SetupSeconds = setupEnd.Sub(m.start).Seconds()
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, err
}

// timersGo is the same with time.AfterFunc. Go timers count from each call,
// not from a cached time, and each expiry runs its function in a new
// goroutine, so expiries overlap with creation.
func timersGo(o options) result {
	n := int64(o.Timers)
	var (
		fired    atomic.Int64
		end      time.Time // written by the last callback before done closes
		setupEnd time.Time
	)
	done := make(chan struct{})
	fire := func() {
		if fired.Add(1) == n {
			end = time.Now()
			close(done)
		}
	}
	m := startMeter()
	for i := 0; i < o.Timers; i++ {
		time.AfterFunc(timerDelay(i), fire)
	}
	setupEnd = time.Now()
	<-done // Go timers do not get lost: no watchdog needed
	r := m.finish("timers", "gostd", n, m.start, end)
	r.SetupSeconds = setupEnd.Sub(m.start).Seconds()
	return r
}

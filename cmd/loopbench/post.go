package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkyria/aio"
)

// runPost: Producers goroutines post callbacks to one consumer as fast as
// they can. By default each producer posts until Duration has passed (so the
// section lasts about Duration whatever the speed); with -posts N each posts
// N/Producers. Either way the section ends when the consumer has run the
// last callback, so a backlog left at the deadline is charged to it.
func runPost(o options) ([]result, error) {
	if o.Producers <= 0 || o.Posts < 0 || (o.Posts > 0 && o.Posts < o.Producers) {
		return nil, fmt.Errorf("need -producers > 0 and -posts 0 or at least -producers")
	}
	cfg := fmt.Sprintf("producers=%d duration=%v", o.Producers, o.Duration)
	if o.Posts > 0 {
		cfg = fmt.Sprintf("producers=%d posts=%d", o.Producers, o.Posts/o.Producers*o.Producers)
	}
	var rs []result
	r, err := postAIO(o)
	if err != nil {
		return rs, fmt.Errorf("post/aio: %w", err)
	}
	r.Config = cfg
	rs = append(rs, r)
	r = postGo(o)
	r.Config = cfg + " chan_cap=1024"
	return append(rs, r), nil
}

// producers runs o.Producers goroutines that each call post until their
// quota or the deadline, and returns how many calls succeeded in all. The
// clock is read every 256 posts: often enough to stop within microseconds,
// rarely enough to stay out of the measurement.
func producers(o options, deadline time.Time, post func() error) (int64, error) {
	per := int64(o.Posts / o.Producers)
	var (
		wg    sync.WaitGroup
		total atomic.Int64
		first atomic.Pointer[error]
	)
	for p := 0; p < o.Producers; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var k int64
			for {
				if per > 0 {
					if k == per {
						break
					}
				} else if k&255 == 0 && !time.Now().Before(deadline) {
					break
				}
				if err := post(); err != nil {
					e := err // a copy, so that only a failure puts an error on the heap
					first.CompareAndSwap(nil, &e)
					break
				}
				k++
			}
			total.Add(k)
		}()
	}
	wg.Wait()
	if e := first.Load(); e != nil {
		return total.Load(), *e
	}
	return total.Load(), nil
}

func postAIO(o options) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: "post"})
	if err != nil {
		return result{}, err
	}
	l := ls[0]
	var count int64 // on the loop only: the point of a loop is that this needs no lock
	inc := func() { count++ }
	f := newFinisher()
	var ran int64 // count as seen by the sentinel, read after f.done

	m := startMeter()
	posted, err := producers(o, m.start.Add(o.Duration), func() error { return l.Post(inc) })
	if err == nil {
		// Post is causal FIFO and every producer's posts happen before
		// wg.Wait returned, so this sentinel runs after all of them.
		err = l.Post(func() { ran = count; f.finish(nil) })
	}
	if err == nil {
		err = await(f.done, o.sectionLimit(o.Duration), "post: waiting for the queue to drain", l)
	}
	var r result
	if err == nil {
		r = m.finish("post", "aio", ran, m.start, f.end)
		if ran != posted {
			err = fmt.Errorf("posted %d callbacks, the loop ran %d before a later Post", posted, ran)
		}
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, err
}

// postGo is the channel-based equivalent: a buffered channel of funcs drained
// by one goroutine. Unlike Post's unbounded queue the channel blocks its
// producers when full, which is how Go code usually gets backpressure.
func postGo(o options) result {
	ch := make(chan func(), 1024)
	var (
		count int64 // consumer goroutine only
		end   time.Time
	)
	drained := make(chan struct{})
	inc := func() { count++ }
	go func() {
		for fn := range ch {
			fn()
		}
		end = time.Now()
		close(drained)
	}()
	m := startMeter()
	_, _ = producers(o, m.start.Add(o.Duration), func() error { ch <- inc; return nil })
	close(ch)
	<-drained
	return m.finish("post", "gostd", count, m.start, end)
}

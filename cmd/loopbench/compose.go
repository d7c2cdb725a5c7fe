package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/valkyria/aio"
)

// runChain: a Then chain of Chain links, built and completed on one loop; ops
// are links, and the time covers building and running them. gostd: the
// honest Go equivalent of a chain of dependent steps is a pipeline of
// goroutines, each waiting on its predecessor's channel, built and then run
// by sending the root value in.
func runChain(o options) ([]result, error) {
	if o.Chain <= 0 {
		return nil, fmt.Errorf("need -chain > 0")
	}
	var rs []result
	r, err := chainAIO(o)
	if err != nil {
		return rs, fmt.Errorf("chain/aio: %w", err)
	}
	r.Config = fmt.Sprintf("links=%d Then", o.Chain)
	rs = append(rs, r)
	r, err = chainGo(o)
	if err != nil {
		return rs, fmt.Errorf("chain/gostd: %w", err)
	}
	r.Config = fmt.Sprintf("stages=%d goroutine per stage, unbuffered chans", o.Chain)
	return append(rs, r), nil
}

func chainAIO(o options) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: "chain"})
	if err != nil {
		return result{}, err
	}
	l := ls[0]
	n := o.Chain
	f := newFinisher()
	var got int
	inc := func(v int) (int, error) { return v + 1, nil }
	m := startMeter()
	err = l.Post(func() {
		root := aio.NewPromise[int](l)
		h := root.Handle()
		for i := 0; i < n; i++ {
			h = aio.Then(h, inc)
		}
		aio.Then(h, func(v int) (int, error) { got = v; f.finish(nil); return v, nil })
		root.Resolve(0)
	})
	if err != nil {
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(10*time.Second), "chain: waiting for the last link", l)
	var r result
	if err == nil {
		r = m.finish("chain", "aio", int64(n), m.start, f.end)
		if got != n {
			err = fmt.Errorf("chain ended with %d, want %d", got, n)
		}
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, err
}

func chainGo(o options) (result, error) {
	n := o.Chain
	m := startMeter()
	first := make(chan int)
	in := first
	for i := 0; i < n; i++ {
		out := make(chan int)
		go func(in <-chan int, out chan<- int) { out <- <-in + 1 }(in, out)
		in = out
	}
	first <- 0
	v := <-in
	end := time.Now()
	r := m.finish("chain", "gostd", int64(n), m.start, end)
	if v != n {
		return r, fmt.Errorf("chain ended with %d, want %d", v, n)
	}
	return r, nil
}

// runCancelTree: cancel the root of a two-level tree of handles (All of All
// of promises) and time until every handle in it has gone through its
// terminal transition. Reported per handle for a small tree (10,000) and a
// large one (Chain, 1,000,000) to show the cost is linear, and for the large
// one again after it aged into the loop's weak tracking. gostd: the same
// tree of context.WithCancel contexts, cancelled at the root (context
// cancellation is Go's structured cancellation).
func runCancelTree(o options) ([]result, error) {
	if o.Chain <= 0 {
		return nil, fmt.Errorf("need -chain > 0")
	}
	var rs []result
	for _, size := range []struct {
		name  string
		total int
		aged  bool
	}{{"cancel-tree-small", min(10_000, o.Chain), false}, {"cancel-tree", o.Chain, false}, {"cancel-tree-aged", o.Chain, true}} {
		fan := int(math.Sqrt(float64(size.total)))
		r, err := cancelTreeAIO(o, size.name, fan, size.aged)
		if err != nil {
			return rs, fmt.Errorf("%s/aio: %w", size.name, err)
		}
		r.Config = fmt.Sprintf("%d x %d leaves + %d All nodes", fan, fan, fan+1)
		if size.aged {
			r.Config += ", leaves tracked weakly (cancelled after aging)"
			rs = append(rs, r)
			continue
		}
		rs = append(rs, r)
		r = cancelTreeGo(size.name, fan)
		r.Config = fmt.Sprintf("%d x %d context.WithCancel", fan, fan)
		rs = append(rs, r)
	}
	return rs, nil
}

// cancelTreeAIO builds the tree in one callback and cancels it. aged lets two
// iteration boundaries pass first, so that the leaves (pending promises) are
// tracked weakly, as long-lived producers are: the cancellation then also
// untracks them.
func cancelTreeAIO(o options, name string, fan int, aged bool) (result, error) {
	rt, ls, err := startLoops(aio.Config{Name: name})
	if err != nil {
		return result{}, err
	}
	l := ls[0]
	built := make(chan struct{})
	var root *aio.Handle[[][]int]
	var leaves []*aio.Handle[int]
	err = l.Post(func() {
		mids := make([]*aio.Handle[[]int], fan)
		for i := range mids {
			hs := make([]*aio.Handle[int], fan)
			for j := range hs {
				hs[j] = aio.NewPromise[int](l).Handle()
			}
			leaves = append(leaves, hs...)
			mids[i] = aio.All(hs...)
		}
		root = aio.All(mids...)
		close(built)
	})
	if err == nil {
		err = await(built, o.sectionLimit(10*time.Second), name+": building", l)
	}
	for i := 0; aged && err == nil && i < 3; i++ {
		turned := make(chan struct{})
		if err = l.Post(func() { close(turned) }); err == nil {
			err = await(turned, o.Timeout, name+": aging", l)
		}
	}
	if err != nil {
		_ = stopLoops(rt, l)
		return result{}, err
	}
	f := newFinisher()
	m := startMeter()
	// The cancellation walks the tree in the job queue drained after this
	// callback; the next posted callback runs once it is done.
	err = l.Post(func() {
		root.Cancel()
		if err := l.Post(func() { f.finish(nil) }); err != nil {
			f.finish(err)
		}
	})
	if err != nil {
		f.finish(err)
	}
	err = f.wait(o.sectionLimit(10*time.Second), name+": cancelling", l)
	var r result
	handles := int64(fan*fan + fan + 1)
	if err == nil {
		r = m.finish(name, "aio", handles, m.start, f.end)
		for _, h := range []*aio.Handle[int]{leaves[0], leaves[len(leaves)-1]} {
			if h.Status() != aio.Cancelled {
				err = fmt.Errorf("a leaf is %v after the root's cancellation", h.Status())
			}
		}
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	return r, err
}

func cancelTreeGo(name string, fan int) result {
	root, cancel := context.WithCancel(context.Background())
	var leaves []context.Context
	var cancels []context.CancelFunc
	for i := 0; i < fan; i++ {
		mid, c := context.WithCancel(root)
		cancels = append(cancels, c)
		for j := 0; j < fan; j++ {
			leaf, c := context.WithCancel(mid)
			leaves = append(leaves, leaf)
			cancels = append(cancels, c)
		}
	}
	m := startMeter()
	cancel()
	<-leaves[len(leaves)-1].Done()
	end := time.Now()
	r := m.finish(name, "gostd", int64(fan*fan+fan+1), m.start, end)
	for _, c := range cancels {
		c()
	}
	return r
}

// runDoAwait: a Do body awaits Awaits promises one after another, each
// resolved by a callback it posts, so every round trip suspends the body,
// runs one posted callback and resumes it. gostd: a goroutine asking another
// over unbuffered channels (request, reply) for each value.
func runDoAwait(o options) ([]result, error) {
	if o.Awaits <= 0 {
		return nil, fmt.Errorf("need -awaits > 0")
	}
	var rs []result
	rt, ls, err := startLoops(aio.Config{Name: "do-await"})
	if err != nil {
		return nil, err
	}
	l := ls[0]
	n := o.Awaits
	want := n * (n - 1) / 2 // the sum of the values awaited, both sides
	m := startMeter()
	h := aio.Do(l, func(co *aio.Co) (int, error) {
		sum := 0
		for i := 0; i < n; i++ {
			p := aio.NewPromise[int](l)
			if err := l.Post(func() { p.Resolve(i) }); err != nil {
				return 0, err
			}
			v, err := aio.Await(co, p.Handle())
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), o.sectionLimit(10*time.Second))
	sum, err := h.Wait(ctx)
	cancel()
	end := time.Now()
	if err == nil && sum != want {
		err = fmt.Errorf("do-await: sum %d, want %d", sum, want)
	}
	if err == nil {
		r := m.finish("do-await", "aio", int64(n), m.start, end)
		r.Config = "NewPromise + Post(resolve) + Await per op"
		rs = append(rs, r)
	}
	if serr := stopLoops(rt, l); err == nil {
		err = serr
	}
	if err != nil {
		return rs, err
	}

	req, rep := make(chan int), make(chan int)
	go func() {
		for v := range req {
			rep <- v
		}
	}()
	m = startMeter()
	sum = 0
	for i := 0; i < n; i++ {
		req <- i
		sum += <-rep
	}
	end = time.Now()
	close(req)
	if sum != want {
		return rs, fmt.Errorf("do-await/gostd: sum %d, want %d", sum, want)
	}
	r := m.finish("do-await", "gostd", int64(n), m.start, end)
	r.Config = "request/reply over unbuffered chans"
	return append(rs, r), nil
}

package aio

import (
	"context"
	"net"
	"testing"
	"time"
)

// benchOnLoop runs body(b.N) in one posted callback plus the jobs it queues,
// and waits for it. Continuations run after the callback returns, so body
// gets a done func to call from the last one.
func benchOnLoop(b *testing.B, body func(l *Loop, n int, done func())) {
	l := startLoop(b)
	fin := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	if err := l.Post(func() { body(l, b.N, func() { close(fin) }) }); err != nil {
		b.Fatal(err)
	}
	recv(b, fin)
	b.StopTimer()
}

// BenchmarkPromiseThen is one create-complete-continue cycle: a promise, a
// Then link on it, resolved, the continuation run. The handles workload.
func BenchmarkPromiseThen(b *testing.B) {
	l := startLoop(b)
	fin := make(chan struct{})
	b.ReportAllocs()
	var step func(i int)
	next := func(v int) (int, error) { step(v + 1); return v, nil } // one closure for all links
	step = func(i int) {
		if i == b.N {
			close(fin)
			return
		}
		p := NewPromise[int](l)
		Then(p.Handle(), next)
		p.Resolve(i)
	}
	b.ResetTimer()
	_ = l.Post(func() { step(0) })
	recv(b, fin)
}

// BenchmarkNewThen is the same cycle through New (three allocations: the
// handle and the resolve and reject closures the signature requires).
func BenchmarkNewThen(b *testing.B) {
	l := startLoop(b)
	fin := make(chan struct{})
	b.ReportAllocs()
	var step func(i int)
	start := func(resolve func(int), _ func(error)) { resolve(1) }
	step = func(i int) {
		if i == b.N {
			close(fin)
			return
		}
		i++
		Then(New(l, start), func(int) (int, error) { step(i); return 0, nil })
	}
	b.ResetTimer()
	_ = l.Post(func() { step(0) })
	recv(b, fin)
}

// BenchmarkThenChain is the cost of one link of a long chain: build N links,
// complete the root, run them all.
func BenchmarkThenChain(b *testing.B) {
	benchOnLoop(b, func(l *Loop, n int, done func()) {
		root := NewPromise[int](l)
		h := root.Handle()
		for i := 0; i < n; i++ {
			h = Then(h, func(v int) (int, error) { return v + 1, nil })
		}
		Finally(h, done)
		root.Resolve(0)
	})
}

// BenchmarkDelayFire creates N timers due now and fires them.
func BenchmarkDelayFire(b *testing.B) {
	l := startLoop(b)
	fin := make(chan struct{})
	b.ReportAllocs()
	b.ResetTimer()
	_ = l.Post(func() {
		left := b.N
		for i := 0; i < b.N; i++ {
			Delay(l, 0, func() (int, error) {
				if left--; left == 0 {
					close(fin)
				}
				return 0, nil
			})
		}
	})
	recv(b, fin)
}

// BenchmarkPostFromOneGoroutine measures Post plus the loop running it.
func BenchmarkPostFromOneGoroutine(b *testing.B) {
	l := startLoop(b)
	fin := make(chan struct{})
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = l.Post(func() {
			if n++; n == b.N {
				close(fin)
			}
		})
	}
	recv(b, fin)
}

// BenchmarkOnLoop is the cost of the affinity check on every hot path.
func BenchmarkOnLoop(b *testing.B) {
	l := startLoop(b)
	for i := 0; i < b.N; i++ {
		if l.OnLoop() {
			b.Fatal("not on the loop")
		}
	}
}

// BenchmarkDoAwait is one suspend/resume round trip of a Do body: await a
// promise that a posted callback resolves.
func BenchmarkDoAwait(b *testing.B) {
	l := startLoop(b)
	b.ReportAllocs()
	b.ResetTimer()
	h := Do(l, func(co *Co) (int, error) {
		for i := 0; i < b.N; i++ {
			p := NewPromise[int](l)
			_ = l.Post(func() { p.Resolve(i) })
			if _, err := Await(co, p.Handle()); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if _, err := wait(b, h); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDoShort is a Do whose body awaits one completed handle and
// returns: the cost of running a short piece of sequential code on the
// loop, its coroutine included.
func BenchmarkDoShort(b *testing.B) {
	l := startLoop(b)
	done := NewPromise[int](l)
	done.Resolve(1)
	b.ReportAllocs()
	b.ResetTimer()
	onLoop(b, l, func() {
		for range b.N {
			Do(l, func(co *Co) (int, error) { return Await(co, done.Handle()) })
		}
	})
}

// BenchmarkWithinCleanup is a reply with a deadline and a resource to give
// back (an HTTP handler's answer under a timeout, its arena's release): a
// promise under Within, a cleanup on the Within, resolved, continued.
func BenchmarkWithinCleanup(b *testing.B) {
	l := startLoop(b)
	benchReplyCycle(b, l, func(in *Handle[int]) *Handle[int] { return Within(in, time.Hour) })
}

// BenchmarkConnScopeReply is an asynchronous reply on a connection, as
// httpd makes one: a Then over a promise, adopted into the connection's
// scope, a cleanup on it (the request's end), resolved, continued.
func BenchmarkConnScopeReply(b *testing.B) {
	l := startLoop(b)
	conns := make(chan *Conn, 1)
	ln, err := Listen(l, "127.0.0.1:0", ListenConfig{}, func(c *Conn) { conns <- c })
	if err != nil {
		b.Fatal(err)
	}
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	c := recv(b, conns)
	defer c.Close()
	answer := func(v int) (int, error) { return v, nil }
	benchReplyCycle(b, l, func(in *Handle[int]) *Handle[int] { return Adopt(c.Scope(), Then(in, answer)) })
}

// benchReplyCycle runs b.N replies on l, one after another: a promise, the
// reply made of it, a cleanup on the reply, the promise resolved, the
// reply continued; and checks that every cleanup ran.
func benchReplyCycle(b *testing.B, l *Loop, reply func(*Handle[int]) *Handle[int]) {
	fin := make(chan struct{})
	b.ReportAllocs()
	var step func(i int)
	released := 0
	release := func() { released++ }
	next := func(v int) (int, error) { step(v + 1); return v, nil }
	step = func(i int) {
		if i == b.N {
			close(fin)
			return
		}
		p := NewPromise[int](l)
		h := reply(p.Handle())
		h.OnCleanup(release)
		Then(h, next)
		p.Resolve(i)
	}
	b.ResetTimer()
	_ = l.Post(func() { step(0) })
	recv(b, fin)
	b.StopTimer()
	onLoop(b, l, func() { // the last cleanup runs after the continuation
		if released != b.N {
			b.Errorf("%d cleanups ran, want %d", released, b.N)
		}
	})
}

// BenchmarkWork is a Work job's round trip, one at a time: the handle made
// from a goroutine, the job handed to a pool goroutine, its result back on
// the loop, and Wait woken. What a blocking call pays beyond itself.
func BenchmarkWork(b *testing.B) {
	l := startLoop(b)
	ctx := context.Background()
	fn := func(context.Context) (int, error) { return 1, nil }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Work(l, fn).Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

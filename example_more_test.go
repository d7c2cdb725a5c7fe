package aio_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/valkyria/aio"
)

// A promise is settled by whoever holds it, from any goroutine; the first
// settlement wins.
func ExampleNewPromise() {
	rt, l := start()
	defer stop(rt)

	p := aio.NewPromise[string](l)
	go p.Resolve("from another goroutine")

	fmt.Println(p.Handle().Wait(context.Background()))
	fmt.Println(p.Reject(errors.New("too late")))
	// Output:
	// from another goroutine <nil>
	// false
}

// New adapts a callback-style API: start runs on the loop, and resolve or
// reject may be called later from anywhere.
func ExampleNew() {
	rt, l := start()
	defer stop(rt)

	answer := aio.New(l, func(resolve func(int), reject func(error)) {
		time.AfterFunc(time.Millisecond, func() { resolve(42) })
	})
	fmt.Println(answer.Wait(context.Background()))
	// Output: 42 <nil>
}

// Cancelling a derived handle withdraws its interest in its input: the input
// is cancelled only when no dependent wants it any more.
func ExampleHandle_Cancel() {
	rt, l := start()
	defer stop(rt)

	shared := aio.NewPromise[string](l)
	upper := aio.Then(shared.Handle(), func(s string) (string, error) { return strings.ToUpper(s), nil })
	length := aio.Then(shared.Handle(), func(s string) (int, error) { return len(s), nil })
	upper.Cancel() // length still wants the input
	shared.Resolve("data")
	fmt.Println(length.Wait(context.Background()))
	fmt.Println(upper.Status(), shared.Handle().Status())

	lone := aio.NewPromise[string](l)
	only := aio.Then(lone.Handle(), func(s string) (int, error) { return len(s), nil })
	only.Cancel() // its only dependent gave up: the input is cancelled
	<-lone.Handle().Done()
	fmt.Println(lone.Handle().Status())
	// Output:
	// 4 <nil>
	// cancelled completed
	// cancelled
}

// OnCancel runs on the loop when the handle is cancelled, after its producer
// (here the timer) was stopped.
func ExampleHandle_OnCancel() {
	rt, l := start()
	defer stop(rt)

	h := aio.Sleep(l, time.Hour).OnCancel(func() { fmt.Println("cancelled") })
	h.Cancel()
	<-h.Done()
	fmt.Println("armed timers:", l.Stats().Timers)
	// Output:
	// cancelled
	// armed timers: 0
}

// Any takes the first success; failures count only if every input fails.
func ExampleAny() {
	rt, l := start()
	defer stop(rt)

	down := aio.Fail[string](l, errors.New("mirror 1 down"))
	slow := aio.Delay(l, time.Millisecond, func() (string, error) { return "mirror 2", nil })
	hung := aio.Delay(l, time.Hour, func() (string, error) { return "mirror 3", nil })

	fmt.Println(aio.Any(down, slow, hung).Wait(context.Background()))
	<-hung.Done() // withdrawn from, and so cancelled
	fmt.Println(hung.Status())
	// Output:
	// mirror 2 <nil>
	// cancelled
}

// Catch turns a failure into a value; a cancellation is not a failure.
func ExampleCatch() {
	rt, l := start()
	defer stop(rt)

	miss := aio.Fail[int](l, errors.New("cache miss"))
	fallback := aio.Catch(miss, func(err error) (int, error) { return -1, nil })
	fmt.Println(fallback.Wait(context.Background()))

	p := aio.NewPromise[int](l)
	caught := aio.Catch(p.Handle(), func(err error) (int, error) { return -1, nil })
	p.Handle().Cancel()
	_, err := caught.Wait(context.Background())
	fmt.Println(errors.Is(err, aio.ErrCancelled))
	// Output:
	// -1 <nil>
	// true
}

// Finally runs on every outcome, before its own handle is done.
func ExampleFinally() {
	rt, l := start()
	defer stop(rt)

	failing := aio.Delay(l, time.Millisecond, func() (int, error) { return 0, errors.New("boom") })
	h := aio.Finally(failing, func() { fmt.Println("finally ran") })
	_, err := h.Wait(context.Background())
	fmt.Println(err)
	// Output:
	// finally ran
	// boom
}

// ThenAsync continues with another handle and flattens the result.
func ExampleThenAsync() {
	rt, l := start()
	defer stop(rt)

	user := aio.Pure(l, "ada")
	posts := aio.ThenAsync(user, func(name string) *aio.Handle[int] {
		return aio.Work(l, func(context.Context) (int, error) { return len(name), nil })
	})
	fmt.Println(posts.Wait(context.Background()))
	// Output: 3 <nil>
}

// Posted functions run on the loop one at a time, in order: state that only
// the loop touches needs no lock.
func ExampleLoop_Post() {
	rt, l := start()
	defer stop(rt)

	count := 0
	for range 3 {
		_ = l.Post(func() { count++ })
	}
	result := make(chan int, 1) // room for the answer: a posted function must not block
	_ = l.Post(func() { result <- count })
	fmt.Println(<-result)
	// Output: 3
}

// Every repeats until its handle is cancelled.
func ExampleEvery() {
	rt, l := start()
	defer stop(rt)

	third := aio.NewPromise[int](l)
	ticks := 0
	h := aio.Every(l, time.Millisecond, func() {
		ticks++
		if ticks == 3 {
			third.Resolve(ticks)
		}
	})
	fmt.Println(third.Handle().Wait(context.Background()))
	h.Cancel()
	<-h.Done()
	fmt.Println(h.Status())
	// Output:
	// 3 <nil>
	// cancelled
}

// Shutdown stops every loop of the runtime: pending handles are cancelled
// (their cleanups run) and the slots come back.
func ExampleRuntime_Shutdown() {
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: 2})
	a, _ := rt.Start(aio.Config{Name: "a"})
	b, _ := rt.Start(aio.Config{Name: "b"})
	_, err := rt.Start(aio.Config{Name: "c"})
	fmt.Println(errors.Is(err, aio.ErrTooManySystems))

	job := aio.Sleep(a, time.Hour)
	job.OnCleanup(func() { fmt.Println("cleanup ran") })

	err = rt.Shutdown(context.Background())
	fmt.Println(err, rt.Running(), job.Status())
	fmt.Println(b.Post(func() {}))
	// Output:
	// true
	// cleanup ran
	// <nil> 0 cancelled
	// aio: loop stopped
}

// A server that runs a loop per core gives the Go scheduler one P more than
// it has loops, before it starts them.
func ExampleReserveProcs() {
	loops := runtime.NumCPU()
	prev := aio.ReserveProcs(loops)
	defer runtime.GOMAXPROCS(prev) // an example puts things back; a server need not

	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: loops})
	for range loops {
		if _, err := rt.Start(aio.Config{}); err != nil {
			fmt.Println(err)
			return
		}
	}
	fmt.Println(rt.Running() == loops, runtime.GOMAXPROCS(0) > loops)
	if err := rt.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
	}
	// Output: true true
}

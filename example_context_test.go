package aio_test

import (
	"context"
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// A handle's Context hands its life to goroutine code that takes a context:
// it is done when the handle is, however it ended.
func ExampleHandle_Context() {
	rt, l := start()
	defer stop(rt)

	session := aio.NewPromise[string](l)
	ctx, cancel := context.WithTimeout(session.Handle().Context(), time.Hour)
	defer cancel()
	stopped := make(chan error)
	go func() {
		<-ctx.Done() // a client call that takes ctx, say
		stopped <- ctx.Err()
	}()
	session.Resolve("logged out")
	fmt.Println(<-stopped)
	fmt.Println(session.Handle().Result())
	// Output:
	// context canceled
	// logged out <nil>
}

// Bind cancels a handle when a context ends: a request's, say.
func ExampleHandle_Bind() {
	rt, l := start()
	defer stop(rt)

	ctx, cancel := context.WithCancel(context.Background())
	job := aio.Delay(l, time.Hour, func() (string, error) { return "done", nil }).Bind(ctx)
	cancel() // the client went away
	<-job.Done()
	fmt.Println(job.Status(), "armed timers:", l.Stats().Timers)
	// Output: cancelled armed timers: 0
}

// A Do body's Context puts one deadline over several Awaits, each awaited
// handle bound to it: no arithmetic on Loop.Now.
func ExampleCo_Context() {
	rt, l := start()
	defer stop(rt)

	h := aio.Do(l, func(co *aio.Co) (string, error) {
		ctx, cancel := context.WithTimeout(co.Context(), 50*time.Millisecond)
		defer cancel()
		fast := aio.Delay(l, time.Millisecond, func() (string, error) { return "fast", nil })
		if _, err := aio.Await(co, fast.Bind(ctx)); err != nil {
			return "", err
		}
		slow := aio.Delay(l, time.Hour, func() (string, error) { return "slow", nil })
		if _, err := aio.Await(co, slow.Bind(ctx)); err != nil {
			return "", fmt.Errorf("%w: %w", err, context.Cause(ctx))
		}
		return "both in time", nil
	})
	_, err := h.Wait(context.Background())
	fmt.Println(err)
	// Output: aio: cancelled: context deadline exceeded
}

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

package aio_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// The whole life of a program on aio: a runtime, a loop started in it,
// a handle made on the loop and waited for from main's goroutine, and a
// shutdown that stops the loop and gives its slot back.
func Example() {
	ctx := context.Background()
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "main"})
	if err != nil {
		fmt.Println(err)
		return
	}

	tick := aio.Then(aio.Sleep(l, 10*time.Millisecond), func(struct{}) (string, error) {
		return "tick", nil
	})
	v, err := tick.Wait(ctx) // from any goroutine but the loop's own
	fmt.Println(v, err)

	err = rt.Shutdown(ctx) // drains connections, then stops the loops
	fmt.Println(err, rt.Running())
	// Output:
	// tick <nil>
	// <nil> 0
}

// A runtime has a fixed number of slots: Start fails with
// ErrTooManySystems when none is free, and a stopped loop gives its slot
// back.
func ExampleRuntime_Start() {
	ctx := context.Background()
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: 1})
	l, err := rt.Start(aio.Config{Name: "first"})
	fmt.Println(err)

	_, err = rt.Start(aio.Config{Name: "second"})
	fmt.Println(errors.Is(err, aio.ErrTooManySystems))

	_, _ = l.Stop().Wait(ctx)
	l, err = rt.Start(aio.Config{Name: "third"})
	fmt.Println(err, l.Name())
	_ = rt.Shutdown(ctx)
	// Output:
	// <nil>
	// true
	// <nil> third
}

package aio_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// AllSettled reports every input, failures included, in input order.
func ExampleAllSettled() {
	rt, l := start()
	defer stop(rt)

	outs, _ := aio.AllSettled(
		aio.Pure(l, "cache"),
		aio.Fail[string](l, errors.New("db down")),
	).Wait(context.Background())
	for _, o := range outs {
		fmt.Printf("%q %v\n", o.Value, o.Err)
	}
	// Output:
	// "cache" <nil>
	// "" db down
}

// AllSettledWithin keeps what ended by the deadline; Within(AllSettled(...))
// would have nothing but the timeout.
func ExampleAllSettledWithin() {
	rt, l := start()
	defer stop(rt)

	fast := aio.Delay(l, time.Millisecond, func() (string, error) { return "fast", nil })
	hung := aio.Delay(l, time.Hour, func() (string, error) { return "hung", nil })

	outs, _ := aio.AllSettledWithin(50*time.Millisecond, fast, hung).Wait(context.Background())
	fmt.Println(outs[0].Value, outs[0].Err)
	fmt.Println(errors.Is(outs[1].Err, aio.ErrTimeout))
	<-hung.Done() // withdrawn from at the deadline, and so cancelled
	fmt.Println(hung.Status())

	slow := aio.Delay(l, time.Hour, func() (string, error) { return "slow", nil })
	_, err := aio.Within(aio.AllSettled(fast, slow), time.Millisecond).Wait(context.Background())
	fmt.Println(err) // fast's value is lost with the rest
	// Output:
	// fast <nil>
	// true
	// cancelled
	// aio: timeout after 1ms
}

// Tap runs a side effect on success and passes the value on unchanged.
func ExampleTap() {
	rt, l := start()
	defer stop(rt)

	price := aio.Delay(l, time.Millisecond, func() (int, error) { return 40, nil })
	logged := aio.Tap(price, func(p int) { fmt.Println("price arrived:", p) })
	fmt.Println(logged.Wait(context.Background()))

	failed := aio.Tap(aio.Fail[int](l, errors.New("no price")), func(p int) { fmt.Println("not printed") })
	fmt.Println(failed.Wait(context.Background()))
	// Output:
	// price arrived: 40
	// 40 <nil>
	// 0 no price
}

// Settled hands the inputs over in the order they end, cancelling none:
// to goroutines through its channel, to a Do body through Await.
func ExampleSettled() {
	rt, l := start()
	defer stop(rt)

	a, b := aio.NewPromise[string](l), aio.NewPromise[string](l)
	s := aio.Settled(a.Handle(), b.Handle())
	b.Resolve("b")
	a.Reject(errors.New("a failed"))
	for h := range s.C {
		v, err := h.Result()
		fmt.Printf("%q %v\n", v, err)
	}

	hung := aio.Delay(l, time.Hour, func() (string, error) { return "hung", nil })
	quick := aio.Delay(l, time.Millisecond, func() (string, error) { return "quick", nil })
	first := aio.Do(l, func(co *aio.Co) (string, error) {
		for h, err := range aio.Settled(hung, quick).Await(co) {
			if err != nil {
				return "", err // the Do handle was cancelled
			}
			return h.Result() // the first to end; the other runs on
		}
		return "", nil
	})
	fmt.Println(first.Wait(context.Background()))
	fmt.Println(hung.Status())
	hung.Cancel()
	// Output:
	// "b" <nil>
	// "" a failed
	// quick <nil>
	// running
}

package aio_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/valkyria/aio"
)

// start starts one loop for an example; stop tears it down.
func start() (*aio.Runtime, *aio.Loop) {
	rt := aio.NewRuntime(aio.RuntimeConfig{})
	l, err := rt.Start(aio.Config{Name: "example"})
	if err != nil {
		panic(err)
	}
	return rt, l
}

func stop(rt *aio.Runtime) { _ = rt.Shutdown(context.Background()) }

func ExampleThen() {
	rt, l := start()
	defer stop(rt)

	price := aio.Delay(l, time.Millisecond, func() (int, error) { return 40, nil })
	withTax := aio.Then(price, func(p int) (int, error) { return p + p/4, nil })

	v, err := withTax.Wait(context.Background())
	fmt.Println(v, err)
	// Output: 50 <nil>
}

func ExampleAll() {
	rt, l := start()
	defer stop(rt)

	var parts []*aio.Handle[string]
	for i, word := range []string{"one", "two", "three"} {
		// Completion order differs from input order; All keeps input order.
		d := time.Duration(3-i) * time.Millisecond
		parts = append(parts, aio.Delay(l, d, func() (string, error) { return word, nil }))
	}
	words, err := aio.All(parts...).Wait(context.Background())
	fmt.Println(words, err)
	// Output: [one two three] <nil>
}

func ExampleRace() {
	rt, l := start()
	defer stop(rt)

	slow := aio.Delay(l, time.Hour, func() (string, error) { return "slow answer", nil })
	timeout := aio.Delay(l, 5*time.Millisecond, func() (string, error) { return "", aio.ErrTimeout })

	_, err := aio.Race(slow, timeout).Wait(context.Background())
	fmt.Println(errors.Is(err, aio.ErrTimeout))
	<-slow.Done() // the loser was cancelled, its timer disarmed
	fmt.Println(slow.Status())
	// Output:
	// true
	// cancelled
}

func ExampleWithin() {
	rt, l := start()
	defer stop(rt)

	query := aio.Work(l, func(ctx context.Context) (string, error) {
		<-ctx.Done() // a blocking call that honours its context
		return "", ctx.Err()
	})
	_, err := aio.Within(query, 5*time.Millisecond).Wait(context.Background())
	fmt.Println(errors.Is(err, aio.ErrTimeout))
	<-query.Done()
	fmt.Println(query.Status())
	// Output:
	// true
	// cancelled
}

func ExampleRetry() {
	rt, l := start()
	defer stop(rt)

	attempt := 0
	h := aio.Retry(l, 5, time.Millisecond, func() *aio.Handle[string] {
		attempt++ // runs on the loop: no lock needed
		if attempt < 3 {
			return aio.Fail[string](l, errors.New("flaky"))
		}
		return aio.Pure(l, fmt.Sprintf("ok after %d attempts", attempt))
	})
	fmt.Println(h.Wait(context.Background()))
	// Output: ok after 3 attempts <nil>
}

// A policy for many clients of one backend: the wait doubles from 10ms
// up to a second, and each is drawn at random from its upper half, so
// that clients that failed together do not all come back together.
func ExampleRetryWith() {
	rt, l := start()
	defer stop(rt)

	policy := aio.RetryPolicy{Attempts: 6, Base: 10 * time.Millisecond, Max: time.Second, Jitter: 0.5}
	attempt := 0
	h := aio.RetryWith(l, policy, func() *aio.Handle[string] {
		attempt++
		if attempt < 3 {
			return aio.Fail[string](l, errors.New("503 from the backend"))
		}
		return aio.Pure(l, fmt.Sprintf("ok after %d attempts", attempt))
	})
	fmt.Println(h.Wait(context.Background()))
	// Output: ok after 3 attempts <nil>
}

func ExampleBracket() {
	rt, l := start()
	defer stop(rt)

	open := aio.Delay(l, time.Millisecond, func() (string, error) { return "conn#1", nil })
	h := aio.Bracket(open,
		func(c string) { fmt.Println("released", c) },
		func(c string) *aio.Handle[int] {
			return aio.Then(aio.Sleep(l, time.Millisecond), func(struct{}) (int, error) { return len(c), nil })
		})
	fmt.Println(h.Wait(context.Background()))
	// Output:
	// released conn#1
	// 6 <nil>
}

func ExampleWithScope() {
	rt, l := start()
	defer stop(rt)

	var heartbeat *aio.Handle[struct{}]
	h := aio.WithScope(l, func(s *aio.Scope) *aio.Handle[string] {
		// Started inside the scope: it cannot outlive it.
		heartbeat = aio.Adopt(s, aio.Every(l, time.Millisecond, func() {}))
		return aio.Delay(l, 5*time.Millisecond, func() (string, error) { return "done", nil })
	})
	fmt.Println(h.Wait(context.Background()))
	<-heartbeat.Done()
	fmt.Println("heartbeat:", heartbeat.Status())
	// Output:
	// done <nil>
	// heartbeat: cancelled
}

func ExampleDo() {
	rt, l := start()
	defer stop(rt)

	h := aio.Do(l, func(co *aio.Co) (string, error) {
		user, err := aio.Await(co, aio.Delay(l, time.Millisecond, func() (string, error) { return "ada", nil }))
		if err != nil {
			return "", err
		}
		// Plain sequential code; each Await suspends the body, never the loop.
		posts, err := aio.Await(co, aio.Work(l, func(context.Context) (int, error) { return 3, nil }))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s has %d posts", user, posts), nil
	})
	fmt.Println(h.Wait(context.Background()))
	// Output: ada has 3 posts <nil>
}

func ExampleWork() {
	rt, l := start()
	defer stop(rt)

	// Blocking calls run on the loop's work pool, never on the loop.
	sum := aio.Work(l, func(ctx context.Context) (int, error) {
		total := 0
		for i := 1; i <= 100; i++ {
			total += i
		}
		return total, nil
	})
	fmt.Println(sum.Wait(context.Background()))
	// Output: 5050 <nil>
}

func ExampleHandle_OnCleanup() {
	rt, l := start()
	defer stop(rt)

	p := aio.NewPromise[int](l)
	h := p.Handle()
	h.OnCleanup(func() { fmt.Println("cleanup 1") })
	h.OnCleanup(func() { fmt.Println("cleanup 2") })
	h.Cancel() // complete, fail and cancel all run the cleanups, last first
	<-h.Done()
	// Output:
	// cleanup 2
	// cleanup 1
}

func ExampleLoop_Stop() {
	rt := aio.NewRuntime(aio.RuntimeConfig{MaxSystems: 1})
	l, _ := rt.Start(aio.Config{Name: "short-lived"})
	pending := aio.Sleep(l, time.Hour)

	_, err := l.Stop().Wait(context.Background())
	fmt.Println(err, pending.Status(), rt.Running())
	// Output: <nil> cancelled 0
}

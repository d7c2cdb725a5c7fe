package aio

import "runtime"

// ReserveProcs raises GOMAXPROCS to loops+1 if it is lower, for a process
// that runs loops loops, and returns the value GOMAXPROCS had. A process
// that runs a loop per core calls it once, before it starts them:
//
//	aio.ReserveProcs(runtime.NumCPU())
//
// Why one P more than loops: a loop waits for events in a system call
// (epoll_pwait, kevent) on its own locked thread, holding its P. While
// every P is held that way, the Go scheduler's monitor takes a waiting
// loop's P at each of its ticks (20 µs and up) and wakes a thread to look
// for other work with it; the thread finds none and sleeps again, and the
// loop, when its events arrive, has to wait for a P before it can run.
// With one P to spare the monitor leaves waiting loops alone. On a 2-core
// VM with a loop per core it halved the futex calls of a TCP proxy and
// gave it and a TLS echo server 7-9% more work per CPU-second; a plain
// echo server and TLS handshakes, whose loops rarely wait, did not change
// (docs/performance.md). The extra P costs nothing while it is idle;
// goroutines that use it (Work, the garbage collector) share the cores
// with the loops as they would anyway.
//
// ReserveProcs never lowers GOMAXPROCS, and takes loops as at most
// MaxSystemsLimit, the most systems a Runtime runs (a larger count would
// ask the Go runtime for more Ps than it can make, a fatal error). Like
// runtime.GOMAXPROCS it turns off the runtime's own updates of GOMAXPROCS
// (after a change of the CPU limit or affinity) once it has raised it.
// Any goroutine; call it before the loops start, as it briefly stops the
// world.
func ReserveProcs(loops int) (prev int) {
	prev = runtime.GOMAXPROCS(0)
	if n := min(loops, MaxSystemsLimit) + 1; n > prev {
		runtime.GOMAXPROCS(n)
	}
	return prev
}

// Package aio is an event-loop runtime for Go, modeled on libuv. A loop is one
// goroutine locked to its OS thread that owns an epoll (Linux) or kqueue (BSD,
// macOS) poller, a timer heap, its TCP sockets and every handle created on it.
// Work on a loop is expressed as handles: promises that compose, cancel from
// any goroutine, and run their cleanups exactly once.
//
//	rt := aio.NewRuntime(aio.RuntimeConfig{})
//	l, err := rt.Start(aio.Config{Name: "main"})
//	if err != nil {
//		return err
//	}
//	defer func() { // a context of its own: one that ended already would not wait
//		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
//		defer cancel()
//		rt.Shutdown(sctx) // drains connections for up to 5 s, then stops the loops
//	}()
//
//	tick := aio.Then(aio.Sleep(l, 10*time.Millisecond), func(struct{}) (string, error) {
//		return "tick", nil
//	})
//	v, err := tick.Wait(ctx) // from any goroutine but the loop's own
//
// # Runtimes and systems
//
// A [Runtime] has a fixed number of slots (RuntimeConfig.MaxSystems, 16 by
// default). [Runtime.Start] takes a free slot and starts a system, a [Loop],
// in it; it returns [ErrTooManySystems] when none is free. A stopped loop
// gives its slot back, so a runtime can start and stop loops for ever. A
// program that wants several cores starts several loops (one per core, say)
// and spreads its work over them, for example with [ListenConfig.ReusePort];
// it calls [ReserveProcs] first, so that the Go scheduler keeps a P to spare
// beside the loops. State that spans loops (the members of a chat room, a
// cache) is owned by one loop, which the others reach with [New] or [Do] on
// it (the httpd package's Example_sharedState shows it), or kept per loop,
// each copy owned by its loop, with a change that concerns the others sent
// to each with [Loop.Post] (a broadcast: one Post per loop, which
// [Stats].PostQueued shows backing up).
//
// # The threading rule
//
// Everything a loop owns is touched only by its goroutine. Every callback of a
// loop (functions given to [Loop.Post], continuations, OnCancel callbacks,
// cleanups, TCP callbacks, [Do] bodies) runs there, one at a time, so code on
// a loop needs no locks for what only the loop touches. Continuations,
// OnCancel callbacks, cleanups, posted functions and TCP callbacks never
// run inside the call that registers them, even when the handle is already
// finished. The function given to a producer (a Do body up to its first
// Await, New's start, WithScope's and Retry's fn) is different: called on
// its loop, the producer runs it at once, before returning; called
// elsewhere, it posts it.
//
// Every exported function and method may be called from any goroutine unless
// its documentation says otherwise. Called on the loop, most act at once;
// called elsewhere, they post their loop-only part to the loop and return, and
// what completes later is a handle. [Loop.Post] runs a function on the loop
// from anywhere, in causal FIFO order; [Loop.OnLoop] tells whether the caller
// is on that loop (one atomic load). The exceptions are few: [Await] works
// only in its Do body, [Scope.Len], [Loop.Now] and [Conn.Draining] are meant
// for the loop, and [Handle.Wait] cannot block on the handle's own loop (it
// returns [ErrAwaitOnLoop] for a handle not yet finished, instead of
// deadlocking).
//
// A callback must never block: while it runs, every other handle, timer and
// socket of its loop waits. Blocking calls (files, DNS, databases, a mutex
// held elsewhere, a channel receive) belong in [Work], and sequential code
// that waits on handles belongs in [Do].
//
// # Handles
//
// A [Handle] is a value of type T that arrives later, an error, or a
// cancellation. Its [Status] goes from [Pending] to [Running] to one of
// [Completed], [Failed] or [Cancelled], and a terminal status never changes.
// [Handle.Status] and [Handle.Cancelled] are one atomic load; [Handle.Done] is
// a channel closed when the handle has finished (cleanups included);
// [Handle.Result] gives the outcome after that, [ErrPending] before;
// [Handle.Wait] blocks a goroutine other than the loop until Done, or until
// its context ends.
//
// Producers make handles: [Pure] and [Fail] (already finished), [Delay],
// [Sleep] and [Every] (the loop's timers), [New] and [NewPromise] (settled by
// code that calls resolve or reject, from any goroutine; the first settlement
// wins), [Work] (a blocking function on the loop's work pool), [Do], [Dial].
//
// Continuations derive a handle from one input: [Then] maps a value,
// [ThenAsync] maps it to another handle and flattens, [Tap] runs a side effect
// on a value and passes it on, [Catch] handles a failure (not a cancellation),
// [Finally] runs a function whatever the outcome. Sinks derive a handle from
// several: [All] (every value, in input order, or the first failure),
// [AllSettled] (every input's [Outcome], value or error, in input order; it
// never fails because an input did), [Race] (the first to complete or fail),
// [Any] (the first to complete; errors.Join of all failures otherwise),
// [Within] (a deadline, [ErrTimeout]; [AllSettledWithin] is the deadline that
// keeps the outcomes of the inputs that did end), [Retry] (attempts with
// exponential backoff; [RetryWith] bounds and jitters it; [Permanent]
// marks an error not worth another) and
// [Bracket] (acquire, use, release exactly once).
// Inputs may live on other loops; a derived handle is pinned to its first
// input's loop. A panic in a user function fails its handle with a
// [*PanicError]. [Settled] is not a sink but a way of waiting: it hands the
// inputs over in the order they end, cancelling none, through a channel to
// goroutines and through [Settling.Await] to a Do body.
//
// A [Scope] is a set of handles that must not outlive something. [WithScope]
// runs a function with a new scope, and when its handle finishes, every handle
// put in the scope with [Adopt] and still running is cancelled; the scope's
// handle finishes only after they all have. A TCP connection is a scope too
// ([Conn.Scope]).
//
// [Do] runs plain sequential code as a coroutine on the loop: each [Await]
// suspends the body until a handle finishes, without blocking the loop. [Work]
// runs a function off the loop, on a pool of Config.WorkPool goroutines, with
// a context that is cancelled when its handle is, and delivers the result on
// the loop.
//
// A loop keeps some goroutines besides its own, which a goroutine-leak check
// will see after its first use: the Work pool's (started on demand, up to
// WorkPool) and the idle coroutines of finished Do bodies (up to 16), kept
// for the next Do; Stop ends them all.
//
// # Cancellation is withdrawn interest
//
// [Handle.Cancel] works from any goroutine and reports whether it decided the
// outcome: completion, failure and cancellation race by compare-and-swap on
// the status, and the first wins. A cancelled handle never runs success or
// failure continuations; its dependents end cancelled too.
//
// Cancellation then flows down to whatever produces the handle: a timer is
// disarmed, Work's context is cancelled, a Do body's Await returns
// [ErrCancelled], a Dial's socket is closed. A derived handle does not cancel
// its inputs outright: it withdraws its interest in them. An input is cancelled
// once every dependent that registered on it (a Then, a sink, an Await) has
// withdrawn, so a handle shared by two consumers survives the cancellation of
// one. Sinks withdraw the same way from inputs they no longer need: the losers
// of a Race or Any, the rest of an All after a failure, the input of a Within
// (or the inputs of an AllSettledWithin) that timed out. Waiting on a handle
// (Wait, Done, Result) is not interest: cancelling the only Then of a handle
// cancels the handle even while a goroutine waits on it. Every derived
// handle is interest, one made only to log (a Finally, a Tap) too, and keeps
// its input wanted while it is; [Handle.OnCancel] and [Handle.OnCleanup]
// only observe, and are the way to watch a handle without keeping it.
//
// The same holds for a value that has arrived but that nobody took: a handle
// that completed with a connection (Dial, a Dialer's dials, TLS ones too) and
// that every registered dependent declined (withdrew, or was cancelled before
// it got the value) closes the connection, with [ErrCancelled]. A Then's
// function, a Tap's, All, Await and Bracket take the value, and a taken value
// is never closed; Within, Race, Any, Catch, Finally, Retry, WithScope and
// ThenAsync's inner handle pass it on, and declining it there declines it in
// their input. As with cancellation, waiting is not taking: a goroutine that
// read the connection with Wait or Result while every dependent declined it
// holds a closed connection.
//
// A Scope is stronger: closing it cancels its handles whatever else wants
// them.
//
// # Contexts
//
// [Handle.Context] is a handle seen as a context.Context, for goroutine code:
// it is done when the handle is (Err is context.Canceled whatever the
// outcome), and contexts derived from it start no goroutine. The other way,
// [Handle.Bind] ties a handle to a context: the handle is cancelled when the
// context ends, and the tie is undone when the handle does. In a Do body,
// [Co.Context] is cancelled as soon as the Do handle is: a deadline over the
// rest of the body is context.WithTimeout(co.Context(), d), with each awaited
// handle bound to it.
//
// # Cleanups
//
// [Handle.OnCleanup] registers a resource cleanup. At the terminal transition
// the loop runs, in order: the OnCancel callbacks (if cancelled), the
// continuations of its dependents on the same loop (those on other loops are
// posted there and may run later), the cleanups, last registered first, each
// exactly once, and then closes Done. Completion, failure and cancellation all
// pass through that one transition, so a cleanup runs on every path. A cleanup
// registered on a finished handle runs soon after, on the loop.
//
// A handle dropped by everyone before it finished (a promise nobody will
// resolve) is garbage collected like any value, and its cleanups still run, on
// its loop; Stats.Abandoned counts it. [Finally] and [Bracket] are the
// composable forms of a cleanup: a function run when a handle ends, whose own
// handle later steps can wait for.
//
// # Stopping
//
// [Loop.Stop] stops a loop and returns a handle that completes once the loop
// is gone. Stop first makes [Loop.Post] and every new producer on the loop
// fail with [ErrStopped]; then the loop finishes its current iteration; then
// it cancels every handle still pending on it, running their OnCancel
// callbacks, continuations and cleanups, and runs the callbacks posted before
// Stop, repeating until nothing is left; then it closes every socket it owns
// (their Closed handles are cancelled) and its poller; then it waits for
// running Work functions to return; then its goroutine unlocks its thread, the
// slot is released, and Stop's handle completes. Stop is idempotent, may be
// called from any goroutine, the loop's own included, and its handle, which
// has no loop, cannot be cancelled.
//
// [Runtime.Shutdown] drains first, as net/http's Server.Shutdown does: every
// listener closes, every connection ends once its scope is idle (below;
// a server starts no work for requests that arrive on a connection that
// is [Conn.Draining]), and when none is left, or when its context ends, it stops every loop and
// waits for each Stop handle (until the context ends: then it returns the
// context's error and the loops go on stopping). Called on one of the
// runtime's loops, it stops them all at once and returns [ErrAwaitOnLoop]
// rather than wait for itself.
//
// # TCP
//
// [Listen] binds an address and calls a function on the loop with each
// accepted [Conn]; [Dial] returns a handle of a connection. A Conn has no
// goroutine: [Conn.OnRead] receives bytes on the loop in the loop's shared
// read buffer, which is valid only until the callback returns;
// [Conn.OnFrame] cuts the stream into frames with a bufio.SplitFunc
// (lines, or length prefixes with [ScanLengthPrefixed]) and hands over
// those that arrive whole without a copy.
// [Conn.Write] (an io.Writer that never blocks) copies what the kernel does
// not take at once into a queue that the loop flushes with writev, and
// [Conn.Flush] tells when it did. When the queue passes ConnConfig.HighWater
// it is [Conn.Full], and the connection stops reading until it drains to
// LowWater (unless ConnConfig.ReadWhileFull: the directions then have
// independent flow control); [Conn.OnDrain] runs at each drain. [Pipe]
// copies both ways between two connections, a proxy's work, with flow
// control per direction and FIN passed on as a half-close.
//
// A connection is a scope ([Conn.Scope]): adopt into it the handle that
// writes a request's reply, and a client that goes away (a reset, a write
// that fails, Close) cancels it. A FIN is a half-close: without [Conn.OnEOF],
// the connection waits for its scope to be idle, its replies written, then
// closes. [Listener.Drain] ends a listener's connections the same way, each
// once idle, until a grace period ends, and [Conn.Drain] ends one: after
// the FIN it reads and drops until the peer's EOF, for [ConnConfig.Linger]
// (2 s by default) at most (a lingering close: closing on unread bytes
// would reset the connection and could cost the peer replies it has not
// read). [Conn.CloseWrite] (half-close),
// [Conn.Close], [Conn.OnClose], [Conn.Closed], and read and idle timeouts
// complete the set. A deadline on anything is [Within].
//
// A [Dialer] dials with a local address and a context ([Dialer.DialContext]).
// [AdoptConn] and [AdoptListener] take over sockets made elsewhere (a
// parent process, systemd socket activation), and [AdoptConnFrom] and
// [AdoptListenerFrom] duplicates of package net's. Hand each fd to one
// loop: an fd another loop owns is not detected, and would be closed twice.
// Adoption waits for its loop; a loop handing a socket to another posts
// the adoption there rather than calling it (two loops adopting onto each
// other at once would wait for each other for ever). [Conn.SyscallConn] runs
// code with the fd on the loop. For goroutine code and the libraries that
// take a net.Conn, [Conn.NetConn] is a blocking view of a connection, with
// deadlines, whose Write waits while the write queue is full.
//
// TLS is the standard crypto/tls on the loop, without a goroutine per
// connection: ListenConfig.TLS makes a listener hand over connections whose
// handshake ended, Dialer.TLS makes Dial's handle complete after it, and
// [AdoptTLSConn] and [AdoptTLSConnFrom] run it on an adopted socket,
// either side; their reads
// and writes are plaintext, with the same callbacks,
// backpressure (counting ciphertext), timeouts, scope and drain, and
// [Conn.TLS] tells the ALPN protocol and the rest of the handshake.
// ListenConfig.OnHandshakeError learns why a listener's handshakes fail, and
// ListenConfig.NotTLS answers a client that speaks plaintext to it.
//
// Under TLS 1.3 a client's handshake ends before the server has checked
// its certificate, so a client that the server rejects (mutual TLS: no
// certificate, or one it does not trust) sees its Dial succeed, and the
// rejection, the server's alert, as its first read's error: the
// connection closes with it (Conn.Closed fails with it, and errors.As
// finds a *net.OpError whose Op is "remote error" and whose Err names the
// alert: with a crypto/tls server, "tls: certificate required" (none
// sent) or "tls: unknown certificate authority" (one it does not trust).
// A NetConn view's Read returns it wrapped in the view's own
// *net.OpError, Op "read", as its errors are: errors.As for a
// *net.OpError finds that one first, where on a tls.Conn's Read error it
// finds the alert's; errors.Is and the text still show the alert. This is
// TLS 1.3's, as with crypto/tls alone; under TLS 1.2 the Dial fails with
// the alert.
//
// # Errors
//
// Outcomes are matched with errors.Is: [ErrCancelled] for a cancelled
// handle, [ErrTimeout] for Within and the inputs an AllSettledWithin gave up
// (and [ErrReadTimeout], [ErrIdleTimeout] and [ErrWriteTimeout] of
// connections and [ErrHandshakeTimeout] of a TLS handshake, which wrap it),
// [ErrStopped] for work refused by a stopping loop, [ErrAwaitOnLoop] for a
// Wait that would deadlock, [ErrPending] for the Result of an unfinished
// handle, [ErrNoInputs] for Race or Any of nothing, [ErrNilFunc],
// [ErrNilLoop] and [ErrNilHandle] for nil arguments, [ErrInvalidArgument]
// for others out of range, [ErrNotInBody] for Do
// bodies, [ErrGoexit] for Do bodies and Work fns, [ErrTooManySystems] for
// Start, [ErrConnClosed] (which also matches net.ErrClosed),
// [ErrWriteClosed] and [ErrFrameTooLarge] for connections (the error OnClose
// and a NetConn view give for a connection that Stop closed matches
// ErrConnClosed, ErrStopped and ErrCancelled; its Closed handle ends
// cancelled, as every handle Stop ends), [ErrListenerClosed] (net.ErrClosed
// too) for listeners. The context of a Work function or of a Do body
// (Co.Context) is cancelled with cause ErrCancelled, or, by Stop, with a
// cause that matches ErrStopped as well, so that goroutine code can tell a
// shutdown from a cancel. Socket errors wrap their errno, so errors.Is(err,
// unix.ECONNREFUSED) works. A panic in a callback that has no handle to fail
// (a posted one, a connection's) goes to Config.OnPanic.
//
// A function that returns a handle reports bad arguments in it and never
// panics: a producer ([New], [Do], [Work], [Delay], [Every], [Sleep],
// [Retry], [WithScope], [Dial]) given a nil loop gives a handle failed with
// [ErrNilLoop] (on no loop), and on a loop that is stopping [ErrStopped]; a
// nil function gives [ErrNilFunc], a nil input handle [ErrNilHandle] (a
// combinator's error names the input's index). [Pure] and [Fail] of a nil
// loop make a handle on no loop, as documented there. A nil context given
// to Wait, Shutdown or DialContext is an error wrapping
// [ErrInvalidArgument].
//
// # Debugging
//
// Built with the aiodebug tag (go test -tags aiodebug), every loop-only path
// checks that it runs on its loop and panics where it does not. [Loop.Stats]
// reports a loop's counters from any goroutine: iterations, posted callbacks,
// armed timers, live and abandoned handles, panics, Work jobs queued and
// running, TCP traffic and TLS handshakes.
//
// # Monitoring
//
// [Loop.Stats] also tells how healthy a loop is, at a cost low enough to
// leave on: where its time goes ([LoopTime]: busy by phase, and idle in the
// poller), and how long work waits for it ([Lag] histograms of posted
// callbacks and timers). [Runtime.Loops] lists the running loops. The
// package github.com/valkyria/aio/metrics exports all of them in the
// Prometheus text format (an http.Handler) and through expvar.
package aio

// Package aio is an event-loop runtime for Go, modeled on libuv: one goroutine
// per system, locked to its OS thread, owns an epoll (Linux) or kqueue (BSD,
// macOS) poller, a timer heap, and every handle created on it.
//
// # Systems
//
// A Runtime holds up to RuntimeConfig.MaxSystems loops in a lock-free slab.
// Runtime.Start starts one; Loop.Stop returns a handle that completes when its
// teardown is done and its slot is free. Other goroutines talk to a loop only
// through Post (a multi-producer queue plus a coalesced wakeup) and through
// handles.
//
// # Handles
//
// A Handle[T] is a promise pinned to a loop: Pending, then Running, then one
// of Completed, Failed or Cancelled, never to change again. Producers make
// them (New, NewPromise, Pure, Fail, Delay, Sleep, Every, Work); combinators
// compose them (Then, ThenAsync, Catch, Finally, All, Race, Any, Within,
// Retry, Bracket); scopes bound their lifetime (WithScope, Adopt); Do runs
// sequential code that Awaits them without blocking the loop.
//
// Cancel works from any goroutine: one compare-and-swap decides the outcome,
// and the loop then runs, in order, the OnCancel callbacks, the continuations
// of dependents, and the resource cleanups registered with OnCleanup (last
// registered first, each exactly once, whatever way the handle ended).
// Cancellation flows down as withdrawn interest: a cancelled combinator
// withdraws from its inputs, and an input nobody wants any more is
// cancelled, down to the timer, the Work context or the socket that
// produces it. The graph is walked with an explicit work queue, never
// recursion, so a chain of a million handles completes or cancels in linear
// time and constant stack.
//
// # The threading rule
//
// Every callback of a loop (posted functions, continuations, OnCancel,
// cleanups, Do bodies) runs on that loop's goroutine, one at a time, so user
// code on a loop needs no locks. A continuation never runs inside the call
// that registers it. Blocking work belongs in Work, which runs on a bounded
// goroutine pool and delivers its result on the loop.
package aio

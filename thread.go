package aio

import (
	"runtime"

	"github.com/valkyria/aio/internal/goid"
)

// lockThread pins the loop goroutine to its OS thread for the loop's life, as
// libuv runs a loop on one thread: thread-affine resources (signal masks,
// thread-local state of embedded C libraries) stay valid across callbacks.
func lockThread() { runtime.LockOSThread() }

func unlockThread() { runtime.UnlockOSThread() }

// getg returns the running goroutine's identity (see goid.Get): what OnLoop
// compares with the loop's goroutine.
func getg() uintptr { return goid.Get() }

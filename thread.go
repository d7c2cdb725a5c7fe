package aio

import "runtime"

// lockThread pins the loop goroutine to its OS thread for the loop's life, as
// libuv runs a loop on one thread: thread-affine resources (signal masks,
// thread-local state of embedded C libraries) stay valid across callbacks.
func lockThread() { runtime.LockOSThread() }

func unlockThread() { runtime.UnlockOSThread() }

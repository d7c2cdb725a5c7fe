//go:build !aiodebug

package aio

// checkOnLoop asserts that the caller runs on l. It compiles to nothing
// unless the aiodebug build tag is set (see debug_on.go).
func (l *Loop) checkOnLoop() {}

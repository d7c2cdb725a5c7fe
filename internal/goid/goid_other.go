//go:build !amd64 && !arm64 && !386

package goid

// Get returns an identity of the running goroutine. On architectures without an
// assembly Get it parses the goroutine id out of runtime.Stack (stackID):
// correct, but about a microsecond, so OnLoop is slow there.
func Get() uintptr { return stackID() }

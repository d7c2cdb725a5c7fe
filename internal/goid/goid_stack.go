package goid

import (
	"runtime"
	"strconv"
	"strings"
)

// stackID returns the running goroutine's id, parsed out of runtime.Stack:
// Get on architectures without an assembly Get (goid_other.go). It builds
// everywhere so that its parsing is tested on every architecture.
func stackID() uintptr {
	var buf [64]byte
	return parseStackID(buf[:runtime.Stack(buf[:], false)])
}

// parseStackID returns the goroutine id at the head of a runtime.Stack
// trace ("goroutine 18 [running]:\n..."), or 0 if it has none.
func parseStackID(b []byte) uintptr {
	s := strings.TrimPrefix(string(b), "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(s, 10, 64)
	return uintptr(id)
}
